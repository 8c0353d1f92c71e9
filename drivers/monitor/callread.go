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

// Results implements drivers.Call; the answer is observed. It is the
// inner call's own snapshot, the caller's to keep or change.
func (c *callRec) Results() []drivers.Status {
	v := c.facts.Load()
	res := c.inner.Results()
	m := c.m
	m.mu.Lock()
	m.observeRowsLocked(c, res, c.knownAcc, v)
	m.mu.Unlock()
	return res
}

// AppendResults implements [ResultsAppender]: Results appended to dst, for
// a caller that reuses its buffer. The answer is observed.
func (c *callRec) AppendResults(dst []drivers.Status) []drivers.Status {
	v := c.facts.Load()
	n := len(dst)
	if a, ok := c.inner.(ResultsAppender); ok {
		dst = a.AppendResults(dst)
	} else {
		dst = append(dst, c.inner.Results()...)
	}
	m := c.m
	m.mu.Lock()
	m.observeRowsLocked(c, dst[n:], c.knownAcc, v)
	m.mu.Unlock()
	return dst
}

// Access implements drivers.Call; the answer is observed.
func (c *callRec) Access() drivers.Access {
	v := c.facts.Load()
	acc := c.inner.Access()
	ended := acc == drivers.AccessEnded
	var res []drivers.Status
	lent := false
	if ended {
		// Observers hear the rows' final results before ENDED: one that
		// releases memory on ENDED must not beat the recorder's read of a
		// FETCH slot.
		var buf []drivers.Status
		buf, lent = c.lendBuf()
		res = readResults(c.inner, buf)
	}
	m := c.m
	m.mu.Lock()
	if ended {
		m.observeRowsLocked(c, res, acc, v)
	}
	m.observeAccessLocked(c, acc, v)
	m.mu.Unlock()
	c.returnBuf(lent)
	return acc
}

// AccessPeeker is a call whose driver-side access can be read without the
// read being observed ([*Monitor]'s calls implement it).
type AccessPeeker interface{ PeekAccess() drivers.Access }

// PeekAccess reads the driver's access of the call without observing it: a
// judge's read (model/refine asks what a shutdown should have read), which
// must not teach the monitor, and so every check after it, a fact the code
// under test never read. PENDING until Submit returned.
func (c *callRec) PeekAccess() drivers.Access {
	if c.inner == nil {
		return drivers.AccessPending
	}
	return c.inner.Access()
}

// Cancel implements drivers.Call and checks D-CAN-1 and D-CAN-2 around the
// driver's Cancel.
func (c *callRec) Cancel() drivers.CancelResult {
	rec, m := c, c.m
	v0 := rec.facts.Load()
	res0, acc0 := readState(rec.inner, nil) // kept across Cancel: not the shared buffer
	if !appends(rec.inner) {
		res0 = slices.Clone(res0)
	}
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
	buf, lent := rec.lendBuf()
	defer rec.returnBuf(lent) // res1 is read until Cancel returns
	res1, acc1 := readState(rec.inner, buf)

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
	if blocked && waited(res0, res1, allFinal) {
		// An overrun alone is not blocking on a loaded machine: a cancel
		// that waits for the transfer returns with the transfer done.
		v(rules.DCan1, -1, "Cancel did not return within the bound and returned with the transfer done: rows %v were PENDING before it, every row was final after it (it waits for the transfer)", pendingIn(res0))
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

// readState reads a call's access before its results (into buf, see
// readResults). A conforming driver finalizes every row before access ENDS,
// so this order never pairs ENDED with rows that look pending; the other
// order can, on a concurrent driver, and an observer that releases memory
// on ENDED would then read a FETCH slot too late. A [StateAppender] reads
// both at once, one snapshot, which keeps that promise too.
func readState(c drivers.Call, buf []drivers.Status) ([]drivers.Status, drivers.Access) {
	if s, ok := c.(StateAppender); ok {
		return s.AppendState(buf[:0])
	}
	acc := c.Access()
	return readResults(c, buf), acc
}

// appends reports whether the monitor reads c's results into a buffer of
// its own (readResults, readState) rather than taking c's Results slice.
func appends(c drivers.Call) bool {
	switch c.(type) {
	case StateAppender, ResultsAppender:
		return true
	}
	return false
}

// readResults is c's results for the monitor to look at: appended to
// buf[:0] when c is a [ResultsAppender], else c's own Results.
func readResults(c drivers.Call, buf []drivers.Status) []drivers.Status {
	if a, ok := c.(ResultsAppender); ok {
		return a.AppendResults(buf[:0])
	}
	return c.Results()
}

// lendBuf lends the call's read buffer. The monitor's own reads of a call
// (callbacks, Access, Cancel, Drain, Shutdown, Finish) only look at the
// results, and are done with them before returnBuf, so one buffer per call
// serves them all instead of a copy per read. A read that races another on
// a concurrent driver finds the buffer lent and gets nil: a fresh slice.
// lent says whether returnBuf must give it back.
func (c *callRec) lendBuf() (buf []drivers.Status, lent bool) {
	if !c.bufLent.CompareAndSwap(false, true) {
		return nil, false
	}
	return c.rbuf[:0], true
}

// returnBuf gives back what lendBuf lent; the results read into it must not
// be used after this.
func (c *callRec) returnBuf(lent bool) {
	if lent {
		c.bufLent.Store(false)
	}
}

// waited tells whether the transfer finished while Cancel ran: every row
// was final when it returned, and some row went from PENDING to a
// transfer's end (OK, MISS or FAULT) — not to NOT_ATTEMPTED, which a
// cancel may answer at once for rows that never started.
func waited(res0, res1 []drivers.Status, allFinal bool) bool {
	if !allFinal || len(res0) != len(res1) {
		return false
	}
	for i := range res0 {
		if res0[i] == drivers.Pending && res1[i] != drivers.Pending && res1[i] != drivers.NotAttempted {
			return true
		}
	}
	return false
}

// pendingIn lists the rows still PENDING.
func pendingIn(res []drivers.Status) []int {
	var out []int
	for i, s := range res {
		if s == drivers.Pending {
			out = append(out, i)
		}
	}
	return out
}
