package shrink

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/fuzz/workload"
)

// plantedKey wraps a reference driver so that a FETCH naming one key loses
// every change callback: a planted D-CB-2 breach that only that key pattern
// triggers, so the shrinker has something specific to keep.
type plantedKey struct {
	drivers.Driver
	key string
}

func (p plantedKey) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	if b.Dir == drivers.Fetch && slices.Contains(b.Keys(), p.key) {
		onChange = func() {}
	}
	return p.Driver.Submit(b, onChange)
}

func planted(key string) engine.Config {
	return engine.Config{Factory: func(name string, env registry.Env) (drivers.Driver, error) {
		d, err := registry.New(name, env)
		if err != nil {
			return nil, err
		}
		return plantedKey{d, key}, nil
	}}
}

// failingSeed finds a generated log that the planted driver fails.
func failingSeed(t *testing.T, profile engine.Profile, cfg engine.Config) (*workload.Log, *engine.Result) {
	t.Helper()
	cfg.Profile = profile
	for seed := range uint64(40) {
		log := engine.Plan(seed, cfg)
		if res := engine.Run(log, cfg); res.Verdict == engine.Safety && res.Rule() == rules.DCB2 {
			return log, res
		}
	}
	t.Fatalf("no seed of 40 fails with the planted D-CB-2 (repro: go test ./fuzz/shrink -run %s)", t.Name())
	return nil, nil
}

// TestShrinkPlanted: a planted failure in a 100-op generated log shrinks to
// at most 10 ops that still fail with the same rule, the shrunk log prints,
// parses and replays to the same trace hash, and the shrink is a local
// minimum (Done) within the run cap.
func TestShrinkPlanted(t *testing.T) {
	for _, profile := range []engine.Profile{engine.Calm, engine.Default} {
		t.Run(string(profile), func(t *testing.T) {
			repro := fmt.Sprintf("(repro: go test ./fuzz/shrink -run 'TestShrinkPlanted/%s')", profile)
			cfg := planted("k1")
			log, orig := failingSeed(t, profile, cfg)
			var steps []Progress
			res, err := Shrink(log, Options{Config: cfg, MaxRuns: 3000, Progress: func(p Progress) { steps = append(steps, p) }})
			if err != nil {
				t.Fatalf("%v %s", err, repro)
			}
			size := SizeOf(res.Log)
			t.Logf("seed %d: %s -> %s in %d runs", log.Seed, res.Original, size, res.Runs)
			if size.Ops > 10 || !res.Done {
				t.Fatalf("shrunk to %s (done %v), want <= 10 ops and a local minimum %s", size, res.Done, repro)
			}
			if res.Rule != orig.Rule() || res.Run.Rule() != orig.Rule() || res.Run.Verdict != orig.Verdict {
				t.Fatalf("shrunk log fails with %s/%s, the original with %s/%s %s", res.Run.Verdict, res.Run.Rule(), orig.Verdict, orig.Rule(), repro)
			}
			if len(steps) == 0 || steps[len(steps)-1].Size != size {
				t.Fatalf("progress reports %v do not end at the final size %s %s", steps, size, repro)
			}
			shutdowns := 0
			for _, op := range res.Log.Ops {
				if op.Kind == workload.Shutdown {
					shutdowns++
				}
			}
			if shutdowns != len(res.Log.Endpoints) {
				t.Fatalf("shrunk log has %d shutdowns for %d endpoints: a fixed driver would fail it with B-SHUT %s", shutdowns, len(res.Log.Endpoints), repro)
			}
			if r := engine.Run(res.Log, engine.Config{}); r.Verdict != engine.Pass {
				t.Fatalf("the shrunk log fails on the unplanted driver too (%s): it does not isolate the plant %s", r.Summary(), repro)
			}
			if profile == engine.Default && size.Faults != 0 {
				t.Errorf("fault lines survived the shrink though the planted failure needs none: %s %s", size, repro)
			}
			text := res.Text("min.oplog", "storesim replay --seed 1")
			again, err := workload.Parse(text)
			if err != nil {
				t.Fatalf("the written file does not parse: %v %s", err, repro)
			}
			if r := engine.Run(again, cfg); r.TraceHash != res.Run.TraceHash || r.Rule() != res.Rule {
				t.Fatalf("the written file replays to %016x/%s, the shrink saw %016x/%s %s", r.TraceHash, r.Rule(), res.Run.TraceHash, res.Rule, repro)
			}
			for _, want := range []string{"rule D-CB-2", "# replay: storesim replay min.oplog", fmt.Sprintf("# trace %016x", res.Run.TraceHash)} {
				if !strings.Contains(text, want) {
					t.Fatalf("the file header lacks %q:\n%s %s", want, text, repro)
				}
			}
		})
	}
}

// TestShrinkDeterministic: the same log and options give the same result.
func TestShrinkDeterministic(t *testing.T) {
	cfg := planted("k1")
	log, _ := failingSeed(t, engine.Default, cfg)
	a, errA := Shrink(log, Options{Config: cfg, MaxRuns: 200})
	b, errB := Shrink(log, Options{Config: cfg, MaxRuns: 200})
	if err := errors.Join(errA, errB); err != nil {
		t.Fatal(err)
	}
	if a.Log.String() != b.Log.String() || a.Runs != b.Runs {
		t.Fatalf("two shrinks differ:\n%s\n%s (repro: go test ./fuzz/shrink -run TestShrinkDeterministic)", a.Log, b.Log)
	}
}

// TestShrinkBudget: MaxRuns and Stop end the shrink early with a log that
// still fails, marked not done.
func TestShrinkBudget(t *testing.T) {
	cfg := planted("k1")
	log, orig := failingSeed(t, engine.Default, cfg)
	polls := 0
	cases := []struct {
		name string
		opts Options
		max  int
	}{
		{"max-runs", Options{Config: cfg, MaxRuns: 5}, 5},
		{"stop", Options{Config: cfg, Stop: func() bool { polls++; return polls > 3 }}, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Shrink(log, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Done || res.Runs > tc.max || res.Run.Rule() != orig.Rule() {
				t.Fatalf("done %v after %d runs (cap %d), rule %s (want %s) (repro: go test ./fuzz/shrink -run 'TestShrinkBudget/%s')", res.Done, res.Runs, tc.max, res.Run.Rule(), orig.Rule(), tc.name)
			}
			if !strings.Contains(res.Text("", ""), "stopped by the budget") {
				t.Fatalf("an unfinished shrink does not say so (repro: go test ./fuzz/shrink -run 'TestShrinkBudget/%s')", tc.name)
			}
		})
	}
}

func TestShrinkPassingLog(t *testing.T) {
	_, err := Shrink(engine.Plan(1, engine.Config{Ops: 20}), Options{})
	if !errors.Is(err, ErrNotFailing) {
		t.Fatalf("shrinking a passing log: %v, want ErrNotFailing (repro: go test ./fuzz/shrink -run TestShrinkPassingLog)", err)
	}
}

// TestDropOps: dropping ops drops the cancels of dropped targets and
// renumbers the others; the result parses.
func TestDropOps(t *testing.T) {
	log, err := workload.Parse(`storesim-oplog v1
seed 1
endpoint A regions=r:4x16
op at=0us publish A keys=a mask=1
op at=0us probe A overlap
op at=1us fetch A keys=b mask=1
op at=2us fetch A keys=c mask=1
op at=3us cancel 2
op at=4us cancel 3
op at=5us shutdown A
op at=6us probe A after-shutdown
`)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		drop []int
		want []string // op lines without the time
	}{
		{"first", []int{0}, []string{"probe A overlap", "fetch A keys=b", "fetch A keys=c", "cancel 1", "cancel 2", "shutdown A", "probe A after-shutdown"}},
		{"target", []int{2}, []string{"publish A keys=a", "probe A overlap", "fetch A keys=c", "cancel 2", "shutdown A", "probe A after-shutdown"}},
		{"both-targets", []int{2, 3}, []string{"publish A keys=a", "probe A overlap", "shutdown A", "probe A after-shutdown"}},
		{"cancel-only", []int{4}, []string{"publish A keys=a", "probe A overlap", "fetch A keys=b", "fetch A keys=c", "cancel 3", "shutdown A", "probe A after-shutdown"}},
		{"probes", []int{1, 7}, []string{"publish A keys=a", "fetch A keys=b", "fetch A keys=c", "cancel 1", "cancel 2", "shutdown A"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			drop := make([]bool, len(log.Ops))
			for _, i := range tc.drop {
				drop[i] = true
			}
			out := DropOps(log, drop)
			if _, err := workload.Parse(out.String()); err != nil {
				t.Fatalf("%v (repro: go test ./fuzz/shrink -run 'TestDropOps/%s')", err, tc.name)
			}
			var got []string
			for _, op := range out.Ops {
				line := op.String()
				line = line[strings.Index(line, "us ")+3:]
				line, _, _ = strings.Cut(line, " mask=")
				got = append(got, line)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q (repro: go test ./fuzz/shrink -run 'TestDropOps/%s')", got, tc.want, tc.name)
			}
			if len(log.Ops) != 8 {
				t.Fatalf("DropOps changed its input (repro: go test ./fuzz/shrink -run 'TestDropOps/%s')", tc.name)
			}
		})
	}
}

// TestShrinkProbe: a failure only a driver probe finds (a stale close that
// takes the newer registration down, D-REG-3) shrinks to the probe and
// the shutdown: the probe names nothing, so every other op goes.
func TestShrinkProbe(t *testing.T) {
	const repro = "(repro: go test ./fuzz/shrink -run TestShrinkProbe)"
	cfg := engine.Config{Driver: "broken:CloseByAddress"}
	for seed := range uint64(40) {
		log := engine.Plan(seed, cfg)
		if res := engine.Run(log, cfg); res.Rule() != rules.DReg3 {
			continue
		}
		res, err := Shrink(log, Options{Config: cfg, MaxRuns: 2000})
		if err != nil {
			t.Fatalf("%v %s", err, repro)
		}
		var probes []workload.ProbeKind
		for _, op := range res.Log.Ops {
			if op.Kind == workload.Probe {
				probes = append(probes, op.Probe)
			}
		}
		if res.Rule != rules.DReg3 || !slices.Equal(probes, []workload.ProbeKind{workload.ProbeStaleClose}) || len(res.Log.Ops) > 2+len(res.Log.Endpoints) {
			t.Fatalf("seed %d shrunk to rule %s with probes %v:\n%s%s", seed, res.Rule, probes, res.Log, repro)
		}
		fixed := clone(res.Log)
		for i := range fixed.Endpoints {
			fixed.Endpoints[i].Driver = "memory"
		}
		if r := engine.Run(fixed, engine.Config{}); r.Verdict != engine.Pass {
			t.Fatalf("the shrunk log fails on the reference driver too: %s %s", r.Summary(), repro)
		}
		return
	}
	t.Fatalf("no seed of 40 fails broken:CloseByAddress with D-REG-3 %s", repro)
}
