package drivers

// Direction is the direction of a driver call.
type Direction uint8

const (
	// Fetch moves objects from the store into registered memory.
	Fetch Direction = iota + 1
	// Publish moves registered memory into the store.
	Publish
)

func (d Direction) String() string {
	switch d {
	case Fetch:
		return "FETCH"
	case Publish:
		return "PUBLISH"
	}
	return "DIRECTION?"
}

// Status is a row's result (D-STATUS). The zero value, [Pending], means "not
// final yet"; every other value is final once set (D-CB-3).
type Status uint8

const (
	// Pending: no result yet.
	Pending Status = iota
	// OK: FETCH — the whole object, exact size, is in the slot; PUBLISH — the
	// store holds the object under the key (written now or already there).
	OK
	// Miss: FETCH — the store does not hold the key and the slot was not
	// touched; PUBLISH — the store declined it (no room, already present).
	Miss
	// Fault: anything else. FETCH slot contents undefined; PUBLISH not stored
	// by this call (it may still become visible).
	Fault
	// NotAttempted: never started (cancelled, or stopped after an earlier
	// fault); the slot is untouched.
	NotAttempted
)

var statusNames = [...]string{"PENDING", "OK", "MISS", "FAULT", "NOT_ATTEMPTED"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "STATUS?"
}

// Final reports whether s is a final row result.
func (s Status) Final() bool { return s != Pending && int(s) < len(statusNames) }

// Access is a call's access evidence (D-ACCESS).
type Access uint8

const (
	// AccessPending: the call may still touch its rows.
	AccessPending Access = iota
	// AccessEnded: proven that nothing will touch the call's rows again
	// (D-ACCESS-END). Final.
	AccessEnded
	// AccessUnprovable: the driver stopped waiting and cannot prove the end of
	// access; the rows' memory must stay retained. May become Ended once.
	AccessUnprovable
)

var accessNames = [...]string{"PENDING", "ENDED", "UNPROVABLE"}

func (a Access) String() string {
	if int(a) < len(accessNames) {
		return accessNames[a]
	}
	return "ACCESS?"
}

// CanBecome is the D-ACCESS transition table: PENDING → ENDED,
// PENDING → UNPROVABLE, UNPROVABLE → ENDED; staying put is always legal.
func (a Access) CanBecome(b Access) bool {
	switch {
	case a == b:
		return true
	case a == AccessPending:
		return b == AccessEnded || b == AccessUnprovable
	case a == AccessUnprovable:
		return b == AccessEnded
	}
	return false
}

// Evidenced reports whether the call has access evidence (ended or unprovable).
func (a Access) Evidenced() bool { return a == AccessEnded || a == AccessUnprovable }

// CancelResult is what [Call.Cancel] answers (D-CAN-1).
type CancelResult uint8

const (
	// CancelRequested: the driver will try; completion may still win.
	CancelRequested CancelResult = iota + 1
	// CancelUnsupported: the driver cannot cancel.
	CancelUnsupported
	// CancelAlreadyDone: every row already has its result.
	CancelAlreadyDone
)

func (c CancelResult) String() string {
	switch c {
	case CancelRequested:
		return "REQUESTED"
	case CancelUnsupported:
		return "UNSUPPORTED"
	case CancelAlreadyDone:
		return "ALREADY_DONE"
	}
	return "CANCEL?"
}

// Capabilities is what a driver declares about itself.
type Capabilities struct {
	// MaxRowsPerOp is the most rows one call or one lookup may carry (>= 1).
	MaxRowsPerOp int
	// AbsentIsMiss: a FETCH of an absent key reports MISS with the slot
	// untouched. When false the backend looks keys up before fetching.
	AbsentIsMiss bool
	// CanFetch and CanPublish say which directions Submit accepts.
	CanFetch, CanPublish bool
	// CanCancel says whether Cancel may answer CancelRequested.
	CanCancel bool
}

// Supports reports whether the capabilities allow direction d.
func (c Capabilities) Supports(d Direction) bool {
	return (d == Fetch && c.CanFetch) || (d == Publish && c.CanPublish)
}

// Check reports a capability declaration that no backend can use.
func (c Capabilities) Check() error {
	switch {
	case c.MaxRowsPerOp < 1:
		return invalidCaps("MaxRowsPerOp %d < 1", c.MaxRowsPerOp)
	case !c.CanFetch && !c.CanPublish:
		return invalidCaps("neither FETCH nor PUBLISH supported")
	}
	return nil
}
