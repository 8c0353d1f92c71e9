package engine

import (
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/rules"
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
// contract, only safety is owed, and the other oracles judge it.
type refineOracle struct{ ep *Endpoint }

// The model sees the boundary through its own tap, not through the monitor.
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
	if ep.Ref == nil || len(ep.Monitor.Violations()) > 0 {
		return nil
	}
	out := ep.Ref.Violations()
	for i := range out {
		out[i].Endpoint = ep.Name
	}
	return out
}
