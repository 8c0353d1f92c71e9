package monitor

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim/arena"
)

// Registration at the boundary: Register and Unregister of one region
// (D-GEOM, D-REG-1 … D-REG-6, D-QUAR; together-registration is together.go).

// regRec is what the monitor knows of one registration.
type regRec struct {
	h              drivers.Handle
	r              drivers.Region
	live           bool
	failedClose    bool // an Unregister failed (ErrUnregisterFailed) and none succeeded since
	busyRefused    bool // an Unregister was refused as busy (ErrBusy) and none succeeded since
	staleCloseSeen bool // a stale handle of overlapping memory was closed while this was live
	duringShutdown bool // registered while Shutdown was running
}

func setRegistered(r drivers.Region, on bool) {
	if a, ok := r.Mem.(*arena.Arena); ok {
		a.SetRegistered(on)
	}
}

func (m *Monitor) liveRegsLocked() []*regRec {
	var out []*regRec
	for _, r := range m.regList {
		if r.live {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *regRec) int { return cmp.Compare(a.h, b.h) })
	return out
}

// overlapLocked is the live registration other than except, lowest handle
// first, whose memory r overlaps; nil if none. It lists nothing, so the
// checks at every registration and close allocate nothing.
func (m *Monitor) overlapLocked(r drivers.Region, except *regRec) *regRec {
	var first *regRec
	for _, l := range m.regList {
		if l.live && l != except && (first == nil || l.h < first.h) && r.Overlaps(l.r) {
			first = l
		}
	}
	return first
}

// regLocked is the record of handle h, nil if the monitor never saw it.
// A monitor sees a few registrations: regList (one record per handle) is
// scanned until it outgrows regsInl, then the map made of it answers.
func (m *Monitor) regLocked(h drivers.Handle) *regRec {
	if m.regs != nil {
		return m.regs[h]
	}
	for _, r := range m.regList {
		if r.h == h {
			return r
		}
	}
	return nil
}

// refusal is why a registration must be refused (rule 0: it need not be).
// Its text is formatted only for the violation, when the driver accepted
// the registration anyway.
type refusal struct {
	rule rules.ID
	geom error          // D-GEOM: the geometry error
	r    drivers.Region // D-REG-1: r overlaps over's live region
	over *regRec
	why  string // the other reasons
}

func (f refusal) String() string {
	switch {
	case f.geom != nil:
		return "its geometry is bad (" + f.geom.Error() + ")"
	case f.over != nil:
		return fmt.Sprintf("region %q overlaps live region %q (handle %d)", f.r.Label, f.over.r.Label, f.over.h)
	}
	return f.why
}

// mustRefuseLocked says why a registration of regions must be refused.
func (m *Monitor) mustRefuseLocked(regions []drivers.Region) refusal {
	if err := drivers.CheckGeometry(regions...); err != nil {
		return refusal{rule: rules.DReg1, geom: err}
	}
	for _, r := range regions {
		if l := m.overlapLocked(r, nil); l != nil {
			return refusal{rule: rules.DReg1, r: r, over: l}
		}
	}
	switch {
	case m.shutdown:
		return refusal{rule: rules.DReg5, why: "Shutdown had returned"}
	case m.quarantined:
		return refusal{rule: rules.DQuar, why: "an earlier together-registration was in doubt (quarantine)"}
	}
	return refusal{}
}

// addRegLocked records a successful registration.
func (m *Monitor) addRegLocked(h drivers.Handle, r drivers.Region) {
	old := m.regLocked(h)
	if old != nil {
		m.violateLocked(rules.Violation{Rule: rules.DReg3, Row: -1, Region: r.Label,
			Detail: fmt.Sprintf("handle %d reused (it named region %q before); a stale close could take down the new registration", h, old.r.Label)})
	}
	rec := m.regSlab.New()
	*rec = regRec{h: h, r: r, live: true, duringShutdown: m.shutting && !m.shutdown}
	if old != nil {
		m.regList[slices.Index(m.regList, old)] = rec
	} else {
		m.regList = append(m.regList, rec)
	}
	switch {
	case m.regs != nil:
		m.regs[h] = rec
	case len(m.regList) > len(m.regsInl): // too many to scan: index them
		m.regs = make(map[drivers.Handle]*regRec, 2*len(m.regList))
		for _, r := range m.regList {
			m.regs[r.h] = r
		}
	}
	at := m.now()
	for _, o := range m.opts.Observers {
		o.Registered(at, h, r)
	}
}

// refused checks a refused registration: geometry errors wrap
// ErrBadGeometry (D-GEOM) and, with a BoundReporter, nothing of the refused
// memory stays registered (D-REG-2 / D-TOG-1) except regions an in-doubt
// error names (D-TOG-2).
func (m *Monitor) refused(regions []drivers.Region, err error, geom bool, rule rules.ID) {
	if geom && !errors.Is(err, drivers.ErrBadGeometry) {
		m.violate(rules.Violation{Rule: rules.DGeom, Row: -1, Region: regions[0].Label,
			Detail: "a registration with bad geometry was refused with an error that does not wrap ErrBadGeometry: " + err.Error()})
	}
	if m.bound == nil || geom {
		return
	}
	var doubt map[string]bool
	if ind, ok := errors.AsType[*drivers.InDoubtError](err); ok {
		doubt = map[string]bool{}
		for _, l := range ind.Labels {
			doubt[l] = true
		}
	}
	m.mu.Lock()
	var check []drivers.Region
	for _, r := range regions {
		if doubt[r.Label] {
			continue
		}
		if m.overlapLocked(r, nil) == nil {
			check = append(check, r)
		}
	}
	m.mu.Unlock()
	for _, r := range check {
		if m.bound.Bound(r.Mem) {
			m.violate(rules.Violation{Rule: rule, Row: -1, Region: r.Label,
				Detail: "a refused registration left the region's memory registered with the transport: " + err.Error()})
		}
	}
}

// Register implements drivers.Driver (D-REG-1, D-REG-2, D-REG-5, D-QUAR).
func (m *Monitor) Register(r drivers.Region) (drivers.Handle, error) {
	m.mu.Lock()
	must := m.mustRefuseLocked([]drivers.Region{r})
	m.mu.Unlock()
	h, err := m.d.Register(r)
	if err != nil {
		m.refused([]drivers.Region{r}, err, must.geom != nil, rules.DReg2)
		return h, err
	}
	m.mu.Lock()
	if must.rule != 0 {
		m.violateLocked(rules.Violation{Rule: must.rule, Row: -1, Region: r.Label, Detail: "Register succeeded although " + must.String()})
	}
	m.addRegLocked(h, r)
	m.mu.Unlock()
	setRegistered(r, true)
	return h, nil
}

// closeCtx is what the monitor gathered around one close of one handle.
type closeCtx struct {
	h     drivers.Handle
	rec   *regRec    // nil: a handle the monitor never saw
	stale bool       // rec was already closed
	newer []*regRec  // live registrations overlapping a stale handle's memory
	busy  []*callRec // not-ENDED calls naming a live handle
}

func (m *Monitor) beginCloseLocked(h drivers.Handle) closeCtx {
	c := closeCtx{h: h, rec: m.regLocked(h)}
	switch {
	case c.rec == nil:
	case !c.rec.live:
		c.stale = true
		for _, l := range m.liveRegsLocked() {
			if l.r.Overlaps(c.rec.r) {
				c.newer = append(c.newer, l)
			}
		}
	default:
		m.scratch = m.openLocked(m.scratch)
		for _, call := range m.scratch {
			if slices.Contains(call.handles, h) {
				c.busy = append(c.busy, call)
			}
		}
	}
	return c
}

// endClose records the outcome of a close: released says whether the driver
// claims the binding closed. Driver queries happen here, outside the lock.
func (m *Monitor) endClose(c closeCtx, released bool, err error, busyRule, closeRule rules.ID) {
	if c.rec == nil {
		return
	}
	if c.stale {
		for _, n := range c.newer {
			took := m.live != nil && !m.live.Live(n.h)
			took = took || (m.bound != nil && !m.bound.Bound(n.r.Mem))
			m.mu.Lock()
			n.staleCloseSeen = true
			if took {
				m.violateLocked(rules.Violation{Rule: rules.DReg3, Row: -1, Region: n.r.Label,
					Detail: fmt.Sprintf("closing stale handle %d took down the newer registration %d of the same memory", c.h, n.h)})
			}
			m.mu.Unlock()
		}
		return
	}
	for _, call := range c.busy {
		m.refresh(call)
	}
	if !released {
		stillLive := m.live == nil || m.live.Live(c.h)
		m.mu.Lock()
		if errors.Is(err, drivers.ErrUnregisterFailed) {
			c.rec.failedClose = true
		}
		if errors.Is(err, drivers.ErrBusy) {
			c.rec.busyRefused = true
		}
		if !stillLive {
			rule := closeRule
			if errors.Is(err, drivers.ErrBusy) {
				rule = busyRule // a refused busy close must leave the binding live (D-REG-6, D-TOG-4)
			}
			m.violateLocked(rules.Violation{Rule: rule, Row: -1, Region: c.rec.r.Label,
				Detail: fmt.Sprintf("a refused close of handle %d (%v) closed it anyway: Live reports it gone", c.h, err)})
		}
		m.mu.Unlock()
		return
	}
	stillLive := m.live != nil && m.live.Live(c.h)
	m.mu.Lock()
	for _, call := range c.busy {
		if call.knownAcc != drivers.AccessEnded {
			m.violateLocked(rules.Violation{Rule: busyRule, Call: uint64(call.id), Row: -1, Region: c.rec.r.Label,
				Detail: fmt.Sprintf("handle %d was closed while this call, whose access is %v, names it (want ErrBusy)", c.h, call.knownAcc)})
		}
	}
	overlapped := m.overlapLocked(c.rec.r, c.rec) != nil
	m.mu.Unlock()
	stillBound := m.bound != nil && !overlapped && m.bound.Bound(c.rec.r.Mem)
	m.mu.Lock()
	if stillLive || stillBound {
		m.violateLocked(rules.Violation{Rule: closeRule, Row: -1, Region: c.rec.r.Label,
			Detail: fmt.Sprintf("close of handle %d reported success but the driver still holds it (Live %v, Bound %v)", c.h, stillLive, stillBound)})
	}
	c.rec.live, c.rec.failedClose, c.rec.busyRefused = false, false, false
	at := m.now()
	for _, o := range m.opts.Observers {
		o.Unregistered(at, c.h, c.rec.r)
	}
	m.mu.Unlock()
	setRegistered(c.rec.r, false)
}

// Unregister implements drivers.Driver (D-REG-3, D-REG-4, D-REG-6).
func (m *Monitor) Unregister(h drivers.Handle) error {
	m.mu.Lock()
	c := m.beginCloseLocked(h)
	m.mu.Unlock()
	err := m.d.Unregister(h)
	m.endClose(c, err == nil, err, rules.DReg6, rules.DReg4)
	return err
}
