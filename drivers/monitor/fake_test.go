package monitor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim"
)

// bugs are the faults the fake driver can be given; the zero value conforms.
// Each one breaks exactly one rule the monitor must catch.
type bugs struct {
	LostWakeup, EarlySignal, UnderLock, AfterShutdown, Regress, AccessBack    bool
	BlockingCancel, CancelEnds, AlreadyDoneLie, RequestedWithoutCancel        bool
	DrainLies, DrainIgnoresCallbacks, AcceptsAfterDrain, CallbackOnRefused    bool
	SilentShutdown, ForgetfulSecondShutdown                                   bool
	UnregistersBusy, UnregisterLies, FailedCloseCloses, CloseByAddress        bool
	AcceptsOverlap, AcceptsBadGeometry, GeometryNotWrapped, LeakyRegister     bool
	LeakyTogether, TogetherBusy, TogetherLies, IgnoresQuarantine              bool
	RegistersAfterShutdown                                                    bool
	ShortAnswer, BadStatus, AcceptsRepeatedKey, AcceptsOversize, NilCall      bool
	MaxRowsRefuse, MaxRowsFault, RefusesInvalidVaguely                        bool
	LookupShort, LookupOutageAbsent, LookupOversize, MissAsFault, FaultAsMiss bool
}

// fake is a small simulated driver on the scheduler: a call completes 1 ms
// after Submit (keys starting "hang/" never complete until Shutdown; keys
// starting "bad/" meet a transport error on FETCH). It implements
// LockProber, LiveReporter and BoundReporter, and together-registration.
type fake struct {
	rt   *sim.Scheduler
	caps drivers.Capabilities
	bug  bugs

	mu          sync.Mutex
	nextH       drivers.Handle
	live        map[drivers.Handle]drivers.Region
	closed      map[drivers.Handle]drivers.Region
	bound       []drivers.Region // what the transport holds
	nextID      drivers.CallID
	calls       []*fakeCall
	store       map[string]bool
	draining    bool
	shut        bool
	shutdowns   int
	quarantined bool
	cbRunning   int
	pendingCBs  int

	// Fault knobs a scenario sets (conforming behaviour, not bugs).
	failUnregister int  // the next N closes fail with ErrUnregisterFailed
	refuseRegister bool // the store refuses the next registration (the last region of a together-call)
	rollbackFails  bool // a together rollback fails (in doubt)
	deferCallbacks bool // callbacks run 1 ms after the change
	outage         bool // lookups fail
}

func newFake(rt *sim.Scheduler, caps drivers.Capabilities, b bugs) *fake {
	return &fake{rt: rt, caps: caps, bug: b,
		live: map[drivers.Handle]drivers.Region{}, closed: map[drivers.Handle]drivers.Region{}, store: map[string]bool{}}
}

type fakeCall struct {
	f        *fake
	id       drivers.CallID
	batch    drivers.RowBatch
	onChange func()
	res      []drivers.Status
	acc      drivers.Access
	timer    sim.Timer
	done     bool
}

func (f *fake) Capabilities() drivers.Capabilities { return f.caps }

func (f *fake) Locked() bool {
	if f.mu.TryLock() {
		f.mu.Unlock()
		return false
	}
	return true
}

func (f *fake) Live(h drivers.Handle) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.live[h]
	return ok
}

func (f *fake) Bound(mem drivers.Memory) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.bound {
		if r.Overlaps(drivers.Region{Mem: mem}) {
			return true
		}
	}
	return false
}

func (f *fake) unbindLocked(r drivers.Region) {
	f.bound = slices.DeleteFunc(f.bound, func(b drivers.Region) bool { return b.Overlaps(r) })
}

func (f *fake) liveHandlesLocked() []drivers.Handle {
	hs := make([]drivers.Handle, 0, len(f.live))
	for h := range f.live {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	return hs
}

func (f *fake) admitLocked(rs []drivers.Region) error {
	if f.shut && !f.bug.RegistersAfterShutdown {
		return fmt.Errorf("%w: shut down", drivers.ErrRegistrationRefused)
	}
	if f.quarantined && !f.bug.IgnoresQuarantine {
		return fmt.Errorf("%w: quarantined", drivers.ErrRegistrationRefused)
	}
	if err := drivers.CheckGeometry(rs...); err != nil && !f.bug.AcceptsBadGeometry {
		if f.bug.GeometryNotWrapped {
			return errors.New("no")
		}
		return fmt.Errorf("%w: %w", drivers.ErrRegistrationRefused, err)
	}
	for _, r := range rs {
		for _, h := range f.liveHandlesLocked() {
			if r.Overlaps(f.live[h]) && !f.bug.AcceptsOverlap {
				return fmt.Errorf("%w: %q overlaps %q", drivers.ErrRegistrationRefused, r.Label, f.live[h].Label)
			}
		}
	}
	return nil
}

func (f *fake) bindLocked(r drivers.Region) drivers.Handle {
	f.nextH++
	f.live[f.nextH] = r
	f.bound = append(f.bound, r)
	return f.nextH
}

func (f *fake) Register(r drivers.Region) (drivers.Handle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.admitLocked([]drivers.Region{r}); err != nil {
		return 0, err
	}
	if f.refuseRegister {
		f.refuseRegister = false
		if f.bug.LeakyRegister {
			f.bound = append(f.bound, r)
		}
		return 0, fmt.Errorf("%w: the store refused %q", drivers.ErrRegistrationRefused, r.Label)
	}
	return f.bindLocked(r), nil
}

func (f *fake) busyLocked(h drivers.Handle) bool {
	for _, c := range f.calls {
		if c.acc != drivers.AccessEnded && slices.ContainsFunc(c.batch.Rows, func(r drivers.Row) bool { return r.Handle == h }) {
			return true
		}
	}
	return false
}

func (f *fake) Unregister(h drivers.Handle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.live[h]
	if !ok {
		if old, was := f.closed[h]; was && f.bug.CloseByAddress {
			for _, h2 := range f.liveHandlesLocked() {
				if f.live[h2].Overlaps(old) {
					f.unbindLocked(f.live[h2])
					delete(f.live, h2)
				}
			}
		}
		return nil
	}
	if f.busyLocked(h) && !f.bug.UnregistersBusy {
		return fmt.Errorf("%w: %q", drivers.ErrBusy, r.Label)
	}
	if f.failUnregister > 0 {
		f.failUnregister--
		if f.bug.UnregisterLies {
			return nil
		}
		if f.bug.FailedCloseCloses {
			delete(f.live, h)
			f.closed[h] = r
			f.unbindLocked(r)
		}
		return fmt.Errorf("%w: %q", drivers.ErrUnregisterFailed, r.Label)
	}
	delete(f.live, h)
	f.closed[h] = r
	f.unbindLocked(r)
	return nil
}

func (f *fake) RegisterTogether(rs []drivers.Region) ([]drivers.Handle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.admitLocked(rs); err != nil {
		return nil, err
	}
	var hs []drivers.Handle
	for i, r := range rs {
		if f.refuseRegister && i == len(rs)-1 {
			f.refuseRegister = false
			if f.rollbackFails {
				f.quarantined = true
				var labels []string
				for _, p := range rs[:i] {
					labels = append(labels, p.Label)
				}
				return nil, &drivers.InDoubtError{Op: "register", Labels: labels, Err: drivers.ErrRegistrationRefused}
			}
			if !f.bug.LeakyTogether {
				for _, h := range hs {
					f.unbindLocked(f.live[h])
					delete(f.live, h)
				}
			}
			return nil, fmt.Errorf("%w: the store refused %q", drivers.ErrRegistrationRefused, r.Label)
		}
		hs = append(hs, f.bindLocked(r))
	}
	return hs, nil
}

func (f *fake) UnregisterTogether(hs []drivers.Handle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var failed []string
	for _, h := range hs {
		r, ok := f.live[h]
		if !ok {
			continue
		}
		if f.busyLocked(h) && !f.bug.TogetherBusy {
			failed = append(failed, r.Label)
			continue
		}
		if f.bug.TogetherLies {
			continue
		}
		delete(f.live, h)
		f.closed[h] = r
		f.unbindLocked(r)
	}
	if len(failed) > 0 {
		return &drivers.InDoubtError{Op: "unregister", Labels: failed, Err: drivers.ErrBusy}
	}
	return nil
}

func (f *fake) Contains(_ context.Context, keys []string) ([]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(keys) > f.caps.MaxRowsPerOp && !f.bug.LookupOversize {
		return nil, fmt.Errorf("%w: %d keys", drivers.ErrLookupFailed, len(keys))
	}
	if f.outage {
		if f.bug.LookupOutageAbsent {
			return make([]bool, len(keys)), nil
		}
		return nil, fmt.Errorf("%w: outage", drivers.ErrLookupFailed)
	}
	out := make([]bool, len(keys))
	for i, k := range keys {
		out[i] = f.store[k]
	}
	if f.bug.LookupShort {
		out = out[:len(out)-1]
	}
	return out, nil
}

func (f *fake) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	f.mu.Lock()
	refuse := func(err error) (drivers.Call, error) {
		f.mu.Unlock()
		if f.bug.CallbackOnRefused {
			onChange()
		}
		return nil, err
	}
	if (f.draining || f.shut) && !f.bug.AcceptsAfterDrain {
		return refuse(drivers.ErrClosed)
	}
	if f.quarantined {
		return refuse(drivers.ErrRejected)
	}
	if err := b.Validate(f.caps, func(h drivers.Handle) (drivers.Region, bool) { r, ok := f.live[h]; return r, ok }); err != nil {
		switch {
		case f.bug.AcceptsRepeatedKey && strings.Contains(err.Error(), rules.DBatchKeys.String()):
		case f.bug.AcceptsOversize && strings.Contains(err.Error(), "MaxRowsPerOp"):
		case f.bug.RefusesInvalidVaguely:
			return refuse(errors.New("transport hiccup"))
		default:
			return refuse(err)
		}
	}
	if f.bug.MaxRowsRefuse && len(b.Rows) == f.caps.MaxRowsPerOp {
		return refuse(fmt.Errorf("%w: batch too large", drivers.ErrInvalidSubmission))
	}
	if f.bug.NilCall {
		f.mu.Unlock()
		return nil, nil
	}
	f.nextID++
	c := &fakeCall{f: f, id: f.nextID, batch: b, onChange: onChange, res: make([]drivers.Status, len(b.Rows))}
	f.calls = append(f.calls, c)
	if !slices.ContainsFunc(b.Rows, func(r drivers.Row) bool { return strings.HasPrefix(r.Key, "hang/") }) {
		c.timer = f.rt.After(time.Millisecond, "fake/complete", c.complete)
	}
	f.mu.Unlock()
	return c, nil
}

func (c *fakeCall) complete() {
	f := c.f
	if f.bug.EarlySignal {
		c.signal()
	}
	f.mu.Lock()
	if c.done {
		f.mu.Unlock()
		return
	}
	for i, r := range c.batch.Rows {
		switch {
		case f.bug.MaxRowsFault && len(c.batch.Rows) == f.caps.MaxRowsPerOp:
			c.res[i] = drivers.Fault
		case c.batch.Dir == drivers.Publish:
			f.store[r.Key] = true
			c.res[i] = drivers.OK
		case strings.HasPrefix(r.Key, "bad/") && f.bug.FaultAsMiss:
			c.res[i] = drivers.Miss
		case strings.HasPrefix(r.Key, "bad/"):
			c.res[i] = drivers.Fault
		case f.store[r.Key]:
			c.res[i] = drivers.OK
		case f.bug.MissAsFault:
			c.res[i] = drivers.Fault
		default:
			c.res[i] = drivers.Miss
		}
	}
	if f.bug.BadStatus {
		c.res[0] = 9
	}
	c.acc, c.done = drivers.AccessEnded, true
	if f.bug.AccessBack {
		c.acc = drivers.AccessUnprovable
		f.rt.After(time.Millisecond, "fake/access-back", func() {
			f.mu.Lock()
			c.acc = drivers.AccessPending
			f.mu.Unlock()
			c.signal()
		})
	}
	if f.bug.UnderLock {
		c.onChange()
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	if f.bug.EarlySignal || f.bug.LostWakeup {
		return
	}
	c.signal()
	if f.bug.Regress {
		f.rt.After(time.Millisecond, "fake/regress", func() {
			f.mu.Lock()
			c.res[0] = map[bool]drivers.Status{true: drivers.Miss, false: drivers.OK}[c.res[0] == drivers.OK]
			f.mu.Unlock()
			c.signal()
		})
	}
}

func (c *fakeCall) signal() {
	f := c.f
	if f.deferCallbacks {
		f.mu.Lock()
		f.pendingCBs++
		f.mu.Unlock()
		f.rt.After(time.Millisecond, "fake/callback", func() {
			f.mu.Lock()
			f.pendingCBs--
			f.mu.Unlock()
			c.deliver()
		})
		return
	}
	c.deliver()
}

func (c *fakeCall) deliver() {
	f := c.f
	f.mu.Lock()
	f.cbRunning++
	f.mu.Unlock()
	c.onChange()
	f.mu.Lock()
	f.cbRunning--
	f.mu.Unlock()
}

func (c *fakeCall) ID() drivers.CallID { return c.id }

func (c *fakeCall) Results() []drivers.Status {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	out := slices.Clone(c.res)
	if c.f.bug.ShortAnswer {
		out = out[:len(out)-1]
	}
	return out
}

func (c *fakeCall) Access() drivers.Access {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return c.acc
}

func (c *fakeCall) Cancel() drivers.CancelResult {
	f := c.f
	f.mu.Lock()
	switch {
	case c.done || f.bug.AlreadyDoneLie:
		f.mu.Unlock()
		return drivers.CancelAlreadyDone
	case f.bug.BlockingCancel:
		f.mu.Unlock()
		c.timer.Stop()
		c.complete()
		return drivers.CancelRequested
	case f.bug.CancelEnds:
		c.acc = drivers.AccessEnded
		f.mu.Unlock()
		c.signal()
		return drivers.CancelRequested
	case !f.caps.CanCancel && !f.bug.RequestedWithoutCancel:
		f.mu.Unlock()
		return drivers.CancelUnsupported
	}
	c.timer.Stop()
	for i := range c.res {
		c.res[i] = drivers.NotAttempted
	}
	c.acc, c.done = drivers.AccessEnded, true
	f.mu.Unlock()
	c.signal()
	return drivers.CancelRequested
}

func (f *fake) Drain() drivers.DrainStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.draining = true
	var pending []drivers.CallID
	for _, c := range f.calls {
		if c.acc == drivers.AccessPending {
			pending = append(pending, c.id)
		}
	}
	if f.bug.DrainLies {
		return drivers.DrainStatus{Done: true}
	}
	busy := (f.cbRunning > 0 || f.pendingCBs > 0) && !f.bug.DrainIgnoresCallbacks
	return drivers.DrainStatus{Done: len(pending) == 0 && !busy, Pending: pending}
}

func (f *fake) Shutdown(context.Context) []string {
	f.mu.Lock()
	f.shut, f.draining = true, true
	f.shutdowns++
	var toSignal []*fakeCall
	named := map[drivers.Handle]bool{}
	var labels []string
	for _, c := range f.calls {
		if c.acc == drivers.AccessPending {
			c.acc, c.done = drivers.AccessUnprovable, true
			for i, s := range c.res {
				if s == drivers.Pending {
					c.res[i] = drivers.Fault
				}
			}
			c.timer.Stop()
			toSignal = append(toSignal, c)
		}
		if c.acc != drivers.AccessEnded {
			labels = append(labels, drivers.CallLabel(c.id, drivers.WhyUnprovable))
			for _, r := range c.batch.Rows {
				named[r.Handle] = true
			}
		}
	}
	for _, h := range f.liveHandlesLocked() {
		r := f.live[h]
		if named[h] {
			labels = append(labels, drivers.RegionLabel(r.Label, drivers.WhyRetained))
			continue
		}
		if f.failUnregister > 0 {
			labels = append(labels, drivers.RegionLabel(r.Label, drivers.WhyUnregisterFailed))
			continue
		}
		delete(f.live, h)
		f.closed[h] = r
		f.unbindLocked(r)
	}
	n := f.shutdowns
	f.mu.Unlock()
	for _, c := range toSignal {
		c.deliver()
	}
	if f.bug.AfterShutdown {
		for _, c := range f.calls {
			f.rt.After(time.Millisecond, "fake/late", c.deliver)
		}
	}
	if f.bug.SilentShutdown || (f.bug.ForgetfulSecondShutdown && n > 1) {
		return nil
	}
	slices.SortFunc(labels, func(a, b string) int { return cmp.Compare(a, b) })
	return labels
}

// plain hides the fake's optional interfaces (LockProber, LiveReporter,
// BoundReporter, together-registration): the monitor must then judge from
// the boundary alone.
type plain struct{ drivers.Driver }
