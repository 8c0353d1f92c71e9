package engine

import (
	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
)

// admit runs Fetch or Publish and tells the reference model (B-MODEL).
func (ep *endpoint) admit(dir drivers.Direction, v drivers.View) (*backend.Attempt, error) {
	if ep.ref != nil {
		ep.ref.Admitting(dir, v)
	}
	var a *backend.Attempt
	var err error
	if dir == drivers.Publish {
		a, err = ep.b.Publish(v)
	} else {
		a, err = ep.b.Fetch(v)
	}
	if ep.ref != nil {
		if a == nil {
			ep.ref.Admitted(nil, err)
		} else {
			ep.ref.Admitted(a, err)
		}
	}
	return a, err
}

// refCancel cancels a and tells the reference model.
func (ep *endpoint) refCancel(a *backend.Attempt) {
	if ep.ref != nil {
		ep.ref.Cancelling(a)
	}
	ok := a.Cancel()
	if ep.ref != nil {
		ep.ref.Cancelled(a, ok)
	}
}

// afterStep tells every endpoint's reference model that a step ended.
func (r *run) afterStep() {
	quiescent := false
	for _, ep := range r.eps {
		if ep.ref != nil {
			ep.ref.AfterStep(quiescent)
		}
	}
}
