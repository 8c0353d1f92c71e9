package backend

import (
	"errors"
	"fmt"
	"testing"

	"github.com/storesim/storesim/drivers"
)

// TestLazyErrorsMatchErrorf: each lazy failure reason reads and unwraps
// exactly like the fmt.Errorf it replaces.
func TestLazyErrorsMatchErrorf(t *testing.T) {
	cause := fmt.Errorf("%w: store outage", drivers.ErrLookupFailed)
	cases := []struct {
		name       string
		lazy, want error
	}{
		{"lookup", wrapCause(ErrLookup, "", cause), fmt.Errorf("%w: %w", ErrLookup, cause)},
		{"submit", wrapCause(ErrSubmit, "", drivers.ErrRejected), fmt.Errorf("%w: %w", ErrSubmit, drivers.ErrRejected)},
		{"escaped", wrapCause(ErrSubmit, "rows treated as UNPROVABLE: ", cause),
			fmt.Errorf("%w: rows treated as UNPROVABLE: %w", ErrSubmit, cause)},
		{"short", &shortLookupError{answers: 2, keys: 3}, fmt.Errorf("%w: %d answers for %d keys", ErrLookup, 2, 3)},
		{"row", &rowFailedError{call: 7, row: 1, key: "k/1", status: drivers.Fault},
			fmt.Errorf("%w: call %d row %d (key %q): %v", ErrRowFailed, drivers.CallID(7), 1, "k/1", drivers.Fault)},
		{"over capacity", &overCapacityError{have: 5, need: 2, limit: 6},
			fmt.Errorf("%w: %d calls in flight or queued, view needs %d more, limit %d", ErrOverCapacity, 5, 2, 6)},
		{"unprovable", &unprovableError{unprovable: 9, max: 8}, fmt.Errorf("%w: %d > %d", ErrTooManyUnprovable, 9, 8)},
	}
	targets := []error{ErrLookup, ErrSubmit, ErrRowFailed, drivers.ErrLookupFailed, drivers.ErrRejected, ErrCancelled,
		ErrOverCapacity, ErrTooManyUnprovable, ErrSubmissionRejected}
	for _, c := range cases {
		if got, want := c.lazy.Error(), c.want.Error(); got != want {
			t.Errorf("%s: message %q, want %q (repro: go test ./backend -run TestLazyErrorsMatchErrorf)", c.name, got, want)
		}
		for _, target := range targets {
			if got, want := errors.Is(c.lazy, target), errors.Is(c.want, target); got != want {
				t.Errorf("%s: errors.Is(%v) = %v, want %v (repro: go test ./backend -run TestLazyErrorsMatchErrorf)", c.name, target, got, want)
			}
		}
	}
}
