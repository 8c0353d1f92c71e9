package workload

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestRoundTrip: thousands of generated logs print and parse back to the
// same text.
func TestRoundTrip(t *testing.T) {
	n := uint64(3000)
	if testing.Short() {
		n = 300
	}
	faults := func(seed uint64, e string) []string {
		if seed%3 == 0 {
			return []string{"row-fault rate=0.05"}
		}
		return nil
	}
	for seed := range n {
		l := Generate(seed, GenConfig{Ops: 1 + int(seed%150), Faults: faults, Evicting: seed%2 == 1})
		text := l.String()
		back, err := Parse(text)
		if err != nil {
			t.Fatalf("seed %d: %v (repro: go test ./fuzz/workload -run TestRoundTrip)", seed, err)
		}
		if again := back.String(); again != text {
			t.Fatalf("seed %d: round trip changed the log:\n%s\nvs\n%s (repro: go test ./fuzz/workload -run TestRoundTrip)", seed, text, again)
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	a, b := Generate(7, GenConfig{}).String(), Generate(7, GenConfig{}).String()
	if a != b || a == Generate(8, GenConfig{}).String() {
		t.Fatalf("Generate is not a function of the seed (repro: go test ./fuzz/workload -run TestGenerateDeterministic)")
	}
	if !strings.Contains(a, " shutdown ") {
		t.Fatalf("no shutdown op in:\n%s (repro: go test ./fuzz/workload -run TestGenerateDeterministic)", a)
	}
}

func TestParseErrors(t *testing.T) {
	good := Header + "\nendpoint A regions=r0:4x16\n"
	const end = End + "\n"
	cases := []struct{ name, text, want string }{
		{"empty", "", "empty input"},
		{"no header", "seed 1\n", "line 1"},
		{"bad seed", Header + "\nseed x\n" + end, "line 2: bad seed"},
		{"no endpoint", Header + "\nseed 1\n" + end, "no endpoint"},
		{"bad region", Header + "\nendpoint A regions=r0:4\n" + end, "line 2"},
		{"unknown kind", good + "op at=0us frob A\n" + end, "line 3: unknown op kind"},
		{"undeclared endpoint", good + "op at=0us fetch B keys=k mask=1\n" + end, "undeclared endpoint"},
		{"mask length", good + "op at=0us fetch A keys=k,j mask=1\n" + end, "1 bits for 2 keys"},
		{"cancel forward", good + "op at=0us cancel 3\n" + end, "not an earlier op"},
		{"time backwards", good + "op at=5us fetch A keys=k mask=1\nop at=4us fetch A keys=k mask=1\n" + end, "goes back"},
		{"time overflows", good + "op at=9223372036854775807us fetch A keys=k mask=1\n" + end, "bad op time"},
		{"truncated op", good + "op at=", "line 3: truncated"},
		{"no end", good + "op at=0us fetch A keys=k mask=1\n", "line 3: truncated: no \"end\" line"},
		{"no final newline", good + "end", "line 3: truncated: the file ends mid-line"},
		{"end twice", good + end + end, "line 3: \"end\" before the last line"},
		{"op after end", good + end + "op at=0us fetch A keys=k mask=1\n", "truncated: no \"end\" line after"},
		{"end in v1", HeaderV1 + "\nendpoint A regions=r0:4x16\nend\n", "only v2 logs end with it"},
		{"unknown bad view", good + "op at=0us fetch A keys=k mask=1 bad=odd\n" + end, `unknown bad= "odd"`},
		{"quiesce forward", good + "op at=0us fetch A keys=k mask=1\nop at=0us quiesce A 0,4\n" + end, "not an earlier op"},
		{"quiesce no targets", good + "op at=0us quiesce A\n" + end, "quiesce takes"},
		{"quiesce undeclared", good + "op at=0us fetch A keys=k mask=1\nop at=0us quiesce B 0\n" + end, "undeclared endpoint"},
		{"huge region", Header + "\nendpoint A regions=A0:3000000000x16\n" + end, "line 2: endpoint A: over a limit: region A0:3000000000x16 has 3000000000 slots; at most 65536 slots per region (docs/FORMATS.md)"},
		{"huge slot", Header + "\nendpoint A regions=A0:2x40000000\n" + end, "over 67108864 bytes (64 MiB) per region"},
		{"huge total", Header + "\nendpoint A regions=a:1024x65536,b:1024x65536,c:1024x65536,d:1024x65536,e:1x1\n" + end, "over 268435456 bytes (256 MiB) per file"},
		{"huge setting", Header + "\nendpoint A rows=100000000 regions=r0:4x16\n" + end, "want an integer from 1 to 65536"},
		{"many keys", good + "op at=0us fetch A keys=" + strings.Repeat("k,", MaxKeysPerOp) + "k mask=" + strings.Repeat("1", MaxKeysPerOp+1) + "\n" + end, "at most 4096 per op"},
		{"many ops", good + strings.Repeat("op at=0us fetch A keys=k mask=1\n", MaxOps+1) + end, "more than 100000 ops"},
		{"probe no kind", good + "op at=0us probe A\n" + end, "probe takes an endpoint and a kind"},
		{"probe unknown kind", good + "op at=0us probe A frob\n" + end, `unknown probe kind "frob"`},
		{"probe undeclared", good + "op at=0us probe B overlap\n" + end, `probe of undeclared endpoint "B"`},
		{"probe extra", good + "op at=0us probe A overlap keys=k\n" + end, "probe takes an endpoint and a kind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.text)
			if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an op log error containing %q (repro: go test ./fuzz/workload -run 'TestParseErrors/%s')", err, tc.want, tc.name)
			}
		})
	}
}

// TestTruncatedAnywhere: a v2 log, with the comment lines a failure folder
// puts above it, cut at any byte is an error that says "truncated"
// (ErrTruncated), never a shorter workload.
func TestTruncatedAnywhere(t *testing.T) {
	l := Generate(3, GenConfig{Ops: 12, Faults: func(uint64, string) []string { return []string{"row-fault rate=0.05"} }})
	text := "# seed 3: pass\n# repro: storesim replay --seed 3\n" + l.String()
	if _, err := Parse(text); err != nil {
		t.Fatalf("the whole log: %v (repro: go test ./fuzz/workload -run TestTruncatedAnywhere)", err)
	}
	for n := 0; n < len(text); n++ {
		_, err := Parse(text[:n])
		if !errors.Is(err, ErrTruncated) || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("cut at byte %d of %d (%q…): got %v, want a truncated error (repro: go test ./fuzz/workload -run TestTruncatedAnywhere)", n, len(text), text[max(0, n-20):n], err)
		}
	}
}

// TestV1StillParses: a log written before the end marker (header v1, no
// "end") parses to the same workload, and prints as v2.
func TestV1StillParses(t *testing.T) {
	l := Generate(5, GenConfig{Ops: 20})
	v2 := l.String()
	v1 := strings.Replace(strings.TrimSuffix(v2, End+"\n"), Header, HeaderV1, 1)
	back, err := Parse(v1)
	if err != nil || back.String() != v2 {
		t.Fatalf("a v1 log: %v; reprinted:\n%s\nwant:\n%s (repro: go test ./fuzz/workload -run TestV1StillParses)", err, back, v2)
	}
	if !strings.HasSuffix(v2, "\n"+End+"\n") || !strings.HasPrefix(v2, Header+"\n") {
		t.Fatalf("Log.String does not write the v2 header and the end line:\n%s (repro: go test ./fuzz/workload -run TestV1StillParses)", v2)
	}
}

// TestLimitsHoldForGenerated: the generator stays within every limit.
func TestLimitsHoldForGenerated(t *testing.T) {
	for seed := range uint64(200) {
		if err := CheckLimits(Generate(seed, GenConfig{Ops: 500})); err != nil {
			t.Fatalf("seed %d: %v (repro: go test ./fuzz/workload -run TestLimitsHoldForGenerated)", seed, err)
		}
	}
}

// TestProbes: every probe kind prints and parses back; generated logs carry
// probes from a stream of their own, so without them the workload is the
// same op for op (cancel and quiesce targets renumbered), and
// after-shutdown probes come after every shutdown of their endpoint.
func TestProbes(t *testing.T) {
	const repro = "(repro: go test ./fuzz/workload -run TestProbes)"
	text := Header + "\nendpoint A regions=r0:4x16\n"
	for i, k := range ProbeKinds {
		text += fmt.Sprintf("op at=%dus probe A %s\n", i, k)
	}
	text += End + "\n"
	l, err := Parse(text)
	if err != nil || len(l.Ops) != len(ProbeKinds) {
		t.Fatalf("parse: %v, %d ops %s", err, len(l.Ops), repro)
	}
	for i, op := range l.Ops {
		if op.Kind != Probe || op.Probe != ProbeKinds[i] || op.Endpoint != "A" {
			t.Fatalf("op %d = %+v %s", i, op, repro)
		}
	}
	if !strings.HasSuffix(l.String(), text[len(Header)+1+len("endpoint A regions=r0:4x16\n"):]) {
		t.Fatalf("probes print as\n%s %s", l.String(), repro)
	}
	kinds := map[ProbeKind]int{}
	for seed := range uint64(200) {
		cfg := GenConfig{Ops: 100, Evicting: seed%2 == 1}
		with := Generate(seed, cfg)
		cfg.Probes = -1
		without := Generate(seed, cfg)
		index := make([]int, len(with.Ops)) // op index in with → in without
		var kept []Op
		shut := map[string]bool{}
		for i, op := range with.Ops {
			index[i] = -1
			if op.Kind == Probe {
				kinds[op.Probe]++
				if op.Probe == ProbeAfterShutdown && !shut[op.Endpoint] {
					t.Fatalf("seed %d: op %d probes %s after shutdown before its shutdown %s", seed, i, op.Endpoint, repro)
				}
				if op.Probe == ProbeEvictDuringFetch && !cfg.Evicting {
					t.Fatalf("seed %d: op %d evicts on a durable store %s", seed, i, repro)
				}
				continue
			}
			if op.Kind == Shutdown {
				shut[op.Endpoint] = true
			}
			switch op.Kind {
			case Cancel:
				op.Target = index[op.Target]
			case Quiesce:
				ts := make([]int, len(op.Targets))
				for j, x := range op.Targets {
					ts[j] = index[x]
				}
				op.Targets = ts
			}
			index[i] = len(kept)
			kept = append(kept, op)
		}
		with.Ops = kept
		if with.String() != without.String() {
			t.Fatalf("seed %d: without its probes the workload changed:\n%s\nvs\n%s %s", seed, with, without, repro)
		}
	}
	for _, k := range ProbeKinds {
		if kinds[k] < 20 {
			t.Errorf("probe %s drawn %d times in 200 logs, want at least 20 %s", k, kinds[k], repro)
		}
	}
}
