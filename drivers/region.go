package drivers

import (
	"errors"
	"fmt"
	"unsafe"
)

// Memory is registered memory as a driver sees it. Every byte a driver moves
// goes through Read or Write, naming the call and row that did it, so the
// simulator can attribute each touch (S-NO-LATE-ACCESS, D-ACCESS-END, D-SUB-6).
type Memory interface {
	// Len is the number of bytes.
	Len() int
	// Extent is the address range backing the memory; two memories overlap
	// when their extents intersect (D-GEOM, D-REG-1).
	Extent() (base uintptr, n int)
	// Read copies len(p) bytes at off into p on behalf of by.
	Read(by Toucher, off int, p []byte) error
	// Write copies p to off on behalf of by.
	Write(by Toucher, off int, p []byte) error
}

// Toucher names who touches memory: a call and a row index within it.
type Toucher struct {
	Call CallID
	Row  int
}

// ErrOutOfBounds is returned by [Memory] when an access leaves the memory.
var ErrOutOfBounds = errors.New("memory access out of bounds")

// Bytes is plain, untracked memory: the real-use implementation of [Memory].
type Bytes []byte

// Len implements [Memory].
func (b Bytes) Len() int { return len(b) }

// Extent implements [Memory].
func (b Bytes) Extent() (uintptr, int) {
	if len(b) == 0 {
		return 0, 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(b))), len(b)
}

// Read implements [Memory].
func (b Bytes) Read(_ Toucher, off int, p []byte) error {
	if off < 0 || off+len(p) > len(b) {
		return ErrOutOfBounds
	}
	copy(p, b[off:])
	return nil
}

// Write implements [Memory].
func (b Bytes) Write(_ Toucher, off int, p []byte) error {
	if off < 0 || off+len(p) > len(b) {
		return ErrOutOfBounds
	}
	copy(b[off:], p)
	return nil
}

// Region is a labelled block of memory divided into Slots slots of SlotBytes
// bytes each, back to back from offset 0.
type Region struct {
	Label     string
	SlotBytes int
	Slots     int
	Mem       Memory
}

// SlotOffset is the byte offset of slot i.
func (r Region) SlotOffset(i int) int { return i * r.SlotBytes }

// Overlaps reports whether the memories of r and o share any byte.
func (r Region) Overlaps(o Region) bool {
	if r.Mem == nil || o.Mem == nil {
		return false
	}
	ab, an := r.Mem.Extent()
	bb, bn := o.Mem.Extent()
	return an > 0 && bn > 0 && ab < bb+uintptr(bn) && bb < ab+uintptr(an)
}

// ErrBadGeometry is wrapped by every D-GEOM failure; its text is the phrase
// the spec requires ("bad region geometry").
var ErrBadGeometry = errors.New("bad region geometry")

// CheckGeometry enforces D-GEOM on a set of regions: SlotBytes > 0, Slots > 0,
// SlotBytes*Slots <= len(memory), labels unique and non-empty, and no two
// regions sharing memory. The error wraps [ErrBadGeometry] and names the
// region. It never asks a store: callers run it before registering anything.
func CheckGeometry(regions ...Region) error {
	// The pairs are compared by scans (overlaps need them anyway): a set
	// of labels cost a map per call, and a backend, a driver and the
	// monitor each check every registration.
	for i, r := range regions {
		switch {
		case r.Label == "":
			return fmt.Errorf("%w: region #%d has no label", ErrBadGeometry, i)
		case labelIn(r.Label, regions[:i]):
			return fmt.Errorf("%w: region %q: label used twice", ErrBadGeometry, r.Label)
		case r.Mem == nil:
			return fmt.Errorf("%w: region %q has no memory", ErrBadGeometry, r.Label)
		case r.SlotBytes <= 0:
			return fmt.Errorf("%w: region %q: SlotBytes %d <= 0", ErrBadGeometry, r.Label, r.SlotBytes)
		case r.Slots <= 0:
			return fmt.Errorf("%w: region %q: Slots %d <= 0", ErrBadGeometry, r.Label, r.Slots)
		case r.SlotBytes > r.Mem.Len()/r.Slots:
			return fmt.Errorf("%w: region %q: %d slots of %d bytes exceed its %d bytes of memory",
				ErrBadGeometry, r.Label, r.Slots, r.SlotBytes, r.Mem.Len())
		}
		for _, o := range regions[:i] {
			if r.Overlaps(o) {
				return fmt.Errorf("%w: region %q shares memory with region %q", ErrBadGeometry, r.Label, o.Label)
			}
		}
	}
	return nil
}

// labelIn reports whether one of regions is labelled label.
func labelIn(label string, regions []Region) bool {
	for _, o := range regions {
		if o.Label == label {
			return true
		}
	}
	return false
}
