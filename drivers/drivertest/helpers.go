package drivertest

import (
	"bytes"
	"context"
	"fmt"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim/arena"
)

// Group preconditions: each says why a group cannot run ("" when it can).

func always(probe) string { return "" }

func needTogether(p probe) string {
	if !p.together {
		return "the driver does not offer together-registration (drivers.TogetherRegisterer)"
	}
	return ""
}

func needPublish(p probe) string {
	if !p.caps.CanPublish {
		return "the driver declares CanPublish=false"
	}
	return ""
}

func needFetch(p probe) string {
	if !p.caps.CanFetch {
		return "the driver declares CanFetch=false"
	}
	return ""
}

func needObjects(p probe) string {
	if !p.caps.CanFetch {
		return "the driver declares CanFetch=false"
	}
	if !p.caps.CanPublish && !p.store {
		return "the driver cannot publish and the store is not simulated: no object can be put in place"
	}
	return ""
}

func needAbsent(p probe) string {
	if !p.absent {
		return "no ground truth about absent keys (the store is not simulated and Harness.MakeAbsent is nil)"
	}
	return needFetch(p)
}

func needAll(needs ...func(probe) string) func(probe) string {
	return func(p probe) string {
		for _, n := range needs {
			if why := n(p); why != "" {
				return why
			}
		}
		return ""
	}
}

// region makes and registers a fresh region; label r<n>.
func (w *world) region(slots, slotBytes int) (*arena.Arena, drivers.Handle) {
	w.mu.Lock()
	label := fmt.Sprintf("r%d", len(w.arenas))
	w.mu.Unlock()
	a := w.arena(label, slots, slotBytes)
	return a, w.mustRegister(a)
}

// rowsMax is the largest batch a case may build: the declared
// MaxRowsPerOp, bounded by want.
func (w *world) rowsMax(want int) int { return max(1, min(w.caps.MaxRowsPerOp, want)) }

// batchSize is a batch size up to rowsMax(want): the directed run takes
// the largest.
func (w *world) batchSize(want int) int {
	m := w.rowsMax(want)
	return 1 + w.pick(m, m-1)
}

// dirs lists the directions the driver supports, FETCH first.
func (w *world) dirs() []drivers.Direction {
	var ds []drivers.Direction
	if w.caps.CanFetch {
		ds = append(ds, drivers.Fetch)
	}
	if w.caps.CanPublish {
		ds = append(ds, drivers.Publish)
	}
	return ds
}

// anyDir picks a supported direction (directed: the first).
func (w *world) anyDir() drivers.Direction {
	ds := w.dirs()
	return ds[w.pick(len(ds), 0)]
}

// run submits and settles.
func (w *world) run(dir drivers.Direction, rows []drivers.Row) *callT {
	ct := w.submit(dir, rows)
	w.settle()
	return ct
}

// present makes n fresh keys present in the store and returns those known
// present afterwards: published through the driver (in batches the driver
// accepts), or, for a fetch-only driver on the simulated store, put there
// directly (then S-LIN is not checked for the run, as the history lacks
// those writes).
func (w *world) present(a *arena.Arena, h drivers.Handle, n int) []string {
	all := w.keys(n)
	keys := all
	switch {
	case w.caps.CanPublish:
		// publish, and publish again what a fault kept out, a few times
		for range 4 {
			var todo []string
			for _, k := range keys {
				if !w.presentNow(k) {
					todo = append(todo, k)
				}
			}
			for len(todo) > 0 {
				k := min(len(todo), w.caps.MaxRowsPerOp)
				w.patient(drivers.Publish, w.rows(a, h, todo[:k]...))
				todo = todo[k:]
			}
			w.settle()
		}
	case w.store != nil:
		w.mu.Lock()
		w.extPuts = true
		w.mu.Unlock()
		for _, k := range keys {
			w.store.Put(k, w.content(a.Region().SlotBytes))
		}
	default:
		w.skip("no way to put objects in place: the driver does not publish and the store is not simulated")
	}
	var out []string
	for _, k := range all {
		if w.presentNow(k) {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		w.skip("no object could be put in place (no publish was known to have stored its key when the driver settled)")
	}
	return out
}

// checkFetch is the suite's own D-STATUS check of a settled FETCH: an OK
// row holds exactly the object the store holds (the whole object, exact
// size); OK for a key known absent is a lie; want, when set, is the object
// each row must hold if OK.
func (w *world) checkFetch(ct *callT, want map[string][]byte) {
	if ct.err != nil {
		return
	}
	res := ct.c.Results()
	if len(res) != len(ct.b.Rows) {
		return // the monitor reports the length (D-STATUS)
	}
	for i, r := range ct.b.Rows {
		if res[i] != drivers.OK {
			continue
		}
		obj, ok := want[r.Key]
		if !ok {
			present, known := w.truth(r.Key)
			switch {
			case known && !present:
				w.fail(rules.DStatus, "FETCH row %d (key %q) answered OK but the store does not hold the key", i, r.Key)
				continue
			case known:
				obj, ok = w.object(r.Key)
			}
		}
		a := w.arenaOf(r.Handle)
		if !ok || a == nil {
			continue
		}
		got := a.Peek(r.Slot)
		switch {
		case len(obj) != len(got):
			w.fail(rules.DStatus, "FETCH row %d (key %q) answered OK for a %d-byte object into a %d-byte slot (OK means the whole object, exact size)", i, r.Key, len(obj), len(got))
		case !bytes.Equal(obj, got):
			w.fail(rules.DStatus, "FETCH row %d (key %q) answered OK but the slot does not hold the object (%d of %d bytes differ)", i, r.Key, diffBytes(obj, got), len(obj))
		}
	}
}

func diffBytes(a, b []byte) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n + max(len(a), len(b)) - min(len(a), len(b))
}

// fill puts a recognisable pattern into slots so an untouched slot can be
// told from a written one.
func fill(a *arena.Arena, slots []int) {
	pat := bytes.Repeat([]byte{0xA5}, a.Region().SlotBytes)
	for _, s := range slots {
		a.Fill(s, pat)
	}
}

func rowSlots(rows []drivers.Row) []int {
	out := make([]int, len(rows))
	for i, r := range rows {
		out[i] = r.Slot
	}
	return out
}

// shuffle permutes n items with w.rnd (Fisher–Yates).
func (w *world) shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, w.rnd.Intn(i+1))
	}
}

// bg is the context of lookups: the simulated drivers answer at once, and a
// real driver's lookup is bounded by its own timeouts.
func bg() context.Context { return context.Background() }
