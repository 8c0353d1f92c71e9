package model

import (
	"math/rand"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/arena"
)

// refTouch is OnTouch's selection as its doc states it, one key per kind
// of touch in a map: the recorder marks most kinds in the call's record
// instead, and must keep exactly the same touches.
type refTouch struct {
	seen map[touchKey]bool
	late map[drivers.Toucher]bool
	kept []stampedTouch
}

func (x *refTouch) on(r *Recorder, t arena.Touch, regIdx func(string) int32) {
	seq := r.cur()
	k := touchKey{by: t.By, op: t.Op, region: regIdx(t.Region), slot: t.Slot}
	keep := !x.seen[k]
	if !keep && !x.late[t.By] && r.endedLocked(t.By.Call) != 0 {
		keep = true
		x.late[t.By] = true
	}
	if !keep {
		return
	}
	x.seen[k] = true
	if r.endedLocked(t.By.Call) != 0 {
		x.late[t.By] = true
	}
	x.kept = append(x.kept, stampedTouch{Touch: t, seq: seq, online: true})
}

// TestOnTouchKeepsWhatTheKeyedRuleKeeps runs random touches — of a row's
// own slot and of others, by known calls, unknown ones and rows beyond
// the marks in the record, before and after ENDED and Submitted — through
// OnTouch and the rule it implements, and wants the same touches kept.
func TestOnTouchKeepsWhatTheKeyedRuleKeeps(t *testing.T) {
	for it := 0; it < 2000; it++ {
		rng := rand.New(rand.NewSource(int64(it)))
		r := NewRecorder(RecorderOptions{})
		x := &refTouch{seen: map[touchKey]bool{}, late: map[drivers.Toucher]bool{}}
		labels := map[string]int32{}
		regIdx := func(l string) int32 {
			if i, ok := labels[l]; ok {
				return i
			}
			labels[l] = int32(len(labels))
			return labels[l]
		}
		regs := []string{"A", "B"}
		for i, l := range regs {
			r.Registered(0, drivers.Handle(i+1), drivers.Region{Label: l, Slots: 4, SlotBytes: 8})
		}
		type call struct {
			id   drivers.CallID
			rows []drivers.Row
		}
		var calls []call
		nrows := []int{1, 2, 3, 25}
		for ev := 0; ev < 200; ev++ {
			switch rng.Intn(6) {
			case 0:
				id := drivers.CallID(rng.Intn(40) + 1)
				if rng.Intn(10) == 0 {
					id += 1000000
				}
				n := nrows[rng.Intn(len(nrows))]
				rows := make([]drivers.Row, n)
				for j := range rows {
					rows[j] = drivers.Row{Key: "k", Handle: drivers.Handle(rng.Intn(2) + 1), Slot: rng.Intn(4)}
				}
				calls = append(calls, call{id, rows})
				r.Submitted(0, id, drivers.RowBatch{Dir: drivers.Fetch, Rows: rows}, nil)
			case 1:
				id := drivers.CallID(rng.Intn(42) + 1)
				r.AccessChanged(0, id, drivers.AccessEnded)
			default:
				var tt arena.Touch
				if len(calls) > 0 && rng.Intn(4) != 0 {
					c := calls[rng.Intn(len(calls))]
					row := rng.Intn(len(c.rows) + 1)
					tt.By = drivers.Toucher{Call: c.id, Row: row}
					if row < len(c.rows) && rng.Intn(3) != 0 {
						tt.Region, tt.Slot = regs[c.rows[row].Handle-1], c.rows[row].Slot
					} else {
						tt.Region, tt.Slot = regs[rng.Intn(2)], rng.Intn(5)-1
					}
				} else {
					tt.By = drivers.Toucher{Call: drivers.CallID(rng.Intn(42) + 1), Row: rng.Intn(3) - 1}
					tt.Region, tt.Slot = regs[rng.Intn(2)], rng.Intn(4)
				}
				tt.Op = arena.Op(rng.Intn(2) + 1)
				tt.At = 5
				r.mu.Lock()
				x.on(r, tt, regIdx)
				r.mu.Unlock()
				r.OnTouch(tt)
			}
		}
		if len(x.kept) != len(r.touches) {
			t.Fatalf("run %d: kept %d touches, the rule keeps %d (repro: go test ./model -run TestOnTouchKeepsWhatTheKeyedRuleKeeps)", it, len(r.touches), len(x.kept))
		}
		for i := range x.kept {
			if x.kept[i] != r.touches[i] {
				t.Fatalf("run %d: kept touch %d is %+v, the rule keeps %+v (repro: go test ./model -run TestOnTouchKeepsWhatTheKeyedRuleKeeps)", it, i, r.touches[i], x.kept[i])
			}
		}
	}
}
