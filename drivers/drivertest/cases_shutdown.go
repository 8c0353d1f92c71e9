package drivertest

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// The lifecycle groups at the end of a driver's life: lookups, drain and
// shutdown.

// D-LOOK-1: one bool per key, in order; a lookup of more than MaxRowsPerOp
// keys is an error.
func caseLookupShape(w *world) {
	a, h := w.region(32, 32)
	var present []string
	if w.caps.CanPublish || w.store != nil {
		present = w.present(a, h, w.rowsMax(4))
	}
	keys := append([]string(nil), present...)
	for len(keys) < w.rowsMax(8) {
		keys = append(keys, w.key())
	}
	keys = keys[:w.rowsMax(8)]
	if w.directed {
		keys = interleave(keys[:len(keys)/2], keys[len(keys)/2:])
	} else {
		w.shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	}
	before := w.touches.Load()
	found, err := w.d.Contains(bg(), keys)
	if w.sched != nil && w.touches.Load() != before {
		w.fail(rules.DLook2, "Contains touched caller memory (%d touches during the lookup)", w.touches.Load()-before)
	}
	if err == nil && len(found) == len(keys) {
		for i, k := range keys {
			if p, known := w.truth(k); known && !p && found[i] {
				w.fail(rules.DLook1, "Contains answered present for key %d (%q), which the store does not hold: answers must be one per key, in order", i, k)
			}
		}
	}
	if m := w.caps.MaxRowsPerOp; m < 1024 {
		if _, err := w.d.Contains(bg(), w.keys(m+1)); err == nil {
			w.fail(rules.DLook1, "Contains answered a lookup of %d keys, more than MaxRowsPerOp=%d", m+1, m)
		}
	}
}

// D-LOOK-2: an outage or a wrong-length answer is an error wrapping
// ErrLookupFailed, never "absent" (the monitor compares with the store).
func caseLookupOutage(w *world) {
	a, h := w.region(32, 32)
	present := w.present(a, h, w.rowsMax(4))
	for range 4 + w.pick(8, 0) {
		keys := append([]string(nil), present...)
		if w.chance(0.5, false) {
			keys = append(keys[:0:0], w.key())
			keys = append(keys, present[:len(present)-1]...)
		}
		_, err := w.d.Contains(bg(), keys)
		if err != nil && !errors.Is(err, drivers.ErrLookupFailed) {
			w.fail(rules.DLook2, "a failed lookup returned %v, which does not wrap ErrLookupFailed", err)
		}
	}
}

// D-DRAIN-1: Drain stops admission at once (Submit then fails with
// ErrClosed), and reports honestly until every call has evidence.
func caseDrainStopsAdmission(w *world) {
	a, h := w.region(120, 32)
	w.load(a, h, 6+w.pick(8, 0), 0.1)
	for range w.pick(10, 3) {
		w.step()
	}
	w.startDrain()
	ct := w.submit(w.anyDir(), w.rows(a, h, w.key()))
	if ct.err == nil {
		w.fail(rules.DDrain1, "Submit after Drain was accepted (call %d); want ErrClosed", ct.c.ID())
	} else if !errors.Is(ct.err, drivers.ErrClosed) {
		w.fail(rules.DDrain1, "Submit after Drain failed with %v; want ErrClosed", ct.err)
	}
	w.settle()
	w.atRest() // every call evidenced, nothing runnable: the drain must be done
}

// D-DRAIN-1: a call that never gets evidence stays pending in every Drain,
// never reported as ended.
func caseDrainWithHungCall(w *world) {
	a, h := w.region(32, 32)
	for range 1 + w.pick(3, 0) {
		w.submit(w.anyDir(), w.rows(a, h, w.keys(w.batchSize(2))...))
	}
	w.startDrain()
	if w.sched != nil {
		_ = w.sched.RunUntilIdle(maxSimSteps)
	} else {
		w.runFor(50 * time.Millisecond)
	}
	w.drain()
}

// D-DRAIN-2: Drain reports done only after the last callback of every call
// ran; it is re-polled from every callback, as a backend does.
func caseDrainAfterLastCallback(w *world) {
	a, h := w.region(120, 32)
	w.load(a, h, 6+w.pick(8, 0), 0.2)
	for range w.pick(6, 1) {
		w.step()
	}
	w.startDrain()
	w.settle()
	w.until(w.drained)
	w.atRest() // and at rest it is done, whatever the calls ended with
}

// D-SHUT-1: Shutdown releases what it can and labels everything it holds;
// a clean driver returns no label.
func caseShutdownClean(w *world) {
	a, h := w.region(64, 32)
	w.region(8, 32)
	w.load(a, h, 4+w.pick(6, 0), 0.1)
	w.settle()
	w.shutdown()
}

// D-SHUT-1: calls in flight at Shutdown become UNPROVABLE and are labelled,
// with the regions they name.
func caseShutdownInFlight(w *world) {
	a, h := w.region(64, 32)
	w.load(a, h, 4+w.pick(6, 0), 0)
	w.stepsBeforeShutdown(12, 4)
	w.shutdown()
}

// D-SHUT-1: a region whose close fails forever is labelled.
func caseShutdownStuckRegion(w *world) {
	a, h := w.region(32, 32)
	w.region(8, 32)
	if w.caps.CanPublish {
		w.run(drivers.Publish, w.rows(a, h, w.key()))
	}
	w.shutdown()
}

// D-SHUT-2: Shutdown is idempotent: a second call retries what remains and
// returns only what is still held.
func caseShutdownTwice(w *world) {
	a, h := w.region(64, 32)
	w.region(8, 32)
	w.region(8, 32)
	w.load(a, h, 3+w.pick(5, 0), 0)
	w.stepsBeforeShutdown(8, 2)
	held := resources(w.shutdown())
	for round := range 1 + w.pick(2, 1) {
		again := resources(w.shutdown())
		for _, r := range again {
			if !slices.Contains(held, r) {
				w.fail(rules.DShut2, "shutdown #%d labelled %s, which the previous one did not: a repeat only retries what remained", round+2, r)
			}
		}
		held = again
	}
}

// resources strips the reason from shutdown labels: "call:7", "region:r0".
func resources(labels []string) []string {
	out := make([]string, len(labels))
	for i, l := range labels {
		if j := strings.LastIndexByte(l, ':'); j > 0 {
			l = l[:j]
		}
		out[i] = l
	}
	return out
}
