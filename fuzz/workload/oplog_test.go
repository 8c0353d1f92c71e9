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
	cases := []struct{ name, text, want string }{
		{"empty", "", "empty input"},
		{"no header", "seed 1\n", "line 1"},
		{"bad seed", Header + "\nseed x\n", "line 2: bad seed"},
		{"no endpoint", Header + "\nseed 1\n", "no endpoint"},
		{"bad region", Header + "\nendpoint A regions=r0:4\n", "line 2"},
		{"unknown kind", good + "op at=0us frob A\n", "line 3: unknown op kind"},
		{"undeclared endpoint", good + "op at=0us fetch B keys=k mask=1\n", "undeclared endpoint"},
		{"mask length", good + "op at=0us fetch A keys=k,j mask=1\n", "1 bits for 2 keys"},
		{"cancel forward", good + "op at=0us cancel 3\n", "not an earlier op"},
		{"time backwards", good + "op at=5us fetch A keys=k mask=1\nop at=4us fetch A keys=k mask=1\n", "goes back"},
		{"time overflows", good + "op at=9223372036854775807us fetch A keys=k mask=1\n", "bad op time"},
		{"truncated op", good + "op at=", "line 3"},
		{"unknown bad view", good + "op at=0us fetch A keys=k mask=1 bad=odd\n", `unknown bad= "odd"`},
		{"quiesce forward", good + "op at=0us fetch A keys=k mask=1\nop at=0us quiesce A 0,4\n", "not an earlier op"},
		{"quiesce no targets", good + "op at=0us quiesce A\n", "quiesce takes"},
		{"quiesce undeclared", good + "op at=0us fetch A keys=k mask=1\nop at=0us quiesce B 0\n", "undeclared endpoint"},
		{"probe no kind", good + "op at=0us probe A\n", "probe takes an endpoint and a kind"},
		{"probe unknown kind", good + "op at=0us probe A frob\n", `unknown probe kind "frob"`},
		{"probe undeclared", good + "op at=0us probe B overlap\n", `probe of undeclared endpoint "B"`},
		{"probe extra", good + "op at=0us probe A overlap keys=k\n", "probe takes an endpoint and a kind"},
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
