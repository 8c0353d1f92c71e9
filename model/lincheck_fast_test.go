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
	witnessedLong := 0 // keys longer than a search window the fast path decided
	for seed := range uint64(150) {
		for _, perKey := range []int{1, 2, 4, 8} {
			for _, sm := range []StoreModel{DurableStore, EvictingStore} {
				evict := 0.0
				if sm == EvictingStore {
					evict = 0.05
				}
				// About 40 operations per key, or 150: past one search
				// window (64), so the window slides.
				keys := 8
				if seed%3 == 0 {
					keys = 2
				}
				h := genHistory(seed, genOptions{ops: 300, keys: keys, perKey: perKey, fault: 0.05, evict: evict})
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
					witnessedLong += countWitnessedLong(hh, sm)
				}
			}
		}
	}
	if seen[porcupine.Ok] == 0 || seen[porcupine.Illegal] == 0 {
		t.Fatalf("outcomes %v: both legal and illegal histories must be compared (repro: %s)", seen, repro)
	}
	if witnessedLong == 0 {
		t.Fatalf("no key longer than the search window (%d) was decided by the fast path: the sliding window went untested (repro: %s)", searchWindow, repro)
	}
}

// countWitnessedLong counts the keys of h longer than one search window for
// which sequentialOK finds a witness.
func countWitnessedLong(h History, sm StoreModel) int {
	m, err := sm.Model()
	if err != nil {
		panic(err)
	}
	ops, _ := prepare(h, sm)
	n := 0
	var w witness
	for _, p := range partitionByKey(ops) {
		if len(p) > searchWindow && w.sequentialOK(m, p) {
			n++
		}
	}
	return n
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

// TestWitnessesRespectRealTime: small histories whose verdict turns on real
// time: an operation the fast path placed before its call, or after its
// return, would turn an illegal history legal, and a legal one needs an
// in-flight publish placed early (between a lookup that found the key absent
// and one that found it present). Each is checked with the fast path and by
// porcupine alone, against the verdict it must have.
func TestWitnessesRespectRealTime(t *testing.T) {
	const repro = "go test ./model -run TestWitnessesRespectRealTime"
	lookup := func(found bool, at int64) Op {
		st := drivers.Miss
		if found {
			st = drivers.OK
		}
		return Op{Kind: KindLookup, Key: "k", Status: st, Call: at, Return: at}
	}
	publish := func(v uint64, call, ret int64) Op {
		return Op{Kind: KindPublish, Key: "k", Status: drivers.OK, Value: v, Call: call, Return: ret}
	}
	fetch := func(v uint64, call, ret int64) Op {
		return Op{Kind: KindFetch, Key: "k", Status: drivers.OK, Value: v, Call: call, Return: ret}
	}
	cases := []struct {
		name string
		h    History
		want porcupine.CheckResult
	}{
		{"found before the publish was called", History{lookup(true, 5), publish(1, 10, 20)}, porcupine.Illegal},
		{"read before the publish was called", History{fetch(1, 0, 5), publish(1, 10, 20)}, porcupine.Illegal},
		{"absent after the publish returned", History{publish(1, 0, 10), lookup(false, 15)}, porcupine.Illegal},
		{"in-flight publish placed between absent and found", History{lookup(false, 1), publish(1, 2, 40), lookup(false, 5), lookup(true, 20)}, porcupine.Ok},
		{"read of a publish still in flight", History{lookup(false, 1), publish(1, 2, 40), lookup(false, 3), publish(2, 4, 50), fetch(1, 10, 20)}, porcupine.Ok},
	}
	t.Cleanup(func() { porcupineOnly = false })
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, only := range []bool{false, true} {
				porcupineOnly = only
				if got := Check(c.h, DurableStore, 0).Outcome; got != c.want {
					t.Fatalf("porcupine only=%v: %v, want %v (repro: %s)", only, got, c.want, repro)
				}
			}
		})
	}
}
