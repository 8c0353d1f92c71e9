package drivertest_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/drivertest"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/sim"
)

// Nine unusual drivers that keep the contract, written as a third party
// would: only the drivers.Driver interface (two of them also the optional
// monitor.LockProber), the simulated runtime and the simulated store of
// drivertest.Env, no fault injection (Env.Faults is ignored). They test
// the tester the other way round from package broken: every check must stay
// quiet where the contract allows what they do.
//
// They share core, the bookkeeping no driver does differently (the handle
// table, admission, Drain, Shutdown, callback delivery); what makes each
// one unusual is its Submit and the events it schedules. Everything runs on
// the runtime's events: no goroutines, no wall clock, map keys sorted
// before any decision.

// conformDrivers are the nine and the four of conformlimits_test.go, by
// name.
var conformDrivers = []struct {
	name string
	new  func(env drivertest.Env) drivers.Driver
}{
	{"fifo", newFIFO},
	{"staging", newStaging},
	{"fetch-only", newFetchOnly},
	{"inline", newInline},
	{"coalescing", newCoalescing},
	{"publish-only", newPublishOnly},
	{"one-row", newOneRow},
	{"slow", newSlow},
	{"flaky", newFlaky},
	{"one-at-a-time", newOneAtATime},
	{"per-key", newPerKey},
	{"close-retry", newCloseRetry},
	{"bounded-together", newBoundedTogether},
}

// core is what the nine drivers share.
type core struct {
	rt    sim.Runtime
	store *memdriver.Store
	caps  drivers.Capabilities
	kind  string
	rnd   *sim.Rand
	// shutEnds: at Shutdown a call still running is made inert (its events
	// do nothing any more), which on a single-threaded simulator proves
	// that nothing will touch its rows: access ENDED. Without it such a call
	// is reported UNPROVABLE and labelled, as the reference driver does.
	shutEnds bool
	// signal is how a change is told (default: one posted delivery per
	// call, coalescing repeats while one is queued).
	signal func(x *xcall)
	// evictOnPut drops a key just before each put of it: a cache under
	// memory pressure, legal only on a store that may evict
	// (TestEvictingCacheCertified).
	evictOnPut bool
	// lossy: the transport loses one request in six before it reaches the
	// store (FAULT, nothing moved) and one answer in six after the store
	// ran it (FAULT, though the put ran or the slot was written), and one
	// lookup in six (an error): an honest driver on a flaky network.
	lossy bool
	// lie plants one lie in a lossy driver (TestUncontrolledLiesCaught):
	// "miss-as-fault" answers FAULT for every absent key; "ran-not-attempted"
	// answers NOT_ATTEMPTED for one publish row in six whose put ran.
	lie string

	mu       sync.Mutex
	regs     map[drivers.Handle]drivers.Region
	nextH    drivers.Handle
	calls    map[drivers.CallID]*xcall
	nextID   drivers.CallID
	draining bool
	shut     bool
}

func newCore(env drivertest.Env, kind string, caps drivers.Capabilities) *core {
	c := &core{
		rt: env.RT, store: env.Store, caps: caps, kind: kind,
		rnd:  env.RT.Rand("conform/" + kind + "/" + env.Name),
		regs: map[drivers.Handle]drivers.Region{}, calls: map[drivers.CallID]*xcall{},
	}
	c.signal = c.post
	return c
}

// xcall is one call of any of the nine.
type xcall struct {
	c        *core
	id       drivers.CallID
	dir      drivers.Direction
	rows     []drivers.Row
	regs     []drivers.Region
	onChange func()

	res       []drivers.Status
	acc       drivers.Access
	started   []bool // the row's transfer began (FAULT, not NOT_ATTEMPTED, if stopped)
	cancelled bool
	dead      bool // made inert by Shutdown: its events do nothing
	version   int  // changes so far
	delivered int  // changes told
	running   int  // callbacks running
	posted    bool // a delivery is queued

	next  int      // next row (sequential drivers)
	chunk int      // bytes moved of the current row (slow)
	stage [][]byte // private copies (staging, publish-only, slow)
}

var _ drivers.Call = (*xcall)(nil)

func (c *core) Capabilities() drivers.Capabilities { return c.caps }

func (c *core) handlesLocked() []drivers.Handle {
	hs := make([]drivers.Handle, 0, len(c.regs))
	for h := range c.regs {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	return hs
}

func (c *core) callsLocked() []*xcall {
	ids := make([]drivers.CallID, 0, len(c.calls))
	for id := range c.calls {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]*xcall, len(ids))
	for i, id := range ids {
		out[i] = c.calls[id]
	}
	return out
}

func (c *core) Register(r drivers.Region) (drivers.Handle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shut {
		return 0, fmt.Errorf("%w: region %q: shut down", drivers.ErrRegistrationRefused, r.Label)
	}
	if err := drivers.CheckGeometry(r); err != nil {
		return 0, fmt.Errorf("%w: %w", drivers.ErrRegistrationRefused, err)
	}
	for _, h := range c.handlesLocked() {
		o := c.regs[h]
		if o.Label == r.Label {
			return 0, fmt.Errorf("%w: %w: region %q: label in use", drivers.ErrRegistrationRefused, drivers.ErrBadGeometry, r.Label)
		}
		if o.Overlaps(r) {
			return 0, fmt.Errorf("%w: region %q overlaps region %q", drivers.ErrRegistrationRefused, r.Label, o.Label)
		}
	}
	c.nextH++
	c.regs[c.nextH] = r
	return c.nextH, nil
}

func (c *core) Unregister(h drivers.Handle) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.regs[h]
	if !ok {
		return nil // stale: a no-op (D-REG-3)
	}
	for _, x := range c.callsLocked() {
		if x.acc == drivers.AccessEnded {
			continue
		}
		for _, row := range x.rows {
			if row.Handle == h {
				return fmt.Errorf("%w: region %q: call %d (access %v) names it", drivers.ErrBusy, r.Label, x.id, x.acc)
			}
		}
	}
	delete(c.regs, h)
	return nil
}

func (c *core) Contains(_ context.Context, keys []string) ([]bool, error) {
	if len(keys) > c.caps.MaxRowsPerOp {
		return nil, fmt.Errorf("%w: %d keys, at most %d", drivers.ErrInvalidSubmission, len(keys), c.caps.MaxRowsPerOp)
	}
	c.mu.Lock()
	shut := c.shut
	lost := c.lossy && c.rnd.Intn(6) == 0
	c.mu.Unlock()
	if shut {
		return nil, fmt.Errorf("%w: %w", drivers.ErrLookupFailed, drivers.ErrClosed)
	}
	if lost {
		return nil, fmt.Errorf("%w: %s: connection reset", drivers.ErrLookupFailed, c.kind)
	}
	found := make([]bool, len(keys))
	for i, k := range keys {
		found[i] = c.store.Has(k)
	}
	return found, nil
}

// accept validates and admits a call. Caller holds c.mu.
func (c *core) accept(b drivers.RowBatch, onChange func()) (*xcall, error) {
	if c.draining {
		return nil, fmt.Errorf("%s: %w", c.kind, drivers.ErrClosed)
	}
	if err := b.Validate(c.caps, func(h drivers.Handle) (drivers.Region, bool) { r, ok := c.regs[h]; return r, ok }); err != nil {
		return nil, err
	}
	if onChange == nil {
		onChange = func() {}
	}
	c.nextID++
	x := &xcall{c: c, id: c.nextID, dir: b.Dir, rows: slices.Clone(b.Rows), onChange: onChange,
		res: make([]drivers.Status, len(b.Rows)), started: make([]bool, len(b.Rows)),
		regs: make([]drivers.Region, len(b.Rows)), stage: make([][]byte, len(b.Rows))}
	for i, r := range x.rows {
		x.regs[i] = c.regs[r.Handle]
	}
	c.calls[x.id] = x
	return x, nil
}

// delay draws a duration in [lo, hi) from the driver's own stream.
func (c *core) delay(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(c.rnd.Intn(int((hi-lo)/time.Microsecond)))*time.Microsecond
}

// after schedules fn for x, unless x is inert by then. fn runs with c.mu held.
func (c *core) after(x *xcall, d time.Duration, label string, fn func()) {
	c.rt.After(d, c.kind+" "+label, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !x.dead {
			fn()
		}
	})
}

// changed records a change of x and has it told. Caller holds c.mu.
func (c *core) changed(x *xcall) {
	x.version++
	c.signal(x)
}

// post queues one delivery of x's changes (repeats coalesce while queued).
// Caller holds c.mu.
func (c *core) post(x *xcall) {
	if x.posted {
		return
	}
	x.posted = true
	c.rt.Post(c.kind+" callback", func() { c.deliver(x) })
}

// deliver runs x's callback if it has changes not yet told, outside the
// lock (D-CB-4), never after Shutdown began (which tells them itself).
func (c *core) deliver(x *xcall) {
	c.mu.Lock()
	x.posted = false
	if c.shut || x.delivered == x.version {
		c.mu.Unlock()
		return
	}
	v := x.version
	x.running++
	c.mu.Unlock()
	x.onChange()
	c.mu.Lock()
	x.running--
	x.delivered = max(x.delivered, v)
	c.forgetLocked(x)
	c.mu.Unlock()
}

func (x *xcall) settled() bool {
	return x.acc == drivers.AccessEnded && !slices.Contains(x.res, drivers.Pending)
}

func (c *core) forgetLocked(x *xcall) {
	if x.settled() && x.delivered == x.version && x.running == 0 {
		delete(c.calls, x.id)
	}
}

// finish gives every row still pending st and ends access. Caller holds c.mu.
func (x *xcall) finish(st drivers.Status) {
	for i := range x.res {
		if x.res[i] == drivers.Pending {
			x.res[i] = st
		}
	}
	x.acc = drivers.AccessEnded
}

// stopIfCancelled ends a cancelled call at one of its own events: rows not
// started NOT_ATTEMPTED, started ones FAULT (never inside Cancel, which
// proves nothing, D-CAN-2). Caller holds c.mu.
func (x *xcall) stopIfCancelled() bool {
	if !x.cancelled {
		return false
	}
	for i := range x.res {
		if x.res[i] == drivers.Pending {
			x.res[i] = drivers.NotAttempted
			if x.started[i] {
				x.res[i] = drivers.Fault
			}
		}
	}
	x.acc = drivers.AccessEnded
	x.c.changed(x)
	return true
}

// transfer moves row i whole, now, through a transport that may lose the
// request or the answer (core.lossy). Caller holds c.mu.
func (x *xcall) transfer(i int) drivers.Status {
	switch {
	case x.c.lie == "miss-as-fault" && x.dir == drivers.Fetch && !x.c.store.Has(x.rows[i].Key):
		x.started[i] = true
		return drivers.Fault
	case x.c.lie == "ran-not-attempted" && x.dir == drivers.Publish && x.c.rnd.Intn(6) == 0:
		x.move(i)
		return drivers.NotAttempted
	}
	if x.c.lossy {
		switch x.c.rnd.Intn(6) {
		case 0:
			x.started[i] = true
			return drivers.Fault // the request was lost: nothing moved
		case 1:
			x.move(i)
			return drivers.Fault // the answer was lost: the store ran it
		}
	}
	return x.move(i)
}

// move moves row i whole, now. Caller holds c.mu.
func (x *xcall) move(i int) drivers.Status {
	c, r, reg := x.c, x.rows[i], x.regs[i]
	x.started[i] = true
	by := drivers.Toucher{Call: x.id, Row: i}
	if x.dir == drivers.Fetch {
		obj, ok := c.store.Get(r.Key)
		switch {
		case !ok && c.caps.AbsentIsMiss:
			return drivers.Miss
		case !ok, len(obj) != reg.SlotBytes:
			return drivers.Fault // absent without AbsentIsMiss, or a size mismatch: slot untouched
		}
		if err := reg.Mem.Write(by, reg.SlotOffset(r.Slot), obj); err != nil {
			return drivers.Fault
		}
		return drivers.OK
	}
	buf := make([]byte, reg.SlotBytes)
	if err := reg.Mem.Read(by, reg.SlotOffset(r.Slot), buf); err != nil {
		return drivers.Fault
	}
	if c.evictOnPut {
		c.store.Evict(r.Key)
	}
	c.store.Put(r.Key, buf) // written now, or already there: OK either way (D-SUB-4)
	return drivers.OK
}

func (x *xcall) ID() drivers.CallID { return x.id }

func (x *xcall) Results() []drivers.Status {
	x.c.mu.Lock()
	defer x.c.mu.Unlock()
	return slices.Clone(x.res)
}

func (x *xcall) Access() drivers.Access {
	x.c.mu.Lock()
	defer x.c.mu.Unlock()
	return x.acc
}

// Cancel only asks (D-CAN-1); the call's next event stops it.
func (x *xcall) Cancel() drivers.CancelResult {
	x.c.mu.Lock()
	defer x.c.mu.Unlock()
	switch {
	case !slices.Contains(x.res, drivers.Pending):
		return drivers.CancelAlreadyDone
	case !x.c.caps.CanCancel:
		return drivers.CancelUnsupported
	}
	x.cancelled = true
	return drivers.CancelRequested
}

func (c *core) Drain() drivers.DrainStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining = true
	var pending []drivers.CallID
	for _, x := range c.callsLocked() {
		if !x.settled() || x.delivered < x.version || x.running > 0 {
			pending = append(pending, x.id)
		}
	}
	return drivers.DrainStatus{Done: len(pending) == 0, Pending: pending}
}

// Shutdown makes every running call inert and final, tells what it changed
// before returning (D-CB-2, D-CB-5), releases every region no UNPROVABLE
// call names and labels the rest (D-SHUT-1). A second call finds only
// what stayed (D-SHUT-2).
func (c *core) Shutdown(context.Context) []string {
	c.mu.Lock()
	c.draining, c.shut = true, true
	var owed []*xcall
	for _, x := range c.callsLocked() {
		x.dead = true
		changed := false
		for i := range x.res {
			if x.res[i] == drivers.Pending {
				x.res[i], changed = drivers.NotAttempted, true
				if x.started[i] {
					x.res[i] = drivers.Fault
				}
			}
		}
		if x.acc == drivers.AccessPending {
			x.acc, changed = drivers.AccessUnprovable, true
			if c.shutEnds {
				x.acc = drivers.AccessEnded
			}
		}
		if changed {
			x.version++
		}
		if x.delivered < x.version {
			owed = append(owed, x)
			x.delivered = x.version
		}
	}
	c.mu.Unlock()
	for _, x := range owed {
		x.onChange()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var labels []string
	retained := map[drivers.Handle]bool{}
	for _, x := range c.callsLocked() {
		if x.acc != drivers.AccessUnprovable {
			delete(c.calls, x.id)
			continue
		}
		labels = append(labels, drivers.CallLabel(x.id, drivers.WhyUnprovable))
		for _, r := range x.rows {
			retained[r.Handle] = true
		}
	}
	for _, h := range c.handlesLocked() {
		if retained[h] {
			labels = append(labels, drivers.RegionLabel(c.regs[h].Label, drivers.WhyRetained))
		} else {
			delete(c.regs, h)
		}
	}
	return labels
}

// lockProbe is monitor.LockProber for the drivers that offer it.
type lockProbe struct{ lock *sync.Mutex }

func (l lockProbe) Locked() bool {
	if l.lock.TryLock() {
		l.lock.Unlock()
		return false
	}
	return true
}

var allCaps = drivers.Capabilities{MaxRowsPerOp: 4, AbsentIsMiss: true, CanFetch: true, CanPublish: true, CanCancel: true}

// fifo: a single worker serves every call strictly in submission order,
// one row per event; later calls wait behind earlier ones.
type fifo struct {
	*core
	queue []*xcall
	busy  bool
}

func newFIFO(env drivertest.Env) drivers.Driver {
	f := &fifo{core: newCore(env, "fifo", allCaps)}
	return f
}

func (f *fifo) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x, err := f.accept(b, onChange)
	if err != nil {
		return nil, err
	}
	f.queue = append(f.queue, x)
	if !f.busy {
		f.busy = true
		f.rt.After(f.delay(1*time.Microsecond, 8*time.Microsecond), "fifo step", f.step)
	}
	return x, nil
}

func (f *fifo) step() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.queue) > 0 && (f.queue[0].dead || f.queue[0].settled()) {
		f.queue = f.queue[1:]
	}
	if len(f.queue) == 0 {
		f.busy = false
		return
	}
	x := f.queue[0]
	if !x.stopIfCancelled() {
		i := x.next
		x.res[i] = x.transfer(i)
		if x.next++; x.next == len(x.rows) {
			x.acc = drivers.AccessEnded
		}
		f.changed(x)
	}
	f.rt.After(f.delay(1*time.Microsecond, 8*time.Microsecond), "fifo step", f.step)
}

// flaky: the fifo driver behind a transport that loses requests, answers
// and lookups (core.lossy). Every loss is a FAULT or a lookup error — what
// the contract calls a transport error — never a MISS, and it strikes
// absent and present keys alike.
func newFlaky(env drivertest.Env) drivers.Driver {
	f := &fifo{core: newCore(env, "flaky", allCaps)}
	f.lossy = true
	return f
}

// capped: a cache with room for capRoom objects that evicts its oldest
// whenever a put goes over capacity — its own evictions, in the suite's
// store (TestOwnEvictionsCertified; declared Evicting, as it must be).
type capped struct {
	*core
	order []string
}

const capRoom = 5

func newCapped(env drivertest.Env) drivers.Driver {
	return &capped{core: newCore(env, "capped", allCaps)}
}

func (d *capped) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	x, err := d.accept(b, onChange)
	if err != nil {
		return nil, err
	}
	d.after(x, d.delay(1*time.Microsecond, 10*time.Microsecond), "row", func() { d.row(x) })
	return x, nil
}

func (d *capped) row(x *xcall) {
	if x.stopIfCancelled() {
		return
	}
	i := x.next
	held := d.store.Has(x.rows[i].Key)
	if x.res[i] = x.move(i); x.dir == drivers.Publish && x.res[i] == drivers.OK && !held {
		d.order = append(d.order, x.rows[i].Key)
		for len(d.order) > capRoom {
			d.store.Evict(d.order[0])
			d.order = d.order[1:]
		}
	}
	if x.next++; x.next == len(x.rows) {
		x.acc = drivers.AccessEnded
	} else {
		d.after(x, d.delay(1*time.Microsecond, 10*time.Microsecond), "row", func() { d.row(x) })
	}
	d.changed(x)
}

// staging: a PUBLISH copies every slot into a private staging buffer in
// one event and ends access right there, then stores the rows one by one
// later (rows final after access); a FETCH reads the store into staging
// first and writes the slots in a later event.
type staging struct{ *core }

func newStaging(env drivertest.Env) drivers.Driver {
	s := &staging{core: newCore(env, "staging", allCaps)}
	s.shutEnds = true
	s.signal = s.tellLater
	return s
}

// tellLater delivers a change some microseconds later, so that a FETCH's
// MISS may be told after a staged PUBLISH of the key has landed (the
// suite must not take the key as known absent or present meanwhile).
func (s *staging) tellLater(x *xcall) {
	if x.posted {
		return
	}
	x.posted = true
	s.rt.After(s.delay(1*time.Microsecond, 40*time.Microsecond), "staging callback", func() { s.deliver(x) })
}

func (s *staging) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.accept(b, onChange)
	if err != nil {
		return nil, err
	}
	s.after(x, s.delay(1*time.Microsecond, 20*time.Microsecond), "stage", func() { s.stageIn(x) })
	return x, nil
}

func (s *staging) stageIn(x *xcall) {
	if x.stopIfCancelled() {
		return
	}
	if x.dir == drivers.Publish {
		for i, r := range x.rows {
			reg := x.regs[i]
			buf := make([]byte, reg.SlotBytes)
			if err := reg.Mem.Read(drivers.Toucher{Call: x.id, Row: i}, reg.SlotOffset(r.Slot), buf); err != nil {
				x.res[i] = drivers.Fault
				continue
			}
			x.stage[i] = buf
		}
		x.acc = drivers.AccessEnded // the slots are never touched again
		s.changed(x)
		for i := range x.rows {
			if x.stage[i] != nil {
				s.after(x, time.Duration(i+1)*s.delay(2*time.Microsecond, 30*time.Microsecond), "store", func() { s.store1(x, i) })
			}
		}
		return
	}
	for i, r := range x.rows {
		obj, ok := s.store.Get(r.Key)
		switch {
		case !ok:
			x.res[i] = drivers.Miss
		case len(obj) != x.regs[i].SlotBytes:
			x.res[i] = drivers.Fault
		default:
			x.stage[i] = obj
		}
	}
	s.changed(x)
	s.after(x, s.delay(1*time.Microsecond, 20*time.Microsecond), "write out", func() { s.writeOut(x) })
}

func (s *staging) store1(x *xcall, i int) {
	if x.res[i] != drivers.Pending {
		return
	}
	if x.cancelled {
		x.res[i] = drivers.NotAttempted // never handed to the store
	} else {
		x.started[i] = true
		s.store.Put(x.rows[i].Key, x.stage[i])
		x.res[i] = drivers.OK
	}
	s.changed(x)
}

func (s *staging) writeOut(x *xcall) {
	for i, r := range x.rows {
		if x.res[i] != drivers.Pending {
			continue
		}
		if x.cancelled {
			x.res[i] = drivers.NotAttempted // the slot is untouched
			continue
		}
		x.started[i] = true
		x.res[i] = drivers.OK
		if err := x.regs[i].Mem.Write(drivers.Toucher{Call: x.id, Row: i}, x.regs[i].SlotOffset(r.Slot), x.stage[i]); err != nil {
			x.res[i] = drivers.Fault
		}
	}
	x.acc = drivers.AccessEnded
	s.changed(x)
}

// fetchOnly: FETCH only, and AbsentIsMiss=false — a FETCH of an absent key
// is FAULT (the backend looks keys up first). It offers LockProber.
type fetchOnly struct {
	*core
	lockProbe
}

func newFetchOnly(env drivertest.Env) drivers.Driver {
	c := newCore(env, "fetch-only", drivers.Capabilities{MaxRowsPerOp: 5, CanFetch: true, CanCancel: true})
	return &fetchOnly{core: c, lockProbe: lockProbe{&c.mu}}
}

func (f *fetchOnly) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x, err := f.accept(b, onChange)
	if err != nil {
		return nil, err
	}
	f.after(x, f.delay(1*time.Microsecond, 40*time.Microsecond), "fetch", func() {
		if x.stopIfCancelled() {
			return
		}
		for i := range x.rows {
			x.res[i] = x.transfer(i)
		}
		x.acc = drivers.AccessEnded
		f.changed(x)
	})
	return x, nil
}

// inline: every call is done inside Submit — rows moved, access ENDED and
// the callback run before Submit returns (D-CB-4 allows it; the lock is
// released first).
type inline struct{ *core }

func newInline(env drivertest.Env) drivers.Driver {
	return &inline{core: newCore(env, "inline", drivers.Capabilities{MaxRowsPerOp: 8, AbsentIsMiss: true, CanFetch: true, CanPublish: true, CanCancel: true})}
}

func (d *inline) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	d.mu.Lock()
	x, err := d.accept(b, onChange)
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	for i := range x.rows {
		x.res[i] = x.transfer(i)
	}
	x.acc = drivers.AccessEnded
	x.version++
	x.delivered = x.version
	x.running++
	d.mu.Unlock()
	x.onChange()
	d.mu.Lock()
	x.running--
	d.forgetLocked(x)
	d.mu.Unlock()
	return x, nil
}

// coalescing: rows complete one event at a time, but changes are told in
// flushes: one callback per changed call per flush, however many rows (of
// however many calls) changed since the last one.
type coalescing struct {
	*core
	dirty   []*xcall
	flushAt bool
}

func newCoalescing(env drivertest.Env) drivers.Driver {
	d := &coalescing{core: newCore(env, "coalescing", drivers.Capabilities{MaxRowsPerOp: 6, AbsentIsMiss: true, CanFetch: true, CanPublish: true, CanCancel: true})}
	d.signal = d.markDirty
	d.shutEnds = true
	return d
}

func (d *coalescing) markDirty(x *xcall) {
	if !slices.Contains(d.dirty, x) {
		d.dirty = append(d.dirty, x)
	}
	if !d.flushAt {
		d.flushAt = true
		d.rt.After(d.delay(5*time.Microsecond, 25*time.Microsecond), "coalescing flush", d.flush)
	}
}

func (d *coalescing) flush() {
	d.mu.Lock()
	xs := d.dirty
	d.dirty, d.flushAt = nil, false
	d.mu.Unlock()
	for _, x := range xs {
		d.deliver(x)
	}
}

func (d *coalescing) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	x, err := d.accept(b, onChange)
	if err != nil {
		return nil, err
	}
	d.after(x, d.delay(1*time.Microsecond, 6*time.Microsecond), "row", func() { d.row(x) })
	return x, nil
}

func (d *coalescing) row(x *xcall) {
	if x.stopIfCancelled() {
		return
	}
	i := x.next
	x.res[i] = x.transfer(i)
	if x.next++; x.next == len(x.rows) {
		x.acc = drivers.AccessEnded
	} else {
		d.after(x, d.delay(1*time.Microsecond, 6*time.Microsecond), "row", func() { d.row(x) })
	}
	d.changed(x)
}

// publishOnly: PUBLISH only; it copies the slots in one event, stores them
// in a later one, and answers MISS ("declined: already present") for a key
// the store already holds.
type publishOnly struct{ *core }

func newPublishOnly(env drivertest.Env) drivers.Driver {
	return &publishOnly{core: newCore(env, "publish-only", drivers.Capabilities{MaxRowsPerOp: 3, CanPublish: true, CanCancel: true})}
}

func (p *publishOnly) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	x, err := p.accept(b, onChange)
	if err != nil {
		return nil, err
	}
	p.after(x, p.delay(1*time.Microsecond, 15*time.Microsecond), "copy", func() {
		if x.stopIfCancelled() {
			return
		}
		for i, r := range x.rows {
			reg := x.regs[i]
			buf := make([]byte, reg.SlotBytes)
			if err := reg.Mem.Read(drivers.Toucher{Call: x.id, Row: i}, reg.SlotOffset(r.Slot), buf); err != nil {
				x.res[i] = drivers.Fault
				continue
			}
			x.stage[i] = buf
		}
		p.after(x, p.delay(1*time.Microsecond, 15*time.Microsecond), "store", func() {
			for i, r := range x.rows {
				switch {
				case x.res[i] != drivers.Pending:
				case x.cancelled:
					x.res[i] = drivers.NotAttempted // never handed to the store
				case p.store.Put(r.Key, x.stage[i]):
					x.res[i] = drivers.OK
				default:
					x.res[i] = drivers.Miss // declined: the key is there (D-SUB-4 kept it)
				}
			}
			x.acc = drivers.AccessEnded
			p.changed(x)
		})
	})
	return x, nil
}

// oneRow: MaxRowsPerOp=1 (calls and lookups) and no cancel support; it
// offers LockProber.
type oneRow struct {
	*core
	lockProbe
}

func newOneRow(env drivertest.Env) drivers.Driver {
	c := newCore(env, "one-row", drivers.Capabilities{MaxRowsPerOp: 1, AbsentIsMiss: true, CanFetch: true, CanPublish: true})
	return &oneRow{core: c, lockProbe: lockProbe{&c.mu}}
}

func (o *oneRow) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	x, err := o.accept(b, onChange)
	if err != nil {
		return nil, err
	}
	o.after(x, o.delay(1*time.Microsecond, 60*time.Microsecond), "row", func() {
		x.res[0] = x.transfer(0)
		x.acc = drivers.AccessEnded
		o.changed(x)
	})
	return x, nil
}

// slow: very slow completion — every row moves four bytes per event, tens
// to hundreds of microseconds apart, so a call takes many simulated steps;
// each finished row is told.
type slow struct{ *core }

const slowChunk = 4

func newSlow(env drivertest.Env) drivers.Driver {
	return &slow{core: newCore(env, "slow", allCaps)}
}

func (s *slow) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.accept(b, onChange)
	if err != nil {
		return nil, err
	}
	s.after(x, s.delay(10*time.Microsecond, 200*time.Microsecond), "chunk", func() { s.step(x) })
	return x, nil
}

func (s *slow) step(x *xcall) {
	if x.stopIfCancelled() {
		return
	}
	i := x.next
	r, reg := x.rows[i], x.regs[i]
	by := drivers.Toucher{Call: x.id, Row: i}
	done := false
	if x.chunk == 0 {
		x.started[i] = true
		if x.dir == drivers.Fetch {
			obj, ok := s.store.Get(r.Key) // the row reads this snapshot
			switch {
			case !ok:
				x.res[i], done = drivers.Miss, true
			case len(obj) != reg.SlotBytes:
				x.res[i], done = drivers.Fault, true
			default:
				x.stage[i] = obj
			}
		} else {
			x.stage[i] = make([]byte, reg.SlotBytes)
		}
	}
	if !done {
		lo, hi := x.chunk, min(x.chunk+slowChunk, reg.SlotBytes)
		off := reg.SlotOffset(r.Slot) + lo
		var err error
		if x.dir == drivers.Fetch {
			err = reg.Mem.Write(by, off, x.stage[i][lo:hi])
		} else {
			err = reg.Mem.Read(by, off, x.stage[i][lo:hi])
		}
		x.chunk = hi
		switch {
		case err != nil:
			x.res[i], done = drivers.Fault, true
		case hi == reg.SlotBytes:
			done = true
			x.res[i] = drivers.OK
			if x.dir == drivers.Publish {
				s.store.Put(r.Key, x.stage[i]) // visible whole, at once (D-SUB-5)
			}
		}
	}
	if done {
		x.next, x.chunk = x.next+1, 0
		if x.next == len(x.rows) {
			x.acc = drivers.AccessEnded
		}
		s.changed(x)
	}
	if x.next < len(x.rows) {
		s.after(x, s.delay(10*time.Microsecond, 200*time.Microsecond), "chunk", func() { s.step(x) })
	}
}

// mostlyInline is inline except that every seventh call is left in flight
// for a few microseconds: not a driver of the nine, but the guard against
// excusing too much — it keeps calls in flight, so no race pair may be
// excused for it.
type mostlyInline struct{ inline }

func newMostlyInline(env drivertest.Env) drivers.Driver {
	return &mostlyInline{inline{core: newCore(env, "mostly-inline", drivers.Capabilities{MaxRowsPerOp: 8, AbsentIsMiss: true, CanFetch: true, CanPublish: true, CanCancel: true})}}
}

func (d *mostlyInline) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	d.mu.Lock()
	if d.nextID%7 != 6 {
		d.mu.Unlock()
		return d.inline.Submit(b, onChange)
	}
	defer d.mu.Unlock()
	x, err := d.accept(b, onChange)
	if err != nil {
		return nil, err
	}
	d.after(x, d.delay(1*time.Microsecond, 30*time.Microsecond), "late", func() {
		if x.stopIfCancelled() {
			return
		}
		for i := range x.rows {
			x.res[i] = x.transfer(i)
		}
		x.acc = drivers.AccessEnded
		d.changed(x)
	})
	return x, nil
}
