package memdriver

import (
	"errors"
	"fmt"
	"testing"

	"github.com/storesim/storesim/drivers"
)

// The hand-made errors (closeError, drivers.Detailf) keep the text and the
// errors.Is answers of the fmt.Errorf calls they replaced.
func TestErrorsKeepFmtText(t *testing.T) {
	a := &closeError{drivers.ErrBusy, "r\"1", 3}
	b := fmt.Errorf("%w: region %q is named by %d call(s) whose access is not ENDED (D-REG-6)", drivers.ErrBusy, "r\"1", 3)
	c := &closeError{drivers.ErrUnregisterFailed, "x", 0}
	d := fmt.Errorf("%w: region %q stays registered; close it again (D-REG-4)", drivers.ErrUnregisterFailed, "x")
	if a.Error() != b.Error() || c.Error() != d.Error() || !errors.Is(a, drivers.ErrBusy) || !errors.Is(c, drivers.ErrUnregisterFailed) || errors.Is(a, drivers.ErrUnregisterFailed) {
		t.Fatalf("got %q and %q, want %q and %q (repro: go test ./drivers/memdriver -run TestErrorsKeepFmtText)", a, c, b, d)
	}
	e := drivers.Detailf(drivers.ErrClosed, "driver %q is busy (x)", "m")
	f := fmt.Errorf("%w: driver %q is busy (x)", drivers.ErrClosed, "m")
	if e.Error() != f.Error() || !errors.Is(e, drivers.ErrClosed) {
		t.Fatalf("got %q, want %q (repro: go test ./drivers/memdriver -run TestErrorsKeepFmtText)", e, f)
	}
}
