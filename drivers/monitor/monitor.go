package monitor

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/slab"
)

// Options configures a [Monitor].
type Options struct {
	// Clock stamps violations and observer events (nil: zero). In a
	// simulated run it is the scheduler; in a real run the realtime runtime.
	Clock sim.Clock
	// Seed is copied into every violation so a report can replay it.
	Seed uint64
	// Observers receive every boundary event, in order (see [Observer]).
	Observers []Observer
	// Truth, when set, is the harness's knowledge of the store: whether key
	// is present now, and whether that is known for sure (no publish of it in
	// flight, no eviction possible, …). It turns dishonest answers into
	// D-LOOK-2 and D-MISS-HONEST. Nil disables those checks.
	Truth func(key string) (present, known bool)
	// Injected, when set, reports whether the harness injected a fault into
	// row of call id; a FETCH FAULT of a key known absent is then not
	// D-MISS-HONEST. Nil means "no fault was injected anywhere".
	Injected func(id drivers.CallID, row int) bool
	// LockProbe, when set, runs read (a Results/Access read of the call,
	// from inside the call's callback) and says whether it returned, could
	// not return while the callback runs (the driver called back while
	// holding a lock the read needs: D-CB-4), or could not be decided (see
	// [Monitor.Undecided]). Concurrent drivers use realprobe.LockProbe (a
	// wall-clock bound, re-checked before it blocks); simulated drivers
	// implement [LockProber], or are probed with simprobe.LockProbe, which
	// decides without a clock.
	LockProbe func(read func()) ProbeResult
	// CancelBound, when set, runs cancel and reports false when it did not
	// return within its bound (D-CAN-1; realprobe.Stopwatch). When nil, the
	// monitor uses the inline-completion heuristic of the package doc, which
	// is only sound for single-threaded (simulated) drivers.
	CancelBound func(cancel func()) bool
	// FullSizeMinCalls is the fewest full-size batches (MaxRowsPerOp rows)
	// that must all have failed, while smaller ones succeeded, before Finish
	// reports "capabilities" (0: 3); chance must also be ruled out (see
	// fullSizeLocked).
	FullSizeMinCalls int
	// Ops, when known, is about how many ops the driver's endpoint runs:
	// the call and registration records' first chunks hold what that many
	// make (0: they grow from 16). It bounds nothing.
	Ops int
	_   struct{}
}

// Monitor wraps a driver and checks the contract at its boundary. *Monitor
// implements drivers.Driver; hand [Monitor.Driver] to the backend, which also
// implements drivers.TogetherRegisterer when the wrapped driver does.
type Monitor struct {
	d        drivers.Driver
	opts     Options
	caps     drivers.Capabilities
	prober   LockProber
	live     LiveReporter
	bound    BoundReporter
	together drivers.TogetherRegisterer
	wrapped  drivers.Driver
	tog      Together // wrapped, over a together driver: in the monitor's own allocation
	// The observers that take SubmitStarting and Callback, in order,
	// sorted out once rather than by a type assertion per event; the
	// arrays hold the usual one (the recorder) without an allocation.
	starters    []SubmitObserver
	cbObs       []CallbackObserver
	startersInl [2]SubmitObserver
	cbObsInl    [2]CallbackObserver
	// Room for the first calls and registrations, in the monitor's own
	// allocation: a run's dozens would otherwise grow order, open and
	// scratch from 1 through 2, 4 and 8.
	callsInl [48]*callRec
	regsInl  [8]*regRec

	mu      sync.Mutex
	nsub    int        // accepted calls so far; callRec.index counts them
	order   []*callRec // accepted calls not yet settled, in Submit order (compacted lazily)
	nlive   int        // how many of order are not settled
	maxID   drivers.CallID
	open    []*callRec // calls whose known access is not ENDED (compacted lazily)
	regList []*regRec  // every registration's record, one per handle
	scratch []*callRec // openLocked's copy for a caller done with it before unlocking
	running []*callRec // calls with a wrapped callback running now
	sizes   []SizeStat // indexed by batch size, valid batches only
	// regs is regList by handle, made once regList outgrows regsInl: a
	// scan of a few finds one sooner (regLocked).
	regs map[drivers.Handle]*regRec

	// The records of calls and registrations, which live about as long as
	// the monitor (the caller keeps its calls).
	callSlab slab.Of[callRec]
	regSlab  slab.Of[regRec]

	drained         bool // a Drain returned
	drainDone       bool // a Drain answered Done
	drainDoneBefore int  // calls with index below this were submitted before it
	shutting        bool // Shutdown was called
	shutdown        bool // Shutdown returned
	shutdowns       int
	quarantined     bool

	violations    []rules.Violation
	seen          map[vkey]bool
	undecided     []string // lock probes that could not decide (D-CB-4), at most MaxUndecided
	undecidedMore int      // undecided probes beyond MaxUndecided
	storm         Storm
}

// MaxUndecided bounds the undecided lock probes a monitor keeps (see
// [Monitor.Undecided]); the rest are counted. Everything else the monitor
// keeps is bounded by the calls and registrations in flight: violations
// are recorded once per (rule, call, row, key, region), settled calls are
// forgotten, and a callback adds nothing but counters.
const MaxUndecided = 64

// Storm names the call whose callbacks saw nothing new the most times in a
// row: on a driver that keeps calling back (a callback storm), or
// livelocks by signalling without progress, it is the call to blame when
// the run's step limit runs out. The zero value: no callback ever came
// without something new.
type Storm struct {
	Call drivers.CallID
	// Idle is the longest run of callbacks of Call whose snapshot added
	// nothing (no row final, no access move).
	Idle uint64
	// Callbacks counts every callback of Call when its run was last counted.
	Callbacks int
}

func (s Storm) String() string {
	if s.Idle == 0 {
		return "no call was called back without a change"
	}
	return fmt.Sprintf("call %d called back %d times without a change (%d callbacks in all)", s.Call, s.Idle, s.Callbacks)
}

// Storm reports the call whose callbacks came without a change the most
// times in a row (see [Storm]).
func (m *Monitor) Storm() Storm {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.storm
}

// SizeStat counts Submits of valid batches of one size, for the
// MaxRowsPerOp-honesty check ("capabilities").
type SizeStat struct {
	Rows      int
	Submitted int // valid batches of this size submitted
	Refused   int // refused with an error other than ErrClosed / ErrRejected
	AllFault  int // accepted, every row FAULT at the last read
	Succeeded int // accepted, some row OK or MISS
}

// Wrap returns a monitor around d. Capabilities are read once here (they
// never change; a later change is reported).
func Wrap(d drivers.Driver, opts Options) *Monitor {
	m := &Monitor{
		d: d, opts: opts, caps: d.Capabilities(),
	}
	m.regList = m.regsInl[:0]
	m.order, m.open, m.scratch = m.callsInl[:0:16], m.callsInl[16:16:32], m.callsInl[32:32:48]
	if m.opts.FullSizeMinCalls <= 0 {
		m.opts.FullSizeMinCalls = 3
	}
	if n := opts.Ops; n > 0 {
		// Over 600 one-endpoint seeds of 2, 35 and 100 ops of the engine:
		// about the calls' median, the registrations' 90th percentile
		// (its probes register too).
		m.callSlab.Reserve(n/2 + 3)
		m.regSlab.Reserve(n/6 + 3)
	}
	m.starters, m.cbObs = m.startersInl[:0], m.cbObsInl[:0]
	for _, o := range opts.Observers {
		if so, ok := o.(SubmitObserver); ok {
			m.starters = append(m.starters, so)
		}
		if co, ok := o.(CallbackObserver); ok {
			m.cbObs = append(m.cbObs, co)
		}
	}
	m.prober, _ = d.(LockProber)
	m.live, _ = d.(LiveReporter)
	m.bound, _ = d.(BoundReporter)
	m.wrapped = m
	if t, ok := d.(drivers.TogetherRegisterer); ok {
		m.together = t
		m.tog.Monitor = m
		m.wrapped = &m.tog
	}
	if err := m.caps.Check(); err != nil {
		m.violate(rules.Violation{Rule: rules.DCaps, Row: -1, Detail: "declared capabilities are unusable: " + err.Error()})
	}
	return m
}

// Driver is the monitored driver to hand to a backend: m itself, or a
// [Together] when the wrapped driver implements drivers.TogetherRegisterer.
func (m *Monitor) Driver() drivers.Driver { return m.wrapped }

// Unwrap is the driver being monitored.
func (m *Monitor) Unwrap() drivers.Driver { return m.d }

// Of returns the monitor behind a driver that [Monitor.Driver] returned.
func Of(d drivers.Driver) (*Monitor, bool) {
	switch w := d.(type) {
	case *Monitor:
		return w, true
	case *Together:
		return w.Monitor, true
	}
	return nil, false
}

// Violations returns the violations seen so far, sorted by time, rule, call,
// row, region, key and detail. Finish adds the end-of-run checks.
func (m *Monitor) Violations() []rules.Violation {
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := slices.Clone(m.violations)
	rules.Sort(vs)
	return vs
}

// Undecided lists the reads whose lock probe (Options.LockProbe) could not
// decide whether the callback held a lock the read needs (D-CB-4), one line
// each with the call, time and seed. They are not violations; a caller that
// certifies should report them as what it could not show.
func (m *Monitor) Undecided() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.undecided)
	if m.undecidedMore > 0 {
		out = append(out, fmt.Sprintf("%s: … and %d more undecided lock probes (a monitor keeps %d)", rules.DCB4, m.undecidedMore, MaxUndecided))
	}
	return out
}

func (m *Monitor) now() time.Duration {
	if m.opts.Clock == nil {
		return 0
	}
	return m.opts.Clock.Now()
}

func (m *Monitor) violate(v rules.Violation) {
	m.mu.Lock()
	m.violateLocked(v)
	m.mu.Unlock()
}

// violateLocked records v once per (rule, call, row, key, region).
func (m *Monitor) violateLocked(v rules.Violation) {
	k := vkey{v.Rule, v.Call, v.Row, v.Key, v.Region}
	if m.seen[k] {
		return
	}
	if m.seen == nil { // made at the first violation: most runs have none
		m.seen = map[vkey]bool{}
	}
	m.seen[k] = true
	v.Class, v.At, v.Seq, v.Seed = rules.Contract, m.now(), sim.Stamp(m.opts.Clock), m.opts.Seed
	m.violations = append(m.violations, v)
}

// Capabilities implements drivers.Driver.
func (m *Monitor) Capabilities() drivers.Capabilities {
	c := m.d.Capabilities()
	if c != m.caps {
		m.violate(rules.Violation{Rule: rules.DCaps, Row: -1,
			Detail: fmt.Sprintf("capabilities changed from %+v to %+v", m.caps, c)})
	}
	return c
}

// liveLocked is the monitor's table of live handles, for RowBatch.Validate.
func (m *Monitor) liveLocked(h drivers.Handle) (drivers.Region, bool) {
	r := m.regLocked(h)
	if r == nil || !r.live {
		return drivers.Region{}, false
	}
	return r.r, true
}

// Contains implements drivers.Driver (D-LOOK-1, D-LOOK-2).
func (m *Monitor) Contains(ctx context.Context, keys []string) ([]bool, error) {
	found, err := m.d.Contains(ctx, keys)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		switch {
		case len(keys) > m.caps.MaxRowsPerOp:
			m.violateLocked(rules.Violation{Rule: rules.DLook1, Row: -1,
				Detail: fmt.Sprintf("Contains answered a lookup of %d keys, more than MaxRowsPerOp=%d (want an error)", len(keys), m.caps.MaxRowsPerOp)})
		case len(found) != len(keys):
			m.violateLocked(rules.Violation{Rule: rules.DLook1, Row: -1,
				Detail: fmt.Sprintf("Contains answered %d bools for %d keys (want an error wrapping ErrLookupFailed)", len(found), len(keys))})
		case m.opts.Truth != nil:
			for i, k := range keys {
				if found[i] {
					continue
				}
				if present, known := m.opts.Truth(k); known && present {
					m.violateLocked(rules.Violation{Rule: rules.DLook2, Row: i, Key: k,
						Detail: "Contains answered absent for a key known present (an outage answered as absent?)"})
				}
			}
			for i, k := range keys {
				if !found[i] {
					continue
				}
				if present, known := m.opts.Truth(k); known && !present {
					m.violateLocked(rules.Violation{Rule: rules.DLook1, Row: i, Key: k,
						Detail: fmt.Sprintf("Contains answered present for a key known absent: the answer is not this key's (one bool per key, in key order; %d keys asked)", len(keys))})
				}
			}
		}
	}
	at := m.now()
	for _, o := range m.opts.Observers {
		o.LookedUp(at, keys, found, err)
	}
	return found, err
}

// Drain implements drivers.Driver (D-DRAIN-1, D-DRAIN-2).
func (m *Monitor) Drain() drivers.DrainStatus {
	m.mu.Lock()
	type begun struct {
		c *callRec
		n uint64
	}
	var running []begun // callbacks running now, by how many had begun
	for _, c := range m.running {
		running = append(running, begun{c, c.cbBegun})
	}
	before := m.nsub
	m.mu.Unlock()

	st := m.d.Drain()

	m.mu.Lock()
	m.drained = true
	var cands []*callRec
	for _, c := range m.openLocked(nil) {
		if c.index < before && c.knownAcc == drivers.AccessPending {
			cands = append(cands, c)
		}
	}
	m.mu.Unlock()
	for _, c := range cands {
		m.refresh(c)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.IsSorted(st.Pending) || len(slices.Compact(slices.Clone(st.Pending))) != len(st.Pending) {
		m.violateLocked(rules.Violation{Rule: rules.DDrain1, Row: -1, Detail: fmt.Sprintf("Drain's Pending %v is not in ascending id order without repeats", st.Pending)})
	}
	if !st.Done {
		for _, c := range cands {
			if c.knownAcc == drivers.AccessPending && !slices.Contains(st.Pending, c.id) {
				m.violateLocked(rules.Violation{Rule: rules.DDrain1, Call: uint64(c.id), Row: -1,
					Detail: "Drain is not done but does not list this call, whose access is still PENDING"})
			}
		}
		return st
	}
	if len(st.Pending) > 0 {
		m.violateLocked(rules.Violation{Rule: rules.DDrain1, Row: -1, Detail: fmt.Sprintf("Drain reported Done with calls %v pending", st.Pending)})
	}
	for _, c := range cands {
		if c.knownAcc == drivers.AccessPending {
			m.violateLocked(rules.Violation{Rule: rules.DDrain1, Call: uint64(c.id), Row: -1,
				Detail: "Drain reported Done but the call's access is still PENDING (no evidence)"})
		}
	}
	for _, r := range running {
		if c := r.c; c.cbEnded < r.n {
			m.violateLocked(rules.Violation{Rule: rules.DDrain2, Call: uint64(c.id), Row: -1,
				Detail: "Drain reported Done while a callback of the call, running before Drain was called, had not returned"})
		}
	}
	if !m.drainDone {
		m.drainDone, m.drainDoneBefore = true, before
	}
	return st
}

// parseLabels splits shutdown labels into the calls and region labels named.
func parseLabels(labels []string) (calls map[drivers.CallID]bool, regions map[string]bool) {
	if len(labels) == 0 {
		return nil, nil // the usual clean shutdown: nothing to look up
	}
	calls, regions = map[drivers.CallID]bool{}, map[string]bool{}
	for _, l := range labels {
		if rest, ok := strings.CutPrefix(l, "call:"); ok {
			idText, _, _ := strings.Cut(rest, ":")
			if id, err := strconv.ParseUint(idText, 10, 64); err == nil {
				calls[drivers.CallID(id)] = true
			}
			continue
		}
		if rest, ok := strings.CutPrefix(l, "region:"); ok {
			if i := strings.LastIndexByte(rest, ':'); i >= 0 {
				rest = rest[:i]
			}
			regions[rest] = true
		}
	}
	return calls, regions
}

// Shutdown implements drivers.Driver (D-SHUT-1, D-SHUT-2, D-REG-5, D-CB-5).
func (m *Monitor) Shutdown(ctx context.Context) []string {
	m.mu.Lock()
	m.shutting = true
	m.mu.Unlock()

	labels := m.d.Shutdown(ctx)

	m.mu.Lock()
	first := !m.shutdown
	m.shutdown = true
	m.shutdowns++
	cands := m.openLocked(nil)
	regs := m.liveRegsLocked()
	m.mu.Unlock()
	for _, c := range cands {
		m.refresh(c)
	}
	held := make([]bool, len(regs))   // the driver says it still holds the region
	probed := make([]bool, len(regs)) // … and a reporter could tell
	for i, r := range regs {
		// Bound speaks of memory: while another live registration shares
		// some of it (an overlap the driver accepted, D-REG-1), it cannot
		// tell this registration's state.
		overlapped := slices.ContainsFunc(regs, func(o *regRec) bool { return o != r && o.r.Overlaps(r.r) })
		useBound := m.bound != nil && !overlapped
		held[i] = (m.live != nil && m.live.Live(r.h)) || (useBound && m.bound.Bound(r.r.Mem))
		probed[i] = m.live != nil || useBound
	}

	m.mu.Lock()
	rule := rules.DShut2
	if first {
		rule = rules.DShut1
	}
	callLabels, regionLabels := parseLabels(labels)
	reasons := regionReasons(labels)
	named := map[drivers.Handle]drivers.CallID{} // region handle → a not-ENDED call naming it
	for _, c := range cands {
		if c.knownAcc == drivers.AccessEnded {
			continue
		}
		if !callLabels[c.id] {
			m.violateLocked(rules.Violation{Rule: rule, Call: uint64(c.id), Row: -1,
				Detail: fmt.Sprintf("Shutdown returned no call:%d:… label although the call's access is %v", c.id, c.knownAcc)})
		}
		for _, h := range c.handles {
			if _, ok := named[h]; !ok {
				named[h] = c.id
			}
		}
	}
	var released []*regRec
	at := m.now()
	for i, r := range regs {
		if regionLabels[r.r.Label] {
			if probed[i] && !held[i] {
				m.labelledReleasedLocked(rule, r, reasons[r.r.Label])
			}
			continue // reported held: stays live and retained
		}
		if id, ok := named[r.h]; ok {
			m.violateLocked(rules.Violation{Rule: rule, Call: uint64(id), Row: -1, Region: r.r.Label,
				Detail: fmt.Sprintf("Shutdown returned no region:%s:… label although call %d, whose access is not ENDED, names it", r.r.Label, id)})
		}
		if held[i] {
			m.violateLocked(rules.Violation{Rule: rule, Row: -1, Region: r.r.Label,
				Detail: fmt.Sprintf("Shutdown returned no region:%s:… label although the driver still holds handle %d", r.r.Label, r.h)})
			if r.duringShutdown {
				m.violateLocked(rules.Violation{Rule: rules.DReg5, Row: -1, Region: r.r.Label,
					Detail: "a registration racing Shutdown was completed and neither refused nor undone"})
			}
			continue
		}
		r.live = false
		released = append(released, r)
		for _, o := range m.opts.Observers {
			o.Unregistered(at, r.h, r.r)
		}
	}
	for _, o := range m.opts.Observers {
		o.ShutDown(at, labels)
	}
	m.mu.Unlock()
	for _, r := range released {
		setRegistered(r.r, false)
	}
	return labels
}
