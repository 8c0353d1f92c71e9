package model

import (
	"fmt"
	"testing"
)

// BenchmarkCheck: porcupine check time of generated correct histories of
// 1k/10k/100k row operations, 100 operations per key, at most 8 overlapping
// operations per key, 5 % faults (ambiguous publishes included). Goal: at
// most 20 ms per 10k operations.
//
//	go test -bench Check -run '^$' ./model
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		for _, p := range []Profile{Durable, Evicting} {
			h := genHistory(uint64(n), genOptions{ops: n, keys: n / 100, perKey: 8, fault: 0.05})
			b.Run(fmt.Sprintf("ops=%d/%v", n, p), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if res := Check(h, p, 0); !res.Ok() {
						b.Fatalf("%v (repro: go test -bench 'Check/ops=%d' -run '^$' ./model)", res, n)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000/float64(n)*10_000, "ms/10k-ops")
			})
		}
	}
}
