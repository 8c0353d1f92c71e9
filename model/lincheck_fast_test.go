package model

import (
	"fmt"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
)

// TestSequentialMatchesPorcupine: Check with the sequential fast path gives
// the verdict porcupine alone gives, on correct histories and on histories
// made wrong (a fetch that returns a value never published, a miss after a
// durable publish), for keys with one client (sequential: the fast path
// decides) and several (porcupine decides), both store models.
func TestSequentialMatchesPorcupine(t *testing.T) {
	const repro = "go test ./model -run TestSequentialMatchesPorcupine"
	t.Cleanup(func() { porcupineOnly = false })
	seen := map[porcupine.CheckResult]int{}
	for seed := range uint64(150) {
		for _, perKey := range []int{1, 2, 4} {
			for _, sm := range []StoreModel{DurableStore, EvictingStore} {
				evict := 0.0
				if sm == EvictingStore {
					evict = 0.05
				}
				h := genHistory(seed, genOptions{ops: 200, keys: 8, perKey: perKey, fault: 0.05, evict: evict})
				for _, spoil := range []int{0, 1, 2} {
					hh := spoilHistory(h, seed, spoil)
					name := fmt.Sprintf("seed=%d/perKey=%d/%v/spoil=%d", seed, perKey, sm, spoil)
					porcupineOnly = false
					fast := Check(hh, sm, 0)
					porcupineOnly = true
					slow := Check(hh, sm, 0)
					porcupineOnly = false
					if fast.Outcome != slow.Outcome || fmt.Sprint(fast.IllegalKeys) != fmt.Sprint(slow.IllegalKeys) {
						t.Fatalf("%s: fast path %v %v, porcupine %v %v (repro: %s)", name, fast.Outcome, fast.IllegalKeys, slow.Outcome, slow.IllegalKeys, repro)
					}
					seen[fast.Outcome]++
				}
			}
		}
	}
	if seen[porcupine.Ok] == 0 || seen[porcupine.Illegal] == 0 {
		t.Fatalf("outcomes %v: both legal and illegal histories must be compared (repro: %s)", seen, repro)
	}
}

// spoilHistory returns h, or a copy made wrong: 1 turns a fetch OK into a
// read of a value nobody published, 2 turns a fetch OK into a MISS.
func spoilHistory(h History, seed uint64, how int) History {
	if how == 0 {
		return h
	}
	out := append(History(nil), h...)
	r := sim.NewRand(seed*7 + uint64(how))
	var oks []int
	for i, op := range out {
		if op.Kind == KindFetch && op.Status == drivers.OK {
			oks = append(oks, i)
		}
	}
	if len(oks) == 0 {
		return out
	}
	i := oks[r.Intn(len(oks))]
	switch how {
	case 1:
		out[i].Value ^= 0x5a5a5a5a
	case 2:
		out[i].Status, out[i].Value = drivers.Miss, 0
	}
	return out
}
