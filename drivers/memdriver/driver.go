package memdriver

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
	"github.com/storesim/storesim/sim/slab"
)

// DefaultCaps are the capabilities of a driver whose Config.Caps is zero.
var DefaultCaps = drivers.Capabilities{MaxRowsPerOp: 4, AbsentIsMiss: true, CanFetch: true, CanPublish: true, CanCancel: true}

// DefaultStepDelay bounds one transfer step when Config.StepDelay is zero.
const DefaultStepDelay = 10 * time.Microsecond

// ErrBadConfig is wrapped by the error every operation of a driver built
// from a bad Config returns.
var ErrBadConfig = errors.New("memdriver: bad config")

// errTransport is what Submit returns for the submit-error fault: not one of
// the nothing-escaped sentinels, so the caller must treat the rows as
// UNPROVABLE (D-SUB-2).
var errTransport = errors.New("memdriver: transport error while submitting")

// Config configures a [Driver].
type Config struct {
	// Name names the driver in labels and picks its random streams
	// (rt.Rand("memdriver/"+Name)); two drivers on one runtime need two
	// names. Empty means "mem".
	Name string
	// Caps is the declaration; zero means [DefaultCaps]. With AbsentIsMiss
	// false, a FETCH of an absent key is FAULT (see the package doc).
	Caps drivers.Capabilities
	// Faults is the injected fault mix; zero is [Calm].
	Faults FaultMix
	// StepDelay bounds the virtual time of one transfer step; zero means
	// [DefaultStepDelay].
	StepDelay time.Duration
	// Hooks is the test seam package broken cuts its broken drivers with
	// (see [Hooks]); nil in normal use.
	Hooks *Hooks
	_     struct{}
}

// Driver is the MemoryDriver: a complete, conforming drivers.Driver over a
// [Store], completing every call asynchronously on its runtime.
type Driver struct {
	failAtLabel string // InjectTogetherFailure's one shot (inject.go)

	rt     sim.Runtime
	store  *Store
	name   string
	caps   drivers.Capabilities
	mix    FaultMix
	step   time.Duration
	hooks  *Hooks
	cfgErr error

	lblBegin, lblRow, lblChunk, lblLate, lblSettle, lblProof, lblTimeout, lblWake string

	rtRunner afterRunner // rt as an afterRunner (nil: it is not), once rtAsked
	rtAsked  bool

	mu   sync.Mutex
	cond sync.Cond // on mu; signalled when a callback returns (Shutdown waits, D-CB-5)

	rTiming, rFault, rReg, rLook *sim.Rand
	rands                        [4]sim.Rand // the four streams, in the driver's own allocation

	lastHandle drivers.Handle
	lastCall   drivers.CallID
	bindings   map[drivers.Handle]*binding
	calls      []*call          // by id (ids only grow); retired ones are dropped lazily (retire)
	retired    int              // retired calls still in calls
	callsInl   [16]*call        // calls' first backing array: the usual few calls live here
	stale      map[string]bool  // keys marked by stale-lookup faults (markStale); nil until one is
	together   []drivers.Handle // the live together-batch (TogetherDriver)
	draining   bool
	shut       bool
	quarantine string // why; "" when not quarantined (D-QUAR)
	inCallback int
	toWake     []*call
	callSlab   slab.Of[call]    // every call's record (newCall); guarded by mu
	bindSlab   slab.Of[binding] // every binding's record (reserve); guarded by mu

	// The slices handed out for good (Results snapshots, Contains answers,
	// PUBLISH buffers) and a big call's row slices (newCall) are cut from
	// slabs, guarded by mu: a few chunks per run instead of one allocation
	// each.
	statusSlab slab.Of[drivers.Status]
	boolSlab   slab.Of[bool]
	byteSlab   slab.Of[byte]
	rowSlab    slab.Of[drivers.Row]
	regionSlab slab.Of[*drivers.Region]
	rsSlab     slab.Of[rowState]
}

var _ drivers.Driver = (*Driver)(nil)

type bindState uint8

const (
	bindInProgress bindState = iota // between reservation and the store's answer (D-REG-1, D-REG-5)
	bindLive
	bindInDoubt // a rollback close failed: no handle was given out (D-TOG-2)
)

type binding struct {
	h      drivers.Handle
	region drivers.Region // never changed: calls point at it (call.regions)
	state  bindState
	users  int  // calls naming it whose access is not ENDED (D-REG-6, D-TOG-4)
	stuck  bool // unregister-stuck: every close fails
}

// New returns a driver over store that schedules its work on rt. It never
// fails: a bad Config (nil runtime or store, capabilities that fail
// drivers.Capabilities.Check, a rate outside [0, 1]) makes every
// registration, submission and lookup fail with an error wrapping
// [ErrBadConfig] that names the problem.
func New(rt sim.Runtime, store *Store, cfg Config) *Driver {
	d := &Driver{
		rt: rt, store: store, name: cfg.Name, caps: cfg.Caps, mix: cfg.Faults,
		step: cfg.StepDelay, hooks: cfg.Hooks,
		bindings: map[drivers.Handle]*binding{},
	}
	d.cond.L = &d.mu
	d.calls = d.callsInl[:0]
	if d.name == "" {
		d.name = "mem"
	}
	if d.caps == (drivers.Capabilities{}) {
		d.caps = DefaultCaps
	}
	if d.step <= 0 {
		d.step = DefaultStepDelay
	}
	switch err := d.caps.Check(); {
	case rt == nil:
		d.cfgErr = fmt.Errorf("%w: driver %q has no runtime", ErrBadConfig, d.name)
	case store == nil:
		d.cfgErr = fmt.Errorf("%w: driver %q has no store", ErrBadConfig, d.name)
	case err != nil:
		d.cfgErr = fmt.Errorf("%w: driver %q: %w", ErrBadConfig, d.name, err)
	default:
		if err := d.mix.Check(); err != nil {
			d.cfgErr = fmt.Errorf("%w: driver %q: %w", ErrBadConfig, d.name, err)
		}
	}
	// The stream name "memdriver/<name>" and the event labels
	// "memdriver/<name> <event>" are cut from one string: one allocation.
	p := "memdriver/" + d.name + " "
	lbls := [...]struct {
		dst   *string
		event string
	}{
		{&d.lblBegin, "begin"}, {&d.lblRow, "row start"}, {&d.lblChunk, "chunk"}, {&d.lblLate, "late write"},
		{&d.lblSettle, "settle"}, {&d.lblProof, "proof"}, {&d.lblTimeout, "timeout"}, {&d.lblWake, "onChange"},
	}
	var b strings.Builder
	b.Grow(len(lbls)*(len(p)+10) + len(p))
	b.WriteString(p)
	for _, l := range lbls {
		b.WriteString(p)
		b.WriteString(l.event)
	}
	all := b.String()
	stream, all := all[:len(p)-1], all[len(p):]
	for _, l := range lbls {
		n := len(p) + len(l.event)
		*l.dst, all = all[:n], all[n:]
	}
	root := sim.NewRand(0)
	if rt != nil {
		root = rt.Rand(stream)
	}
	d.rands = [...]sim.Rand{root.ForkValue("timing"), root.ForkValue("faults"), root.ForkValue("registration"), root.ForkValue("lookup")}
	d.rTiming, d.rFault, d.rReg, d.rLook = &d.rands[0], &d.rands[1], &d.rands[2], &d.rands[3]
	return d
}

// Reserve sizes the call and binding records' first chunks for about ops
// ops of the fuzz engine's endpoint (ops/2+3 calls, about the median, and
// ops/6+3 bindings with its probes', about the 90th percentile, over 600
// one-endpoint seeds of 2, 35 and 100 ops), and the flags' and results'
// (ops+8: one-byte values, a first chunk that seldom grows costs little),
// before the first call; later it does nothing. It bounds nothing.
func (d *Driver) Reserve(ops int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.callSlab.Reserve(ops/2 + 3)
	d.bindSlab.Reserve(ops/6 + 3)
	d.boolSlab.Reserve(ops + 8)
	d.statusSlab.Reserve(ops + 8)
}

// Name is the driver's name.
func (d *Driver) Name() string { return d.name }

// Capabilities implements drivers.Driver.
func (d *Driver) Capabilities() drivers.Capabilities { return d.caps }

// Faults is the driver's fault mix.
func (d *Driver) Faults() FaultMix { return d.mix }

// Quarantined reports why the driver refuses registrations and submissions
// after an in-doubt event (D-QUAR); "" when it does not.
func (d *Driver) Quarantined() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.quarantine
}

func refused(format string, args ...any) error {
	return drivers.Detailf(drivers.ErrRegistrationRefused, format, args...)
}

// refuseRegistration is the common refusal of Register and RegisterTogether:
// bad config, shutdown (D-REG-5), quarantine (D-QUAR). Caller holds d.mu.
func (d *Driver) refuseRegistration() error {
	switch {
	case d.cfgErr != nil:
		return fmt.Errorf("%w: %w", drivers.ErrRegistrationRefused, d.cfgErr)
	case d.shut && (d.quarantine != "" || !d.hooks.waive(rules.DReg5, 0)):
		return refused("driver %q is shut down (D-REG-5)", d.name)
	case d.quarantine != "":
		return refused("driver %q is quarantined: %s (D-QUAR)", d.name, d.quarantine)
	}
	return nil
}

// checkOverlap is D-REG-1 against every live, in-progress or in-doubt
// binding: no shared memory and no label used twice, decided without asking
// the store. Caller holds d.mu.
func (d *Driver) checkOverlap(regions ...drivers.Region) error {
	var buf [16]*binding
	bs := d.sortedBindings(buf[:0])
	for _, r := range regions {
		for _, b := range bs {
			switch {
			case r.Label == b.region.Label:
				return refused("region %q: label already registered (D-REG-1)", r.Label)
			case r.Overlaps(b.region) && !d.hooks.waive(rules.DReg1, 0):
				return refused("region %q overlaps registered region %q (D-REG-1)", r.Label, b.region.Label)
			}
		}
	}
	return nil
}

// sortedBindings appends the bindings to buf by handle; a caller's array
// as buf keeps the usual few off the heap.
func (d *Driver) sortedBindings(buf []*binding) []*binding {
	for _, b := range d.bindings {
		buf = append(buf, b)
	}
	slices.SortFunc(buf, func(a, b *binding) int { return cmp.Compare(a.h, b.h) })
	return buf
}

// reserve records r as an in-progress registration under a fresh handle;
// handles are never reused (D-REG-3). Caller holds d.mu.
func (d *Driver) reserve(r drivers.Region) *binding {
	d.lastHandle++
	b := d.bindSlab.New()
	*b = binding{h: d.lastHandle, region: r, state: bindInProgress}
	d.bindings[b.h] = b
	return b
}

// Register implements drivers.Driver (D-REG-1, D-REG-2, D-REG-5, D-QUAR).
func (d *Driver) Register(r drivers.Region) (drivers.Handle, error) {
	d.mu.Lock()
	if err := d.refuseRegistration(); err != nil {
		d.mu.Unlock()
		return 0, err
	}
	if err := drivers.CheckGeometry(r); err != nil {
		d.mu.Unlock()
		return 0, fmt.Errorf("%w: %w", drivers.ErrRegistrationRefused, err)
	}
	if err := d.checkOverlap(r); err != nil {
		d.mu.Unlock()
		return 0, err
	}
	b := d.reserve(r)
	storeRefuses := d.rReg.Chance(d.mix.RegisterRefused)
	stuck := d.rReg.Chance(d.mix.UnregisterStuck)
	d.mu.Unlock()

	// Here a real transport talks to the store; Shutdown may run meanwhile,
	// and the in-progress binding keeps overlapping registrations out.

	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case storeRefuses:
		if !d.hooks.waive(rules.DReg2, 0) {
			delete(d.bindings, b.h) // D-REG-2: nothing stays registered
		}
		return 0, refused("store refused region %q", r.Label)
	case d.shut && !d.hooks.waive(rules.DReg5, 0):
		delete(d.bindings, b.h) // D-REG-5: undone
		return 0, refused("shutdown raced the registration of region %q (D-REG-5)", r.Label)
	}
	b.state, b.stuck = bindLive, stuck
	return b.h, nil
}

// Unregister implements drivers.Driver (D-REG-3, D-REG-4, D-REG-6).
func (d *Driver) Unregister(h drivers.Handle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.bindings[h]
	if !ok || b.state != bindLive {
		// D-REG-3: stale or unknown handle (handles are never reused):
		// nil, or ErrStaleHandle (no draw unless the mix asks for it).
		if d.mix.StaleCloseError > 0 && d.rReg.Chance(d.mix.StaleCloseError) {
			return fmt.Errorf("%w: handle %d", drivers.ErrStaleHandle, h)
		}
		return nil
	}
	return d.closeOne(b)
}

// closeOne closes a live binding: refused while busy (D-REG-6), failing on
// an unregister fault with the binding still live (D-REG-4). Caller holds
// d.mu.
func (d *Driver) closeOne(b *binding) error {
	if b.users > 0 && !d.hooks.waive(rules.DReg6, 0) {
		return &closeError{drivers.ErrBusy, b.region.Label, b.users}
	}
	if b.stuck || d.rReg.Chance(d.mix.UnregisterFail) {
		return &closeError{drivers.ErrUnregisterFailed, b.region.Label, 0}
	}
	delete(d.bindings, b.h)
	return nil
}

// closeError is a refused or failed close (closeOne). Callers mostly match
// it (errors.Is) and retry, so its text is formatted only when asked: the
// text fmt.Errorf("%w: …", sentinel, …) gave, and Unwrap the sentinel.
type closeError struct {
	sentinel error // drivers.ErrBusy or drivers.ErrUnregisterFailed
	label    string
	users    int // the calls naming the region (ErrBusy)
}

func (e *closeError) Error() string {
	if e.sentinel == drivers.ErrBusy {
		return fmt.Sprintf("%v: region %q is named by %d call(s) whose access is not ENDED (D-REG-6)", e.sentinel, e.label, e.users)
	}
	return fmt.Sprintf("%v: region %q stays registered; close it again (D-REG-4)", e.sentinel, e.label)
}

func (e *closeError) Unwrap() error { return e.sentinel }

// Contains implements drivers.Driver (D-LOOK-1, D-LOOK-2). It touches no
// caller memory.
func (d *Driver) Contains(ctx context.Context, keys []string) ([]bool, error) {
	if len(keys) > d.caps.MaxRowsPerOp {
		return nil, fmt.Errorf("%w: %w: %d keys, at most %d (D-LOOK-1)", drivers.ErrLookupFailed, drivers.ErrInvalidSubmission, len(keys), d.caps.MaxRowsPerOp)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", drivers.ErrLookupFailed, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.cfgErr != nil:
		return nil, fmt.Errorf("%w: %w", drivers.ErrLookupFailed, d.cfgErr)
	case d.shut:
		return nil, fmt.Errorf("%w: %w: driver %q is shut down", drivers.ErrLookupFailed, drivers.ErrClosed, d.name)
	case d.rLook.Chance(d.mix.LookupError):
		// D-LOOK-2: an outage or a wrong-length answer is an error, never "absent".
		if d.rLook.Chance(0.5) {
			return nil, drivers.Detailf(drivers.ErrLookupFailed, "store outage (injected)")
		}
		return nil, drivers.Detailf(drivers.ErrLookupFailed, "store answered %d results for %d keys (injected)", len(keys)+1, len(keys))
	}
	found := []bool{}
	if len(keys) > 0 {
		found = d.boolSlab.Make(len(keys))
	}
	d.store.hasAll(keys, found) // one snapshot under one store lock
	for i, k := range keys {
		if found[i] && d.store.Evicting() && d.rLook.Chance(d.mix.StaleLookup) {
			d.markStale(k) // evicted before the next FETCH of k
		}
	}
	return found, nil
}

// Submit implements drivers.Driver (D-SUB-1, D-SUB-2, D-SUB-3). The call
// completes asynchronously on the runtime; onChange may be nil.
func (d *Driver) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.cfgErr != nil:
		return nil, fmt.Errorf("%w: %w", drivers.ErrInvalidSubmission, d.cfgErr)
	case d.shut || d.draining:
		return nil, drivers.Detailf(drivers.ErrClosed, "driver %q is draining or shut down (D-DRAIN-1)", d.name)
	case d.quarantine != "":
		return nil, drivers.Detailf(drivers.ErrClosed, "driver %q is quarantined: %s (D-QUAR)", d.name, d.quarantine)
	}
	check, move := b, b
	if h := d.hooks; h != nil && h.Batch != nil {
		check, move = h.Batch(b)
	}
	if err := d.validate(check); err != nil {
		return nil, err
	}
	if d.rFault.Chance(d.mix.SubmitReject) {
		return nil, drivers.Detailf(drivers.ErrRejected, "driver %q is busy (injected back-pressure)", d.name)
	}
	if d.rFault.Chance(d.mix.SubmitError) {
		return nil, fmt.Errorf("driver %q: %w (injected; D-SUB-2: treat the rows as UNPROVABLE)", d.name, errTransport)
	}
	c := d.newCall(move, onChange)
	d.after(c, d.lblBegin, (*callBegin)(c))
	return &c.handle, nil // part of the call: no allocation of its own
}

// validate is D-SUB-1: the whole batch against the capabilities and the
// live registrations (D-BATCH-VALID, D-BATCH-KEYS) before any access.
// Caller holds d.mu.
func (d *Driver) validate(b drivers.RowBatch) error {
	return b.Validate(d.caps, d.liveRegion)
}

func (d *Driver) liveRegion(h drivers.Handle) (drivers.Region, bool) {
	b, ok := d.bindings[h]
	if !ok || b.state != bindLive {
		return drivers.Region{}, false
	}
	return b.region, true
}

// Drain implements drivers.Driver (D-DRAIN-1, D-DRAIN-2): it stops
// admission and reports, without blocking, the calls still without access
// evidence or with a callback still owed or running.
func (d *Driver) Drain() drivers.DrainStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.draining = true
	var pending []drivers.CallID
	var buf [16]*call
	for _, c := range d.sortedCalls(buf[:0]) {
		if !c.access.Evidenced() || c.delivered < c.version || c.running {
			pending = append(pending, c.id)
		}
	}
	return drivers.DrainStatus{Done: len(pending) == 0, Pending: pending}
}

// Shutdown implements drivers.Driver (D-SHUT-1, D-SHUT-2, D-CB-5). It stops
// every transfer, turns each call without access evidence UNPROVABLE (rows
// without a result: FAULT if started, else NOT_ATTEMPTED), runs the
// callbacks still owed before it returns, and closes every binding that no
// UNPROVABLE call names. Labels, calls first by id then regions by handle:
// call:<id>:unprovable, region:<label>:retained (named by such a call),
// region:<label>:unregister-failed, region:<label>:in-doubt (a failed
// together rollback whose retry failed again). A second call retries what
// is left.
func (d *Driver) Shutdown(ctx context.Context) []string {
	_ = ctx // nothing here waits on the store; the only wait is for running callbacks
	d.mu.Lock()
	d.draining, d.shut = true, true
	for d.inCallback > 0 {
		d.cond.Wait() // D-CB-5: a callback still running must return first
	}
	var buf [16]*call
	for _, c := range d.sortedCalls(buf[:0]) {
		if c.access.Evidenced() {
			continue
		}
		for i := range c.rows {
			if c.rs[i].phase == rowIdle {
				d.completeRow(c, i, drivers.NotAttempted)
			} else {
				d.completeRow(c, i, drivers.Fault)
			}
		}
		d.setAccess(c, drivers.AccessUnprovable)
	}
	for _, c := range d.toWake { // the owed callbacks run below, not through the runtime
		c.listed = false
	}
	d.toWake = nil
	var owed []*call
	for _, c := range d.sortedCalls(buf[:0]) {
		if c.delivered < c.version && c.onChange != nil {
			owed = append(owed, c)
		}
		c.delivered = c.version
	}
	d.mu.Unlock()
	for _, c := range owed {
		c.onChange() // D-CB-2 for the changes above; before we return (D-CB-5)
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	var labels []string
	named := map[drivers.Handle]bool{}
	for _, c := range d.sortedCalls(buf[:0]) {
		switch c.access {
		case drivers.AccessUnprovable:
			labels = append(labels, drivers.CallLabel(c.id, drivers.WhyUnprovable))
			for _, r := range c.rows {
				named[r.Handle] = true
			}
		case drivers.AccessEnded:
			d.forget(c)
		}
	}
	var bbuf [16]*binding
	for _, b := range d.sortedBindings(bbuf[:0]) {
		switch b.state {
		case bindLive:
			switch {
			case named[b.h]:
				labels = append(labels, drivers.RegionLabel(b.region.Label, drivers.WhyRetained))
			case d.closeOne(b) != nil:
				labels = append(labels, drivers.RegionLabel(b.region.Label, drivers.WhyUnregisterFailed))
			}
		case bindInDoubt:
			if d.rReg.Chance(d.mix.RollbackFail) {
				labels = append(labels, drivers.RegionLabel(b.region.Label, drivers.WhyInDoubt))
			} else {
				delete(d.bindings, b.h)
			}
		}
	}
	return labels
}

// PendingCalls lists the calls without access evidence, by id, for hang
// reports (sim.Scheduler.AddPending): "call 7 (FETCH, 3 rows, access PENDING)".
func (d *Driver) PendingCalls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	var buf [16]*call
	for _, c := range d.sortedCalls(buf[:0]) {
		if !c.access.Evidenced() {
			out = append(out, fmt.Sprintf("call %d (%v, %d rows, access %v)", c.id, c.dir, len(c.rows), c.access))
		}
	}
	return out
}

// sortedCalls appends the calls not yet retired to buf by id (see
// sortedBindings); d.calls is in id order already.
func (d *Driver) sortedCalls(buf []*call) []*call {
	for _, c := range d.calls {
		if !c.retired {
			buf = append(buf, c)
		}
	}
	return buf
}
