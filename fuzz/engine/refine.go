package engine

import (
	"slices"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/model/refine"
	"github.com/storesim/storesim/sim"
)

// Admit runs Fetch or Publish and tells the reference model (B-MODEL).
func (ep *Endpoint) Admit(dir drivers.Direction, v drivers.View) (*backend.Attempt, error) {
	if ep.Ref != nil {
		ep.Ref.Admitting(dir, v)
	}
	var a *backend.Attempt
	var err error
	if dir == drivers.Publish {
		a, err = ep.Backend.Publish(v)
	} else {
		a, err = ep.Backend.Fetch(v)
	}
	if ep.Ref != nil {
		if a == nil {
			ep.Ref.Admitted(nil, err)
		} else {
			ep.Ref.Admitted(a, err)
		}
	}
	return a, err
}

// Cancel cancels a and tells the reference model.
func (ep *Endpoint) Cancel(a *backend.Attempt) bool {
	if ep.Ref != nil {
		ep.Ref.Cancelling(a)
	}
	ok := a.Cancel()
	if ep.Ref != nil {
		ep.Ref.Cancelled(a, ok)
	}
	return ok
}

// Quiesce asks the backend whether every attempt of as is quiet, and tells
// the reference model the answer (B-ACCESS).
func (ep *Endpoint) Quiesce(as ...*backend.Attempt) bool {
	ok := ep.Backend.Quiesce(as...)
	if ep.Ref != nil {
		views := make([]refine.AttemptView, len(as))
		for i, a := range as {
			views[i] = a
		}
		ep.Ref.Quiesced(views, ok)
	}
	return ok
}

// spoil makes a view wrong the way bad says (fuzz/workload.Bad): the
// backend must refuse a malformed view, and fail at once an attempt with a
// row outside its registrations.
func (ep *Endpoint) spoil(v drivers.View, bad workload.Bad) drivers.View {
	v = drivers.View{Rows: append([]drivers.Row(nil), v.Rows...), Mask: append([]bool(nil), v.Mask...)}
	switch bad {
	case workload.MaskedDupSlot, workload.MaskedEmptyKey, workload.MaskedOutside:
		return ep.spoilMasked(v, bad)
	}
	// The row spoiled: one of the masked-in rows, drawn from the view's
	// first key (so the op log replays it), not always the first — a check
	// made only for the first row of a region would pass that one.
	var ins []int
	for i, m := range v.Mask {
		if m {
			ins = append(ins, i)
		}
	}
	in := -1
	if len(ins) > 0 {
		in = ins[sim.HashString(v.Rows[0].Key)%uint64(len(ins))]
	}
	switch {
	case bad == workload.MaskLength || in < 0:
		v.Mask = append(v.Mask, true)
	case bad == workload.EmptyKey:
		v.Rows[in].Key = ""
	case bad == workload.DupSlot:
		if len(ins) < 2 {
			v.Mask = append(v.Mask, true) // one row only: make it malformed another way
			break
		}
		j := ins[(slices.Index(ins, in)+1)%len(ins)] // another masked-in row takes in's slot
		v.Rows[j].Handle, v.Rows[j].Slot = v.Rows[in].Handle, v.Rows[in].Slot
	case bad == workload.Outside:
		ep.pastEnd(&v.Rows[in])
	case bad == workload.Below:
		v.Rows[in].Slot = -1
	}
	return v
}

// spoilMasked spoils the last masked-out row of v (a copy) the way bad
// says; a view without one is left as it is (its rows are the loan's). The
// row takes no part, so the view stays well formed.
func (ep *Endpoint) spoilMasked(v drivers.View, bad workload.Bad) drivers.View {
	out := -1
	for i, m := range v.Mask {
		if !m {
			out = i
		}
	}
	if out < 0 {
		return v
	}
	other := (out + 1) % len(v.Rows) // another row, whose slot it repeats
	switch bad {
	case workload.MaskedEmptyKey:
		v.Rows[out].Key = ""
	case workload.MaskedDupSlot:
		if other != out {
			v.Rows[out].Handle, v.Rows[out].Slot = v.Rows[other].Handle, v.Rows[other].Slot
		}
	case workload.MaskedOutside:
		ep.pastEnd(&v.Rows[out])
	}
	return v
}

// pastEnd moves row to the slot just past its region's last.
func (ep *Endpoint) pastEnd(row *drivers.Row) {
	for _, r := range ep.Regions {
		if h, ok := ep.Backend.Handle(r.Label); ok && h == row.Handle {
			row.Slot = r.Slots
		}
	}
}

// afterStep tells every endpoint's reference model that a step ended.
func (r *run) afterStep() {
	next, ok := r.s.Next()
	quiescent := !ok || next.At > r.s.Now()
	for _, ep := range r.eps {
		if ep.Ref != nil {
			ep.Ref.AfterStep(quiescent)
		}
	}
}

// refineOracle hands the reference model's findings to Check. The model
// judges a backend fed conforming answers: once the driver broke the
// contract (the monitor, or a driver probe, found it), only safety is owed,
// and the other oracles judge it.
type refineOracle struct{ ep *Endpoint }

// The model sees the boundary through its own tap, not through the monitor
// (a blindOracle: the monitor does not call these).
func (refineOracle) blind()                                                           {}
func (refineOracle) Registered(time.Duration, drivers.Handle, drivers.Region)         {}
func (refineOracle) Unregistered(time.Duration, drivers.Handle, drivers.Region)       {}
func (refineOracle) Submitted(time.Duration, drivers.CallID, drivers.RowBatch, error) {}
func (refineOracle) RowFinal(time.Duration, drivers.CallID, int, drivers.Status)      {}
func (refineOracle) AccessChanged(time.Duration, drivers.CallID, drivers.Access)      {}
func (refineOracle) Cancelled(time.Duration, drivers.CallID, drivers.CancelResult)    {}
func (refineOracle) LookedUp(time.Duration, []string, []bool, error)                  {}
func (refineOracle) ShutDown(time.Duration, []string)                                 {}

var _ monitor.Observer = refineOracle{}

func (o refineOracle) Judge(ep *Endpoint, _ *CheckInput) []rules.Violation {
	if ep.Ref == nil || len(ep.Monitor.Violations()) > 0 || (ep.probes != nil && len(ep.probes.violations()) > 0) {
		return nil
	}
	out := ep.Ref.Violations()
	for i := range out {
		out[i].Endpoint = ep.Name
	}
	return out
}
