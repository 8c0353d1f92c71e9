package engine

import (
	"testing"
	"time"
)

// BenchmarkRunSeed is the full pipeline per seed: generate a 100-op log, run
// it on the scheduler with the monitor, recorder, lender and backend, and
// run every check (porcupine included). Reported as seeds/s and events/seed
// so `make bench` can set it next to the bare scheduler loop.
//
//	go test -bench RunSeed -run '^$' ./fuzz/engine
func BenchmarkRunSeed(b *testing.B) {
	var steps uint64
	seed := uint64(0)
	for b.Loop() {
		res := RunSeed(seed, Config{Lean: true}) // as the swarm runs it: every check on
		if res.Verdict != Pass {
			b.Fatalf("%s (repro: %s)", res.Summary(), res.Repro())
		}
		steps += res.Steps
		seed++
	}
	b.ReportMetric(float64(seed)/b.Elapsed().Seconds(), "seeds/s")
	b.ReportMetric(float64(steps)/float64(seed), "events/seed")
}

// BenchmarkModelCost is what the reference model of the backend
// (model/refine) costs: the same seeds with and without it, alternating in
// one loop, so the ratio holds on a noisy machine. Reported as with/without
// (wall time per seed).
//
//	go test -bench ModelCost -run '^$' -count 5 ./fuzz/engine
func BenchmarkModelCost(b *testing.B) {
	var with, without time.Duration
	seed := uint64(0)
	for b.Loop() {
		for _, off := range []bool{seed%2 == 0, seed%2 != 0} {
			t0 := time.Now()
			res := RunSeed(seed, Config{noModel: off, Lean: true})
			if res.Verdict != Pass {
				b.Fatalf("%s (repro: %s)", res.Summary(), res.Repro())
			}
			if off {
				without += time.Since(t0)
			} else {
				with += time.Since(t0)
			}
		}
		seed++
	}
	b.ReportMetric(float64(with)/float64(without), "with/without")
}
