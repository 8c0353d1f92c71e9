package monitor

import (
	"time"

	"github.com/storesim/storesim/drivers"
)

// Observer receives the events the monitor sees at the driver boundary, in
// the order it sees them, stamped with the runtime's time. The history
// recorder (package model) and the race-pair counters are observers. An
// observer must not call into the driver.
type Observer interface {
	// Registered: a registration succeeded (one per region, in order).
	Registered(at time.Duration, h drivers.Handle, r drivers.Region)
	// Unregistered: a close of a live handle succeeded.
	Unregistered(at time.Duration, h drivers.Handle, r drivers.Region)
	// Submitted: Submit returned a call (err == nil) or refused (err != nil,
	// id is 0).
	Submitted(at time.Duration, id drivers.CallID, b drivers.RowBatch, err error)
	// RowFinal: the monitor first saw row's final status.
	RowFinal(at time.Duration, id drivers.CallID, row int, st drivers.Status)
	// AccessChanged: the monitor first saw the call's access move to acc.
	AccessChanged(at time.Duration, id drivers.CallID, acc drivers.Access)
	// Cancelled: Cancel was called and answered res.
	Cancelled(at time.Duration, id drivers.CallID, res drivers.CancelResult)
	// LookedUp: Contains answered (found has one entry per key on success).
	LookedUp(at time.Duration, keys []string, found []bool, err error)
	// ShutDown: Shutdown returned labels.
	ShutDown(at time.Duration, labels []string)
}

// SubmitObserver is an optional extension of [Observer]: SubmitStarting is
// called just before the driver's Submit runs, with the batch exactly as the
// caller passed it (same row array), so a recorder can stamp the true
// invocation of the call.
type SubmitObserver interface {
	SubmitStarting(at time.Duration, b drivers.RowBatch)
}

// CallbackObserver is an optional extension of [Observer]: Callback is
// called once per change callback of an accepted call, when the driver
// invokes it (before the caller's onChange, and before the facts the
// callback's snapshot reveals are reported). A callback that ran before
// Submit returned is reported right after Submitted.
type CallbackObserver interface {
	Callback(at time.Duration, id drivers.CallID)
}
