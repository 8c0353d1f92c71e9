package memdriver

import (
	"time"

	"github.com/storesim/storesim/sim"
)

// A call's scheduled events are sim.Runners made of memory the call already
// has (its rows, or the call itself under another method set), so that on
// the simulator scheduling one costs no closure. Each event is the same as
// the closure it replaces: same label, delay and draw order.

// afterRunner is a runtime that schedules a [sim.Runner] itself (sim.AfterRun).
type afterRunner interface {
	AfterRun(time.Duration, string, sim.Runner) sim.Timer
}

// afterRun schedules r.Run, delay from now (sim.AfterRun). Caller holds
// d.mu. It asks whether the runtime is an afterRunner once, not per event.
func (d *Driver) afterRun(delay time.Duration, label string, r sim.Runner) {
	if !d.rtAsked {
		d.rtRunner, _ = d.rt.(afterRunner)
		d.rtAsked = true
	}
	if d.rtRunner != nil {
		d.rtRunner.AfterRun(delay, label, r)
		return
	}
	sim.AfterRun(d.rt, delay, label, r)
}

// Run is every event of its row (rowStep): a row's events never overlap,
// so one Runner serves them all.
func (rs *rowState) Run() { rs.c.handle.d.rowStep(rs.c, int(rs.i)) }

// callBegin is the call's begin event.
type callBegin call

func (c *callBegin) Run() {
	d := c.handle.d
	d.mu.Lock()
	d.begin((*call)(c))
}

// callTimeout is the call's timeout event (plan.timeoutAt).
type callTimeout call

func (c *callTimeout) Run() { c.handle.d.timeout((*call)(c)) }

// callProof is the event that proves an UNPROVABLE call's access ENDED.
type callProof call

func (c *callProof) Run() { c.handle.d.proof((*call)(c)) }

// callSettle is the event after a cancel that lets a quiet call end.
type callSettle call

func (c *callSettle) Run() { c.handle.d.settle((*call)(c)) }
