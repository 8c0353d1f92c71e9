package memdriver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
)

func TestFaultMixRoundTrip(t *testing.T) {
	mixes := map[string]FaultMix{"calm": Calm(), "default": Default()}
	for seed := uint64(0); seed < 1000; seed++ {
		mixes[fmt.Sprintf("swarm-%d", seed)] = Swarm(seed)
	}
	kindsSeen := map[string]bool{}
	for name, m := range mixes {
		text := m.String()
		got, err := ParseFaultMix(text)
		if err != nil || got != m {
			t.Fatalf("%s: ParseFaultMix(String()) = %+v, %v; want %+v %s", name, got, err, m, repro(t))
		}
		if got, err := ParseFaultLines(strings.Split(text, "\n")...); err != nil || got != m {
			t.Fatalf("%s: ParseFaultLines(String()'s lines) = %+v, %v; want %+v %s", name, got, err, m, repro(t))
		}
		if err := m.Check(); err != nil {
			t.Fatalf("%s: %v %s", name, err, repro(t))
		}
		for _, line := range strings.Split(text, "\n") {
			if f := strings.Fields(line); len(f) == 3 {
				kindsSeen[f[1]] = true
			}
		}
	}
	if len(kindsSeen) != len(faultKinds) {
		t.Errorf("1000 swarm seeds enabled %d of %d fault kinds %s", len(kindsSeen), len(faultKinds), repro(t))
	}
	if Swarm(7) != Swarm(7) || Swarm(7) == Swarm(8) {
		t.Errorf("Swarm is not a function of the seed %s", repro(t))
	}
	if got, err := ParseFaultMix(DescribeSwarm(42)); err != nil || got != Swarm(42) {
		t.Errorf("ParseFaultMix(DescribeSwarm(42)) = %+v, %v %s", got, err, repro(t))
	}
}

// TestFaultRateFields: FaultMix.rate's case i is the field faultKinds[i]
// names ("row-fault" is RowFault), and every field has a kind.
func TestFaultRateFields(t *testing.T) {
	fields := map[string]bool{}
	for i, k := range faultKinds {
		var m FaultMix
		*m.rate(i) = 1
		v := reflect.ValueOf(m)
		want := ""
		for w := range strings.SplitSeq(k.name, "-") {
			want += strings.ToUpper(w[:1]) + w[1:]
		}
		for f := range v.NumField() {
			if v.Field(f).Kind() == reflect.Float64 && v.Field(f).Float() == 1 {
				if got := v.Type().Field(f).Name; got != want {
					t.Errorf("fault %s: rate(%d) is field %s, want %s %s", k.name, i, got, want, repro(t))
				}
				fields[want] = true
			}
		}
	}
	for f := range reflect.TypeFor[FaultMix]().NumField() {
		if name := reflect.TypeFor[FaultMix]().Field(f).Name; name != "_" && !fields[name] {
			t.Errorf("field %s has no fault kind %s", name, repro(t))
		}
	}
}

func TestParseFaultMixErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"fault nosuch rate=0.1", `line 1: unknown fault "nosuch"`},
		{"fault row-fault rate=0.1\nfault row-fault rate=0.2", "line 2: fault row-fault already set on line 1"},
		{"\nfault row-fault rate=2", `line 2: fault row-fault: rate "2" is not a number in [0, 1]`},
		{"fault row-fault rate=-0", ""},
		{"fault row-fault rate=NaN", `rate "NaN"`},
		{"fault row-fault 0.1", `line 1: "fault row-fault 0.1": want`},
		{"fault row-fault rate=0.1 extra", "line 1:"},
		{"flt row-fault rate=0.1", "line 1:"},
		{"# comment\n\nfault delay rate=1", ""},
	} {
		_, err := ParseFaultMix(c.text)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("ParseFaultMix(%q) = %v, want success %s", c.text, err, repro(t))
		case c.want != "" && (!errors.Is(err, ErrBadFaultMix) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("ParseFaultMix(%q) = %v, want ErrBadFaultMix containing %q %s", c.text, err, c.want, repro(t))
		}
	}
}

func TestConfig(t *testing.T) {
	s := sim.New(sim.Options{})
	store, _ := NewStore(StoreOptions{})
	t.Run("defaults", func(t *testing.T) {
		d := New(s, store, Config{})
		if d.Capabilities() != DefaultCaps || d.Name() != "mem" {
			t.Errorf("zero Config: caps %+v, name %q %s", d.Capabilities(), d.Name(), repro(t))
		}
	})
	region := drivers.Region{Label: "a", SlotBytes: 8, Slots: 1, Mem: make(drivers.Bytes, 8)}
	for _, c := range []struct {
		name string
		rt   sim.Runtime
		st   *Store
		cfg  Config
	}{
		{"no-runtime", nil, store, Config{}},
		{"no-store", s, nil, Config{}},
		{"max-rows-0", s, store, Config{Caps: drivers.Capabilities{CanFetch: true}}},
		{"no-direction", s, store, Config{Caps: drivers.Capabilities{MaxRowsPerOp: 2}}},
		{"bad-rate", s, store, Config{Faults: FaultMix{Delay: math.Inf(1)}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := New(c.rt, c.st, c.cfg)
			if _, err := d.Register(region); !errors.Is(err, ErrBadConfig) || !errors.Is(err, drivers.ErrRegistrationRefused) {
				t.Errorf("Register = %v, want ErrBadConfig refusal %s", err, repro(t))
			}
			if _, err := d.Submit(drivers.RowBatch{Dir: drivers.Fetch, Rows: rows(1, "k")}, nil); !errors.Is(err, ErrBadConfig) || !errors.Is(err, drivers.ErrInvalidSubmission) {
				t.Errorf("Submit = %v, want ErrBadConfig %s", err, repro(t))
			}
			if _, err := d.Contains(context.Background(), nil); !errors.Is(err, ErrBadConfig) {
				t.Errorf("Contains = %v, want ErrBadConfig %s", err, repro(t))
			}
			if labels := d.Shutdown(context.Background()); len(labels) != 0 {
				t.Errorf("Shutdown = %v %s", labels, repro(t))
			}
		})
	}
	t.Run("max-rows", func(t *testing.T) {
		d := New(s, store, Config{Caps: drivers.Capabilities{MaxRowsPerOp: 1, CanPublish: true}})
		h, err := d.Register(drivers.Region{Label: "m", SlotBytes: 8, Slots: 2, Mem: make(drivers.Bytes, 16)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Submit(drivers.RowBatch{Dir: drivers.Publish, Rows: rows(h, "a", "b")}, nil); !errors.Is(err, drivers.ErrInvalidSubmission) {
			t.Errorf("2 rows over MaxRowsPerOp 1 = %v %s", err, repro(t))
		}
		if _, err := d.Submit(drivers.RowBatch{Dir: drivers.Publish, Rows: rows(h, "a")}, nil); err != nil {
			t.Errorf("1 row at MaxRowsPerOp 1 = %v %s", err, repro(t))
		}
		if _, err := d.Contains(context.Background(), []string{"a", "b"}); err == nil {
			t.Errorf("lookup of 2 keys over MaxRowsPerOp 1 succeeded %s", repro(t))
		}
		d.Shutdown(context.Background())
	})
}

func TestPendingCalls(t *testing.T) {
	e := newEnv(t, kinds[0], envOpts{})
	h := e.register(e.arena("a", 8, 8))
	var hs []string
	for i := 0; i < 11; i++ {
		e.submit(drivers.Publish, []drivers.Row{{Key: fmt.Sprint("k", i), Handle: h, Slot: i % 8}})
		if i == 7 {
			e.run()
		}
	}
	hs = e.d.PendingCalls()
	want := []string{"call 9 (PUBLISH, 1 rows, access PENDING)", "call 10 (PUBLISH, 1 rows, access PENDING)", "call 11 (PUBLISH, 1 rows, access PENDING)"}
	if strings.Join(hs, "|") != strings.Join(want, "|") {
		t.Errorf("PendingCalls = %q, want %q %s", hs, want, repro(t))
	}
	e.run()
	if hs := e.d.PendingCalls(); len(hs) != 0 {
		t.Errorf("PendingCalls after idle = %q %s", hs, repro(t))
	}
}

func ExampleDescribeSwarm() {
	fmt.Print(DescribeSwarm(1))
	// Output:
	// # memdriver swarm seed=1
	// fault row-fault rate=0.056
	// fault stale-lookup rate=0.0873
	// fault evict rate=0.0079
	// fault submit-reject rate=0.106
	// fault submit-error rate=0.0335
	// fault error-before rate=0.0102
	// fault late-write rate=0.0217
	// fault timeout rate=0.0165
	// fault unprovable-later rate=0.00393
	// fault register-refused rate=0.00369
	// fault rollback-fail rate=0.0961
	// fault unregister-fail rate=0.0264
	// fault unregister-stuck rate=0.0757
}

// TestRound3 checks Swarm's rounding against the string round trip it
// replaces, on the rates Swarm draws, on others in (0, 1) and on exact
// halfway cases (dyadic rates with a fourth digit 5, rounded to even).
func TestRound3(t *testing.T) {
	r := sim.NewRand(1)
	xs := []float64{0.3125, 0.0625, 0.15625, 0.5, 0.9995, 0.00099951, 1e-7, 0.7}
	for i := range 200_000 {
		xs = append(xs, faultKinds[i%len(faultKinds)].swarmMax*math.Pow(10, -2*r.Float64()), r.Float64())
	}
	for _, x := range xs {
		want, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
		if got := round3(x); got != want {
			t.Fatalf("round3(%v) = %v, want %v %s", x, got, want, repro(t))
		}
	}
}

// TestAppendRate checks the fast path of FaultMix.String against
// strconv.AppendFloat(b, r, 'g', -1, 64): every rate it can take (m/10^k of
// three digits, and the k around them), Swarm's rates, and odd ones.
func TestAppendRate(t *testing.T) {
	xs := []float64{1, 0.5, 0.05, 0.9995, 0.99951, 1e-4, 9.99e-5, 1e-5, 0.3125, 1e-7, 0.1 + 0.2, math.SmallestNonzeroFloat64}
	for m := 1; m <= 1000; m++ {
		for k := range 9 {
			xs = append(xs, float64(m)/pow10[k])
		}
	}
	r := sim.NewRand(3)
	for i := range 100_000 {
		xs = append(xs, round3(faultKinds[i%len(faultKinds)].swarmMax*math.Pow(10, -2*r.Float64())), r.Float64(), r.Float64()/1e4)
	}
	for _, x := range xs {
		if got, want := string(appendRate([]byte("rate="), x)), "rate="+strconv.FormatFloat(x, 'g', -1, 64); got != want {
			t.Fatalf("appendRate(%v) = %q, want %q %s", x, got, want, repro(t))
		}
	}
}

// TestCanonicalLine checks the fast path of the fault-line parser against
// the general one: every line, canonical or not, reads the same (the same
// mix, or an error from both).
func TestCanonicalLine(t *testing.T) {
	r := sim.NewRand(2)
	lines := []string{"fault delay rate=0.", "fault delay rate=.", "fault delay rate=.5", "fault delay rate=1.0",
		"fault delay rate=1.01", "fault delay rate=9999999999999999", "fault delay rate=0.000000000000001",
		"fault delay rate=1e-05", "fault delay  rate=0.1", "fault delay rate=0.1 ", "fault nope rate=0.1",
		"fault delay rate=", "fault delay rate=0..1", "fault delay rate=-0.1", "fault delay"}
	const digits = "0123456789"
	for range 100_000 {
		n := 1 + r.Intn(17)
		b := []byte("fault row-fault rate=")
		point := r.Intn(n + 1)
		for j := range n {
			if j == point {
				b = append(b, '.')
			}
			b = append(b, digits[r.Intn(10)])
		}
		if r.Intn(2) == 0 {
			b[len("fault row-fault rate=")] = '0'
		}
		lines = append(lines, string(b))
	}
	for _, line := range lines {
		var fast, general faultParser
		fast.n, general.n = 1, 1
		errFast, errGeneral := fast.line(line), general.general(line)
		if fast.m != general.m || (errFast == nil) != (errGeneral == nil) {
			t.Fatalf("%q: fast path %+v, %v; general %+v, %v %s", line, fast.m, errFast, general.m, errGeneral, repro(t))
		}
	}
}
