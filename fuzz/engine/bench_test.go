package engine

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/storesim/storesim/sim/bareloop"
)

// BenchmarkRunSeed is the full pipeline per seed: generate a 100-op log, run
// it on the scheduler with the monitor, recorder, lender and backend, and
// run every check (porcupine included). Reported as seeds/s and events/seed
// so `make bench` can set it next to the bare scheduler loop.
//
//	go test -bench RunSeed -run '^$' ./fuzz/engine
func BenchmarkRunSeed(b *testing.B) {
	TuneGC() // as the swarm runs seeds (GOGC in the environment overrides it)
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

// BenchmarkPipelineVsBare is "pipeline/bare-loop" of make bench: one seed
// through the full checked pipeline (lean, as the swarm runs it), then the
// bare event loop (sim/bareloop) at the same event count, alternating in one
// loop so both see the same machine. Reported as the pipeline's event rate
// over the bare loop's (the median of the per-round ratios) and the
// pipeline's allocations per seed.
//
//	go test -bench PipelineVsBare -run '^$' ./fuzz/engine
func BenchmarkPipelineVsBare(b *testing.B) {
	TuneGC() // the main job's GC setting, for both loops
	var ratios []float64
	var mallocs uint64
	var ms runtime.MemStats
	seed := uint64(0)
	for b.Loop() {
		runtime.ReadMemStats(&ms)
		before := ms.Mallocs
		t0 := time.Now()
		res := RunSeed(seed, Config{Lean: true})
		pipe := time.Since(t0)
		runtime.ReadMemStats(&ms)
		mallocs += ms.Mallocs - before
		if res.Verdict != Pass {
			b.Fatalf("%s (repro: %s)", res.Summary(), res.Repro())
		}
		// The bare loop runs 20 times the seed's events, so its start-up
		// (the heap's first growth) does not count against it.
		t1 := time.Now()
		bareloop.Run(20 * int(res.Steps))
		bare := time.Since(t1) / 20
		ratios = append(ratios, float64(bare)/float64(pipe)) // = pipeline events/s ÷ bare events/s
		seed++
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "pipeline/bare-loop")
	b.ReportMetric(float64(mallocs)/float64(seed), "allocs/seed")
}

// BenchmarkFixedCost is the fixed cost of a run: 2-op seeds, run as the
// swarm runs them, so set-up (Plan, the endpoints, the oracles) and the
// checks dominate. A fuzz execution of a short log pays about this before
// its ops.
//
//	go test -bench FixedCost -run '^$' -benchmem ./fuzz/engine
func BenchmarkFixedCost(b *testing.B) {
	TuneGC()
	seed := uint64(0)
	for b.Loop() {
		res := RunSeed(seed, Config{Lean: true, Ops: 2})
		if res.Verdict != Pass {
			b.Fatalf("%s (repro: %s)", res.Summary(), res.Repro())
		}
		seed++
	}
}
