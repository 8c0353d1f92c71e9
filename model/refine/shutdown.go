package refine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/rules"
)

// ShutdownAsked is called just before Backend.Shutdown and returns the
// call's number, which its done hands to ShutdownReturned. The first one
// closes admission and cancels every Pending attempt (B-SHUT).
func (m *Model) ShutdownAsked() int {
	m.event()
	m.shut.asks++
	m.shut.done = append(m.shut.done, false)
	if m.shut.asked && !m.shut.everShut {
		return m.shut.asks // the first shutdown still runs: this call only adds its done
	}
	if m.shut.asked {
		m.shut.driverShut = false // a retry shuts the driver down again
		for _, b := range m.bindings {
			b.tried = false
		}
		return m.shut.asks
	}
	m.shut.asked, m.shut.askedAt = true, m.now()
	for _, a := range m.attempts {
		if a.view.State() == backend.Pending {
			a.cancelAsk, a.touched, a.settled = true, true, false
			a.why |= whyShutdown
		}
	}
	return m.shut.asks
}

// driverShutdown judges the moment the backend shuts the driver down, and
// its context: once the drain did not finish by its deadline, or in a
// retry, the driver must not wait any longer (SPEC §3, B-SHUT).
func (m *Model) driverShutdown(ctx context.Context) {
	m.event()
	if !m.shut.asked {
		m.fail(rules.BShut, nil, 0, "driver-shut-unasked", "the backend shut its driver down although nobody shut the backend down")
		return
	}
	if !m.shut.driverShut && !m.shut.drainDone && m.now() < m.shut.askedAt+m.bcfg.DrainTimeout {
		m.fail(rules.BShut, nil, 0, "no-drain", fmt.Sprintf("the driver was shut down at %v, before its drain was done and before the drain deadline (%v)",
			m.now(), m.shut.askedAt+m.bcfg.DrainTimeout))
	}
	if ctx.Err() == nil && !m.shut.drainDone && (m.shut.everShut || m.now() >= m.shut.askedAt+m.bcfg.DrainTimeout) {
		m.fail(rules.BShut, nil, 0, "shutdown-ctx", fmt.Sprintf("the driver was shut down at %v with a live context, though its drain was not done by the deadline (%v): the driver must not wait any longer", m.now(), m.shut.askedAt+m.bcfg.DrainTimeout))
	}
	for _, b := range m.bindings {
		switch {
		case !b.live || b.tried:
		case !m.busy(b.handle):
			m.fail(rules.BShut, nil, 0, "unclosed-"+b.region.Label, fmt.Sprintf("the driver was shut down, but the binding of region %q, which no unfinished call names, was never closed first", b.region.Label))
		case !m.busyNow(b.handle):
			m.fail(rules.BShut, nil, 0, "unclosed-"+b.region.Label, fmt.Sprintf("the driver was shut down, but the binding of region %q was never closed first: every call naming it had ENDED by the driver's answer, which the backend never read (a shutdown reads its calls before it closes: their last callbacks may not have run, D-DRAIN-2)", b.region.Label))
		}
	}
	m.shut.driverShut, m.shut.everShut = true, true
}

func (m *Model) driverShutdownReturned(labels []string) {
	m.shut.driverLabels = slices.Clone(labels)
	m.shut.reporting = true // the round's labels are what the model holds at the end of this step (afterStep)
}

// driverShutdownPanicked: the driver's Shutdown panicked, so what it still
// holds is unknown: the round must name the driver (a "driver:" label), or
// the owner would release memory the store may still reach (B-SHUT).
func (m *Model) driverShutdownPanicked() {
	m.shut.driverLabels = nil
	m.shut.driverPanicked = true
	m.shut.reporting = true
}

// round is what one finished shutdown round must report: its labels are
// made when it finished (the backend reads its calls once more, then
// reports) and reach every done waiting by then in a later event — after
// which a retry may already have freed more.
type round struct {
	order       []string // the resources still held, in the order found
	exact       []string // labels that must appear as they are (in doubt; calls with their reason)
	first, last int      // the Shutdown calls it owes a done (their numbers)
	waiters     int      // how many of those dones have not run
	panicked    bool     // the driver's Shutdown panicked: a "driver:" label is owed
}

// snapshotRound records the round whose driver shutdown returned in this
// step, owed to every Shutdown call not yet owed a round.
func (m *Model) snapshotRound() {
	m.shut.reporting = false
	r := round{first: m.shut.owed + 1, last: m.shut.asks, waiters: m.shut.asks - m.shut.owed, panicked: m.shut.driverPanicked}
	m.shut.owed, m.shut.driverPanicked = m.shut.asks, false
	seen := map[string]bool{}
	add := func(res string) {
		if !seen[res] {
			seen[res] = true
			r.order = append(r.order, res)
		}
	}
	for _, l := range m.shut.driverLabels {
		add(resource(l))
	}
	for _, b := range m.bindings {
		if b.live {
			add("region:" + b.region.Label)
		}
	}
	for _, l := range m.inDoubt {
		add("region:" + l)
		r.exact = append(r.exact, drivers.RegionLabel(l, drivers.WhyInDoubt))
	}
	for _, c := range m.calls {
		if c.id == 0 || c.acc == drivers.AccessEnded {
			continue
		}
		add(fmt.Sprintf("call:%d", c.id))
		why := drivers.WhyPending
		if c.acc == drivers.AccessUnprovable {
			why = drivers.WhyUnprovable
		}
		r.exact = append(r.exact, drivers.CallLabel(c.id, why)) // a call the backend names is named with what it knows of it
	}
	m.shut.rounds = append(m.shut.rounds, r)
}

// busy: a call the backend does not know ENDED names the handle.
func (m *Model) busy(h drivers.Handle) bool {
	for _, c := range m.calls {
		if c.acc != drivers.AccessEnded && names(c.rows, h) {
			return true
		}
	}
	return false
}

// busyNow: a call names the handle that is not ENDED by the driver's own
// answer now — read without being observed ([monitor.AccessPeeker]), the
// answer the backend's shutdown gets when it reads its calls before it
// closes bindings. A call stuck UNPROVABLE for good, or one that cannot be
// peeked, counts as busy.
func (m *Model) busyNow(h drivers.Handle) bool {
	for _, c := range m.calls {
		if c.acc == drivers.AccessEnded || !names(c.rows, h) {
			continue
		}
		p, ok := c.tap.c.(monitor.AccessPeeker)
		if c.stuck || !ok || p.PeekAccess() != drivers.AccessEnded {
			return true
		}
	}
	return false
}

func names(rows []drivers.Row, h drivers.Handle) bool {
	for _, r := range rows {
		if r.Handle == h {
			return true
		}
	}
	return false
}

// ShutdownReturned judges the labels a shutdown returned: exactly the
// resources still held — the driver's labels, every binding still live,
// every region in doubt, every call the backend does not know ENDED.
func (m *Model) ShutdownReturned(ask int, labels []string) {
	m.settleLookup()
	if m.shut.reporting {
		m.snapshotRound() // the done came in the step its round finished
	}
	m.shut.returns++
	if ask < 1 || ask > len(m.shut.done) || m.shut.done[ask-1] {
		m.fail(rules.BShut, nil, 0, "done-twice", fmt.Sprintf("the done of Shutdown call %d ran again (%d dones ran for %d Shutdown calls): each runs once", ask, m.shut.returns, m.shut.asks))
		return
	}
	m.shut.done[ask-1] = true
	// The owner hears every attempt's last change before the labels: it
	// may let go of the memory on them (S-HOLD).
	for _, a := range m.attempts {
		m.checkNotedAt(a, "notified-at-done", "when the shutdown's done ran")
	}
	if !slices.IsSorted(labels) || len(slices.Compact(slices.Clone(labels))) != len(labels) {
		m.fail(rules.BShut, nil, 0, "labels-order", fmt.Sprintf("shutdown returned %q: the labels are the sorted union, without repeats", labels))
	}
	// The round that finished after this call: its labels are the ones
	// owed, whichever order the rounds' dones run in.
	i := slices.IndexFunc(m.shut.rounds, func(r round) bool { return r.first <= ask && ask <= r.last })
	if i < 0 {
		m.fail(rules.BShut, nil, 0, "early-labels", fmt.Sprintf("shutdown returned %q before the driver was shut down", labels))
		return
	}
	r := &m.shut.rounds[i]
	if r.waiters--; r.waiters <= 0 {
		defer func() { m.shut.rounds = slices.Delete(m.shut.rounds, i, i+1) }()
	}
	want := map[string]bool{}
	for _, res := range r.order {
		want[res] = true
	}
	got := map[string]bool{}
	for _, l := range labels {
		got[resource(l)] = true
	}
	var missing, stale []string
	for _, res := range r.order {
		if !got[res] {
			missing = append(missing, res)
		}
	}
	for _, l := range labels {
		if !want[resource(l)] && !(r.panicked && strings.HasPrefix(l, "driver:")) {
			stale = append(stale, l)
		}
	}
	if r.panicked && !slices.ContainsFunc(labels, func(l string) bool { return strings.HasPrefix(l, "driver:") }) {
		missing = append(missing, `a "driver:" label for the driver's Shutdown, which panicked (what it holds is unknown)`)
	}
	for _, lbl := range r.exact {
		if !slices.Contains(labels, lbl) {
			missing = append(missing, lbl)
		}
	}
	if len(missing) > 0 {
		m.fail(rules.BShut, nil, 0, fmt.Sprintf("labels-missing/%d", len(m.found)), fmt.Sprintf("shutdown returned %q, which does not name what is still held: %s", labels, strings.Join(missing, ", ")))
	}
	if len(stale) > 0 {
		m.fail(rules.BShut, nil, 0, fmt.Sprintf("labels-stale/%d", len(m.found)), fmt.Sprintf("shutdown returned %q, which names what is no longer held: %s", labels, strings.Join(stale, ", ")))
	}
}

// resource is a label without its reason: "call:7", "region:A0".
func resource(label string) string {
	if i := strings.LastIndexByte(label, ':'); i > 0 && (strings.HasPrefix(label, "call:") || strings.HasPrefix(label, "region:")) {
		return label[:i]
	}
	return label
}

// HandlesAfterShutdown judges the backend's Handle (handle: its answer for
// a region label) once a shutdown returned: it answers a binding exactly
// for the regions still bound — what the labels name as held — and never
// one whose close succeeded (B-SHUT: an owner asks Handle which memory the
// store may still reach).
func (m *Model) HandlesAfterShutdown(handle func(label string) (drivers.Handle, bool)) {
	for _, b := range m.bindings {
		h, ok := handle(b.region.Label)
		switch {
		case ok && !b.live:
			m.fail(rules.BShut, nil, 0, "handle-closed-"+b.region.Label, fmt.Sprintf("after the shutdown, Handle(%q) answers handle %d, whose close succeeded: the region is no longer bound", b.region.Label, h))
		case !ok && b.live:
			m.fail(rules.BShut, nil, 0, "handle-lost-"+b.region.Label, fmt.Sprintf("after the shutdown, Handle(%q) answers no binding, but handle %d was never closed: the region is still bound", b.region.Label, b.handle))
		case ok && h != b.handle:
			m.fail(rules.BShut, nil, 0, "handle-other-"+b.region.Label, fmt.Sprintf("after the shutdown, Handle(%q) answers handle %d, not its binding's %d", b.region.Label, h, b.handle))
		}
	}
}
