package engine

import (
	"fmt"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/model/lender"
)

// backendCheck watches, at the driver boundary, what the backend sends and
// what its calls answer, and judges the backend with it (the monitor judges
// the driver):
//
//   - B-CUT: every batch the backend submits has 1..MaxRowsPerOp rows and
//     pairwise distinct keys — a conforming driver refuses anything else,
//     and that refusal would otherwise pass as a quietly failed attempt;
//   - B-FETCH / B-PUBLISH: an attempt with a FAULT row in any of its calls
//     is Failed, never Delivered (no partial delivery).
//
// Calls are tied to attempts through their slots: a slot is lent to one
// attempt at a time and only re-lent after that attempt's access ENDED, so
// the owner of a row's slot when the call is submitted is its attempt.
type backendCheck struct {
	r       *run
	ep      *endpoint
	labels  map[drivers.Handle]string
	owner   map[lender.SlotRef]*opState
	calls   map[drivers.CallID]*opState
	faulted map[*opState]drivers.CallID
}

func newBackendCheck(r *run, ep *endpoint) *backendCheck {
	return &backendCheck{r: r, ep: ep, labels: map[drivers.Handle]string{},
		owner: map[lender.SlotRef]*opState{}, calls: map[drivers.CallID]*opState{}, faulted: map[*opState]drivers.CallID{}}
}

// lend records that st's attempt owns the loan's slots from now on. The
// check runs on the simulator only (nil in real-time mode, where observers
// run on the driver's goroutines).
func (c *backendCheck) lend(ln *lender.Loan, st *opState) {
	if c == nil {
		return
	}
	for _, ref := range ln.Slots() {
		c.owner[ref] = st
	}
}

func (c *backendCheck) fail(rule string, id drivers.CallID, at time.Duration, detail string) {
	c.r.res.add(c.ep.spec.Name, model.Violation{Rule: rule, Class: model.Safety, Call: id, Row: -1, At: at, Seed: c.r.log.Seed, Detail: detail})
}

func (c *backendCheck) Registered(_ time.Duration, h drivers.Handle, reg drivers.Region) {
	c.labels[h] = reg.Label
}

func (c *backendCheck) Submitted(at time.Duration, id drivers.CallID, b drivers.RowBatch, err error) {
	max := c.ep.mon.Capabilities().MaxRowsPerOp
	if len(b.Rows) == 0 || len(b.Rows) > max {
		c.fail("B-CUT", id, at, fmt.Sprintf("the backend submitted a %v batch of %d rows (MaxRowsPerOp %d)", b.Dir, len(b.Rows), max))
	}
	seen := make(map[string]bool, len(b.Rows))
	for _, row := range b.Rows {
		if seen[row.Key] {
			c.fail("B-CUT", id, at, fmt.Sprintf("the backend submitted a %v batch naming key %q twice", b.Dir, row.Key))
			break
		}
		seen[row.Key] = true
	}
	if err == nil && len(b.Rows) > 0 {
		if st := c.owner[lender.SlotRef{Region: c.labels[b.Rows[0].Handle], Slot: b.Rows[0].Slot}]; st != nil {
			c.calls[id] = st
		}
	}
}

func (c *backendCheck) RowFinal(_ time.Duration, id drivers.CallID, _ int, s drivers.Status) {
	if st := c.calls[id]; st != nil && s == drivers.Fault {
		if _, ok := c.faulted[st]; !ok {
			c.faulted[st] = id
		}
	}
}

// finish judges every attempt once the run is over.
func (c *backendCheck) finish(at time.Duration) {
	for i, st := range c.r.ops {
		id, faulted := c.faulted[st]
		if st.ep != c.ep || !faulted || st.attempt == nil || st.attempt.State() != backend.Delivered {
			continue
		}
		rule := "B-FETCH"
		if st.op.Kind == workload.Publish {
			rule = "B-PUBLISH"
		}
		c.fail(rule, id, at, fmt.Sprintf("op %d (%s): attempt %d is %v although its call %d answered a row FAULT (a fault fails the whole attempt)",
			i, st.op.Kind, st.attempt.ID(), st.attempt.Outcome(), id))
	}
}

func (c *backendCheck) Unregistered(time.Duration, drivers.Handle, drivers.Region)    {}
func (c *backendCheck) AccessChanged(time.Duration, drivers.CallID, drivers.Access)   {}
func (c *backendCheck) Cancelled(time.Duration, drivers.CallID, drivers.CancelResult) {}
func (c *backendCheck) LookedUp(time.Duration, []string, []bool, error)               {}
func (c *backendCheck) ShutDown(time.Duration, []string)                              {}
