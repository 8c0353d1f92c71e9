package fuzz

import (
	"testing"

	"github.com/storesim/storesim/fuzz/engine"
)

// BenchmarkDecodeRun is one FuzzOpLog execution without the fuzzing engine:
// decode a ~100-op corpus input and run it through every check. Its inverse
// is the best execs/s one fuzz worker can reach.
func BenchmarkDecodeRun(b *testing.B) {
	engine.TuneFuzzGC() // as FuzzOpLog runs
	ins := corpusInputs()
	ops, steps := 0, uint64(0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		l, ok := Decode(ins[i%len(ins)])
		if !ok {
			b.Fatal("corpus input decodes to nothing runnable")
		}
		ops += len(l.Ops)
		res := engine.Run(l, engine.Config{Lean: true}) // as FuzzOpLog runs it
		if res.Verdict != engine.Pass {
			b.Fatal(opLogFailure(res))
		}
		steps += res.Steps
	}
	b.ReportMetric(float64(ops)/float64(b.N), "ops/exec")
	b.ReportMetric(float64(steps)/float64(b.N), "events/exec")
}

// BenchmarkDecode is the decoder alone.
func BenchmarkDecode(b *testing.B) {
	engine.TuneFuzzGC() // as FuzzOpLog runs
	ins := corpusInputs()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Decode(ins[i%len(ins)])
	}
}
