package backend

import (
	"fmt"

	"github.com/storesim/storesim/drivers"
)

// State is an attempt's outcome kind (B-OUTCOME).
type State uint8

const (
	// Pending: no outcome committed yet.
	Pending State = iota
	// Delivered: every row has a result; Served says which were served.
	Delivered
	// Failed: the attempt failed as a whole; nothing is reported served.
	Failed
	// Cancelled: cancelled (by Attempt.Cancel or Shutdown) before any other
	// outcome was committed.
	Cancelled
)

func (s State) String() string {
	switch s {
	case Pending:
		return "PENDING"
	case Delivered:
		return "DELIVERED"
	case Failed:
		return "FAILED"
	case Cancelled:
		return "CANCELLED"
	}
	return "STATE?"
}

// Outcome is a committed (or pending) outcome. Served has one entry per view
// position and is set only for Delivered; Reason only for Failed and
// Cancelled.
type Outcome struct {
	State  State
	Served []bool
	Reason error
}

func (o Outcome) String() string {
	switch o.State {
	case Delivered:
		n := 0
		for _, s := range o.Served {
			if s {
				n++
			}
		}
		return fmt.Sprintf("DELIVERED(%d/%d served)", n, len(o.Served))
	case Failed, Cancelled:
		return fmt.Sprintf("%v(%v)", o.State, o.Reason)
	}
	return o.State.String()
}

// Attempt is one admitted Fetch or Publish. Its methods, like the Backend's,
// are called from the runtime's event context.
type Attempt struct {
	b       *Backend
	id      uint64
	rows    []drivers.Row // the view's rows (all positions)
	mask    []bool
	batches []batch // the queue points into it
	open    int     // batches neither done nor dropped

	served []bool // set at Delivered
	reason error

	acc                     []bool // served so far, by position
	missed, declined, raced int

	// The small fields last, together: no padding between them (attempts
	// come from the backend's slab).
	dir    drivers.Direction
	state  State
	access drivers.Access
	dirty  bool
}

// ID is unique per Backend, from 1.
func (a *Attempt) ID() uint64 { return a.id }

// Dir is FETCH or PUBLISH.
func (a *Attempt) Dir() drivers.Direction { return a.dir }

// View is the submitted view (a copy).
func (a *Attempt) View() drivers.View {
	return drivers.View{Rows: a.b.mem.cloneRows(a.rows), Mask: a.b.mem.cloneBools(a.mask)}
}

// Outcome is the committed outcome, or State Pending. Served is a copy.
func (a *Attempt) Outcome() Outcome {
	return Outcome{State: a.state, Served: a.b.mem.cloneBools(a.served), Reason: a.reason}
}

// State is the outcome kind.
func (a *Attempt) State() State { return a.state }

// Committed reports whether an outcome was committed.
func (a *Attempt) Committed() bool { return a.state != Pending }

// Access is the attempt's access evidence (B-ACCESS).
func (a *Attempt) Access() drivers.Access { return a.access }

// Rows is the number of rows of the attempt's view (View without the copy).
func (a *Attempt) Rows() int { return len(a.rows) }

// Asked is the view's Mask[i] (View without the copy).
func (a *Attempt) Asked(i int) bool { return a.mask[i] }

// Batches is the number of batches the view was cut into.
func (a *Attempt) Batches() int { return len(a.batches) }

// Cancel is B-CANCEL: it drops the attempt's queued batches, forwards one
// cancel per in-flight call, never blocks, and commits Cancelled if no
// outcome was committed yet. It reports whether it committed.
func (a *Attempt) Cancel() bool { return a.b.cancel(a, ErrCancelled) }

// Quiesce reports whether every listed attempt's access is ENDED
// (B-ACCESS). False is an honest answer, not "wait more": an UNPROVABLE
// attempt may never end.
func (b *Backend) Quiesce(attempts ...*Attempt) bool {
	for _, a := range attempts {
		if a.access != drivers.AccessEnded {
			return false
		}
	}
	return true
}

// commit is B-OUTCOME: the first committed outcome wins; it reports whether
// this one did.
func (b *Backend) commit(a *Attempt, st State, reason error) bool {
	if a.state != Pending {
		return false
	}
	a.state, a.reason = st, reason
	switch st {
	case Delivered:
		a.served = a.acc
		b.countDelivered(a)
	case Failed:
		b.stats.Failed++
	case Cancelled:
		b.stats.Cancelled++
	}
	a.acc = nil
	b.closeOpen(a)
	b.changed(a)
	return true
}

func (b *Backend) countDelivered(a *Attempt) {
	b.stats.Delivered++
	for _, s := range a.acc {
		if s {
			b.stats.Served++
		}
	}
	b.stats.Missed += uint64(a.missed)
	b.stats.Declined += uint64(a.declined)
	b.stats.Raced += uint64(a.raced)
}

func (b *Backend) closeOpen(a *Attempt) {
	for i, o := range b.open {
		if o == a {
			b.open = append(b.open[:i], b.open[i+1:]...)
			return
		}
	}
}

// settle commits Delivered once every batch is done (commit keeps an
// earlier outcome), and re-derives access.
func (b *Backend) settle(a *Attempt) {
	if a.open == 0 {
		b.commit(a, Delivered, nil)
	}
	acc := attemptAccess(a)
	if a.access == drivers.AccessUnprovable && acc == drivers.AccessPending {
		// B-ACCESS keeps D-ACCESS's table: an UNPROVABLE attempt whose
		// unprovable call was later proven ENDED, while another call is
		// still pending, stays UNPROVABLE until every call has ENDED.
		acc = drivers.AccessUnprovable
	}
	if acc != a.access {
		a.access = acc
		b.changed(a)
	}
}

// attemptAccess is B-ACCESS: UNPROVABLE as soon as one call is, PENDING
// while a batch is queued or a call lacks evidence, else ENDED.
func attemptAccess(a *Attempt) drivers.Access {
	acc := drivers.AccessEnded
	for i := range a.batches {
		bt := &a.batches[i]
		switch bt.access() {
		case drivers.AccessUnprovable:
			return drivers.AccessUnprovable
		case drivers.AccessPending:
			acc = drivers.AccessPending
		}
	}
	return acc
}

// changed schedules one OnChange notification for a; changes coalesce until
// the flush runs.
func (b *Backend) changed(a *Attempt) {
	if b.cfg.OnChange == nil || a.dirty {
		return
	}
	a.dirty = true
	b.dirty = append(b.dirty, a)
	if !b.notifyPosted {
		b.notifyPosted = true
		b.rt.Post(b.notifyLabel, b.flushFn)
	}
}

func (b *Backend) flush() {
	b.notifyPosted = false
	list := b.dirty
	b.dirty = b.spareDirty[:0] // two buffers, swapped: no allocation per flush
	for _, a := range list {
		a.dirty = false
		b.cfg.OnChange(a)
	}
	clear(list)
	b.spareDirty = list[:0]
}
