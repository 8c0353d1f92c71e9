package engine

import "testing"

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
