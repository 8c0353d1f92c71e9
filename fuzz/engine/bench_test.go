package engine

import "testing"

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
		res := RunSeed(seed, Config{})
		if res.Verdict != Pass {
			b.Fatalf("%s (repro: %s)", res.Summary(), res.Repro())
		}
		steps += res.Steps
		seed++
	}
	b.ReportMetric(float64(seed)/b.Elapsed().Seconds(), "seeds/s")
	b.ReportMetric(float64(steps)/float64(seed), "events/seed")
}
