package procdriver

import (
	"errors"
	"fmt"
	"strings"

	"github.com/storesim/storesim/drivers"
)

// Protocol is the version of the wire protocol this package speaks
// (docs/PROTOCOL.md). The child must answer hello with the same number.
//
// Version 2: a region's mapping may be the caller's memory itself, at an
// offset into the file (wireRegion.Offset), which version 1 did not have.
const Protocol = 2

// request is every message the parent writes on the child's stdin. Fields
// that an op does not use are left out of the line (omitempty); a child
// treats a missing list as empty.
type request struct {
	ID        uint64       `json:"id,omitempty"`
	Op        string       `json:"op"`
	Protocol  int          `json:"protocol,omitempty"`
	Prefix    *string      `json:"prefix,omitempty"`
	Scratch   string       `json:"scratch,omitempty"`
	Caps      *wireCaps    `json:"caps,omitempty"`
	Region    *wireRegion  `json:"region,omitempty"`
	Regions   []wireRegion `json:"regions,omitempty"`
	Handle    *uint64      `json:"handle,omitempty"`
	Handles   []uint64     `json:"handles,omitempty"`
	Keys      []string     `json:"keys,omitempty"`
	Key       *string      `json:"key,omitempty"`
	Call      uint64       `json:"call,omitempty"`
	Dir       string       `json:"dir,omitempty"`
	Rows      []wireRow    `json:"rows,omitempty"`
	TimeoutMS *int64       `json:"timeout_ms,omitempty"`
}

// inbound is every message the child writes on its stdout: a reply (it has
// an id) or a change notification (op "change", no id).
type inbound struct {
	ID    *uint64    `json:"id"`
	Op    string     `json:"op"`
	OK    *bool      `json:"ok"`
	Error *wireError `json:"error"`

	// hello
	Protocol int       `json:"protocol"`
	Driver   string    `json:"driver"`
	Caps     *wireCaps `json:"caps"`
	Together bool      `json:"together"`
	Ops      []string  `json:"ops"`
	// register, register_together
	Handle  *uint64  `json:"handle"`
	Handles []uint64 `json:"handles"`
	// contains
	Found []bool `json:"found"`
	// drain
	Done    bool     `json:"done"`
	Pending []uint64 `json:"pending"`
	// shutdown
	Labels []string `json:"labels"`
	// live
	Live *bool `json:"live"`
	// change
	Call    uint64   `json:"call"`
	Results []string `json:"results"`
	Access  string   `json:"access"`
	Signal  *bool    `json:"signal"`
}

type wireCaps struct {
	MaxRows      int  `json:"max_rows"`
	AbsentIsMiss bool `json:"absent_is_miss"`
	Fetch        bool `json:"fetch"`
	Publish      bool `json:"publish"`
	Cancel       bool `json:"cancel"`
}

func capsToWire(c drivers.Capabilities) *wireCaps {
	return &wireCaps{MaxRows: c.MaxRowsPerOp, AbsentIsMiss: c.AbsentIsMiss, Fetch: c.CanFetch, Publish: c.CanPublish, Cancel: c.CanCancel}
}

func (w *wireCaps) caps() drivers.Capabilities {
	return drivers.Capabilities{MaxRowsPerOp: w.MaxRows, AbsentIsMiss: w.AbsentIsMiss, CanFetch: w.Fetch, CanPublish: w.Publish, CanCancel: w.Cancel}
}

// wireRegion is a region as the child sees it: its geometry, the address
// range of the caller's memory (for overlap checks only: the child never
// dereferences it) and the shared file it maps.
type wireRegion struct {
	Label     string `json:"label"`
	SlotBytes int    `json:"slot_bytes"`
	Slots     int    `json:"slots"`
	Base      uint64 `json:"base"`
	Length    int    `json:"length"`
	Path      string `json:"path"`
	Offset    int64  `json:"offset"` // of slot 0 in path (protocol 2)
	Size      int    `json:"size"`
}

type wireRow struct {
	Key      string `json:"key"`
	Handle   uint64 `json:"handle"`
	Slot     int    `json:"slot"`
	Position int    `json:"position"`
}

type wireError struct {
	Kind    string   `json:"kind"`
	Message string   `json:"message"`
	Labels  []string `json:"labels"`
}

// Error kinds a child may answer, and the contract error each maps to.
const (
	kindInvalid          = "invalid"           // drivers.ErrInvalidSubmission
	kindClosed           = "closed"            // drivers.ErrClosed
	kindRejected         = "rejected"          // drivers.ErrRejected
	kindRefused          = "refused"           // drivers.ErrRegistrationRefused
	kindBadGeometry      = "bad_geometry"      // ErrRegistrationRefused + ErrBadGeometry
	kindBusy             = "busy"              // drivers.ErrBusy
	kindUnregisterFailed = "unregister_failed" // drivers.ErrUnregisterFailed
	kindLookupFailed     = "lookup_failed"     // drivers.ErrLookupFailed
	kindInDoubt          = "in_doubt"          // *drivers.InDoubtError
	kindUnsupported      = "unsupported"       // ErrUnsupported (optional ops)
)

// ErrUnsupported is returned for an optional op (delete, flush, live) the
// child does not offer.
var ErrUnsupported = errors.New("procdriver: not offered by the driver process")

// ErrChild is wrapped by every error that comes from the child: an error
// the child answered with (its message follows) or the child's failure.
var ErrChild = errors.New("driver process")

// toError maps a child's error answer to the contract's errors (the kinds
// of docs/PROTOCOL.md); an unknown kind is a plain error, which for Submit
// means "something may have escaped" (D-SUB-2).
func toError(op string, e *wireError) error {
	if e == nil {
		return fmt.Errorf("%w: %s failed without an error object", ErrChild, op)
	}
	msg := e.Message
	if msg == "" {
		msg = e.Kind
	}
	switch e.Kind {
	case kindInvalid:
		return fmt.Errorf("%w: %w: %s", drivers.ErrInvalidSubmission, ErrChild, msg)
	case kindClosed:
		return fmt.Errorf("%w: %w: %s", drivers.ErrClosed, ErrChild, msg)
	case kindRejected:
		return fmt.Errorf("%w: %w: %s", drivers.ErrRejected, ErrChild, msg)
	case kindRefused:
		return fmt.Errorf("%w: %w: %s", drivers.ErrRegistrationRefused, ErrChild, msg)
	case kindBadGeometry:
		return fmt.Errorf("%w: %w: %w: %s", drivers.ErrRegistrationRefused, drivers.ErrBadGeometry, ErrChild, msg)
	case kindBusy:
		return fmt.Errorf("%w: %w: %s", drivers.ErrBusy, ErrChild, msg)
	case kindUnregisterFailed:
		return fmt.Errorf("%w: %w: %s", drivers.ErrUnregisterFailed, ErrChild, msg)
	case kindLookupFailed:
		return fmt.Errorf("%w: %w: %s", drivers.ErrLookupFailed, ErrChild, msg)
	case kindInDoubt:
		o := "register"
		if strings.HasPrefix(op, "unregister") {
			o = "unregister"
		}
		return &drivers.InDoubtError{Op: o, Labels: append([]string(nil), e.Labels...), Err: fmt.Errorf("%w: %s", ErrChild, msg)}
	case kindUnsupported:
		return fmt.Errorf("%w: %s: %s", ErrUnsupported, op, msg)
	}
	return fmt.Errorf("%w: %s failed (%s): %s", ErrChild, op, e.Kind, msg)
}

var statusWire = map[string]drivers.Status{
	"pending": drivers.Pending, "ok": drivers.OK, "miss": drivers.Miss, "fault": drivers.Fault, "not_attempted": drivers.NotAttempted,
}

var accessWire = map[string]drivers.Access{
	"pending": drivers.AccessPending, "ended": drivers.AccessEnded, "unprovable": drivers.AccessUnprovable,
}

func dirWire(d drivers.Direction) string {
	switch d {
	case drivers.Fetch:
		return "fetch"
	case drivers.Publish:
		return "publish"
	}
	return fmt.Sprintf("direction-%d", d)
}
