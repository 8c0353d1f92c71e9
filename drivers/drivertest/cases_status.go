package drivertest

import (
	"bytes"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
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
// FAULT; the monitor judges each row against the store.
func caseAbsentIsMiss(w *world) {
	if !w.caps.AbsentIsMiss {
		w.skip("the driver declares AbsentIsMiss=false: a FETCH of an absent key may FAULT")
	}
	a, h := w.region(32, 32)
	for range 1 + w.pick(3, 1) {
		ct := w.run(drivers.Fetch, w.rows(a, h, w.keys(w.batchSize(4))...))
		w.checkFetch(ct, nil)
	}
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
	if _, err := w.d.Contains(bg(), w.keys(m)); err != nil && w.store != nil && w.faults == (memdriver.FaultMix{}) {
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
