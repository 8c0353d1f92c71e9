package model

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
)

// genOptions shapes a generated history.
type genOptions struct {
	ops    int     // completed row operations
	keys   int     // distinct keys
	perKey int     // clients per key: at most this many overlapping ops on a key
	fault  float64 // chance a result is FAULT (a faulted publish lands half the time)
	evict  float64 // chance a fetch of a present key finds it evicted (evicting store)
}

// genHistory plays clients against a correct store, one event per step:
// a client either calls (fetch 60 %, publish 40 %, unique value) or returns,
// and the store acts at the return, which lies inside the operation — so
// the history is linearizable by construction (durable when evict is 0).
func genHistory(seed uint64, o genOptions) History {
	rng := sim.NewRand(seed)
	state := make([]uint64, o.keys)
	busy := make([]int, o.keys*o.perKey) // index+1 of the op in flight
	h := make(History, 0, o.ops+len(busy))
	var seq int64
	var val [8]byte
	for done := 0; done < o.ops; {
		seq++
		c := rng.Intn(len(busy))
		k := c / o.perKey
		if busy[c] == 0 {
			op := Op{Key: fmt.Sprintf("key-%04d", k), Call: seq, Return: Never, CallID: drivers.CallID(len(h) + 1),
				CallAt: time.Duration(seq) * time.Microsecond}
			if rng.Chance(0.4) {
				binary.LittleEndian.PutUint64(val[:], uint64(len(h)+1))
				op.Kind, op.Value = KindPublish, Digest(val[:])
			} else {
				op.Kind = KindFetch
			}
			h = append(h, op)
			busy[c] = len(h)
			continue
		}
		op := &h[busy[c]-1]
		busy[c] = 0
		done++
		op.Return, op.ReturnAt = seq, time.Duration(seq)*time.Microsecond
		switch {
		case op.Kind == KindPublish && rng.Chance(o.fault):
			op.Status = drivers.Fault
			if state[k] == 0 && rng.Chance(0.5) {
				state[k] = op.Value
			}
		case op.Kind == KindPublish:
			op.Status = drivers.OK
			if state[k] == 0 {
				state[k] = op.Value
			} else if rng.Chance(0.5) {
				op.Status = drivers.Miss // already present: declined
			}
		case rng.Chance(o.fault):
			op.Status = drivers.Fault
		default:
			if state[k] != 0 && rng.Chance(o.evict) {
				state[k] = 0
			}
			op.Status = drivers.Miss
			if state[k] != 0 {
				op.Status, op.Value = drivers.OK, state[k]
			}
		}
	}
	return h
}

// TestGeneratedHistoriesPass: correct histories pass both profiles (a
// durable history is also an evicting one); evicting ones pass the
// evicting profile; and one read of a never-published value fails.
func TestGeneratedHistoriesPass(t *testing.T) {
	mutated := 0
	defer func() {
		if !t.Failed() && mutated == 0 {
			t.Errorf("no late-read mutation was planted: the test proves nothing (repro: go test ./model -run TestGeneratedHistoriesPass)")
		}
	}()
	for seed := uint64(1); seed <= 20; seed++ {
		for _, c := range []struct {
			name     string
			evict    float64
			profiles []StoreModel
		}{
			{"durable", 0, []StoreModel{DurableStore, EvictingStore}},
			{"evicting", 0.2, []StoreModel{EvictingStore}},
		} {
			h := genHistory(seed, genOptions{ops: 2000, keys: 20, perKey: 8, fault: 0.05, evict: c.evict})
			for _, p := range c.profiles {
				if res := Check(h, p, 0); !res.Ok() {
					t.Fatalf("seed %d %s history under %v: %v (repro: go test ./model -run TestGeneratedHistoriesPass)", seed, c.name, p, res)
				}
			}
			bad := append(History(nil), h...)
			for i := range bad {
				if bad[i].Kind == KindFetch && bad[i].Status == drivers.OK {
					bad[i].Value = v9
					break
				}
			}
			if res := Check(bad, EvictingStore, 0); res.Outcome != porcupine.Illegal {
				t.Fatalf("seed %d: a read of a never-published value passed: %v (repro: go test ./model -run TestGeneratedHistoriesPass)", seed, res)
			}
			if c.evict == 0 {
				for _, m := range lateMutations(h) {
					mutated++
					if res := Check(m.h, DurableStore, 0); res.Outcome != porcupine.Illegal {
						t.Fatalf("seed %d: %s passed the durable model: %v (repro: go test ./model -run TestGeneratedHistoriesPass)", seed, m.name, res)
					}
				}
			}
		}
	}
}

// lateMutations plants, in a durable history, a read called after the
// key's value was first read that disagrees with it: one returns another
// value published on the key, one misses. The durable pre-pass drops late
// reads that agree; these must stay and fail.
func lateMutations(h History) []struct {
	name string
	h    History
} {
	firstRead := map[string]int{} // key → index of the earliest-returning FETCH OK
	other := map[string]uint64{}  // key → a published value other than the first read's
	for i, op := range h {
		if op.Kind == KindFetch && op.Status == drivers.OK {
			if j, ok := firstRead[op.Key]; !ok || op.Return < h[j].Return {
				firstRead[op.Key] = i
			}
		}
	}
	for _, op := range h {
		if j, ok := firstRead[op.Key]; ok && op.Kind == KindPublish && op.Value != h[j].Value {
			other[op.Key] = op.Value
		}
	}
	var out []struct {
		name string
		h    History
	}
	for i, op := range h {
		j, ok := firstRead[op.Key]
		w, hasOther := other[op.Key]
		if !ok || !hasOther || op.Kind != KindFetch || op.Status != drivers.OK || op.Call <= h[j].Return {
			continue
		}
		wrong := append(History(nil), h...)
		wrong[i].Value = w
		miss := append(History(nil), h...)
		miss[i].Status, miss[i].Value = drivers.Miss, 0
		out = append(out, struct {
			name string
			h    History
		}{fmt.Sprintf("late read %d of another published value", i), wrong},
			struct {
				name string
				h    History
			}{fmt.Sprintf("late read %d missing", i), miss})
		if len(out) >= 4 {
			break
		}
	}
	return out
}
