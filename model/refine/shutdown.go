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

// ShutdownAsked is called just before Backend.Shutdown. The first one
// closes admission and cancels every Pending attempt (B-SHUT).
func (m *Model) ShutdownAsked() {
	m.event()
	m.shut.asks++
	if m.shut.asked {
		m.shut.driverShut = false // a retry shuts the driver down again
		for _, b := range m.bindings {
			b.tried = false
		}
		return
	}
	m.shut.asked, m.shut.askedAt = true, m.now()
	for _, a := range m.attempts {
		if a.view.State() == backend.Pending {
			a.cancelAsk, a.touched, a.settled = true, true, false
			a.why |= whyShutdown
		}
	}
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

func (m *Model) driverShutdownReturned(labels []string) { m.shut.driverLabels = slices.Clone(labels) }

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
func (m *Model) ShutdownReturned(labels []string) {
	m.settleLookup()
	if m.shut.returns++; m.shut.returns > m.shut.asks {
		m.fail(rules.BShut, nil, 0, "done-twice", fmt.Sprintf("a shutdown's done ran %d times for %d Shutdown calls: each runs once", m.shut.returns, m.shut.asks))
	}
	// The owner hears every attempt's last change before the labels: it
	// may let go of the memory on them (S-HOLD).
	for _, a := range m.attempts {
		m.checkNotedAt(a, "notified-at-done", "when the shutdown's done ran")
	}
	if !slices.IsSorted(labels) || len(slices.Compact(slices.Clone(labels))) != len(labels) {
		m.fail(rules.BShut, nil, 0, "labels-order", fmt.Sprintf("shutdown returned %q: the labels are the sorted union, without repeats", labels))
	}
	if !m.shut.driverShut {
		m.fail(rules.BShut, nil, 0, "early-labels", fmt.Sprintf("shutdown returned %q before the driver was shut down", labels))
		return
	}
	want := map[string]bool{}
	var order []string
	add := func(r string) {
		if !want[r] {
			want[r] = true
			order = append(order, r)
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
	}
	for _, c := range m.calls {
		if c.id != 0 && c.acc != drivers.AccessEnded {
			add(fmt.Sprintf("call:%d", c.id))
		}
	}
	got := map[string]bool{}
	for _, l := range labels {
		got[resource(l)] = true
	}
	var missing, stale []string
	for _, r := range order {
		if !got[r] {
			missing = append(missing, r)
		}
	}
	for _, l := range labels {
		if !want[resource(l)] {
			stale = append(stale, l)
		}
	}
	for _, l := range m.inDoubt {
		if lbl := drivers.RegionLabel(l, drivers.WhyInDoubt); !slices.Contains(labels, lbl) {
			missing = append(missing, lbl)
		}
	}
	// A call the backend names is named with what it knows of it.
	for _, c := range m.calls {
		if c.id == 0 || c.acc == drivers.AccessEnded {
			continue
		}
		why := drivers.WhyPending
		if c.acc == drivers.AccessUnprovable {
			why = drivers.WhyUnprovable
		}
		if lbl := drivers.CallLabel(c.id, why); !slices.Contains(labels, lbl) {
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
