package memdriver

import (
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// Hooks is the reference driver's test seam: optional functions called at
// the few decision points that no wrapper around the driver can reach,
// because they sit inside a transfer step or under the driver's lock. A
// driver built with nil Hooks (normal use) keeps every rule. Package broken
// sets them to cut its broken drivers (SPEC §7) from this one; every bug body
// lives there, most of them as wrappers around the driver, its calls and the
// region memory, and only the few that need a decision point here as hooks.
//
// Every hook runs with the driver's mutex held: it must not call back into
// the driver, touch registered memory or block.
type Hooks struct {
	// Batch is called by Submit before validation with the batch submitted:
	// the driver validates check (D-SUB-1) and moves the rows of move. Both
	// must be rows of live registrations.
	Batch func(b drivers.RowBatch) (check, move drivers.RowBatch)
	// Row is called once per row when its transfer is planned, after the
	// fault plan chose its outcome; it may change the plan.
	Row func(p *RowPlan)
	// Result is called each time the driver completes a row, also one that
	// already has its final result (a late completion after an error, a
	// timeout or Shutdown, which the driver otherwise ignores, D-CB-3). It
	// returns the result to record; a final result changes only when it
	// returns something other than r.Was.
	Result func(r RowResult) drivers.Status
	// Access is called each time the driver decides a call's access
	// evidence: before every move it makes, and when Cancel leaves access
	// as it is (a cancel never by itself proves access ended, D-CAN-2). It
	// returns the access to move to (D-ACCESS still applies: an illegal move
	// is ignored).
	Access func(a AccessChange) drivers.Access
	// Waive is asked at each registration decision where the driver keeps
	// one of the rules D-REG-1 (overlap refused), D-REG-2 (a refused
	// registration dropped), D-REG-5 (a registration during Shutdown refused
	// or undone), D-REG-6 (a busy region not closed) and D-TOG-1 (a rolled
	// back piece of a together-registration closed); true skips what the
	// rule asks there. piece is the region's index in a RegisterTogether
	// (D-TOG-1), else 0.
	Waive func(rule rules.ID, piece int) bool
	_     struct{}
}

// RowPlan is what one row's transfer will do: Limit bytes of Data move
// between the store and the slot, then the row reports Status.
type RowPlan struct {
	Call      drivers.CallID
	Row       int
	Dir       drivers.Direction
	Key       string
	SlotBytes int
	// Status is the result the row reports once its transfer finished.
	Status drivers.Status
	// Data holds, for a FETCH, the bytes to write into the slot; for a
	// PUBLISH, it is the buffer the slot is read into.
	Data []byte
	// Limit is how many bytes of Data move (fewer when a fault cuts the
	// transfer short); 0 moves nothing and touches no memory.
	Limit int
}

// RowResult is one completion of a row.
type RowResult struct {
	Call drivers.CallID
	Row  int
	Dir  drivers.Direction
	// Was is the row's result so far: drivers.Pending, or its final result.
	Was drivers.Status
	// Status is the result the driver completes the row with.
	Status drivers.Status
}

// AccessChange is one move of a call's access evidence the driver is about
// to make.
type AccessChange struct {
	Call     drivers.CallID
	From, To drivers.Access
	// ClientError: the driver stopped waiting for the call after a client
	// error mid-transfer (the error-after fault), while transfers may still
	// be moving bytes.
	ClientError bool
	// Cancel: the call's Cancel decides, with transfers possibly still in
	// flight; To is From.
	Cancel bool
}

// waive reports whether h waives rule here.
func (h *Hooks) waive(rule rules.ID, piece int) bool {
	return h != nil && h.Waive != nil && h.Waive(rule, piece)
}
