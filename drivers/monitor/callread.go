package monitor

// The monitored call as the caller holds it (drivers.Call): every read of results and access, and Cancel, observed. Moved out of call.go, unchanged.

import (
	"fmt"
	"slices"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// ID implements drivers.Call.
func (c *callRec) ID() drivers.CallID { return c.id }

// Results implements drivers.Call; the answer is observed.
func (c *callRec) Results() []drivers.Status {
	v := c.facts.Load()
	res := c.inner.Results()
	m := c.m
	m.mu.Lock()
	m.observeRowsLocked(c, res, c.knownAcc, v)
	m.mu.Unlock()
	return res
}

// Access implements drivers.Call; the answer is observed.
func (c *callRec) Access() drivers.Access {
	v := c.facts.Load()
	acc := c.inner.Access()
	var res []drivers.Status
	if acc == drivers.AccessEnded {
		// Observers hear the rows' final results before ENDED: one that
		// releases memory on ENDED must not beat the recorder's read of a
		// FETCH slot.
		res = c.inner.Results()
	}
	m := c.m
	m.mu.Lock()
	if res != nil {
		m.observeRowsLocked(c, res, acc, v)
	}
	m.observeAccessLocked(c, acc, v)
	m.mu.Unlock()
	return acc
}

// Cancel implements drivers.Call and checks D-CAN-1 and D-CAN-2 around the
// driver's Cancel.
func (c *callRec) Cancel() drivers.CancelResult {
	rec, m := c, c.m
	v0 := rec.facts.Load()
	res0, acc0 := readState(rec.inner)
	res0 = slices.Clone(res0)
	m.mu.Lock()
	m.observeLocked(rec, res0, acc0, v0)
	m.mu.Unlock()

	var r drivers.CancelResult
	blocked := false
	if m.opts.CancelBound != nil {
		var rb drivers.CancelResult // escapes with the closure: kept off the common path
		blocked = !m.opts.CancelBound(func() { rb = rec.inner.Cancel() })
		r = rb
	} else {
		r = rec.inner.Cancel()
	}
	v1 := rec.facts.Load()
	res1, acc1 := readState(rec.inner)

	m.mu.Lock()
	defer m.mu.Unlock()
	at := m.now()
	for _, o := range m.opts.Observers {
		o.Cancelled(at, rec.id, r)
	}
	m.observeLocked(rec, res1, acc1, v1)
	v := func(rule rules.ID, row int, format string, args ...any) {
		m.violateLocked(rules.Violation{Rule: rule, Call: uint64(rec.id), Row: row, Detail: fmt.Sprintf(format, args...)})
	}
	allFinal := len(res1) == len(rec.known)
	for _, s := range res1 {
		allFinal = allFinal && s.Final()
	}
	switch r {
	case drivers.CancelRequested:
		if !m.caps.CanCancel {
			v(rules.DCaps, -1, "Cancel answered REQUESTED although CanCancel is not declared")
		}
	case drivers.CancelUnsupported:
	case drivers.CancelAlreadyDone:
		if !allFinal {
			v(rules.DCan1, -1, "Cancel answered ALREADY_DONE while some row has no final result (%v)", res1)
		}
	default:
		v(rules.DCan1, -1, "Cancel answered the invalid value %d", r)
	}
	if blocked {
		v(rules.DCan1, -1, "Cancel did not return within the bound (it blocks)")
	}
	if m.opts.CancelBound != nil || len(res0) != len(rec.known) || len(res1) != len(rec.known) {
		return r
	}
	var completed, aborted, pending []int
	for i := range res1 {
		switch {
		case res0[i] == drivers.Pending && (res1[i] == drivers.OK || res1[i] == drivers.Miss):
			completed = append(completed, i)
		case res0[i] == drivers.Pending && res1[i] == drivers.Fault:
			aborted = append(aborted, i)
		case res1[i] == drivers.Pending:
			pending = append(pending, i)
		}
	}
	if len(completed) > 0 && acc0 == drivers.AccessPending && acc1.Evidenced() && allFinal {
		v(rules.DCan1, completed[0], "Cancel completed the transfer before returning: rows %v went PENDING → OK/MISS and access PENDING → %v inside Cancel", completed, acc1)
	}
	if acc0 != drivers.AccessEnded && acc1 == drivers.AccessEnded {
		switch {
		case acc0 == drivers.AccessUnprovable:
			v(rules.DCan2, -1, "Cancel turned UNPROVABLE access into ENDED; a cancel is never proof of access end")
		case len(pending) > 0:
			v(rules.DCan2, pending[0], "Cancel made access ENDED while rows %v are still PENDING (may still transfer)", pending)
		case len(aborted) > 0:
			v(rules.DCan2, aborted[0], "Cancel made access ENDED while aborting started rows %v (PENDING → FAULT); a cancel never proves access ended", aborted)
		}
	}
	return r
}

// readState reads a call's access before its results. A conforming driver
// finalizes every row before access ENDS, so this order never pairs ENDED
// with rows that look pending; the other order can, on a concurrent driver,
// and an observer that releases memory on ENDED would then read a FETCH
// slot too late.
func readState(c drivers.Call) ([]drivers.Status, drivers.Access) {
	acc := c.Access()
	return c.Results(), acc
}
