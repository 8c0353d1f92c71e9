package refine

// Admission: what the model expects of the backend's Fetch and Publish
// (B-SUBMIT, B-BOUND) — the view's shape, the room it needs, a closed
// backend's refusal — and what it records of the attempt admitted.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// Admitting is called just before the backend's Fetch or Publish of v.
func (m *Model) Admitting(dir drivers.Direction, v drivers.View) {
	m.event()
	a := m.attemptSlab.New()
	a.dir, a.nrows = dir, len(v.Rows)
	m.admitting = a
	a.bad = m.malformed(dir, v)
	if a.bad != "" || m.closed() != "" {
		return // expected refused: nothing may be dispatched
	}
	active := m.active(v)
	if m.outside(active) != "" {
		a.expectFail, a.why = true, a.why|whyNotRegistered
		return
	}
	// One array holds served (by view position) and the lookup answers (by
	// masked-in row): both are small and live as long as the attempt, so a
	// small view's live in the attempt itself.
	flags := a.flags[:]
	if n := len(v.Rows) + len(active); n <= len(flags) {
		flags = flags[:n:n]
	} else {
		flags = m.flagSlab.Make(n)
	}
	a.served, a.present = flags[:len(v.Rows):len(v.Rows)], flags[len(v.Rows):]
	a.batches = cut(&m.batchSlab, a, active, m.caps.MaxRowsPerOp)
	if a.noRoom = m.room(len(a.batches)); !a.noRoom.full {
		for i := range a.batches {
			m.queue = append(m.queue, &a.batches[i])
		}
	}
}

// refusalWanted checks the error of an expected refusal against the
// reasons that hold (SPEC §3 names each refusal's error; where several hold
// any of theirs will do): "" when err is one of them, else what was wanted.
// Every refusal but a malformed view's wraps ErrSubmissionRejected.
func (m *Model) refusalWanted(a *attempt, err error) string {
	var want []string
	if why := m.closed(); why != "" {
		if errors.Is(err, backend.ErrClosed) {
			return ""
		}
		want = append(want, "ErrClosed ("+why+")")
	}
	if a.bad != "" {
		if errors.Is(err, drivers.ErrInvalidSubmission) && !errors.Is(err, backend.ErrSubmissionRejected) {
			return ""
		}
		want = append(want, "InvalidSubmission, not ErrSubmissionRejected ("+a.bad+")")
	}
	if len(want) == 0 && a.noRoom.full {
		r := a.noRoom
		if r.unprovable > m.bcfg.MaxUnprovable {
			if errors.Is(err, backend.ErrTooManyUnprovable) {
				return ""
			}
			want = append(want, "ErrTooManyUnprovable ("+m.roomText(r, len(a.batches))+")")
		}
		if r.capFull {
			if errors.Is(err, backend.ErrOverCapacity) {
				return ""
			}
			want = append(want, fmt.Sprintf("ErrOverCapacity (%d calls in flight or queued and %d more do not fit in %d)", r.have, len(a.batches), m.bcfg.MaxCallsInFlight+m.bcfg.MaxQueuedCalls))
		}
	}
	return strings.Join(want, " or ") + " was due"
}

// Admitted is called with what Fetch or Publish returned.
func (m *Model) Admitted(av AttemptView, err error) {
	a := m.admitting
	m.admitting = nil
	m.settleLookup()
	if a == nil {
		return
	}
	why := a.bad
	if why == "" {
		why = m.closed()
	}
	noRoom := why == "" && !a.expectFail && a.noRoom.full
	if err != nil {
		if errors.Is(err, drivers.ErrInvalidSubmission) {
			m.count.Invalid++
		} else {
			m.count.Rejected++
		}
	} else {
		m.count.Attempts++
	}
	switch {
	case err != nil && why == "" && a.expectFail:
		m.dequeue(a)
		m.fail(rules.BSubmit, nil, 0, fmt.Sprintf("refused-outside/%d", len(m.found)), fmt.Sprintf(
			"a %v view with a row outside any live registration was refused (%v); it must be admitted and Failed at once, taking no capacity (%s)",
			a.dir, err, m.gauges()))
		return
	case err != nil && why == "" && !noRoom:
		m.dequeue(a)
		m.fail(rules.BSubmit, nil, 0, fmt.Sprintf("refused/%d", len(m.found)), fmt.Sprintf(
			"a %v view of %d rows was refused (%v) although the backend is open, the view is well formed and every bound has room (%s)",
			a.dir, a.nrows, err, m.gauges()))
		return
	case err != nil:
		m.dequeue(a)
		if want := m.refusalWanted(a, err); want != "" {
			m.fail(rules.BSubmit, nil, 0, fmt.Sprintf("refused-as/%d", len(m.found)), fmt.Sprintf(
				"a %v view was refused with %q, but %s", a.dir, err.Error(), want))
		}
		if m.dispatched(a) {
			m.fail(rules.BSubmit, nil, 0, fmt.Sprintf("refused-sent/%d", len(m.found)), fmt.Sprintf("a refused %v view (%v) sent rows to the store", a.dir, err))
		}
		return
	case why != "":
		m.fail(rules.BSubmit, nil, 0, fmt.Sprintf("admitted/%d", len(m.found)), fmt.Sprintf("a %v view was admitted as attempt %d although %s", a.dir, av.ID(), why))
		return
	case noRoom:
		m.fail(rules.BBound, nil, 0, fmt.Sprintf("admitted/%d", len(m.found)), fmt.Sprintf("a %v view of %d batches was admitted as attempt %d although %s", a.dir, len(a.batches), av.ID(), m.roomText(a.noRoom, len(a.batches))))
		return
	}
	a.view = av
	m.byView[av] = a
	m.attempts = append(m.attempts, a)
	m.live = append(m.live, a)
	switch {
	case a.expectFail:
		a.failCause = textCause("a row outside any live registration")
		if st := av.State(); st != backend.Failed {
			m.fail(rules.BSubmit, a, 0, "outside", fmt.Sprintf("a row outside any live registration must fail the attempt at admission, but it is %v", st))
		}
	case len(a.batches) == 0:
		if o := av.Outcome(); o.State != backend.Delivered || slices.Contains(o.Served, true) || av.Access() != drivers.AccessEnded {
			m.fail(rules.BSubmit, a, 0, "empty", fmt.Sprintf("an empty view must be Delivered(nothing) with access ENDED at once, but it is %v with access %v", o, av.Access()))
		}
	}
	m.judge(a)
}

func (m *Model) malformed(dir drivers.Direction, v drivers.View) string {
	if err := v.Check(); err != nil {
		return "it is malformed: " + err.Error()
	}
	if !m.caps.Supports(dir) {
		return fmt.Sprintf("the driver does not support %v", dir)
	}
	for i, r := range v.Rows {
		if !v.Mask[i] {
			continue
		}
		if r.Key == "" {
			return fmt.Sprintf("view row %d has an empty key", i)
		}
		for j := range i {
			if v.Mask[j] && v.Rows[j].Handle == r.Handle && v.Rows[j].Slot == r.Slot {
				return fmt.Sprintf("two masked-in rows use slot %d of handle %d", r.Slot, r.Handle)
			}
		}
	}
	return ""
}

func (m *Model) closed() string {
	switch {
	case m.shut.asked:
		return "the backend was shut down"
	case m.regFailed:
		return "its registration failed"
	}
	return ""
}

func (m *Model) active(v drivers.View) []drivers.Row {
	n := 0
	for i := range v.Rows {
		if v.Mask[i] {
			n++
		}
	}
	out := m.rowSlab.Make(n)[:0]
	for i, r := range v.Rows {
		if v.Mask[i] {
			out = append(out, r)
		}
	}
	return out
}

func (m *Model) outside(rows []drivers.Row) string {
	for _, r := range rows {
		b := m.binding(r.Handle)
		if b == nil || !b.live || r.Slot < 0 || r.Slot >= b.region.Slots {
			return fmt.Sprintf("row %d (handle %d slot %d) is outside any live registration", r.Position, r.Handle, r.Slot)
		}
	}
	return ""
}

// roomCheck is B-BOUND's admission, as counted: formatted only when a
// finding needs it (roomText).
type roomCheck struct {
	full       bool // some batch of the view does not fit
	capFull    bool // the calls in flight or queued leave no room for the view's batches
	unprovable int  // UNPROVABLE calls
	have       int  // calls in flight or queued
}

// room is B-BOUND's admission: every batch of the view must fit.
func (m *Model) room(n int) roomCheck {
	inFlight, u := m.openCalls()
	have := inFlight + m.queued()
	capFull := have+n > m.bcfg.MaxCallsInFlight+m.bcfg.MaxQueuedCalls
	return roomCheck{full: capFull || u > m.bcfg.MaxUnprovable, capFull: capFull, unprovable: u, have: have}
}

// roomText says why a view of n batches does not fit.
func (m *Model) roomText(r roomCheck, n int) string {
	if r.unprovable > m.bcfg.MaxUnprovable {
		return fmt.Sprintf("%d calls are UNPROVABLE (limit %d)", r.unprovable, m.bcfg.MaxUnprovable)
	}
	return fmt.Sprintf("%d calls in flight or queued and %d more do not fit in %d", r.have, n, m.bcfg.MaxCallsInFlight+m.bcfg.MaxQueuedCalls)
}

func (m *Model) gauges() string {
	inFlight, unprovable := m.openCalls()
	return fmt.Sprintf("%d in flight of %d, %d queued of %d, %d UNPROVABLE of %d", inFlight, m.bcfg.MaxCallsInFlight,
		m.queued(), m.bcfg.MaxQueuedCalls, unprovable, m.bcfg.MaxUnprovable)
}
