// Package arena is storesim's simulated memory: region arenas whose every
// read and write by a driver is observed, with per-slot ownership and
// poisoning on release.
//
// An [Arena] implements drivers.Memory. The lender (the owner of the memory)
// moves each slot between three states: at the lender (never lent, or
// released), lent to an attempt, and retained (an UNPROVABLE call may still
// touch it, so it is never reused). Any touch of a slot at the lender, or of
// an arena that is not registered, is an S-NO-LATE-ACCESS violation; a touch
// that crosses a slot boundary or leaves the slot area is a D-SUB-6
// violation. Both are recorded at the exact touch, with the call, row and
// virtual time. Every touch is also logged (or handed to a hook) so the
// memory oracle in package model can check the rules that need to know the
// calls: D-ACCESS-END, row-to-slot and "MISS leaves the slot untouched".
//
// Released slots are filled with [Poison] so a late read returns garbage
// that a checker recognises.
//
// The arena is safe for concurrent use: real drivers touch it from their own
// goroutines in the harness's real-time mode.
//
// # Shared memory
//
// An arena is Go heap memory unless Options.Shared places it in a
// [Shared]: a file-backed MAP_SHARED mapping that a driver in another
// process maps too (Arena.SharedFile), so that process moves the arena's
// bytes themselves. Its touches bypass Read and Write, so the arena audits
// instead: Arena.Audit finds the slots whose bytes changed behind its back
// (by checksum, also checked before each Fill and Release) and records each
// as a touch by the call and row the caller names, with the same checks and
// hook (shared.go).
package arena

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim"
)

// Poison is the byte released slots are filled with.
const Poison = 0xDB

// poisonFill is Poison repeated: Release copies it over a slot, which is
// cheaper than storing the byte one at a time.
var poisonFill = func() (b [256]byte) {
	for i := range b {
		b[i] = Poison
	}
	return b
}()

// SlotState is who owns a slot.
type SlotState uint8

const (
	// AtLender: not lent (never, or released); no driver may touch it.
	AtLender SlotState = iota
	// Lent: lent to an attempt; its calls may touch it.
	Lent
	// Retained: an UNPROVABLE call may still touch it; never reused.
	Retained
)

func (s SlotState) String() string {
	return [...]string{"at-lender", "lent", "retained"}[s]
}

// Op is a kind of touch.
type Op uint8

const (
	Read Op = iota + 1
	Write
)

func (o Op) String() string {
	if o == Read {
		return "read"
	}
	return "write"
}

// Touch is one access to arena memory.
type Touch struct {
	At         time.Duration
	Region     string
	Op         Op
	Off, N     int
	By         drivers.Toucher
	Slot       int // -1 when the access is not inside one slot
	State      SlotState
	Owner      uint64 // the attempt the slot was lent to (when Lent)
	Registered bool
	// Audited: the touch was made directly in shared memory by another
	// process and found by an audit (shared.go) at At: it happened at or
	// before At, after the audit before.
	Audited bool
}

func (t Touch) String() string {
	s := fmt.Sprintf("%v %s %s [%d,+%d) slot %d (%s) by call %d row %d",
		t.At, t.Region, t.Op, t.Off, t.N, t.Slot, t.State, t.By.Call, t.By.Row)
	if t.Audited {
		s += " (found in the shared mapping by the audit)"
	}
	return s
}

// Violation is a rule broken at a touch.
type Violation struct {
	Rule   rules.ID // S-NO-LATE-ACCESS or D-SUB-6
	Touch  Touch
	Detail string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s: %s", v.Rule, v.Detail, v.Touch)
}

// Options configures an arena.
type Options struct {
	// Clock stamps touches with virtual time (nil: zero).
	Clock sim.Clock
	// Log keeps every touch (Touches); off by default to save memory.
	Log bool
	// OnTouch, if set, sees every touch after the arena's own checks, outside
	// the arena's lock.
	OnTouch func(Touch)
	// Shared, when set, places the arena's bytes in that file-backed
	// shared mapping instead of the Go heap, for a driver in another
	// process to map (shared.go); if they cannot be placed there the arena
	// is Go heap memory, and Shared.Err says why.
	Shared *Shared
	_      struct{}
}

// Arena is one region's simulated memory.
type Arena struct {
	label     string
	slotBytes int
	opts      Options

	mu         sync.Mutex
	buf        []byte
	slots      []slotInfo
	registered bool
	log        []Touch
	violations []Violation
	vseen      map[violationKey]bool
	dropped    int          // touches beyond MaxLog, violations beyond MaxViolations
	sh         *sharedState // nil: Go heap memory (shared.go)
	// firstFree is FirstFree (written under mu, read without it like a
	// slot's state): the lender's search for free slots skips the lent
	// ones below it.
	firstFree atomic.Int32
}

// smallArena is a small arena (a probe's: a few slots of tens of bytes)
// with its slots and bytes inline: one allocation instead of three. Other
// arenas do not carry the room.
type smallArena struct {
	Arena
	slots [smallSlots]slotInfo
	buf   [smallBytes]byte
}

// An arena of at most smallSlots slots and smallBytes bytes is small.
const (
	smallSlots = 4
	smallBytes = 256
)

// The bounds of what an arena keeps, whatever a driver does: a driver
// that touches memory over and over costs counters, not memory.
const (
	// MaxLog bounds the touch log (Options.Log); later touches are
	// counted (Dropped), not logged.
	MaxLog = 1 << 20
	// MaxViolations bounds the violations kept. A violation is kept once
	// per kind of touch (rule, toucher, read or write, slot, state): a
	// repeat tells nothing new.
	MaxViolations = 1 << 10
)

// slotInfo is one slot's ownership. The state is written under mu but read
// by State without it: the lender scans the slots' states (from FirstFree)
// at each loan.
type slotInfo struct {
	owner uint64        // guarded by mu
	state atomic.Uint32 // a SlotState
}

// State is the slot's ownership.
func (s *slotInfo) State() SlotState { return SlotState(s.state.Load()) }

func (s *slotInfo) set(st SlotState, owner uint64) {
	s.state.Store(uint32(st))
	s.owner = owner
}

type violationKey struct {
	rule  rules.ID
	by    drivers.Toucher
	op    Op
	slot  int
	state SlotState
}

// New returns an arena of slots*slotBytes bytes, all slots at the lender,
// not registered.
func New(label string, slots, slotBytes int, opts Options) *Arena {
	n := slots * slotBytes
	var a *Arena
	var own []byte // the arena's bytes on the Go heap, unless they are shared
	switch {
	case slots <= smallSlots && n <= smallBytes:
		small := new(smallArena)
		a, own = &small.Arena, small.buf[:n:n]
		a.slots = small.slots[:slots:slots]
	case opts.Shared == nil:
		a = new(Arena)
		a.slots, own = slotsAndBytes(slots, n)
	default:
		a = new(Arena)
		a.slots = make([]slotInfo, slots)
	}
	a.label, a.slotBytes, a.opts = label, slotBytes, opts
	if opts.Shared != nil && n > 0 {
		a.placeShared(opts.Shared, n)
	}
	if a.buf == nil {
		a.buf = own
		if a.buf == nil {
			a.buf = make([]byte, n)
		}
	}
	return a
}

// slotsAndBytes makes an arena's slot table and its n bytes in one
// allocation, the bytes after the slots: neither holds a pointer, so one
// block of slotInfo serves both (nil bytes when n is 0).
func slotsAndBytes(slots, n int) ([]slotInfo, []byte) {
	const size = int(unsafe.Sizeof(slotInfo{}))
	if n == 0 {
		return make([]slotInfo, slots), nil
	}
	all := make([]slotInfo, slots+(n+size-1)/size)
	return all[:slots:slots], unsafe.Slice((*byte)(unsafe.Pointer(&all[slots])), n)
}

// Region returns the drivers.Region over this arena.
func (a *Arena) Region() drivers.Region {
	return drivers.Region{Label: a.label, SlotBytes: a.slotBytes, Slots: len(a.slots), Mem: a}
}

// Label is the region label.
func (a *Arena) Label() string { return a.label }

// Len implements drivers.Memory.
func (a *Arena) Len() int { return len(a.buf) }

// Extent implements drivers.Memory.
func (a *Arena) Extent() (uintptr, int) {
	if len(a.buf) == 0 {
		return 0, 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(a.buf))), len(a.buf)
}

// Read implements drivers.Memory.
func (a *Arena) Read(by drivers.Toucher, off int, p []byte) error {
	return a.touch(Read, by, off, p)
}

// Write implements drivers.Memory.
func (a *Arena) Write(by drivers.Toucher, off int, p []byte) error {
	return a.touch(Write, by, off, p)
}

func (a *Arena) touch(op Op, by drivers.Toucher, off int, p []byte) error {
	a.mu.Lock()
	if off < 0 || off+len(p) > len(a.buf) {
		a.mu.Unlock()
		return drivers.ErrOutOfBounds
	}
	t := Touch{Op: op, Off: off, N: len(p), By: by, Region: a.label, Registered: a.registered, Slot: -1}
	if a.opts.Clock != nil {
		t.At = a.opts.Clock.Now()
	}
	first, last := off/a.slotBytes, (off+len(p)-1)/a.slotBytes
	if len(p) == 0 {
		last = first
	}
	if first == last && first < len(a.slots) {
		t.Slot, t.State, t.Owner = first, a.slots[first].State(), a.slots[first].owner
	}
	switch {
	case t.Slot < 0:
		a.violate(rules.DSub6, t, "access crosses a slot boundary or leaves the slot area")
	case !a.registered:
		a.violate(rules.SNoLateAccess, t, "touch of a region that is not registered")
	case t.State == AtLender:
		a.violate(rules.SNoLateAccess, t, "touch of a slot that is not lent (released or never lent)")
	}
	if op == Read {
		copy(p, a.buf[off:])
	} else {
		copy(a.buf[off:], p)
		if a.sh != nil {
			a.ownedLocked(first, last)
		}
	}
	if a.opts.Log {
		if len(a.log) < MaxLog {
			a.log = append(a.log, t)
		} else {
			a.dropped++
		}
	}
	hook := a.opts.OnTouch
	a.mu.Unlock()
	if hook != nil {
		hook(t)
	}
	return nil
}

func (a *Arena) violate(rule rules.ID, t Touch, detail string) {
	k := violationKey{rule, t.By, t.Op, t.Slot, t.State}
	if a.vseen[k] {
		return
	}
	if len(a.violations) >= MaxViolations {
		a.dropped++
		return
	}
	if a.vseen == nil {
		a.vseen = map[violationKey]bool{}
	}
	a.vseen[k] = true
	a.violations = append(a.violations, Violation{Rule: rule, Touch: t, Detail: detail})
}

// Dropped counts what the arena did not keep at its bounds: touches beyond
// MaxLog and distinct violations beyond MaxViolations.
func (a *Arena) Dropped() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dropped
}

// SetRegistered records whether the region is registered with a driver;
// the monitor calls it when a registration succeeds or a close succeeds.
func (a *Arena) SetRegistered(on bool) {
	a.mu.Lock()
	a.registered = on
	a.mu.Unlock()
}

// Registered reports the registration state.
func (a *Arena) Registered() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.registered
}

// Lend hands slot to attempt. Lending a slot that is not at the lender is a
// lender bug and panics (the lender is test code).
func (a *Arena) Lend(slot int, attempt uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lendLocked(slot, attempt)
}

// LendEach is Lend of each of slots to attempt, under one lock: a loan's
// slots in one region cost one round trip.
func (a *Arena) LendEach(attempt uint64, slots ...int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, slot := range slots {
		a.lendLocked(int(slot), attempt)
	}
}

func (a *Arena) lendLocked(slot int, attempt uint64) {
	if st := a.slots[slot].State(); st != AtLender {
		panic(fmt.Sprintf("arena %s: lend of slot %d in state %s", a.label, slot, st))
	}
	a.slots[slot].set(Lent, attempt)
	if f := int(a.firstFree.Load()); slot == f {
		for f++; f < len(a.slots) && a.slots[f].State() != AtLender; f++ {
		}
		a.firstFree.Store(int32(f))
	}
}

// FirstFree is the lowest slot that may be at the lender (none below it
// is; the slot count when none is): where a search for free slots starts.
func (a *Arena) FirstFree() int { return int(a.firstFree.Load()) }

// Release takes slot back and poisons it (S-RELEASE).
func (a *Arena) Release(slot int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.releaseLocked(slot)
}

// ReleaseEach is Release of each of slots, under one lock.
func (a *Arena) ReleaseEach(slots ...int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, slot := range slots {
		a.releaseLocked(int(slot))
	}
}

func (a *Arena) releaseLocked(slot int) {
	if a.sh != nil {
		a.checkLocked(slot)
	}
	a.slots[slot].set(AtLender, 0)
	if int32(slot) < a.firstFree.Load() {
		a.firstFree.Store(int32(slot))
	}
	b := a.buf[slot*a.slotBytes : (slot+1)*a.slotBytes]
	for len(b) > 0 {
		b = b[copy(b, poisonFill[:]):]
	}
	if a.sh != nil {
		a.ownedLocked(slot, slot)
	}
}

// Retain marks slot as kept forever for an UNPROVABLE call.
func (a *Arena) Retain(slot int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.slots[slot].state.Store(uint32(Retained))
}

// Owner is the attempt (the lender's loan) slot is lent to; 0 when it is
// not lent.
func (a *Arena) Owner(slot int) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.slots[slot].owner
}

// State is slot's ownership.
func (a *Arena) State(slot int) SlotState { return a.slots[slot].State() }

// Fill sets slot's bytes as the owner (no touch is recorded): the workload
// writes the content it will publish.
func (a *Arena) Fill(slot int, content []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sh != nil {
		a.checkLocked(slot)
	}
	copy(a.buf[slot*a.slotBytes:(slot+1)*a.slotBytes], content)
	if a.sh != nil {
		a.ownedLocked(slot, slot)
	}
}

// Peek copies slot's bytes as the owner (no touch is recorded).
func (a *Arena) Peek(slot int) []byte {
	return a.AppendPeek(nil, slot)
}

// AppendPeek appends slot's bytes to dst as the owner (no touch is
// recorded) and returns it: Peek for a caller that reuses its buffer, as
// one that only digests the bytes can.
func (a *Arena) AppendPeek(dst []byte, slot int) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append(dst, a.buf[slot*a.slotBytes:(slot+1)*a.slotBytes]...)
}

// Touches returns the touch log (Options.Log).
func (a *Arena) Touches() []Touch {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Touch(nil), a.log...)
}

// Violations returns the violations seen so far.
func (a *Arena) Violations() []Violation {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Violation(nil), a.violations...)
}
