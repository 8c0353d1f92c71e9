package drivertest

import (
	"bytes"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// The row-status groups: D-STATUS, D-MISS-HONEST and capabilities.

// D-STATUS: FETCH of present keys answers OK with the whole object in the
// slot.
func caseFetchPresent(w *world) {
	a, h := w.region(64, 32)
	keys := w.present(a, h, w.batchSize(4)+w.pick(4, 0))
	for i := 0; i < len(keys); i += w.caps.MaxRowsPerOp {
		ct := w.run(drivers.Fetch, w.rows(a, h, keys[i:min(len(keys), i+w.caps.MaxRowsPerOp)]...))
		w.checkFetch(ct, nil)
	}
}

// D-STATUS: FETCH of absent keys: MISS leaves the slot untouched, and OK is
// impossible.
func caseFetchAbsent(w *world) {
	a, h := w.region(32, 32)
	keys := w.keys(w.batchSize(4))
	rows := w.rows(a, h, keys...)
	fill(a, rowSlots(rows))
	ct := w.run(drivers.Fetch, rows)
	w.checkFetch(ct, nil)
	if ct.err != nil {
		return
	}
	res := ct.c.Results()
	pat := bytes.Repeat([]byte{0xA5}, 32)
	for i, r := range rows {
		if i < len(res) && (res[i] == drivers.Miss || res[i] == drivers.NotAttempted) && !bytes.Equal(a.Peek(r.Slot), pat) {
			w.fail(rules.DStatus, "FETCH row %d (absent key %q) answered %v but its slot was written", i, r.Key, res[i])
		}
	}
}

// D-STATUS: one result per row, in batch order: a batch mixing present and
// absent keys gets each row's own answer.
func caseMixedBatch(w *world) {
	if w.caps.MaxRowsPerOp < 2 {
		w.skip("MaxRowsPerOp is 1: no batch can mix keys")
	}
	a, h := w.region(64, 32)
	n := w.rowsMax(6)
	present := w.present(a, h, (n+1)/2)
	keys := append([]string(nil), present...)
	for len(keys) < n {
		keys = append(keys, w.key())
	}
	if w.directed {
		// present and absent alternate, so a shifted answer is wrong
		keys = interleave(present, keys[len(present):])
	} else {
		w.shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	}
	ct := w.run(drivers.Fetch, w.rows(a, h, keys...))
	w.checkFetch(ct, nil)
}

func interleave(a, b []string) []string {
	var out []string
	for i := 0; i < len(a) || i < len(b); i++ {
		if i < len(a) {
			out = append(out, a[i])
		}
		if i < len(b) {
			out = append(out, b[i])
		}
	}
	return out
}

// D-STATUS: an object whose size is not the slot's is never OK.
func caseSizeMismatch(w *world) {
	small, hs := w.region(16, 32)
	keys := w.present(small, hs, w.batchSize(2))
	for _, sb := range []int{64, 16} {
		big, hb := w.region(16, sb)
		ct := w.run(drivers.Fetch, w.rows(big, hb, keys...))
		w.checkFetch(ct, nil)
	}
}

// D-STATUS: PUBLISH OK means the store holds the object under the key.
func casePublishOK(w *world) {
	a, h := w.region(32, 32)
	keys := w.keys(w.batchSize(4))
	ct := w.run(drivers.Publish, w.rows(a, h, keys...))
	if ct.err != nil {
		return
	}
	res := ct.c.Results()
	for i, k := range keys {
		if i >= len(res) || res[i] != drivers.OK {
			continue
		}
		if present, known := w.truth(k); known && !present {
			w.fail(rules.DStatus, "PUBLISH row %d (key %q) answered OK but the store does not hold the key", i, k)
			continue
		}
		obj, ok := w.object(k)
		if !ok && w.caps.CanFetch {
			obj, _ = w.readBack(k, 32)
			ok = obj != nil
		}
		if ok && !bytes.Equal(obj, ct.content[i]) {
			w.fail(rules.DStatus, "PUBLISH row %d (key %q) answered OK but the store holds another object", i, k)
		}
	}
}

// D-MISS-HONEST: FETCH of an absent key is MISS (AbsentIsMiss), never
// FAULT. On a driver that reports its faults the monitor judges each row
// against the store; one that may fault on its own (a real transport, a
// third-party simulator) is asked again (askAbsentAgain).
func caseAbsentIsMiss(w *world) {
	if !w.caps.AbsentIsMiss {
		w.skip("the driver declares AbsentIsMiss=false: a FETCH of an absent key may FAULT")
	}
	a, h := w.region(32, 32)
	faulted := ""
	for range 1 + w.pick(3, 1) {
		keys := w.keys(w.batchSize(4))
		ct := w.run(drivers.Fetch, w.rows(a, h, keys...))
		w.checkFetch(ct, nil)
		if ct.err != nil || faulted != "" || w.faultsKnown {
			continue
		}
		res := ct.c.Results()
		for i, k := range keys {
			if present, known := w.truth(k); i < len(res) && res[i] == drivers.Fault && known && !present {
				faulted = k
				break
			}
		}
	}
	if faulted != "" {
		w.askAbsentAgain(faulted)
	}
}

// absentAsks is how many more times askAbsentAgain fetches a key: an
// honest driver whose transport faults one row in three still answers
// FAULT all 12 times only once in half a million (3^12).
const absentAsks = 12

// askAbsentAgain: a key known absent was answered FAULT by a driver that
// may fault on its own. A transport fault is rare and strikes any key; a
// miss reported as a fault strikes the absent key every time while a
// present key beside it reads back. So the key is fetched again, each time
// in one call with a key just made present: a MISS settles it; FAULT every
// time while the present key answered OK in most of those calls is
// D-MISS-HONEST; a store that faulted the present key half the time or
// more tells nothing (an outage is all FAULT, which is allowed), and the
// run is skipped.
func (w *world) askAbsentAgain(key string) {
	a, h := w.region(8*absentAsks, 32) // a present key may take a few publishes
	ok := 0
	for range absentAsks {
		ks := []string{key}
		if w.caps.CanPublish || w.store != nil {
			ks = append(ks, w.present(a, h, 1)...)
		}
		var res []drivers.Status
		if w.caps.MaxRowsPerOp >= len(ks) {
			if ct := w.run(drivers.Fetch, w.rows(a, h, ks...)); ct.err == nil {
				res = ct.c.Results()
			}
		} else {
			for _, k := range ks {
				if ct := w.run(drivers.Fetch, w.rows(a, h, k)); ct.err == nil {
					res = append(res, ct.c.Results()...)
				}
			}
		}
		if len(res) != len(ks) {
			continue // refused: it says nothing about the key
		}
		if present, known := w.truth(key); !known || present {
			return // no longer known absent
		}
		if res[0] != drivers.Fault {
			return // MISS (or the monitor judged what else it was)
		}
		if len(ks) > 1 && res[1] == drivers.OK {
			ok++
		}
	}
	if 2*ok <= absentAsks {
		w.skip("FETCH of a key known absent answered FAULT %d times, and a key beside it read back only %d of %d times: a faulting store cannot be told from a miss reported as a fault", 1+absentAsks, ok, absentAsks)
	}
	w.fail(rules.DMissHonest, "FETCH of key %q, known absent, answered FAULT %d times in a row while a present key in the same call answered OK %d times: a miss reported as a fault", key, 1+absentAsks, ok)
}

// D-MISS-HONEST: a transport error on a present key is FAULT, never MISS
// (with injected row faults; the monitor judges each row).
func caseFaultIsNotMiss(w *world) {
	a, h := w.region(96, 32)
	keys := w.present(a, h, 4+w.pick(6, 4))
	for i := 0; i < len(keys); i += w.caps.MaxRowsPerOp {
		w.submit(drivers.Fetch, w.rows(a, h, keys[i:min(len(keys), i+w.caps.MaxRowsPerOp)]...))
	}
	w.settle()
}

// capabilities: the declaration is usable and honoured: full-size batches
// (exactly MaxRowsPerOp rows) work as well as smaller ones.
func caseFullSizeBatches(w *world) {
	if err := w.caps.Check(); err != nil {
		w.fail(rules.DCaps, "the declared capabilities are unusable: %v", err)
		return
	}
	m := w.caps.MaxRowsPerOp
	if m > 48 {
		w.skip("MaxRowsPerOp is %d: full-size batches are not built above 48 rows", m)
	}
	a, h := w.region(40*m+32, 32)
	small := func() int {
		if m == 1 {
			return 1
		}
		return 1 + w.pick(m-1, 0)
	}
	rounds := 6 + w.pick(4, 0)
	var full [][]string
	if w.caps.CanPublish {
		for range rounds {
			ks := w.keys(m)
			full = append(full, ks)
			w.submit(drivers.Publish, w.rows(a, h, ks...))
			w.submit(drivers.Publish, w.rows(a, h, w.keys(small())...))
		}
		w.settle()
	} else {
		for range rounds {
			full = append(full, w.present(a, h, m))
		}
	}
	if w.caps.CanFetch {
		for _, ks := range full {
			if len(ks) != m {
				continue
			}
			ct := w.run(drivers.Fetch, w.rows(a, h, ks...))
			w.checkFetch(ct, nil)
			w.run(drivers.Fetch, w.rows(a, h, ks[:small()]...))
		}
	}
	if _, err := w.d.Contains(bg(), w.keys(m)); err != nil && w.faultFree() {
		w.fail(rules.DCaps, "a lookup of MaxRowsPerOp=%d keys failed with no fault injected: %v", m, err)
	}
}

// capabilities: a driver that does not declare CanCancel never answers
// REQUESTED (the monitor judges); one that does may.
func caseCancelDeclaration(w *world) {
	a, h := w.region(16, 32)
	ct := w.submit(w.anyDir(), w.rows(a, h, w.keys(w.batchSize(2))...))
	if ct.err == nil {
		ct.c.Cancel()
	}
	w.settle()
}
