package lender

import (
	"slices"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// OnChange is the backend's Config.OnChange subscriber.
func (l *Lender) OnChange(a *backend.Attempt) { l.Observe(a) }

// Observe applies what an attached attempt shows now: marks, release,
// retention, and the checks on evidence seen before.
func (l *Lender) Observe(a Attempt) {
	if ln := l.loans[a]; ln != nil {
		l.observe(ln)
	}
}

// releasable is S-RELEASE: a committed outcome and access ENDED.
func releasable(o backend.Outcome, acc drivers.Access) bool {
	return o.State != backend.Pending && acc == drivers.AccessEnded
}

func (l *Lender) observe(ln *Loan) {
	a := ln.attempt
	o, acc := a.Outcome(), a.Access()
	l.checkMarks(ln, o)
	switch ln.state {
	case Released:
		if !releasable(o, acc) || !sameOutcome(o, ln.seen) {
			l.violate(rules.SRelease, ln, "attempt %d now %v with access %v, but its slots were released on %v with access ENDED", a.ID(), o, acc, ln.seen)
		}
	case Retained:
		ln.proven = acc == drivers.AccessEnded // kept anyway: retained is forever
	case Lent:
		switch {
		case acc == drivers.AccessUnprovable:
			l.retain(ln)
		case releasable(o, acc):
			ln.seen = o
			l.giveBack(ln, Released)
		}
	}
}

func sameOutcome(a, b backend.Outcome) bool {
	return a.State == b.State && slices.Equal(a.Served, b.Served)
}

// checkMarks is S-MARKS: the marks of a fetch are taken once, from a
// Delivered outcome, and must keep matching it; served rows must be asked.
func (l *Lender) checkMarks(ln *Loan, o backend.Outcome) {
	a := ln.attempt
	if a.Dir() != drivers.Fetch {
		return
	}
	if m := ln.marked; m != nil {
		if !sameOutcome(o, m.from) {
			l.violate(rules.SMarks, ln, "rows were marked arrived from %v, the outcome is now %v", m.from, o)
		}
		return
	}
	if o.State != backend.Delivered {
		return
	}
	if n := a.Rows(); len(o.Served) != n {
		l.violate(rules.SMarks, ln, "attempt %d delivered %d served bits for %d rows", a.ID(), len(o.Served), n)
		return
	}
	// Marks are taken once, from the first Delivered outcome: only then do
	// they need storage (most loans are publishes, or never delivered).
	m := l.markSlab.New()
	m.marks, m.data = l.flagSlab.Make(len(ln.slots)), l.dataSlab.Make(len(ln.slots))
	for i, s := range o.Served {
		if s && !a.Asked(i) {
			l.violate(rules.SMarks, ln, "attempt %d served row %d, which was masked out", a.ID(), i)
			continue
		}
		m.marks[i] = s
		if s {
			m.data[i] = l.keepSlot(ln, i)
		}
	}
	m.from = o
	ln.marked = m
}

// ShutdownReturned hands the lender the labels the backend's shutdown
// returned. S-HOLD: with labels the hold is kept; with none it is released
// and every region marked unregistered, so any later touch is caught. An
// empty answer while some attempt's access is not ENDED is a violation.
func (l *Lender) ShutdownReturned(labels []string) {
	if !l.held || len(labels) > 0 {
		return
	}
	for _, ln := range l.all {
		if ln.attempt == nil || ln.state == Released || ln.proven {
			continue
		}
		if acc := ln.attempt.Access(); acc != drivers.AccessEnded {
			l.violate(rules.SHold, ln, "backend shutdown returned no labels while attempt %d's access is %v", ln.attempt.ID(), acc)
		}
	}
	l.held = false
	for _, a := range l.arenas {
		a.SetRegistered(false)
	}
}

// Bound marks the regions the backend holds a binding for as registered,
// for runs without a contract monitor (which would mark them itself).
func (l *Lender) Bound(b Handles) {
	for _, a := range l.arenas {
		if _, ok := b.Handle(a.Label()); ok {
			a.SetRegistered(true)
		}
	}
}
