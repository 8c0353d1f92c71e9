package refine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// touch marks a for judging at the end of the step.
func (m *Model) touch(a *attempt) {
	m.dirty = true
	if a != nil && a.view != nil && !a.done {
		a.touched, a.settled = true, false
	}
}

// access is B-ACCESS derived from what the backend knows: UNPROVABLE as
// soon as one call is (and until every call ENDED), PENDING while a batch
// is queued or a call lacks evidence, else ENDED.
func (m *Model) access(a *attempt) drivers.Access {
	acc := drivers.AccessEnded
	for i := range a.batches {
		b := &a.batches[i]
		var ba drivers.Access
		switch {
		case b.call != nil:
			ba = b.call.acc
		case (b.phase == queued || b.phase == waiting) && !m.committed(a):
			ba = drivers.AccessPending
		default:
			ba = drivers.AccessEnded
		}
		switch ba {
		case drivers.AccessUnprovable:
			return drivers.AccessUnprovable
		case drivers.AccessPending:
			acc = drivers.AccessPending
		}
	}
	if acc == drivers.AccessPending && a.unprovable {
		return drivers.AccessUnprovable
	}
	return acc
}

// complete reports whether every batch has its fold: the attempt must be
// Delivered unless something failed it.
func allComplete(a *attempt) bool {
	for i := range a.batches {
		b := &a.batches[i]
		if b.phase != complete {
			return false
		}
	}
	return true
}

// judge compares the backend's attempt with the model after a step.
//
// An attempt judged before (settled) whose outcome and access read the same
// as then is passed over: no fact about it arrived since, so the model's
// side is as it was too, and judging it again would only repeat the
// findings of last time, which are deduplicated. Every change to what
// judge reads of the model's attempt clears settled (touch, and the two
// changes made without one: a dropped batch, a settled lookup).
func (m *Model) judge(a *attempt) {
	a.touched = false
	st, got := a.view.State(), a.view.Access()
	if a.settled && st == a.state && got == a.judgedAcc {
		return
	}
	a.settled = false
	prev := a.state
	if prev != backend.Pending && st != prev {
		m.fail(rules.BOutcome, a, 0, "changed", fmt.Sprintf("its outcome was committed %v, and is now %v (the first commit wins)", prev, a.view.Outcome()))
		return
	}
	if prev == backend.Pending && st != backend.Pending {
		m.committedNow(a, a.view.Outcome())
	}
	a.state = st
	o := backend.Outcome{State: st}
	if o.State == backend.Pending {
		switch {
		case a.cancelAsk && a.why&whyCancel == 0:
			m.fail(rules.BShut, a, 0, "cancel-commit", "a shutdown must commit Cancelled on every Pending attempt, but it is still Pending")
		case a.cancelAsk:
			m.fail(rules.BCancel, a, 0, "cancel-commit", "a cancel of a Pending attempt must commit Cancelled, but it is still Pending")
		case a.failCause != nil:
			m.fail(foldRule(a.dir), a, 0, "should-fail", fmt.Sprintf("it must be Failed (%s), but it is still Pending", a.failCause))
		case allComplete(a):
			m.fail(rules.BModel, a, 0, "should-deliver", fmt.Sprintf("every batch has its results, so it must be Delivered(%s), but it is still Pending", positions(a.served)))
		}
	}
	want := m.access(a)
	if want == drivers.AccessUnprovable {
		a.unprovable = true
	}
	if got != want {
		m.fail(rules.BAccess, a, 0, "access", fmt.Sprintf("its access is %v, but its calls say %v (%s)", got, want, m.callStates(a)))
	}
	if o.State != backend.Pending && want == drivers.AccessEnded {
		a.done = true
	}
	a.settled, a.judgedAcc = true, got
}

// committedNow judges a commit made in this step.
func (m *Model) committedNow(a *attempt, o backend.Outcome) {
	rule := rules.BFetch
	if a.dir == drivers.Publish {
		rule = rules.BPublish
	}
	switch o.State {
	case backend.Delivered:
		m.count.Delivered++
		for _, sv := range o.Served {
			if sv {
				m.count.Served++
			}
		}
		m.count.Missed += uint64(a.missed)
		m.count.Declined += uint64(a.declined)
		m.count.Raced += uint64(a.raced)
	case backend.Failed:
		m.count.Failed++
	case backend.Cancelled:
		m.count.Cancelled++
	}
	switch o.State {
	case backend.Delivered:
		switch {
		case a.cancelAsk:
			m.fail(rules.BOutcome, a, 0, "delivered-cancelled", fmt.Sprintf("it was cancelled while Pending, but it is %v", o))
		case a.failCause != nil:
			m.fail(rule, a, 0, "delivered-failed", fmt.Sprintf("it is %v, but %s: the whole attempt fails", o, a.failCause))
		case a.maybeFail != nil:
			m.fail(rule, a, 0, "delivered-failed", fmt.Sprintf("it is %v, but %s: the whole attempt fails", o, a.maybeFail))
		case !allComplete(a):
			m.fail(rules.BModel, a, 0, "delivered-early", fmt.Sprintf("it is %v before every batch had its results (%s)", o, m.callStates(a)))
		case !slices.Equal(o.Served, a.served):
			m.fail(rule, a, 0, "served", fmt.Sprintf("it is Delivered serving %s, but the store's answers serve %s", positions(o.Served), positions(a.served)))
		case o.Reason != nil:
			m.fail(rules.BOutcome, a, 0, "reason", fmt.Sprintf("it is %v with a reason (%v): only Failed and Cancelled outcomes carry one", o, o.Reason))
		}
	case backend.Failed:
		if a.failCause == nil && a.maybeFail == nil && !a.expectFail {
			m.fail(rule, a, 0, "failed", fmt.Sprintf("it is %v, but no row, lookup or call failed", o))
		} else {
			m.reason(rule, a, o, a.why&^(whyCancel|whyShutdown))
			if a.submitErr != nil && errors.Is(o.Reason, backend.ErrSubmit) && !errors.Is(o.Reason, a.submitErr) {
				m.fail(rule, a, 0, "reason-cause", fmt.Sprintf("it is %v with a reason (%v) that wraps ErrSubmit but not the Submit's own error (%v): a caller cannot tell back-pressure from the rest", o.State, o.Reason, a.submitErr))
			}
		}
	case backend.Cancelled:
		if !a.cancelAsk {
			m.fail(rules.BOutcome, a, 0, "cancelled", fmt.Sprintf("it is %v, but nobody cancelled it", o))
		} else {
			rule := rules.BCancel
			if a.why&whyCancel == 0 {
				rule = rules.BShut
			}
			m.reason(rule, a, o, a.why&(whyCancel|whyShutdown))
		}
	}
	// B-CANCEL: a committed failure or cancel stops the attempt's running calls.
	if o.State == backend.Failed || o.State == backend.Cancelled {
		a.stopDue = true
		// S-MARKS: only a Delivered outcome serves rows.
		if slices.Contains(o.Served, true) {
			m.fail(rule, a, 0, "served-not-delivered", fmt.Sprintf("it is %v, yet its outcome serves %s (only a Delivered outcome serves rows)", o.State, positions(o.Served)))
		}
	}
}

// reason judges the reason of a Failed or Cancelled outcome: it must wrap
// the backend error of a failure or cancel the model saw (w), so that a
// caller can tell them apart with errors.Is (SPEC §3, B-OUTCOME).
func (m *Model) reason(rule rules.ID, a *attempt, o backend.Outcome, w why) {
	switch {
	case w == 0:
	case o.Reason == nil:
		m.fail(rule, a, 0, "reason", fmt.Sprintf("it is %v without a reason; want one wrapping %v", o.State, w))
	case !w.allows(o.Reason):
		m.fail(rule, a, 0, "reason", fmt.Sprintf("it is %v, but its reason (%v) wraps none of %v, what the model saw it meet", o.State, o.Reason, w))
	}
}

// stopped checks that every call of a stopped attempt that was still
// running got a cancel.
func (m *Model) stopped(a *attempt) {
	for i := range a.batches {
		b := &a.batches[i]
		c := b.call
		if c == nil || c.stuck || c.folded || c.acc != drivers.AccessPending || c.cancels > 0 {
			continue
		}
		if !m.caps.CanCancel {
			continue
		}
		m.fail(rules.BCancel, a, c.id, "forward", fmt.Sprintf("it is %v, but its running call %d (%s) was never cancelled", a.view.State(), c.id, m.callStates(a)))
		return
	}
}

// Quiesced judges an answer of Backend.Quiesce (B-ACCESS): true exactly
// when every listed attempt's access is ENDED.
func (m *Model) Quiesced(avs []AttemptView, got bool) {
	m.settleLookup()
	want := true
	var first *attempt
	for _, av := range avs {
		a := m.byView[av]
		if a == nil || a.done {
			continue // forgotten once committed and ENDED
		}
		if m.access(a) != drivers.AccessEnded {
			want = false
			first = a
			break
		}
	}
	if got != want {
		why := "every listed attempt's access is ENDED"
		if first != nil {
			why = fmt.Sprintf("attempt %d's access is %v (%s)", first.view.ID(), m.access(first), m.callStates(first))
		}
		m.fail(rules.BAccess, first, 0, fmt.Sprintf("quiesce/%d", len(m.found)), fmt.Sprintf("Quiesce of %d attempts answered %v, but %s", len(avs), got, why))
	}
}

// Notified is called with every attempt the backend's Config.OnChange
// reports: the owner of the memory learns of outcomes and access only there
// (S-RELEASE), so the last report must show the attempt as it is.
func (m *Model) Notified(av AttemptView) {
	m.dirty = true
	if a := m.byView[av]; a != nil {
		a.noted, a.notedState, a.notedAccess = true, av.State(), av.Access()
	}
}

// checkNoted: at a quiescent point every posted notification has run, so
// an attempt whose outcome or access changed since its last OnChange report
// was never reported.
func (m *Model) checkNoted(a *attempt) { m.checkNotedAt(a, "notified", "") }

// checkNotedAt is checkNoted at another moment (when: how the finding
// says it; what: its key).
func (m *Model) checkNotedAt(a *attempt, what, when string) {
	st, acc := a.view.State(), a.view.Access()
	if !a.noted && st == backend.Pending && acc == drivers.AccessPending {
		return // nothing to report yet
	}
	if a.noted && a.notedState == st && a.notedAccess == acc {
		return
	}
	if when != "" {
		when = " " + when
	}
	m.fail(rules.BAccess, a, 0, what, fmt.Sprintf("it is %v with access %v, but the last OnChange report%s showed %v with access %v (the memory's owner never learns of the change)",
		st, acc, when, a.notedState, a.notedAccess))
}

// Cancelling is called just before Attempt.Cancel.
func (m *Model) Cancelling(av AttemptView) {
	m.event()
	if a := m.byView[av]; a != nil {
		a.askNow = av.State() == backend.Pending
		a.cancelAsk = a.cancelAsk || a.askNow
		if a.askNow {
			a.why |= whyCancel
		}
		a.touched, a.settled = true, false
	}
}

// Cancelled is called with what Attempt.Cancel returned.
func (m *Model) Cancelled(av AttemptView, committed bool) {
	m.settleLookup()
	a := m.byView[av]
	if a == nil {
		return
	}
	if committed != a.askNow {
		m.fail(rules.BCancel, a, 0, "cancel-return", fmt.Sprintf("Cancel returned %v, but the attempt was %s when it was cancelled", committed, map[bool]string{true: "Pending", false: "committed"}[a.askNow]))
	}
	m.judgeNow(a)
}

func (m *Model) judgeNow(a *attempt) {
	if a.done {
		return
	}
	m.judge(a)
	if a.stopDue {
		a.stopDue = false
		m.stopped(a)
	}
}

// AfterStep judges the backend after one scheduler step. quiescent says
// nothing else is runnable at the current instant: then the backend must
// not idle while it could act (B-PROGRESS), and its gauges must equal the
// model's.
func (m *Model) AfterStep(quiescent bool) {
	// Most steps bring the model no fact (four in five in the engine's
	// runs): this test, inlined into the caller, is all they cost. A lookup
	// left pending or a recheck due came with a fact (touch), so dirty.
	if m.dirty || m.shut.asked || quiescent && m.qdirty {
		m.afterStep(quiescent)
	}
}

func (m *Model) afterStep(quiescent bool) {
	m.settleLookup()
	m.checkRecheck()
	if m.dirty {
		m.dirty, m.qdirty = false, true
		for _, a := range m.live { // every attempt not done is live
			if a.touched && !a.done {
				m.judgeNow(a)
			}
		}
	}
	if m.shut.readSincePoll {
		m.shut.readSincePoll = false
		if !m.shut.everShut && !m.shut.drainDone {
			m.fail(rules.BShut, nil, 0, "drain-not-polled", fmt.Sprintf("at %v the backend read a call that changed while its shutdown drained, but did not ask Drain again (it polls Drain from every change callback, so the drain ends when the driver is done, not at the deadline)", m.now()))
		}
	}
	if m.shut.reporting {
		m.snapshotRound()
	}
	if quiescent && len(m.shut.rounds) > 0 {
		// A round's dones run in an event at the instant it finished: by
		// a quiescent point every one has.
		m.fail(rules.BShut, nil, 0, "done-missing", fmt.Sprintf("%d Shutdown calls, but by %v a finished shutdown still owes %d of their dones (each Shutdown's done runs once, a call made while one runs as well)", m.shut.asks, m.now(), m.shut.rounds[0].waiters))
		m.shut.rounds = nil // reported once
	}
	if quiescent && m.shut.asked && !m.shut.polled && !m.shut.everShut {
		m.shut.polled = true // reported once
		m.fail(rules.BShut, nil, 0, "drain-not-asked", fmt.Sprintf("shutdown began at %v, but the backend did not ask its driver to Drain before time moved on (a shutdown polls Drain at once, then from every change callback: a driver with nothing left to drain would otherwise wait out the deadline)", m.shut.askedAt))
	}
	if m.shut.asked && !m.shut.everShut && !m.shut.late && m.now() > m.shut.askedAt+m.bcfg.DrainTimeout {
		m.shut.late = true
		m.fail(rules.BShut, nil, 0, "deadline", fmt.Sprintf("shutdown began at %v with a drain deadline of %v, and the driver was still not shut down at %v",
			m.shut.askedAt, m.bcfg.DrainTimeout, m.now()))
	}
	if !quiescent || !m.ready || !m.qdirty {
		return // nothing changed since the last quiescent point was judged
	}
	m.qdirty = false
	m.judgeLive()
	m.compact()
	m.judgeQuiescent()
}

// judgeQuiescent judges progress, bounds and Stats at a quiescent point.
func (m *Model) judgeQuiescent() {
	// The calls are walked once per quiescent point: their three gauges
	// together, though unprovable and retained are only compared to Stats.
	inFlight, unprovable, retained := m.sweepCalls()
	h := m.head() // drops the committed attempts' batches from the queue's front
	nq := m.queued()
	if h != nil && inFlight < m.bcfg.MaxCallsInFlight && !m.shut.asked {
		m.fail(rules.BProgress, h.a, 0, "idle", fmt.Sprintf("batch %q waits to be dispatched and %d of %d in-flight slots are free, but the backend is idle",
			keysOf(h.rows), m.bcfg.MaxCallsInFlight-inFlight, m.bcfg.MaxCallsInFlight))
	}
	if nq > m.bcfg.MaxQueuedCalls {
		m.fail(rules.BBound, nil, 0, fmt.Sprintf("queued/%d", len(m.found)), fmt.Sprintf("%d batches wait to be dispatched (MaxQueuedCalls %d)", nq, m.bcfg.MaxQueuedCalls))
	}
	// The gauges and counters follow from everything else: judged only while
	// nothing else was found, so a finding names its first cause.
	if m.stats != nil && len(m.found) == 0 {
		st := m.stats()
		if !sameCounters(&st, &m.count) {
			m.fail(rules.BBound, nil, 0, fmt.Sprintf("counters/%d", len(m.found)), fmt.Sprintf("Stats counts %s; the attempts, calls and lookups say %s", counters(st), counters(m.count)))
		}
		if st.InFlight != inFlight || st.Queued != nq || st.Unprovable != unprovable || st.RetainedBytes != retained {
			m.fail(rules.BBound, nil, 0, fmt.Sprintf("stats/%d", len(m.found)), fmt.Sprintf(
				"Stats says %d in flight, %d queued, %d UNPROVABLE, %d bytes retained; the calls say %d, %d, %d, %d",
				st.InFlight, st.Queued, st.Unprovable, st.RetainedBytes, inFlight, nq, unprovable, retained))
		}
	}
}

// judgeLive judges every live attempt at a quiescent point, in admission
// order, and keeps live only those a later point may judge again. The rest
// (done, and their last report judged) would be passed over anyway: the
// loop skips them instead of walking every attempt not yet compacted.
func (m *Model) judgeLive() {
	n := 0 // live attempts kept so far
	for i, a := range m.live {
		// An attempt judged earlier in this step, or untouched since an
		// earlier one and showing what it showed then, is passed over by
		// judge.
		if !a.done {
			m.judgeNow(a)
		}
		if !a.noteChecked {
			m.checkNoted(a)
			a.noteChecked = a.done // a finished attempt is checked once more, then forgotten
		}
		if !a.done || !a.noteChecked {
			if n != i { // written only once one was dropped: no write barrier for the rest
				m.live[n] = a
			}
			n++
		}
	}
	clear(m.live[n:]) // no stale pointers past the end
	m.live = m.live[:n]
}

// compact forgets finished attempts so a long run stays cheap (the ENDED
// calls are forgotten by sweepCalls). The check is inlined: most runs keep
// fewer.
func (m *Model) compact() {
	if len(m.attempts) > 64 {
		m.forgetDone()
	}
}

func (m *Model) forgetDone() {
	m.attempts = slices.DeleteFunc(m.attempts, func(a *attempt) bool {
		if a.done {
			delete(m.byView, a.view)
		}
		return a.done
	})
}

func positions(served []bool) string {
	var p []string
	for i, s := range served {
		if s {
			p = append(p, fmt.Sprint(i))
		}
	}
	if len(p) == 0 {
		return "nothing"
	}
	return "rows " + strings.Join(p, ",")
}

func (m *Model) callStates(a *attempt) string {
	var p []string
	for i := range a.batches {
		b := &a.batches[i]
		switch {
		case b.call != nil && b.call.id != 0:
			p = append(p, fmt.Sprintf("batch %d: call %d %v results %v", i, b.call.id, b.call.acc, b.call.res))
		case b.call != nil:
			p = append(p, fmt.Sprintf("batch %d: refused submit, %v", i, b.call.acc))
		default:
			p = append(p, fmt.Sprintf("batch %d: %s", i, [...]string{"queued", "looked up", "calling", "complete", "dropped"}[b.phase]))
		}
	}
	return strings.Join(p, "; ")
}

// sameCounters reports whether s and t have the same counters (not the
// same gauges): field by field, in place, at every quiescent point.
func sameCounters(s, t *backend.Stats) bool {
	return s.Attempts == t.Attempts && s.Delivered == t.Delivered && s.Failed == t.Failed && s.Cancelled == t.Cancelled &&
		s.Rejected == t.Rejected && s.Invalid == t.Invalid && s.Served == t.Served && s.Missed == t.Missed &&
		s.Declined == t.Declined && s.Raced == t.Raced && s.Calls == t.Calls && s.Lookups == t.Lookups &&
		s.UnprovableTotal == t.UnprovableTotal
}

// counters prints the counters of a Stats (not its gauges).
func counters(s backend.Stats) string {
	return fmt.Sprintf("attempts %d (delivered %d, failed %d, cancelled %d), rejected %d, invalid %d, rows served %d, missed %d, declined %d, raced %d, calls %d, lookups %d, UNPROVABLE ever %d",
		s.Attempts, s.Delivered, s.Failed, s.Cancelled, s.Rejected, s.Invalid, s.Served, s.Missed, s.Declined, s.Raced, s.Calls, s.Lookups, s.UnprovableTotal)
}
