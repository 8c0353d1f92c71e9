package drivertest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim/arena"
)

// The lifecycle groups: registration, together-registration and quarantine
// (lookups, drain and shutdown: cases_shutdown.go).

// D-REG-1: a registration overlapping a live one is refused without asking
// the store, whether it overlaps partly, wholly, or is the same region again.
func caseOverlapRefused(w *world) {
	buf := make([]byte, 1024)
	base := drivers.Region{Label: "base", SlotBytes: 32, Slots: 8, Mem: drivers.Bytes(buf[256:512])}
	h, err := w.registerRegion(base, nil)
	if err != nil {
		w.skip("registering a fresh region was refused: %v", err)
	}
	shapes := []struct {
		what   string
		lo, hi int
	}{
		{"the same memory again", 256, 512},
		{"memory overlapping its start", 128, 384},
		{"memory overlapping its end", 384, 640},
		{"memory inside it", 320, 448},
		{"memory around it", 0, 1024},
	}
	if !w.directed {
		w.shuffle(len(shapes), func(i, j int) { shapes[i], shapes[j] = shapes[j], shapes[i] })
		shapes = shapes[:1+w.rnd.Intn(len(shapes))]
	}
	for i, s := range shapes {
		r := drivers.Region{Label: fmt.Sprintf("overlap%d", i), SlotBytes: 32, Slots: (s.hi - s.lo) / 32, Mem: drivers.Bytes(buf[s.lo:s.hi])}
		if s.lo == 256 && s.hi == 512 && w.chance(0.5, true) {
			r = base // the very same region: a duplicate registration
		}
		if h2, err := w.registerRegion(r, nil); err == nil {
			w.fail(rules.DReg1, "Register accepted region %q over %s of live region %q (handle %d)", r.Label, s.what, base.Label, h2)
			_ = w.unregister(h2)
		} else if !errors.Is(err, drivers.ErrRegistrationRefused) {
			w.fail(rules.DReg1, "an overlapping registration was refused with %v, which does not wrap ErrRegistrationRefused", err)
		}
	}
	if w.tog != nil {
		rs := []drivers.Region{{Label: "t1", SlotBytes: 32, Slots: 4, Mem: drivers.Bytes(buf[896:1024])}, {Label: "t2", SlotBytes: 32, Slots: 4, Mem: drivers.Bytes(buf[288:416])}}
		for _, r := range rs {
			w.pc.Registering(r)
		}
		if hs, err := w.tog.RegisterTogether(rs); err == nil {
			w.fail(rules.DReg1, "RegisterTogether accepted region t2, which overlaps live region %q", base.Label)
			_ = w.unregisterTogether(hs)
		}
	}
	w.closeIdle(h)
	// Refusals left nothing behind: the overlapping shape registers now.
	w.registersAgain(drivers.Region{Label: "after", SlotBytes: 32, Slots: 8, Mem: drivers.Bytes(buf[128:384])},
		"after overlapping registrations were refused and the live region closed")
}

// D-REG-2: a refused registration leaves nothing registered: with store
// refusals injected, the same memory registers again soon after a refusal.
func caseRefusedLeavesNothing(w *world) {
	a := w.arena("r", 8, 32)
	refusals, streak := 0, 0
	for range 64 {
		h, err := w.register(a)
		if err == nil {
			streak = 0
			w.closeIdle(h)
			continue
		}
		refusals++
		if refusals > 1 {
			streak++
		}
		if streak >= 24 {
			w.fail(rules.DReg2, "after a refused registration every later registration of the same memory was refused (%d in a row, last: %v): the refusal left something registered", streak, err)
			return
		}
	}
	if refusals == 0 {
		w.skip("no registration refusal could be provoked (Env.Faults.RegisterRefused not honoured)")
	}
}

// D-REG-2: a refusal for geometry leaves nothing behind either.
func caseGeometryRefusalLeavesNothing(w *world) {
	mem := make(drivers.Bytes, 256)
	bad := drivers.Region{Label: "bad", SlotBytes: 32, Slots: 9, Mem: mem}
	if h, err := w.registerRegion(bad, nil); err == nil {
		_ = w.unregister(h) // D-GEOM's business
	}
	w.registersAgain(drivers.Region{Label: "good", SlotBytes: 32, Slots: 8, Mem: mem}, "after a bad-geometry refusal")
}

// D-REG-3: closing is by handle and idempotent; closing a stale handle never
// takes down a newer registration of the same memory.
func caseStaleClose(w *world) {
	a := w.arena("r", 16, 32)
	h1 := w.mustRegister(a)
	w.closeIdle(h1)
	for range w.pick(3, 0) {
		h := w.mustRegister(a)
		w.closeIdle(h)
	}
	h2 := w.mustRegister(a)
	for range 1 + w.pick(2, 0) {
		if err := w.unregister(h1); err != nil {
			w.fail(rules.DReg3, "closing stale handle %d failed: %v; closing is idempotent and a stale close is a no-op", h1, err)
		}
	}
	// h2 must still be live: a call on it is accepted, and the memory
	// cannot be registered a second time.
	ct := w.submit(w.anyDir(), w.rows(a, h2, w.key()))
	w.settle()
	if errors.Is(ct.err, drivers.ErrInvalidSubmission) {
		w.fail(rules.DReg3, "after closing stale handle %d, a call on the newer handle %d of the same memory was refused as invalid: %v", h1, h2, ct.err)
	}
	if h3, err := w.register(a); err == nil {
		w.fail(rules.DReg3, "after closing stale handle %d, the memory of handle %d could be registered again (handle %d): the stale close took the newer registration down", h1, h2, h3)
		_ = w.unregister(h3)
	}
	if err := w.unregister(h2); err != nil {
		return
	}
	if err := w.unregister(h2); err != nil {
		w.fail(rules.DReg3, "closing handle %d a second time failed: %v (closing is idempotent)", h2, err)
	}
}

// D-REG-4: a close that fails has not closed (the binding stays live and a
// later close retries); a close that succeeds has closed (the memory
// registers again).
func caseCloseHonest(w *world) {
	a := w.arena("r", 256, 32)
	prevOK := false
	for cycle := range 6 + w.pick(6, 0) {
		h, err := w.register(a)
		for try := 0; err != nil && try < 3; try++ {
			h, err = w.register(a) // a store refusal is legal; a held binding refuses for ever
		}
		if err != nil {
			if prevOK {
				w.fail(rules.DReg4, "cycle %d: a close reported success, yet registering the same memory again was refused (it was not closed): %v", cycle, err)
				return
			}
			w.skip("registering a fresh region was refused: %v", err)
		}
		control := w.aliasRefused(a) // h is live: the same memory is refused
		if w.caps.CanPublish {
			w.run(drivers.Publish, w.rows(a, h, w.key()))
		}
		prevOK = false
		for try := 0; try < 12; try++ {
			err = w.unregister(h)
			m := w.mark()
			if err == nil {
				prevOK = true
				break
			}
			if !errors.Is(err, drivers.ErrUnregisterFailed) {
				break
			}
			// still live: the same memory is still refused, and a call on it
			// is accepted
			if w.refusedCloseKept(a, h, err, control, m) {
				return
			}
			if w.caps.CanPublish {
				ct := w.run(drivers.Publish, w.rows(a, h, w.key()))
				if errors.Is(ct.err, drivers.ErrInvalidSubmission) {
					w.fail(rules.DReg4, "after a failed close of handle %d, a call on it was refused as invalid: a failed close must leave the binding live", h)
				}
			}
		}
		if !prevOK {
			w.skip("a region could not be closed in 12 tries")
		}
	}
	h, err := w.register(a)
	for try := 0; err != nil && try < 3; try++ {
		h, err = w.register(a)
	}
	if err != nil {
		w.fail(rules.DReg4, "a close reported success, yet registering the same memory again was refused 4 times (last: %v)", err)
		return
	}
	_ = w.unregister(h)
}

// D-REG-5: a registration after Shutdown, or racing it, is refused (or
// undone and labelled).
func caseRegisterAfterShutdown(w *world) {
	w.region(8, 32)
	late := w.arena("late", 8, 32)
	racing := w.arena("racing", 8, 32)
	var rh drivers.Handle
	var rerr error
	done := make(chan struct{})
	// Posted before Shutdown: on the simulator it runs after Shutdown
	// returned; in real time it races it.
	w.rt.Post("drivertest register racing shutdown", func() {
		rh, rerr = w.register(racing)
		close(done)
	})
	w.shutdown()
	if hl, err := w.register(late); err == nil {
		w.fail(rules.DReg5, "Register after Shutdown returned succeeded (handle %d)", hl)
	}
	if w.tog != nil {
		extra := w.arena("late2", 8, 32)
		if _, err := w.registerTogether([]*arena.Arena{extra}); err == nil {
			w.fail(rules.DReg5, "RegisterTogether after Shutdown returned succeeded")
		}
	}
	w.until(func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	if w.sched != nil && rerr == nil {
		w.fail(rules.DReg5, "a registration that ran after Shutdown returned succeeded (handle %d)", rh)
	}
}

// D-REG-6: closing a region that a call whose access is not ENDED names is
// refused (ErrBusy) and the binding stays live; once the call ended, the
// close succeeds. In real time the close follows Submit at once (a step
// there is a sleep, which lets the call end first), and the close is
// judged by the access read after it returned: access only moves forward,
// so a call not ENDED then was not ENDED when the driver closed.
func caseBusyClose(w *world) {
	a, h := w.region(64, 32)
	control := w.aliasRefused(a) // h is live: the same memory is refused
	ct := w.admitted(w.anyDir(), w.rows(a, h, w.keys(w.batchSize(4))...))
	if w.sched != nil {
		for range w.pick(6, 0) {
			w.step()
		}
	}
	busy := !ct.c.Access().Evidenced() || ct.c.Access() == drivers.AccessUnprovable
	err := w.unregister(h)
	if w.sched == nil && err == nil {
		busy = ct.c.Access() != drivers.AccessEnded
	}
	m := w.mark()
	if w.refusedCloseKept(a, h, err, control, m) {
		return // the binding is no longer what the caller holds
	}
	switch {
	case busy && err == nil:
		w.fail(rules.DReg6, "Unregister of handle %d succeeded while call %d, whose access is not ENDED, names it (want ErrBusy)", h, ct.c.ID())
		return
	case busy && !errors.Is(err, drivers.ErrBusy) && !errors.Is(err, drivers.ErrUnregisterFailed):
		w.fail(rules.DReg6, "Unregister of a busy region failed with %v, want ErrBusy", err)
	}
	if err == nil {
		return
	}
	// still live: another call on it is accepted
	ct2 := w.submit(w.anyDir(), w.rows(a, h, w.key()))
	if errors.Is(ct2.err, drivers.ErrInvalidSubmission) {
		w.fail(rules.DReg6, "after a refused busy close, a call on handle %d was refused as invalid: the binding must stay live", h)
	}
	w.settle()
	if ct.c.Access() != drivers.AccessEnded || (ct2.err == nil && ct2.c.Access() != drivers.AccessEnded) {
		return
	}
	if err := w.unregister(h); errors.Is(err, drivers.ErrBusy) {
		w.fail(rules.DReg6, "Unregister of handle %d is still refused as busy after every call naming it ENDED: %v", h, err)
	}
}

// D-REG-6 with a call that never ends: the region stays busy until
// Shutdown, which must label it.
func caseBusyForever(w *world) {
	a, h := w.region(32, 32)
	control := w.aliasRefused(a) // h is live: the same memory is refused
	ct := w.admitted(w.anyDir(), w.rows(a, h, w.keys(w.batchSize(2))...))
	w.settle()
	if ct.c.Access() == drivers.AccessEnded {
		w.skip("the call ended (Env.Faults.NeverEnds not honoured)")
	}
	err := w.unregister(h)
	m := w.mark()
	if err == nil {
		w.fail(rules.DReg6, "Unregister of handle %d succeeded while call %d (access %v) names it", h, ct.c.ID(), ct.c.Access())
		return
	}
	w.refusedCloseKept(a, h, err, control, m) // refused: the binding stays live
}

// togetherArenas makes n arenas for a together-registration.
func (w *world) togetherArenas(n int) []*arena.Arena {
	as := make([]*arena.Arena, n)
	for i := range as {
		as[i] = w.arena(fmt.Sprintf("t%d", i), 8, 32)
	}
	return as
}

// D-TOG-1: success returns one usable handle per region, in order.
func caseTogetherSuccess(w *world) {
	as := w.togetherArenas(2 + w.pick(3, 1))
	hs, err := w.registerTogether(as)
	if err != nil {
		w.skip("RegisterTogether of fresh regions was refused: %v", err)
	}
	if len(hs) != len(as) {
		return // the monitor reports it (D-TOG-1)
	}
	for i, a := range as {
		ct := w.submit(w.anyDir(), w.rows(a, hs[i], w.key()))
		if errors.Is(ct.err, drivers.ErrInvalidSubmission) {
			w.fail(rules.DTog1, "handle %d, returned for region %q (#%d), was refused as invalid: handles must come one per region, in order", hs[i], a.Label(), i)
		}
	}
	w.settle()
	if err := w.unregisterTogether(hs); err != nil {
		var ind *drivers.InDoubtError
		if !errors.As(err, &ind) {
			w.fail(rules.DTog3, "UnregisterTogether of idle regions failed with %v, which is not an *InDoubtError naming what stayed", err)
		}
	}
}

// D-TOG-1: a failed together-registration leaves nothing registered: each
// region registers on its own afterwards.
func caseTogetherFailureLeavesNothing(w *world) {
	as := w.togetherArenas(3 + w.pick(2, 0))
	failures := 0
	for range 4 + w.pick(4, 0) {
		hs, terr := w.registerTogether(as)
		if terr == nil {
			w.closeIdleTogether(hs)
			continue
		}
		var ind *drivers.InDoubtError
		if errors.As(terr, &ind) {
			w.skip("the rollback failed (in doubt): nothing more to check here")
		}
		failures++
		// One region at a time, closed before the next: a store may
		// bound its live registrations, and that bound is no leftover.
		for _, a := range as {
			h, err := w.register(a)
			for try := 0; err != nil && try < 3; try++ {
				h, err = w.register(a)
			}
			if err != nil {
				w.fail(rules.DTog1, "after RegisterTogether failed (%v), region %q could not be registered on its own: %v (the failure left it registered)", terr, a.Label(), err)
				continue
			}
			w.closeIdle(h)
		}
	}
	if failures == 0 {
		w.skip("no together-registration failure could be provoked (Env.Faults.TogetherFail not honoured)")
	}
}

// provokeInDoubt repeats a failing together-registration until its
// rollback fails: an *InDoubtError (D-TOG-2), which quarantines (D-QUAR).
func (w *world) provokeInDoubt(as []*arena.Arena) *drivers.InDoubtError {
	for range 24 {
		hs, err := w.registerTogether(as)
		if err == nil {
			if err := w.unregisterTogether(hs); err != nil {
				return nil
			}
			continue
		}
		var ind *drivers.InDoubtError
		if errors.As(err, &ind) {
			return ind
		}
	}
	return nil
}

// D-TOG-2: a failed rollback is an *InDoubtError that names the regions
// that may still be registered; Shutdown then labels or releases them.
func caseRollbackInDoubt(w *world) {
	as := w.togetherArenas(3 + w.pick(2, 0))
	ind := w.provokeInDoubt(as)
	if ind == nil {
		w.skip("no in-doubt registration could be provoked (Env.Faults TogetherFail/RollbackFail not honoured)")
	}
	var labels []string
	for _, a := range as {
		labels = append(labels, a.Label())
	}
	if len(ind.Labels) == 0 {
		w.fail(rules.DTog2, "an in-doubt registration names no region: %v", ind)
	}
	for _, l := range ind.Labels {
		if !slices.Contains(labels, l) {
			w.fail(rules.DTog2, "the in-doubt error names region %q, which was not asked for (%v)", l, labels)
		}
	}
	out := w.shutdown()
	bound, _ := w.ep.Driver.(monitor.BoundReporter)
	for _, l := range ind.Labels {
		i := slices.Index(labels, l)
		if i < 0 || slices.ContainsFunc(out, func(s string) bool { return strings.HasPrefix(s, "region:"+l+":") }) {
			continue
		}
		if bound != nil && bound.Bound(as[i].Region().Mem) {
			w.fail(rules.DTog2, "region %q, in doubt, is still registered after Shutdown but no label names it", l)
		}
	}
}

// D-TOG-3: unregistering together releases what it can; exactly the failed
// ones stay live and are named.
func caseUnregisterTogetherPartial(w *world) {
	as := w.togetherArenas(3 + w.pick(2, 0))
	for range 12 {
		hs, err := w.registerTogether(as)
		if err != nil {
			w.skip("RegisterTogether of fresh regions was refused: %v", err)
		}
		err = w.unregisterTogether(hs)
		if err == nil {
			continue
		}
		var ind *drivers.InDoubtError
		if !errors.As(err, &ind) {
			w.fail(rules.DTog3, "a failed UnregisterTogether returned %v, not an *InDoubtError naming the regions that stayed", err)
			return
		}
		for _, l := range ind.Labels {
			if !slices.ContainsFunc(as, func(a *arena.Arena) bool { return a.Label() == l }) {
				w.fail(rules.DTog3, "the in-doubt unregistration names region %q, which was not asked for", l)
			}
		}
		if len(ind.Labels) == 0 {
			w.fail(rules.DTog3, "a failed UnregisterTogether names no region")
		}
		return
	}
	w.skip("no failed together-unregistration could be provoked (Env.Faults.UnregisterFail not honoured)")
}

// D-TOG-4: a busy region (a call with live access names it) is not
// unregistered together; the others are.
func caseTogetherBusy(w *world) {
	as := w.togetherArenas(2 + w.pick(2, 0))
	hs, err := w.registerTogether(as)
	if err != nil || len(hs) != len(as) {
		w.skip("RegisterTogether of fresh regions was refused: %v", err)
	}
	busyIdx := w.pick(len(as), 0)
	ct := w.admitted(w.anyDir(), w.rows(as[busyIdx], hs[busyIdx], w.keys(w.batchSize(2))...))
	if ct.c.Access() == drivers.AccessEnded {
		w.skip("the call ended inside Submit: no busy window")
	}
	err = w.unregisterTogether(hs)
	busy := as[busyIdx].Label()
	if err == nil {
		if ct.c.Access() != drivers.AccessEnded {
			w.fail(rules.DTog4, "UnregisterTogether succeeded although call %d (access %v) names region %q", ct.c.ID(), ct.c.Access(), busy)
		}
		return
	}
	var ind *drivers.InDoubtError
	if !errors.As(err, &ind) {
		w.fail(rules.DTog4, "UnregisterTogether with a busy region returned %v, not an *InDoubtError naming it", err)
		return
	}
	if !slices.Contains(ind.Labels, busy) && ct.c.Access() != drivers.AccessEnded {
		w.fail(rules.DTog4, "UnregisterTogether did not name busy region %q (named %v)", busy, ind.Labels)
	}
}

// D-QUAR: after an in-doubt answer the driver refuses registrations and
// submissions until rebuilt.
func caseQuarantine(w *world) {
	keep, hk := w.region(8, 32)
	as := w.togetherArenas(3 + w.pick(2, 0))
	if ind := w.provokeInDoubt(as); ind == nil {
		w.skip("no in-doubt answer could be provoked (Env.Faults TogetherFail/RollbackFail not honoured)")
	}
	fresh := w.arena("fresh", 8, 32)
	if h, err := w.register(fresh); err == nil {
		w.fail(rules.DQuar, "Register succeeded (handle %d) after an in-doubt together-registration", h)
	}
	other := w.arena("fresh2", 8, 32)
	if _, err := w.registerTogether([]*arena.Arena{other}); err == nil {
		w.fail(rules.DQuar, "RegisterTogether succeeded after an in-doubt together-registration")
	}
	ct := w.submit(w.anyDir(), w.rows(keep, hk, w.key()))
	if ct.err == nil {
		w.fail(rules.DQuar, "Submit was accepted (call %d) after an in-doubt together-registration", ct.c.ID())
	}
	w.settle()
}
