package drivertest

import (
	"errors"
	"fmt"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim/arena"
)

// Cases and helpers that judge every answer, not only the positive ones: a
// drain that says "not done", a row that says NOT_ATTEMPTED, a close that
// was refused, a lookup that answers for absent keys at the default row
// limit. (Shutdown labels are judged against the registrations by the
// monitor itself.)

// Fault mixes of these cases.
var (
	// unprovableMix leaves calls UNPROVABLE for ever (a wrong-length
	// answer, an error-after without proof) next to calls proven later.
	unprovableMix = memdriver.FaultMix{WrongLength: 0.5, ErrorAfter: 0.3, UnprovableLater: 0.3, Delay: 0.2}
	// someLookupFails is an outage on about every other lookup.
	someLookupFails = memdriver.FaultMix{LookupError: 0.5}
)

// atRest is the judgement of a drain at rest (D-DRAIN-1): on the simulator,
// once nothing is runnable, the monitor asks Drain again and, when every
// call has access evidence and every row a result, it must be done —
// UNPROVABLE is evidence, so a drain that waits for its proof, or for a
// call long ended, is never done. Real time has no "nothing runnable", so
// there the monitor judges only what Drain said along the way.
func (w *world) atRest() {
	if w.sched == nil || w.sched.RunUntilIdle(maxSimSteps) != nil {
		return
	}
	if st, judged := w.ep.Monitor.AtRest(); judged && st.Done {
		w.mu.Lock()
		w.drainDone = true
		w.mu.Unlock()
	}
}

// D-DRAIN-1 with an UNPROVABLE call: calls that stay UNPROVABLE (the driver
// stopped waiting) next to calls proven ENDED later; once nothing is
// runnable the drain must be done, and Shutdown then labels every
// UNPROVABLE call (the monitor judges both).
func caseUnprovableDrains(w *world) {
	a, h := w.region(64, 32)
	for range 3 + w.pick(4, 0) {
		w.submit(w.anyDir(), w.rows(a, h, w.keys(w.batchSize(4))...))
	}
	w.settle()
	unprovable := 0
	w.mu.Lock()
	calls := append([]*callT(nil), w.calls...)
	w.mu.Unlock()
	for _, ct := range calls {
		if ct.c.Access() == drivers.AccessUnprovable {
			unprovable++
		}
	}
	if unprovable == 0 {
		w.skip("no call stayed UNPROVABLE (Env.Faults WrongLength/ErrorAfter not honoured)")
	}
	w.startDrain()
	w.settle()
	w.atRest()
	w.shutdown()
}

// D-STATUS: a PUBLISH row reported NOT_ATTEMPTED never started, so the
// store was never written under its key. Every key is fresh and published
// by one row only, so a key the store holds afterwards was written by the
// row that says it never started. (On the simulated store the memory
// oracle also holds every put of the store's log against the rows' answers,
// in every case and every swarm run.)
func caseNotAttemptedNeverStored(w *world) {
	if !w.caps.CanCancel {
		w.skip("the driver declares CanCancel=false: no row can be NOT_ATTEMPTED by a cancel")
	}
	a, h := w.region(96, 32)
	var calls []*callT
	for i := range 4 + w.pick(6, 0) {
		ct := w.submit(drivers.Publish, w.rows(a, h, w.keys(w.batchSize(4))...))
		if ct.err != nil {
			continue
		}
		// directed: at once, and a little later for every other call
		for range w.pick(12, []int{0, 3}[i%2]) {
			w.step()
		}
		ct.c.Cancel()
		calls = append(calls, ct)
	}
	w.settle()
	var notAttempted []drivers.Row
	for _, ct := range calls {
		res := ct.c.Results()
		if len(res) != len(ct.b.Rows) {
			continue // the monitor reports the length (D-STATUS)
		}
		for i, r := range ct.b.Rows {
			if res[i] == drivers.NotAttempted {
				notAttempted = append(notAttempted, r)
			}
		}
	}
	if len(notAttempted) == 0 {
		w.skip("no cancelled PUBLISH row was NOT_ATTEMPTED (every row had started)")
	}
	stored := func(k string) bool {
		if w.store != nil {
			return w.store.Has(k)
		}
		found, err := w.d.Contains(bg(), []string{k})
		return err == nil && len(found) == 1 && found[0]
	}
	for _, r := range notAttempted {
		if stored(r.Key) {
			w.fail(rules.DStatus, "PUBLISH row of key %q (slot %d) was reported NOT_ATTEMPTED, yet the store holds the key, which no other row published: a NOT_ATTEMPTED publish never wrote the store", r.Key, r.Slot)
		}
	}
}

// aliasRefused registers a's memory once more, under a fresh label, and
// reports whether the driver refused it — as it must while a binding of
// that memory is live (D-REG-1). An accepted alias stays registered;
// Shutdown releases it.
func (w *world) aliasRefused(a *arena.Arena) bool {
	r := a.Region()
	w.mu.Lock()
	w.nkey++
	r.Label = fmt.Sprintf("%s-again%d", r.Label, w.nkey)
	w.mu.Unlock()
	_, err := w.registerRegion(r, nil)
	return err != nil
}

// refusedCloseKept judges a close of h that was refused (err): the binding
// must stay as it was — live, its memory still registered — so the same
// memory under another label is still refused. It is judged only when such
// a registration was refused before the close (control), so a driver that
// accepts overlaps anyway is left to D-REG-1. The finding is placed at the
// refusal (m): the monitor's D-REG-1 for the accepted alias follows from it.
// It reports whether it found the binding gone (the case should stop: the
// driver's view of the memory is no longer the caller's).
func (w *world) refusedCloseKept(a *arena.Arena, h drivers.Handle, err error, control bool, m mark) bool {
	if err == nil || !control || w.aliasRefused(a) {
		return false
	}
	rule := w.g.rule
	switch {
	case errors.Is(err, drivers.ErrBusy):
		rule = rules.DReg6
	case errors.Is(err, drivers.ErrUnregisterFailed):
		rule = rules.DReg4
	}
	w.finding(m, rules.Violation{Rule: rule, Row: -1, Region: a.Label(),
		Detail: fmt.Sprintf("Unregister of handle %d was refused (%v), yet the same memory then registered again under another label (refused before the close): the refusal did not leave the binding live", h, err)})
	return true
}

// lookupKeys is a lookup of exactly n keys, present and absent mixed:
// nPresent of present first, then fresh (absent) keys; the directed run
// interleaves them, the randomized runs shuffle.
func (w *world) lookupKeys(present []string, nPresent, n int) []string {
	keys := append([]string(nil), present[:min(nPresent, len(present))]...)
	p := len(keys)
	for len(keys) < n {
		keys = append(keys, w.key())
	}
	if w.directed {
		return interleave(keys[:p], keys[p:])
	}
	w.shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys
}

// fullLookups asks lookups of exactly MaxRowsPerOp keys — the default row
// limit, the size the backend sends most — mixing present and absent
// keys, then all absent, then all but one present. The monitor holds every
// answer against the store (present for a known-absent key is D-LOOK-1,
// absent for a known-present key D-LOOK-2); errors must wrap
// ErrLookupFailed (D-LOOK-2).
func (w *world) fullLookups() {
	m := w.caps.MaxRowsPerOp
	if m > 48 {
		w.skip("MaxRowsPerOp is %d: full-size lookups are not built above 48 keys", m)
	}
	a, h := w.region(5*m+16, 32)
	present := w.present(a, h, max(1, m-1))
	mixes := [][2]int{{max(1, m/2), m}, {0, m}, {m - 1, m}}
	if m == 1 {
		mixes = [][2]int{{1, 1}, {0, 1}}
	}
	if !w.directed {
		mixes = append(mixes, [2]int{1 + w.pick(m, 0), m})
	}
	for _, mix := range mixes {
		keys := w.lookupKeys(present, mix[0], mix[1])
		if _, err := w.d.Contains(bg(), keys); err != nil && !errors.Is(err, drivers.ErrLookupFailed) {
			w.fail(rules.DLook2, "a lookup of %d keys (MaxRowsPerOp) failed with %v, which does not wrap ErrLookupFailed", len(keys), err)
		}
	}
}

// D-LOOK-1: lookups at the default row limit with absent keys among them
// answer each key's own bool.
func caseFullLookupWithAbsent(w *world) { w.fullLookups() }

// D-LOOK-2: the same lookups under outages: an error, never "absent" (or
// "present") for what the store holds.
func caseFullLookupOutage(w *world) { w.fullLookups() }

// needLookupTruth: the full-size lookup cases need keys known present
// (published, or put in the simulated store) and keys known absent.
func needLookupTruth(p probe) string {
	if !p.absent {
		return "no ground truth about absent keys (the store is not simulated and Harness.MakeAbsent is nil)"
	}
	if !p.caps.CanPublish && !p.store {
		return "the driver cannot publish and the store is not simulated: no object can be put in place"
	}
	return ""
}

func needCancelPublish(p probe) string {
	if !p.caps.CanPublish {
		return "the driver declares CanPublish=false"
	}
	if !p.caps.CanCancel {
		return "the driver declares CanCancel=false"
	}
	return ""
}
