package lender

import (
	"fmt"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/arena"
)

// Lend lends n free slots (lowest region, then lowest slot first) for one
// attempt, or none.
func (l *Lender) Lend(n int) (*Loan, error) {
	if !l.held {
		return nil, ErrNotHolder
	}
	// One scan, into the lender's scratch list: a loan that does not fit
	// allocates nothing.
	l.free = l.free[:0]
	if k := l.spread; k > 0 && len(l.arenas) > 1 && (l.nextLoan+1)%uint64(k) == 0 {
		l.scanSpread(n)
	} else {
		for ai, a := range l.arenas {
			for s, slots := a.FirstFree(), a.Region().Slots; s < slots && len(l.free) < n; s++ {
				if a.State(s) == arena.AtLender {
					l.free = append(l.free, slotAt{int32(ai), int32(s)})
				}
			}
		}
	}
	if len(l.free) < n {
		return nil, &noSlotsError{n, len(l.free)}
	}
	l.Reserve(32)
	l.nextLoan++
	ln := l.loanSlab.New() // zeroed: set only what a new loan holds
	ln.l, ln.id, ln.state = l, l.nextLoan, Lent
	if n <= len(ln.inl) {
		ln.slots = ln.inl[:n:n]
	} else {
		ln.slots = l.slotSlab.Make(n)
	}
	copy(ln.slots, l.free)
	l.eachRegion(ln.slots, func(a *arena.Arena, slots []int32) {
		a.LendEach(ln.id, slots...)
		ln.bytes += int64(len(slots)) * int64(a.Region().SlotBytes)
	})
	l.stats.Lent += n
	l.all = append(l.all, ln)
	return ln, nil
}

// Fill writes content into the loan's i-th slot as the owner.
func (l *Lender) Fill(ln *Loan, i int, content []byte) {
	r := ln.slots[i]
	l.arenas[r.region].Fill(int(r.slot), content)
}

// Peek reads the loan's i-th slot as the owner.
func (l *Lender) Peek(ln *Loan, i int) []byte {
	r := ln.slots[i]
	return l.arenas[r.region].Peek(int(r.slot))
}

// keepSlot is Peek into bytes carved from the lender's byte slab: a
// marked row's data lives as long as the loan. Its capacity ends at the
// slot's length, so a caller's append to Data copies.
func (l *Lender) keepSlot(ln *Loan, i int) []byte {
	r := ln.slots[i]
	a := l.arenas[r.region]
	n := a.Region().SlotBytes
	if n <= 0 {
		return a.Peek(int(r.slot)) // nothing to carve: Peek's own answer
	}
	return a.AppendPeek(l.byteSlab.Make(n)[:0], int(r.slot))
}

// Handles is what a view needs from the backend.
type Handles interface {
	Handle(label string) (drivers.Handle, bool)
}

// View builds the view of the loan: row i is keys[i] on slot i, masked in
// when mask is nil or mask[i]. Its rows and mask are full slices carved
// from the lender's slabs (an append to them copies).
func (ln *Loan) View(b Handles, keys []string, mask []bool) (drivers.View, error) {
	return ln.ViewInto(drivers.View{}, b, keys, mask)
}

// ViewInto is View written into buf's storage when both its slices have
// room for every row (else carved like View's): for a caller that drops
// the view once the backend admitted it (admission copies what it keeps),
// so one buffer serves every view.
func (ln *Loan) ViewInto(buf drivers.View, b Handles, keys []string, mask []bool) (drivers.View, error) {
	if len(keys) != len(ln.slots) || (mask != nil && len(mask) != len(keys)) {
		return drivers.View{}, fmt.Errorf("%w: %d keys, %d mask bits for %d slots", ErrBadView, len(keys), len(mask), len(ln.slots))
	}
	// Every region is checked before anything is allocated: a view that
	// cannot be built costs nothing. A run of slots on one region asks once
	// (the first run's answer is kept for the rows below).
	var h drivers.Handle
	for i, r := range ln.slots {
		if i > 0 && r.region == ln.slots[i-1].region {
			continue
		}
		hi, ok := b.Handle(ln.l.arenas[r.region].Label())
		if !ok {
			return drivers.View{}, ln.l.unboundErr(r.region)
		}
		if i == 0 {
			h = hi
		}
	}
	n := len(keys)
	var v drivers.View
	if n > 0 && cap(buf.Rows) >= n && cap(buf.Mask) >= n {
		v = drivers.View{Rows: buf.Rows[:n], Mask: buf.Mask[:n]}
	} else {
		v = drivers.View{Rows: ln.l.rowSlab.Make(n), Mask: ln.l.flagSlab.Make(n)}
	}
	for i, k := range keys {
		r := ln.slots[i]
		if i > 0 && r.region != ln.slots[i-1].region {
			h, _ = b.Handle(ln.l.arenas[r.region].Label())
		}
		v.Rows[i] = drivers.Row{Key: k, Handle: h, Slot: int(r.slot), Position: i}
		v.Mask[i] = mask == nil || mask[i]
	}
	return v, nil
}

// unboundErr is View's error for a region the backend holds no binding for,
// made once per region: a driver that keeps a region unregistered makes
// many views fail alike.
func (l *Lender) unboundErr(region int32) error {
	if l.unbound == nil {
		l.unbound = make([]error, len(l.arenas))
	}
	if l.unbound[region] == nil {
		l.unbound[region] = fmt.Errorf("%w: %q", ErrUnbound, l.arenas[region].Label())
	}
	return l.unbound[region]
}

// Return takes back a loan that never reached the backend (admission
// refused: nothing escaped).
func (l *Lender) Return(ln *Loan) error {
	if ln.attempt != nil || ln.state != Lent {
		return fmt.Errorf("%w: return of loan %d (%v, attached %v)", ErrBadLoan, ln.id, ln.state, ln.attempt != nil)
	}
	l.giveBack(ln, Returned)
	return nil
}

// Attach ties a loan to the attempt its view was admitted as, and applies
// what the attempt already shows.
func (l *Lender) Attach(ln *Loan, a Attempt) error {
	if ln.attempt != nil || ln.state != Lent || a == nil {
		return fmt.Errorf("%w: attach of loan %d (%v)", ErrBadLoan, ln.id, ln.state)
	}
	ln.attempt = a
	l.loans[a] = ln
	l.observe(ln)
	return nil
}

// Fetch lends len(keys) slots, submits them for FETCH and attaches the loan;
// a refused admission returns the slots.
func (l *Lender) Fetch(b *backend.Backend, keys []string) (*Loan, *backend.Attempt, error) {
	return l.submit(b, drivers.Fetch, keys, nil)
}

// Publish lends len(keys) slots, fills slot i with contents[i], submits them
// for PUBLISH and attaches the loan.
func (l *Lender) Publish(b *backend.Backend, keys []string, contents [][]byte) (*Loan, *backend.Attempt, error) {
	if len(contents) != len(keys) {
		return nil, nil, fmt.Errorf("%w: %d contents for %d keys", ErrBadView, len(contents), len(keys))
	}
	return l.submit(b, drivers.Publish, keys, contents)
}

func (l *Lender) submit(b *backend.Backend, dir drivers.Direction, keys []string, contents [][]byte) (*Loan, *backend.Attempt, error) {
	ln, err := l.Lend(len(keys))
	if err != nil {
		return nil, nil, err
	}
	for i, c := range contents {
		l.Fill(ln, i, c)
	}
	v, err := ln.View(b, keys, nil)
	var a *backend.Attempt
	if err == nil {
		if dir == drivers.Fetch {
			a, err = b.Fetch(v)
		} else {
			a, err = b.Publish(v)
		}
	}
	if err != nil {
		_ = l.Return(ln)
		return nil, nil, err
	}
	return ln, a, l.Attach(ln, a)
}

func (l *Lender) giveBack(ln *Loan, st LoanState) {
	l.eachRegion(ln.slots, func(a *arena.Arena, slots []int32) {
		a.ReleaseEach(slots...) // poisons (S-NO-LATE-ACCESS)
	})
	ln.state = st
	l.stats.Lent -= len(ln.slots)
	if st == Released {
		l.stats.Released += len(ln.slots)
	}
}

func (l *Lender) retain(ln *Loan) {
	for _, r := range ln.slots {
		l.arenas[r.region].Retain(int(r.slot))
	}
	ln.state = Retained
	l.stats.Lent -= len(ln.slots)
	l.stats.Retained += len(ln.slots)
	l.stats.RetainedBytes += ln.bytes
}

// eachRegion calls f with each run of slots on one region, in order: an
// arena's Each methods take its lock once per run, not once per slot.
// scanSpread finds n free slots taking one from each region in turn (the
// loans SpreadEvery asks for), into l.free.
func (l *Lender) scanSpread(n int) {
	cur := l.cursors[:0]
	for _, a := range l.arenas {
		cur = append(cur, a.FirstFree())
	}
	l.cursors = cur
	for more := true; more && len(l.free) < n; {
		more = false
		for ai, a := range l.arenas {
			slots := a.Region().Slots
			for cur[ai] < slots && a.State(cur[ai]) != arena.AtLender {
				cur[ai]++
			}
			if cur[ai] < slots && len(l.free) < n {
				l.free = append(l.free, slotAt{int32(ai), int32(cur[ai])})
				cur[ai]++
				more = true
			}
		}
	}
}

func (l *Lender) eachRegion(slots []slotAt, f func(a *arena.Arena, slots []int32)) {
	for i := 0; i < len(slots); {
		region := slots[i].region
		run := l.run[:0]
		for ; i < len(slots) && slots[i].region == region; i++ {
			run = append(run, slots[i].slot)
		}
		f(l.arenas[region], run)
	}
}
