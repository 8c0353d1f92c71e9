package procdriver

import (
	"slices"

	"github.com/storesim/storesim/drivers"
)

// call is one accepted call. Its state is what the process's change
// notifications last said; the parent never makes it up, except when the
// process is gone (every row without a result FAULT, access ENDED).
type call struct {
	d        *Driver
	id       drivers.CallID
	dir      drivers.Direction
	rows     []drivers.Row
	onChange func()

	// Guarded by d.mu.
	results    []drivers.Status
	access     drivers.Access
	wrote      []bool // a change of row i's slot was seen (an audit wrote it into the caller's memory)
	started    bool   // "start" was sent
	cancelSent bool
	notes      int // change notifications received
	cbQueued   bool
	cbRunning  int
}

var _ drivers.Call = (*call)(nil)

// ID implements drivers.Call.
func (c *call) ID() drivers.CallID { return c.id }

// Results implements drivers.Call.
func (c *call) Results() []drivers.Status {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	return slices.Clone(c.results)
}

// Access implements drivers.Call.
func (c *call) Access() drivers.Access {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	return c.access
}

// Cancel implements drivers.Call: it answers from what the process last
// reported and sends it a one-way cancel, once; it never waits for the
// process (D-CAN-1).
func (c *call) Cancel() drivers.CancelResult {
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(c.results) == len(c.rows) && !slices.ContainsFunc(c.results, func(s drivers.Status) bool { return !s.Final() }) {
		return drivers.CancelAlreadyDone
	}
	if !d.caps.CanCancel {
		return drivers.CancelUnsupported
	}
	if !c.cancelSent && c.started && !d.dead && !d.wclose {
		c.cancelSent = true
		d.sendLocked(request{Op: "cancel", Call: uint64(c.id)})
	}
	return drivers.CancelRequested
}
