package engine

import (
	"strings"
	"testing"

	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/sim"
)

// TestScheduleReplays: a run's recorded decisions, written into the log as
// its sched script, print, parse back and replay to the same trace hash and
// verdict, under the random policy and PCT — and the reference drivers pass
// PCT runs too.
func TestScheduleReplays(t *testing.T) {
	for _, cfg := range []Config{{}, {Sched: sim.PCT, Depth: 3}} {
		decisions := 0
		for seed := range uint64(40) {
			log := Plan(seed, cfg)
			sc, res := ScheduleOf(log, cfg)
			if res.Verdict != Pass {
				var b strings.Builder
				res.WriteReport(&b)
				t.Fatalf("%v seed %d: %s", cfg.Sched, seed, b.String())
			}
			decisions += sc.Decisions()
			scripted := *log
			scripted.Sched = workload.Sched{Script: sc}
			parsed, err := workload.Parse(scripted.String())
			if err != nil {
				t.Fatalf("%v seed %d: the scripted log does not parse back: %v (repro: go test ./fuzz/engine -run TestScheduleReplays)", cfg.Sched, seed, err)
			}
			again := Run(parsed, Config{})
			if again.TraceHash != res.TraceHash || again.Verdict != res.Verdict {
				t.Fatalf("%v seed %d: the script of %d decisions replays to trace %016x (%s), the run was %016x (%s) (repro: go test ./fuzz/engine -run TestScheduleReplays)",
					cfg.Sched, seed, sc.Decisions(), again.TraceHash, again.Verdict, res.TraceHash, res.Verdict)
			}
		}
		if decisions == 0 {
			t.Fatalf("%v: 40 seeds made no non-default decision: the replay check proves nothing (repro: go test ./fuzz/engine -run TestScheduleReplays)", cfg.Sched)
		}
	}
}

// TestPCTDiffers: PCT is deterministic from the seed and its runs differ
// from the random policy's on the same logs; a generated PCT log says so.
func TestPCTDiffers(t *testing.T) {
	same := 0
	for seed := range uint64(20) {
		cfg := Config{Sched: sim.PCT, Depth: 2}
		a, b := RunSeed(seed, cfg), RunSeed(seed, cfg)
		if a.TraceHash != b.TraceHash {
			t.Fatalf("seed %d: PCT gave traces %016x and %016x (repro: go test ./fuzz/engine -run TestPCTDiffers)", seed, a.TraceHash, b.TraceHash)
		}
		if !strings.Contains(a.Log.String(), "\nsched pct depth=2 steps=0\n") || !strings.Contains(a.Repro(), "--sched pct --depth 2") {
			t.Fatalf("seed %d: the PCT log or repro does not name the policy: %q (repro: go test ./fuzz/engine -run TestPCTDiffers)", seed, a.Repro())
		}
		if RunSeed(seed, Config{}).TraceHash == a.TraceHash {
			same++
		}
	}
	if same > 2 {
		t.Fatalf("%d of 20 seeds ran the same under PCT and random (repro: go test ./fuzz/engine -run TestPCTDiffers)", same)
	}
}
