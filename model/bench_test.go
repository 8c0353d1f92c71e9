package model

import (
	"fmt"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/arena"
)

// BenchmarkCheck: S-LIN check time (the pre-pass, the witness search, and
// porcupine for the keys the search cannot show) of generated correct histories of
// 1k/10k/100k row operations, 100 operations per key, at most 8 overlapping
// operations per key (4.4 on average), 5 % faults (ambiguous publishes
// included); the evicting histories also evict (2 % of reads of a present
// key miss). Goal: at most 20 ms per 10k operations.
//
//	go test -bench Check -run '^$' ./model
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		for _, p := range []StoreModel{DurableStore, EvictingStore} {
			evict := 0.0
			if p == EvictingStore {
				evict = 0.02 // a cache that drops keys: MISS after OK
			}
			h := genHistory(uint64(n), genOptions{ops: n, keys: n / 100, perKey: 8, fault: 0.05, evict: evict})
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

// BenchmarkRecorder: the recorder's cost per row operation on the
// simulator's hot path (submit, final, access, callback, one touch).
//
//	go test -bench Recorder -run '^$' ./model
func BenchmarkRecorder(b *testing.B) {
	mem := make(drivers.Bytes, 64*256)
	var rec *Recorder
	id := drivers.CallID(0)
	b.ReportAllocs()
	for b.Loop() {
		if id%1024 == 0 { // a fresh recorder per run of 1024 calls
			rec = NewRecorder(RecorderOptions{})
			rec.Registered(0, 1, drivers.Region{Label: "B", SlotBytes: 256, Slots: 64, Mem: mem})
		}
		id++
		dir := drivers.Fetch
		if id%2 == 0 {
			dir = drivers.Publish
		}
		bt := drivers.RowBatch{Dir: dir, Rows: []drivers.Row{{Key: "k", Handle: 1, Slot: int(id % 64)}}}
		rec.Submitted(0, id, bt, nil)
		rec.OnTouch(arena.Touch{By: drivers.Toucher{Call: id}})
		rec.RowFinal(0, id, 0, drivers.OK)
		rec.AccessChanged(0, id, drivers.AccessEnded)
		rec.Callback(0, id)
	}
}
