package drivers

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors of the contract. Drivers wrap them with detail
// (fmt.Errorf("%w: …")); callers test with errors.Is.
var (
	// ErrInvalidSubmission: the caller broke the data model (D-BATCH-VALID,
	// D-SUB-1). Nothing escaped.
	ErrInvalidSubmission = errors.New("invalid submission")
	// ErrClosed: the driver is draining or shut down (D-DRAIN-1, D-SUB-2).
	// Nothing escaped.
	ErrClosed = errors.New("driver closed")
	// ErrRejected: back-pressure; try later (D-SUB-2). Nothing escaped.
	ErrRejected = errors.New("submission rejected")
	// ErrRegistrationRefused: the driver refused a registration and nothing
	// is registered (D-REG-1, D-REG-2, D-REG-5, D-QUAR).
	ErrRegistrationRefused = errors.New("registration refused")
	// ErrBusy: a call whose access is not ENDED still names the region
	// (D-REG-6, D-TOG-4); the binding stays live.
	ErrBusy = errors.New("region busy")
	// ErrUnregisterFailed: the close did not happen; the binding stays live
	// and a later close retries (D-REG-4).
	ErrUnregisterFailed = errors.New("unregister failed")
	// ErrLookupFailed: a lookup could not be answered; never "absent" (D-LOOK-2).
	ErrLookupFailed = errors.New("lookup failed")
	// ErrStaleHandle: the handle is not (or no longer) live. Closing a stale
	// handle is a no-op success (D-REG-3); submitting rows on it is invalid.
	ErrStaleHandle = errors.New("stale handle")
	// ErrInvalidCapabilities: a capability declaration no backend can use.
	ErrInvalidCapabilities = errors.New("invalid capabilities")
)

func invalidCaps(format string, args ...any) error {
	return Detailf(ErrInvalidCapabilities, format, args...)
}

func invalid(format string, args ...any) error {
	return Detailf(ErrInvalidSubmission, format, args...)
}

// detailError is a sentinel and its detail: the text of
// fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...)), formatted
// once into one string (two allocations, not four).
type detailError struct {
	sentinel error
	text     string
}

func (e *detailError) Error() string { return e.text }
func (e *detailError) Unwrap() error { return e.sentinel }

// Detailf is fmt.Errorf("%w: "+format, sentinel, args...) in two
// allocations instead of four: the same text, and errors.Is and errors.As
// answer as for fmt's error. Drivers use it for the errors they return on
// hot paths.
func Detailf(sentinel error, format string, args ...any) error {
	var buf [128]byte
	b := append(append(buf[:0], sentinel.Error()...), ": "...)
	return &detailError{sentinel, string(fmt.Appendf(b, format, args...))}
}

// InDoubtError is D-TOG-2: a together-registration failed and its rollback
// failed too. Labels names every region that may still be registered; the
// caller keeps them live and retained, and the driver quarantines itself
// (D-QUAR). It also serves D-TOG-3 for an unregistration that left some
// regions live (then Labels names exactly the failed ones).
type InDoubtError struct {
	Op     string // "register" or "unregister"
	Labels []string
	Err    error
}

func (e *InDoubtError) Error() string {
	return fmt.Sprintf("%s in doubt for regions [%s]: %v", e.Op, strings.Join(e.Labels, " "), e.Err)
}

func (e *InDoubtError) Unwrap() error { return e.Err }

// Resource labels returned by Shutdown (D-SHUT-1). A label names a resource
// the driver could not release; an empty list means everything was released.
func CallLabel(id CallID, why string) string {
	var buf [64]byte
	b := strconv.AppendUint(append(buf[:0], "call:"...), uint64(id), 10)
	return string(append(append(b, ':'), why...))
}

// RegionLabel is the shutdown label for a region ("region:<label>:<why>").
func RegionLabel(label, why string) string { return "region:" + label + ":" + why }

// Label reasons.
const (
	WhyUnprovable       = "unprovable"
	WhyPending          = "pending"
	WhyUnregisterFailed = "unregister-failed"
	WhyRetained         = "retained"
	WhyInDoubt          = "in-doubt"
)
