package drivers

import "context"

// Driver is a store driver: one per store product. It moves rows between
// registered memory and the store and reports, per call, row results and
// access evidence. Only Contains and Shutdown may block (they talk to the
// store); everything else returns at once, and progress is reported through
// the change callback given to Submit. The simulator's drivers complete work
// on the runtime they were built with; real drivers use goroutines.
type Driver interface {
	// Capabilities is the driver's declaration; it never changes.
	Capabilities() Capabilities

	// Register registers one region with the store's transport.
	//
	// D-REG-1: refuse geometry errors (D-GEOM, see CheckGeometry) and overlap
	// with a live or in-progress registration, without asking the store.
	// D-REG-2: a refused registration leaves nothing registered.
	// D-REG-5: refuse during or after shutdown; one racing shutdown is
	// refused or undone. D-QUAR: refuse while quarantined.
	// Refusals wrap ErrRegistrationRefused (and ErrBadGeometry for D-GEOM).
	Register(r Region) (Handle, error)

	// Unregister closes a registration by handle.
	//
	// D-REG-3: idempotent; a stale handle is a no-op and never closes a newer
	// registration of the same memory.
	// D-REG-4: a failed close (ErrUnregisterFailed) has not closed: the
	// binding stays live and a later Unregister retries.
	// D-REG-6: refuse (ErrBusy) while a call whose access is not ENDED names
	// the region; the binding stays live.
	Unregister(h Handle) error

	// Contains looks keys up: one bool per key, in order, at most
	// MaxRowsPerOp keys (D-LOOK-1). An outage or a wrong-length answer is an
	// error wrapping ErrLookupFailed, never "absent" (D-LOOK-2). It touches
	// no caller memory.
	Contains(ctx context.Context, keys []string) ([]bool, error)

	// Submit starts one call.
	//
	// D-SUB-1: validate the whole batch (RowBatch.Validate) before any access.
	// D-SUB-2: ErrInvalidSubmission, ErrClosed and ErrRejected mean nothing
	// escaped; any other error (or a panic) means something may have escaped
	// and the caller treats every row as UNPROVABLE.
	// D-SUB-3: after a nil error the driver owns the call until every row has
	// a final result and the call has access evidence.
	// D-SUB-4: PUBLISH of a key the store holds keeps the first object and
	// answers OK or MISS; it never rewrites.
	// D-SUB-5: per-row visibility is atomic; readers see MISS or the whole
	// object. D-SUB-6: every byte access stays inside the row's slot and a
	// live registration.
	//
	// onChange (D-CB-*): results and access are updated before it runs
	// (D-CB-1); the last change is followed by at least one call (D-CB-2);
	// facts are monotonic (D-CB-3); it may run on any goroutine, even before
	// Submit returns, but never while the driver holds a lock the receiver
	// might need (D-CB-4); never after Shutdown returned (D-CB-5).
	Submit(b RowBatch, onChange func()) (Call, error)

	// Drain stops admission (Submit then fails with ErrClosed) and reports,
	// without blocking, whether every call has access evidence and the last
	// callback of every such call has returned (D-DRAIN-1, D-DRAIN-2).
	// Callers poll it again from their change callbacks; a call still
	// pending is reported in Pending, never as ended.
	Drain() DrainStatus

	// Shutdown drains what it can, releases every binding whose memory no
	// UNPROVABLE or pending call names, closes the client and returns one
	// label per resource it could not release (D-SHUT-1): CallLabel(id,
	// WhyUnprovable|WhyPending), RegionLabel(label, WhyUnregisterFailed|
	// WhyRetained|WhyInDoubt). Empty means everything was released.
	// D-SHUT-2: idempotent; a second call retries what remains. D-CB-5: no
	// callback runs after it returned.
	Shutdown(ctx context.Context) []string
}

// Call is one submitted driver call. Its methods are safe from any goroutine.
type Call interface {
	// ID is unique per driver instance.
	ID() CallID
	// Results is a snapshot of the row results in batch order (D-STATUS).
	// A conforming driver returns exactly one entry per row; a wrong length
	// is a whole-call failure for the caller.
	Results() []Status
	// Access is the call's access evidence (D-ACCESS).
	Access() Access
	// Cancel is best effort, non-blocking and idempotent (D-CAN-1). Rows not
	// started become NotAttempted; completion may still win; cancel never by
	// itself proves access ended and never rolls back a stored object
	// (D-CAN-2).
	Cancel() CancelResult
}

// DrainStatus is what Drain reports.
type DrainStatus struct {
	// Done: every call has access evidence and its last callback returned.
	Done bool
	// Pending lists the calls still without evidence (or with a callback
	// still to run), in ascending id order.
	Pending []CallID
}

// TogetherRegisterer is the optional together-registration interface.
type TogetherRegisterer interface {
	// RegisterTogether registers regions all or nothing (D-TOG-1): success
	// returns one handle per region in order; failure leaves nothing
	// registered, unregistering any piece first. If that rollback fails the
	// error is an *InDoubtError naming every region that may still be
	// registered (D-TOG-2) and the driver quarantines itself (D-QUAR).
	RegisterTogether(regions []Region) ([]Handle, error)
	// UnregisterTogether releases what it can (D-TOG-3); exactly the failed
	// ones stay live and are named in an *InDoubtError. A busy region (a call
	// with live access names it) is not unregistered (D-TOG-4).
	UnregisterTogether(hs []Handle) error
}
