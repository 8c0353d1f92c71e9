package backend

import (
	"fmt"

	"github.com/storesim/storesim/drivers"
)

// The failure reasons below are made on hot paths (a faulted row, a failed
// look-up or submit) but their text is read only by reports, so they keep
// their parts and format the message when it is asked for. Each is what the
// fmt.Errorf in its comment would return: the same message, and the same
// errors.Is and errors.As answers.

// causeError is fmt.Errorf("%w: "+mid+"%w", kind, cause).
type causeError struct {
	errs [2]error // kind, cause
	mid  string
}

func wrapCause(kind error, mid string, cause error) error {
	return &causeError{errs: [2]error{kind, cause}, mid: mid}
}

func (e *causeError) Error() string {
	return fmt.Sprintf("%v: %s%v", e.errs[0], e.mid, e.errs[1])
}

func (e *causeError) Unwrap() []error { return e.errs[:] }

// rowFailedError is fmt.Errorf("%w: call %d row %d (key %q): %v",
// ErrRowFailed, call, row, key, status).
type rowFailedError struct {
	call   drivers.CallID
	row    int
	key    string
	status drivers.Status
}

func (e *rowFailedError) Error() string {
	return fmt.Sprintf("%v: call %d row %d (key %q): %v", ErrRowFailed, e.call, e.row, e.key, e.status)
}

func (e *rowFailedError) Unwrap() error { return ErrRowFailed }

// shortLookupError is fmt.Errorf("%w: %d answers for %d keys", ErrLookup,
// answers, keys).
type shortLookupError struct{ answers, keys int }

func (e *shortLookupError) Error() string {
	return fmt.Sprintf("%v: %d answers for %d keys", ErrLookup, e.answers, e.keys)
}

func (e *shortLookupError) Unwrap() error { return ErrLookup }

// overCapacityError is fmt.Errorf("%w: %d calls in flight or queued, view
// needs %d more, limit %d", ErrOverCapacity, have, need, limit): a full
// backend refuses views as part of normal work.
type overCapacityError struct{ have, need, limit int }

func (e *overCapacityError) Error() string {
	return fmt.Sprintf("%v: %d calls in flight or queued, view needs %d more, limit %d", ErrOverCapacity, e.have, e.need, e.limit)
}

func (e *overCapacityError) Unwrap() error { return ErrOverCapacity }

// unprovableError is fmt.Errorf("%w: %d > %d", ErrTooManyUnprovable,
// unprovable, max).
type unprovableError struct{ unprovable, max int }

func (e *unprovableError) Error() string {
	return fmt.Sprintf("%v: %d > %d", ErrTooManyUnprovable, e.unprovable, e.max)
}

func (e *unprovableError) Unwrap() error { return ErrTooManyUnprovable }
