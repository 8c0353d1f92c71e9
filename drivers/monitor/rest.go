package monitor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// Checks that judge an answer against what the driver really still holds
// or owes: shutdown labels against the registrations (D-SHUT-1, D-SHUT-2),
// and a drain at rest (D-DRAIN-1).

// regionReasons maps each region label named by a shutdown label to its
// reason (the text after the last colon).
func regionReasons(labels []string) map[string]string {
	if len(labels) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, l := range labels {
		rest, ok := strings.CutPrefix(l, "region:")
		if !ok {
			continue
		}
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			out[rest[:i]] = rest[i+1:]
		}
	}
	return out
}

// labelledReleasedLocked is D-SHUT-1 (D-SHUT-2 for a later Shutdown) the
// other way round: a region label says the driver could not release the
// region, so the driver must still hold it — a LiveReporter or
// BoundReporter that says otherwise shows a label for what was released
// (the caller then keeps memory retained that nothing protects, and a
// later Shutdown cannot retry it). A region in doubt may or may not be
// registered, so its label is never judged this way.
func (m *Monitor) labelledReleasedLocked(rule rules.ID, r *regRec, why string) {
	if why == drivers.WhyInDoubt {
		return
	}
	m.violateLocked(rules.Violation{Rule: rule, Row: -1, Region: r.r.Label,
		Detail: fmt.Sprintf("Shutdown labelled region:%s:%s (not released) but the driver no longer holds handle %d (Live and Bound both false): a label names only what is still held", r.r.Label, why, r.h)})
}

// AtRest is the caller's word that the run is at rest: nothing is runnable
// and no callback is running or can start until the caller acts again (on
// the simulator: the scheduler has no event left). If a Drain was asked
// before and Shutdown was not, the monitor asks Drain once more; when every
// call it knows has access evidence and a final result on every row, the
// answer must be done (D-DRAIN-1). UNPROVABLE is evidence: the driver has
// stopped waiting, so a drain that waits for its proof — which may never
// come — or for a call that ended long ago is never done, however long the
// caller polls. AtRest returns Drain's answer, and whether it judged it
// (false: no drain was asked, Shutdown ran, a callback is running or some
// call still lacks evidence or a result — a drain may then honestly say not
// done).
func (m *Monitor) AtRest() (drivers.DrainStatus, bool) {
	m.mu.Lock()
	skip := !m.drained || m.shutting || m.shutdown || len(m.running) > 0
	cands := slices.DeleteFunc(slices.Clone(m.order), func(c *callRec) bool { return c.settled })
	m.mu.Unlock()
	if skip {
		return drivers.DrainStatus{}, false
	}
	for _, c := range cands {
		m.refresh(c)
	}
	m.mu.Lock()
	unprovable := map[drivers.CallID]bool{}
	for _, c := range m.order {
		if c.settled {
			continue
		}
		if !c.knownAcc.Evidenced() || (!c.badLen && slices.ContainsFunc(c.known, func(s drivers.Status) bool { return !s.Final() })) {
			m.mu.Unlock()
			return drivers.DrainStatus{}, false
		}
		unprovable[c.id] = c.knownAcc == drivers.AccessUnprovable
	}
	m.mu.Unlock()
	st := m.Drain()
	if !st.Done {
		why := "every one has ended"
		if n := len(slices.DeleteFunc(slices.Clone(st.Pending), func(id drivers.CallID) bool { return !unprovable[id] })); n > 0 {
			why = fmt.Sprintf("%d of them UNPROVABLE, which is evidence: the driver stopped waiting, and a proof may never come", n)
		}
		m.violate(rules.Violation{Rule: rules.DDrain1, Row: -1,
			Detail: fmt.Sprintf("at rest (nothing runnable, no callback running) every call has access evidence and every row a result, yet Drain answers not done, pending %v (%s): such a drain is never done", st.Pending, why)})
	}
	return st, true
}

// Detected returns the violations seen so far in the order the monitor
// found them (Violations sorts them): a report can order a finding of its
// own against them (what came first, what followed from it).
func (m *Monitor) Detected() []rules.Violation {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.violations)
}
