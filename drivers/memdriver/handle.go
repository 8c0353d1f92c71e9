package memdriver

import "github.com/storesim/storesim/drivers"

// callHandle is the drivers.Call handed to the caller.
type callHandle struct {
	d *Driver
	c *call
}

// ID implements drivers.Call.
func (h *callHandle) ID() drivers.CallID { return h.c.id }

// Results implements drivers.Call: a snapshot, one entry per row in batch
// order (D-STATUS).
func (h *callHandle) Results() []drivers.Status {
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	if len(h.c.results) == 0 {
		return nil // what a copy of nothing has always been
	}
	return append(h.d.statusSlab.Make(len(h.c.results))[:0], h.c.results...)
}

// Access implements drivers.Call (D-ACCESS).
func (h *callHandle) Access() drivers.Access {
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	return h.c.access
}

// Cancel implements drivers.Call (D-CAN-1, D-CAN-2): it never blocks, marks
// the rows not started NOT_ATTEMPTED and lets transfers in flight finish
// (completion may win). It never sets access itself: a settle event ends it
// once nothing is in flight.
func (h *callHandle) Cancel() drivers.CancelResult {
	d, c := h.d, h.c
	d.mu.Lock()
	if !d.caps.CanCancel {
		d.mu.Unlock()
		return drivers.CancelUnsupported
	}
	done := true
	for i := range c.rows {
		if !c.results[i].Final() {
			done = false
			if c.rs[i].phase == rowIdle {
				d.completeRow(c, i, drivers.NotAttempted)
			}
		}
	}
	if done {
		d.mu.Unlock()
		return drivers.CancelAlreadyDone
	}
	if h := d.hooks; h != nil && h.Access != nil {
		if a := h.Access(AccessChange{Call: c.id, From: c.access, To: c.access, Cancel: true}); a != c.access {
			d.setAccess(c, a)
		}
	}
	d.afterRun(0, d.lblSettle, (*callSettle)(c))
	d.unlockAndWake()
	return drivers.CancelRequested
}

// Run is the call's notification (sim.Runner, through its wake).
func (c *call) Run() { c.handle.d.runNotify(c) }

// AppendResults implements monitor.ResultsAppender: the Results snapshot
// appended to dst, so a reader that only looks reuses its buffer.
func (h *callHandle) AppendResults(dst []drivers.Status) []drivers.Status {
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	return append(dst, h.c.results...)
}

// AppendState implements monitor.StateAppender: Access and AppendResults
// as one snapshot, under one lock.
func (h *callHandle) AppendState(dst []drivers.Status) ([]drivers.Status, drivers.Access) {
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	return append(dst, h.c.results...), h.c.access
}
