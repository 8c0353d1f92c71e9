package backend

import (
	"fmt"

	"github.com/storesim/storesim/drivers"
)

// Fetch admits a view for FETCH (store → memory). See Publish.
func (b *Backend) Fetch(v drivers.View) (*Attempt, error) { return b.admit(drivers.Fetch, v) }

// Publish admits a view for PUBLISH (memory → store).
//
// B-SUBMIT: admission is synchronous. A closed backend, a view the backend
// cannot cut (ErrOverCapacity, ErrTooManyUnprovable) is refused with an error
// wrapping ErrSubmissionRejected; a malformed view (mask/rows mismatch,
// empty key, two rows on one slot, unsupported direction) with one wrapping
// drivers.ErrInvalidSubmission. A refused view sends nothing and consumes
// nothing. A view with no masked-in row is Delivered with nothing served and
// access ENDED; a row outside any live registration fails the attempt before
// any store call. Once an attempt is returned, every later problem is
// reported through it.
func (b *Backend) Publish(v drivers.View) (*Attempt, error) { return b.admit(drivers.Publish, v) }

func (b *Backend) admit(dir drivers.Direction, v drivers.View) (*Attempt, error) {
	if b.closedErr != nil {
		b.stats.Rejected++
		return nil, b.closedErr
	}
	active, err := b.checkView(dir, v)
	if err != nil {
		b.stats.Invalid++
		return nil, err
	}
	if reason := b.unregistered(active); reason != nil {
		a := b.newAttempt(dir, v, active, nil)
		b.commit(a, Failed, reason)
		b.settle(a)
		return a, nil
	}
	b.cuts = appendCuts(b.cuts[:0], active, b.caps.MaxRowsPerOp)
	if err := b.room(len(b.cuts)); err != nil {
		b.stats.Rejected++
		return nil, err
	}
	a := b.newAttempt(dir, v, active, b.cuts)
	b.settle(a) // an empty view is Delivered(nothing) with access ENDED here
	b.pump()
	return a, nil
}

// checkView refuses a malformed view and returns its masked-in rows.
func (b *Backend) checkView(dir drivers.Direction, v drivers.View) ([]drivers.Row, error) {
	if err := v.Check(); err != nil {
		return nil, err
	}
	if !b.caps.Supports(dir) {
		return nil, fmt.Errorf("%w: %v not supported by the driver", drivers.ErrInvalidSubmission, dir)
	}
	type slotRef struct {
		h    drivers.Handle
		slot int
	}
	active := b.mem.rowBuf(v.Active()) // the batches' rows: kept with the attempt
	// A slot used twice: a view of a few dozen rows is scanned (integer
	// compares), a longer one indexed.
	var seen map[slotRef]int
	if len(v.Rows) > smallView {
		seen = make(map[slotRef]int, len(v.Rows))
	}
	for i, r := range v.Rows {
		if !v.Mask[i] {
			continue
		}
		if r.Key == "" {
			return nil, fmt.Errorf("%w: view row %d has an empty key", drivers.ErrInvalidSubmission, i)
		}
		j, dup := -1, false
		if seen != nil {
			j, dup = seen[slotRef{r.Handle, r.Slot}]
			seen[slotRef{r.Handle, r.Slot}] = i
		} else {
			for _, a := range active { // v.Check made each row's Position its index
				if a.Handle == r.Handle && a.Slot == r.Slot {
					j, dup = a.Position, true
					break
				}
			}
		}
		if dup {
			return nil, fmt.Errorf("%w: view rows %d and %d use the same slot", drivers.ErrInvalidSubmission, j, i)
		}
		active = append(active, r)
	}
	return active, nil
}

// smallView is the longest view checkView scans for a slot used twice
// instead of indexing its slots in a map.
const smallView = 64

// unregistered names the first row outside a live registration (B-SUBMIT:
// the attempt fails before any store call, and it is not a miss).
func (b *Backend) unregistered(rows []drivers.Row) error {
	for _, r := range rows {
		reg, ok := b.liveRegion(r.Handle)
		if !ok {
			return fmt.Errorf("%w: view row %d: handle %d", ErrNotRegistered, r.Position, r.Handle)
		}
		if r.Slot < 0 || r.Slot >= reg.Slots {
			return fmt.Errorf("%w: view row %d: slot %d of region %q (%d slots)", ErrNotRegistered, r.Position, r.Slot, reg.Label, reg.Slots)
		}
	}
	return nil
}

// room is B-BOUND's whole-attempt admission.
func (b *Backend) room(n int) error {
	if b.unprovable > b.cfg.MaxUnprovable {
		return &unprovableError{b.unprovable, b.cfg.MaxUnprovable}
	}
	if have, limit := b.inFlight+len(b.queue), b.cfg.MaxCallsInFlight+b.cfg.MaxQueuedCalls; have+n > limit {
		return &overCapacityError{have, n, limit}
	}
	return nil
}

// newAttempt makes the attempt of v, whose masked-in rows are active (a
// copy checkView made) and cut into cuts. A view with every row masked in
// keeps active as its rows: the same rows in the same order, never written.
func (b *Backend) newAttempt(dir drivers.Direction, v drivers.View, active []drivers.Row, cuts [][]drivers.Row) *Attempt {
	b.nextAttempt++
	b.stats.Attempts++
	n := len(v.Rows)
	bits := b.mem.bools.Make(n + len(v.Mask)) // acc, then the mask's copy
	rows := active
	if len(active) != n {
		rows = b.mem.cloneRows(v.Rows)
	}
	a := b.mem.attempts.New()
	*a = Attempt{
		b: b, id: b.nextAttempt, dir: dir,
		rows: rows,
		acc:  bits[:n:n],
	}
	if v.Mask != nil {
		a.mask = bits[n:]
		copy(a.mask, v.Mask)
	}
	a.batches = b.mem.batches.Make(len(cuts))
	for i, rows := range cuts {
		bt := &a.batches[i]
		bt.a, bt.rows = a, rows
		b.queue = append(b.queue, bt)
	}
	a.open = len(cuts)
	a.access = drivers.AccessPending
	b.open = append(b.open, a)
	return a
}
