// Package lender is the memory owner of SPEC §4: the test double that lends
// region slots to a backend per attempt and the oracle that says whether the
// backend let it reuse memory safely.
//
// A [Lender] creates one arena (sim/arena) per region, so every driver touch
// is observed. It lends slots per attempt ([Lender.Lend]), builds the view
// rows for them, and subscribes to the backend's Config.OnChange
// ([Lender.OnChange]). From then on:
//
//   - S-RELEASE: a loan's slots go back (poisoned) only once the attempt's
//     outcome is committed and its access is ENDED. An UNPROVABLE attempt's
//     slots are retained forever (counted), even if proof arrives later.
//   - S-MARKS: for a fetch, exactly the served rows are marked arrived; a
//     failed, cancelled or missed row never is.
//   - S-HOLD: the hold on all regions is released only when the backend's
//     shutdown returned no labels ([Lender.ShutdownReturned]); then the
//     arenas are marked unregistered, so any later touch is an
//     S-NO-LATE-ACCESS violation.
//
// A backend that breaks these rules shows up as a [rules.Violation] naming
// the rule: evidence withdrawn after a release (S-RELEASE), marks that no
// longer match the outcome (S-MARKS), a shutdown that reported nothing while
// an attempt's access was not ENDED (S-HOLD), and every touch the arenas
// caught (S-NO-LATE-ACCESS, D-SUB-6).
//
// The lender is driven from the runtime's event context, like the backend.
package lender

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
	"github.com/storesim/storesim/sim/slab"
)

// Spec describes one region the lender creates.
type Spec struct {
	Label            string
	Slots, SlotBytes int
	_                struct{}
}

// Errors.
var (
	ErrBadSpec   = errors.New("bad lender region spec")
	ErrNoSlots   = errors.New("not enough free slots")
	ErrBadLoan   = errors.New("bad loan use")
	ErrBadView   = errors.New("cannot build view")
	ErrUnbound   = errors.New("region not bound by the backend")
	ErrNotHolder = errors.New("lender no longer holds its regions")
)

// SlotRef names one slot.
type SlotRef struct {
	Region string
	Slot   int
}

// LoanState is where a loan's slots are.
type LoanState uint8

const (
	// Lent: the backend may touch the slots.
	Lent LoanState = iota + 1
	// Released: committed outcome and access ENDED; slots are back, poisoned.
	Released
	// Retained: the attempt was UNPROVABLE; slots are never reused.
	Retained
	// Returned: never submitted (admission refused); slots are back.
	Returned
)

func (s LoanState) String() string {
	return [...]string{"?", "lent", "released", "retained", "returned"}[s]
}

// Attempt is what the lender reads of an attempt; *backend.Attempt
// implements it. Tests and planted bugs feed it other implementations to
// prove the checks fire.
type Attempt interface {
	ID() uint64
	Dir() drivers.Direction
	Rows() int        // the view's row count
	Asked(i int) bool // the view's Mask[i]
	Outcome() backend.Outcome
	Access() drivers.Access
}

var _ Attempt = (*backend.Attempt)(nil)

// Loan is the slots lent for one attempt, one per view position. Loans,
// their slot lists, views and marks are carved from their lender's slabs:
// they live as long as the lender, which keeps every loan anyway.
type Loan struct {
	l       *Lender
	id      uint64
	slots   []slotAt
	bytes   int64
	attempt Attempt
	marked  *marking        // nil until marked (most loans never are)
	seen    backend.Outcome // outcome at release (S-RELEASE re-checks it)
	state   LoanState
	proven  bool      // retained, then access ENDED
	inl     [8]slotAt // slots' storage for a loan of up to 8 (most are)
}

// marking is a fetch's arrived marks (S-MARKS), taken once.
type marking struct {
	marks []bool          // arrived rows, by view position
	data  [][]byte        // the bytes of each arrived row, read when marked
	from  backend.Outcome // the outcome the marks were taken from
}

// slotAt is a SlotRef as the lender keeps it: the region by its index in
// the lender's arenas, so a loan's slot list is small and needs no label
// look-up.
type slotAt struct{ region, slot int32 }

// ID is unique per lender, from 1.
func (ln *Loan) ID() uint64 { return ln.id }

// Slots lists the loan's slots in view order.
func (ln *Loan) Slots() []SlotRef {
	out := make([]SlotRef, len(ln.slots))
	for i, r := range ln.slots {
		out[i] = SlotRef{ln.l.arenas[r.region].Label(), int(r.slot)}
	}
	return out
}

// State is where the loan's slots are.
func (ln *Loan) State() LoanState { return ln.state }

// Attempt is the attempt the loan was attached to, or nil.
func (ln *Loan) Attempt() Attempt { return ln.attempt }

// Marks is the arrived marks, by view position (S-MARKS).
func (ln *Loan) Marks() []bool {
	var marks []bool
	switch {
	case ln.marked != nil:
		marks = ln.marked.marks
	case ln.attempt != nil:
		marks = make([]bool, len(ln.slots)) // attached, not marked: nothing arrived
	}
	return append([]bool(nil), marks...)
}

// Data is what arrived in row i, read from the slot when the row was marked
// (so it stays readable after the slot is released and poisoned); nil for a
// row that did not arrive.
func (ln *Loan) Data(i int) []byte {
	if ln.marked == nil || i < 0 || i >= len(ln.marked.data) {
		return nil
	}
	return ln.marked.data[i]
}

// Stats counts slots.
type Stats struct {
	Lent, Released, Retained int
	RetainedBytes            int64
}

// Lender owns the regions' memory.
type Lender struct {
	clock      sim.Clock
	arenas     []*arena.Arena
	nextLoan   uint64
	loans      map[Attempt]*Loan
	all        []*Loan
	held       bool
	violations []rules.Violation
	stats      Stats

	free     []slotAt // Lend's scratch: the free slots found
	cursors  []int    // scanSpread's scratch: the next slot to look at, per region
	spread   int      // SpreadEvery's k (0: every loan first-fit)
	run      [8]int32 // eachRegion's scratch: one region's slots (a view has at most 8)
	unbound  []error  // View's ErrUnbound per region, made on first use
	loanSlab slab.Of[Loan]
	slotSlab slab.Of[slotAt] // the slots of loans larger than Loan.inl
	rowSlab  slab.Of[drivers.Row]
	flagSlab slab.Of[bool] // views' masks and loans' marks
	dataSlab slab.Of[[]byte]
	byteSlab slab.Of[byte] // marked rows' data (keepSlot)
	markSlab slab.Of[marking]

	// The storage of free and of a few arenas, in the lender's own
	// allocation.
	freeInl   [8]slotAt
	arenasInl [4]*arena.Arena
}

// New creates one arena per spec, all slots at the lender, and takes the
// hold on them. clock stamps touches and violations (it may be nil).
func New(clock sim.Clock, specs ...Spec) (*Lender, error) {
	return NewWithArenas(arena.Options{Clock: clock}, specs...)
}

// SpreadEvery makes every k-th loan take its slots from the regions in
// turn, one from each, instead of filling the first region first: a view
// then spans regions (of different slot sizes, where they differ), which
// first-fit gives only when a region runs out. k <= 0: never.
func (l *Lender) SpreadEvery(k int) { l.spread = k }

// NewWithArenas is New with the arenas' options given whole (a touch hook
// for the memory oracle, a touch log); opts.Clock is the lender's clock.
func NewWithArenas(opts arena.Options, specs ...Spec) (*Lender, error) {
	clock := opts.Clock
	// The loans and their map are made at the first loan (Reserve).
	l := &Lender{clock: clock, held: true}
	l.free, l.arenas = l.freeInl[:0], l.arenasInl[:0]
	if len(specs) > len(l.arenasInl) {
		l.arenas = make([]*arena.Arena, 0, len(specs))
	}
	for _, s := range specs {
		switch {
		case s.Label == "" || l.Arena(s.Label) != nil:
			return nil, fmt.Errorf("%w: label %q empty or used twice", ErrBadSpec, s.Label)
		case s.Slots <= 0 || s.SlotBytes <= 0:
			return nil, fmt.Errorf("%w: region %q: %d slots of %d bytes", ErrBadSpec, s.Label, s.Slots, s.SlotBytes)
		}
		a := arena.New(s.Label, s.Slots, s.SlotBytes, opts)
		l.arenas = append(l.arenas, a)
	}
	return l, nil
}

// Reserve makes room for about n loans, before the first: the list of
// loans and the map by attempt then do not grow from nothing. Without it
// the first loan makes room for 32, about what an endpoint of a 100-op run
// of the engine lends. Only the first Reserve before the first loan
// counts: once room is made, Reserve does nothing.
//
// n ops of the engine are about 4n/5 loans, n/3 markings and 5n/4 of
// their kept slots (the 90th percentile over 600 one-endpoint seeds of 2,
// 35 and 100 ops): the slabs' first chunks hold that many, and n+8 flags.
func (l *Lender) Reserve(n int) {
	if l.all == nil {
		n = max(n, 1)
		l.loans, l.all = make(map[Attempt]*Loan, n), make([]*Loan, 0, n)
		l.loanSlab.Reserve(n*4/5 + 1)
		l.markSlab.Reserve(n/3 + 2)
		l.dataSlab.Reserve(n*5/4 + 3)
		l.flagSlab.Reserve(n + 8)
	}
}

// Regions is what the backend registers, in spec order.
func (l *Lender) Regions() []drivers.Region {
	out := make([]drivers.Region, len(l.arenas))
	for i, a := range l.arenas {
		out[i] = a.Region()
	}
	return out
}

// Arena returns the arena of a region, or nil.
//
// A lender has a few regions: a scan finds one faster than a map's hash,
// and saves building the map per lender.
func (l *Lender) Arena(label string) *arena.Arena {
	for _, a := range l.arenas {
		if a.Label() == label {
			return a
		}
	}
	return nil
}

// Arenas lists the arenas, in spec order.
func (l *Lender) Arenas() []*arena.Arena { return append([]*arena.Arena(nil), l.arenas...) }

// LoanOf is the loan attached to attempt a, or nil.
func (l *Lender) LoanOf(a Attempt) *Loan { return l.loans[a] }

// LoanAt is the loan slot ref is lent to now, or nil.
func (l *Lender) LoanAt(ref SlotRef) *Loan {
	a := l.Arena(ref.Region)
	if a == nil || ref.Slot < 0 || ref.Slot >= a.Region().Slots {
		return nil
	}
	if id := a.Owner(ref.Slot); id > 0 && id <= uint64(len(l.all)) {
		return l.all[id-1]
	}
	return nil
}

func (l *Lender) now() time.Duration {
	if l.clock == nil {
		return 0
	}
	return l.clock.Now()
}

func (l *Lender) violate(rule rules.ID, ln *Loan, format string, args ...any) {
	v := rules.Violation{Rule: rule, Class: rules.Safety, Row: -1, At: l.now(), Seq: sim.Stamp(l.clock), Detail: fmt.Sprintf(format, args...)}
	if ln != nil {
		v.Loan = ln.id
	}
	l.violations = append(l.violations, v)
}

// Stats returns the slot counts.
func (l *Lender) Stats() Stats { return l.stats }

// Held reports whether the lender still holds its regions (S-HOLD).
func (l *Lender) Held() bool { return l.held }

// Violations returns the lender's own violations, then each arena's (the
// seed is the caller's to stamp).
func (l *Lender) Violations() []rules.Violation {
	out := append([]rules.Violation(nil), l.violations...)
	for _, a := range l.arenas {
		out = append(out, ArenaViolations(a)...)
	}
	return out
}

// ArenaViolations is what an arena caught (S-NO-LATE-ACCESS, D-SUB-6), as
// violations of the backend that let the touch happen.
func ArenaViolations(a *arena.Arena) []rules.Violation {
	var out []rules.Violation
	for _, v := range a.Violations() {
		out = append(out, rules.Violation{Rule: v.Rule, Class: rules.Safety, Row: -1, At: v.Touch.At, Detail: v.Detail + ": " + v.Touch.String()})
	}
	return out
}

// noSlotsError is fmt.Errorf("%w: want %d, have %d", ErrNoSlots, want,
// have): a loan that does not fit is normal work, its text is for reports
// (the engine keeps it: it is built without fmt's parsing).
type noSlotsError struct{ want, have int }

func (e *noSlotsError) Error() string {
	return ErrNoSlots.Error() + ": want " + strconv.Itoa(e.want) + ", have " + strconv.Itoa(e.have)
}

func (e *noSlotsError) Unwrap() error { return ErrNoSlots }
