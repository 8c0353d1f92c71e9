package engine

import (
	"fmt"
	"sync"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/model/lender"
	"github.com/storesim/storesim/sim"
)

// backendCheck is an [Oracle]: it watches, at the driver boundary, what the
// backend sends and what its calls answer, and judges the backend with it
// (the monitor judges the driver):
//
//   - B-CUT: every batch the backend submits has 1..MaxRowsPerOp rows and
//     pairwise distinct keys — a conforming driver refuses anything else,
//     and that refusal would otherwise pass as a quietly failed attempt;
//   - B-FETCH / B-PUBLISH: an attempt with a FAULT row in any of its calls
//     is Failed, never Delivered (no partial delivery).
//   - B-SUBMIT / B-OUTCOME: Attempt.View and Outcome's Served are the
//     caller's copies: writing over them changes nothing the attempt
//     reports (copiesHeld).
//
// A batch is the backend's when its first row names one of the backend's
// bindings (a scenario's driver-submit on memory of its own is not judged).
// Calls are tied to attempts through their slots: a slot is lent to one
// loan at a time and only re-lent after that attempt's access ENDED, so the
// loan holding a row's slot when the call is submitted is its attempt's.
type backendCheck struct {
	ep *Endpoint

	mu      sync.Mutex // observers may run on a real driver's goroutines
	labels  map[drivers.Handle]string
	calls   []callLoan                      // the loan of each backend call, in Submit order
	faulted map[*lender.Loan]drivers.CallID // made at the first FAULT row
	found   []rules.Violation               // B-CUT, seen online

	maxRows  int      // the driver's MaxRowsPerOp, once capsRead
	keys     []string // copiesHeld's scratch
	bools    []bool
	capsRead bool
}

func newBackendCheck(ep *Endpoint) *backendCheck {
	return &backendCheck{ep: ep, labels: map[drivers.Handle]string{}}
}

// callLoan ties a call to its attempt's loan.
type callLoan struct {
	id drivers.CallID
	ln *lender.Loan
}

// loanOf is the loan of call id: the latest Submit's with that id (a driver
// that reuses ids is the monitor's to report). Only a FAULT row asks, and of
// a recent call, so it searches from the latest back.
func (c *backendCheck) loanOf(id drivers.CallID) *lender.Loan {
	for i := len(c.calls) - 1; i >= 0; i-- {
		if c.calls[i].id == id {
			return c.calls[i].ln
		}
	}
	return nil
}

func (c *backendCheck) fail(rule rules.ID, id drivers.CallID, at time.Duration, detail string) {
	c.found = append(c.found, rules.Violation{Rule: rule, Class: rules.Safety, Call: uint64(id), Row: -1, At: at,
		Seq: sim.Stamp(c.ep.opts.RT), Detail: detail})
}

func (c *backendCheck) Registered(_ time.Duration, h drivers.Handle, reg drivers.Region) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.labels[h] = reg.Label
}

// Submitted runs inside the backend's Submit, on the runtime's executor.
func (c *backendCheck) Submitted(at time.Duration, id drivers.CallID, b drivers.RowBatch, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var label string // the first row's region
	if len(b.Rows) > 0 {
		var ok bool
		if label, ok = c.backends(b.Rows[0].Handle); !ok {
			return
		}
	}
	if !c.capsRead {
		// Read once: capabilities never change (the monitor reports a
		// change), and this runs on every Submit.
		c.maxRows, c.capsRead = c.ep.Monitor.Capabilities().MaxRowsPerOp, true
	}
	max := c.maxRows
	if len(b.Rows) == 0 || len(b.Rows) > max {
		c.fail(rules.BCut, id, at, fmt.Sprintf("the backend submitted a %v batch of %d rows (MaxRowsPerOp %d)", b.Dir, len(b.Rows), max))
	}
	if key, ok := repeatedKey(b.Rows); ok {
		c.fail(rules.BCut, id, at, fmt.Sprintf("the backend submitted a %v batch naming key %q twice", b.Dir, key))
	}
	if err == nil && len(b.Rows) > 0 {
		if ln := c.ep.Lender.LoanAt(lender.SlotRef{Region: label, Slot: b.Rows[0].Slot}); ln != nil {
			if c.calls == nil {
				c.calls = make([]callLoan, 0, 32) // an endpoint makes a few dozen calls: not through append's 1, 2, 4
			}
			c.calls = append(c.calls, callLoan{id, ln})
		}
	}
}

// repeatedKey is the first row's key, in row order, that an earlier row
// already named. Batches are small: comparing with the rows before costs
// less than a set, which only the large ones get.
func repeatedKey(rows []drivers.Row) (string, bool) {
	if len(rows) > 32 {
		seen := make(map[string]bool, len(rows))
		for _, row := range rows {
			if seen[row.Key] {
				return row.Key, true
			}
			seen[row.Key] = true
		}
		return "", false
	}
	for i := 1; i < len(rows); i++ {
		for _, r := range rows[:i] {
			if r.Key == rows[i].Key {
				return rows[i].Key, true
			}
		}
	}
	return "", false
}

// backends reports whether h is a binding of the endpoint's backend, and
// the label h was registered under.
func (c *backendCheck) backends(h drivers.Handle) (string, bool) {
	b := c.ep.Backend
	if b == nil {
		return "", false
	}
	label := c.labels[h]
	got, ok := b.Handle(label)
	return label, ok && got == h
}

func (c *backendCheck) RowFinal(_ time.Duration, id drivers.CallID, _ int, s drivers.Status) {
	if s != drivers.Fault {
		return // only a FAULT row is judged: no state to lock
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ln := c.loanOf(id); ln != nil {
		if _, ok := c.faulted[ln]; !ok {
			if c.faulted == nil {
				c.faulted = map[*lender.Loan]drivers.CallID{}
			}
			c.faulted[ln] = id
		}
	}
}

// Judge returns the B-CUT violations seen online, then judges every
// admitted attempt of the endpoint (B-FETCH, B-PUBLISH).
func (c *backendCheck) Judge(ep *Endpoint, in *CheckInput) []rules.Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]rules.Violation(nil), c.found...)
	// Each read hands out copies, so not every attempt is read: the first
	// of each outcome state and direction, and every fifth op's.
	var first [4][2]bool
	for _, at := range in.Attempts {
		if at.Endpoint != ep || at.Attempt == nil {
			continue
		}
		st, dir := int(at.Attempt.State())&3, 0
		if at.Attempt.Dir() == drivers.Publish {
			dir = 1
		}
		if !first[st][dir] || at.opIndex%5 == 0 {
			first[st][dir] = true
			out = c.copiesHeld(out, at, in.At)
		}
	}
	if len(c.faulted) == 0 {
		return out // no attempt had a FAULT row
	}
	for _, at := range in.Attempts {
		a := at.Attempt
		if at.Endpoint != ep || a == nil || a.State() != backend.Delivered {
			continue
		}
		ln := ep.Lender.LoanOf(a)
		id, faulted := c.faulted[ln]
		if ln == nil || !faulted {
			continue
		}
		rule := rules.BFetch
		if a.Dir() == drivers.Publish {
			rule = rules.BPublish
		}
		out = append(out, rules.Violation{Rule: rule, Class: rules.Safety, Call: uint64(id), Row: -1, At: in.At,
			Detail: fmt.Sprintf("%s: attempt %d is %v although its call %d answered a row FAULT (a fault fails the whole attempt)", at.name(), a.ID(), a.Outcome(), id)})
	}
	return out
}

// copiesHeld judges what an attempt hands its caller: Attempt.View and
// Outcome's Served are the caller's copies. The check writes over what it
// was handed, as a caller may, and reads again: an accessor that hands out
// the attempt's own state (or keeps the caller's view instead of a copy)
// shows the caller's writes (B-SUBMIT for the view, B-OUTCOME for the
// served set).
func (c *backendCheck) copiesHeld(out []rules.Violation, at Attempt, now time.Duration) []rules.Violation {
	a := at.Attempt
	v := a.View()
	c.keys = c.keys[:0]
	for i := range v.Rows {
		c.keys = append(c.keys, v.Rows[i].Key)
		v.Rows[i].Key += "\x00scribbled"
	}
	c.bools = append(c.bools[:0], v.Mask...)
	for i := range v.Mask {
		v.Mask[i] = !v.Mask[i]
	}
	w := a.View()
	same := len(w.Rows) == len(c.keys) && len(w.Mask) == len(c.bools)
	for i := 0; same && i < len(w.Rows); i++ {
		same = w.Rows[i].Key == c.keys[i]
	}
	for i := 0; same && i < len(w.Mask); i++ {
		same = w.Mask[i] == c.bools[i]
	}
	if !same {
		out = append(out, rules.Violation{Rule: rules.BSubmit, Class: rules.Safety, Row: -1, At: now,
			Detail: fmt.Sprintf("%s: attempt %d's View changed when its caller wrote over the copy it was handed: the view is shared, not copied", at.name(), a.ID())})
	}
	o := a.Outcome()
	c.bools = append(c.bools[:0], o.Served...)
	for i := range o.Served {
		o.Served[i] = !o.Served[i]
	}
	p := a.Outcome()
	same = len(p.Served) == len(c.bools)
	for i := 0; same && i < len(p.Served); i++ {
		same = p.Served[i] == c.bools[i]
	}
	if !same {
		out = append(out, rules.Violation{Rule: rules.BOutcome, Class: rules.Safety, Row: -1, At: now,
			Detail: fmt.Sprintf("%s: attempt %d's served set changed when its caller wrote over the Outcome it was handed: Served is shared, not copied", at.name(), a.ID())})
	}
	return out
}

func (c *backendCheck) Unregistered(time.Duration, drivers.Handle, drivers.Region)    {}
func (c *backendCheck) AccessChanged(time.Duration, drivers.CallID, drivers.Access)   {}
func (c *backendCheck) Cancelled(time.Duration, drivers.CallID, drivers.CancelResult) {}
func (c *backendCheck) LookedUp(time.Duration, []string, []bool, error)               {}
func (c *backendCheck) ShutDown(time.Duration, []string)                              {}
