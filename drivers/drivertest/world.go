package drivertest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/monitor/realprobe"
	"github.com/storesim/storesim/drivers/monitor/simprobe"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
	"github.com/storesim/storesim/sim/realtime"
)

// world is one case run: a fresh driver on a fresh store (or a real one),
// wrapped in the contract monitor with the history recorder and a race-pair
// counter as observers, arena memory whose every touch is logged, and the
// helpers the cases use. Cases reach the driver only through the
// drivers.Driver interface (and drivers.TogetherRegisterer), so they run
// on any driver; on the simulator they step the scheduler, in real time
// they wait, bounded by Options.Wait.
type world struct {
	c        *certifier
	g        *group
	cs       *caseDef
	seed     uint64
	directed bool
	rnd      *sim.Rand

	sched  *sim.Scheduler     // simulated runs
	rtr    *realtime.Runtime  // real-time runs
	rt     sim.Runtime        // whichever of the two
	store  *memdriver.Store   // nil for a real store
	faults memdriver.FaultMix // what the driver was asked to inject
	// faultsKnown: the driver reports the faults it injects (Faults(), as
	// memdriver does), so "none injected" means it faults nowhere. A driver
	// that does not (a real store's, a simulated one written outside this
	// repository) may fault on its own, as a transport does: a FAULT is
	// then no lie by itself (faultFree).
	faultsKnown bool

	ep   *engine.Endpoint // driver, contract monitor, history recorder: no lender, no backend
	d    drivers.Driver   // the monitored driver
	tog  drivers.TogetherRegisterer
	caps drivers.Capabilities
	pc   *PairCounter

	kick        chan struct{}
	lastKick    atomic.Int64 // runtime time of the last callback (real time)
	reactQueued atomic.Bool
	reacting    atomic.Int32 // react runs (real time: settle waits for it)
	touches     atomic.Int64
	// touchLog is every touch's place, in order (touchesOn): a check that a
	// refused batch touched nothing looks at its own rows' bytes, not at a
	// slow earlier call still moving its own (D-SUB-1).
	touchMu  sync.Mutex
	touchLog []touchAt

	sh *arena.Shared // the arenas' memory (Harness.SharedMemory), or nil: Go heap

	mu        sync.Mutex
	arenas    []*arena.Arena
	byHandle  map[drivers.Handle]*arena.Arena
	next      map[*arena.Arena]int // next free slot
	calls     []*callT
	pubOpen   map[string]int    // publishes of a key not yet ENDED (or escaped): truth unknown
	fetchOpen map[string]int    // fetches of a key not yet ENDED
	tainted   map[string]bool   // a fetch and a publish of the key overlapped: unknown until both end
	objects   map[string][]byte // real stores: what is known stored (nil value: present, content unknown)
	absent    map[string]bool   // real stores: known absent
	unknown   map[string]bool   // real stores: a publish may or may not have landed
	onEnded   func(ct *callT)   // case hook, run once per call when its access is ENDED
	onReact   func()            // case hook, run after every callback (on the runtime)
	draining  bool              // re-poll Drain from callbacks until done
	drainDone bool
	shut      bool
	findings  []rules.Violation
	fmarks    []mark   // per finding: where it stands in causal order (cause.go)
	extPuts   bool     // objects were put behind the recorder's back: skip S-LIN
	gaps      []string // checks that could not conclude (a timed-out S-LIN)
	nkey      int

	// stepCap is the scheduler step count at which the case stops
	// (world_time.go); stopped says why it stopped (a flood, the cap), nil
	// while it runs; finishing: finish is running.
	stepCap   uint64
	stopped   error
	finishing bool
}

// callT is one Submit as the world tracks it.
type callT struct {
	w       *world
	b       drivers.RowBatch
	c       drivers.Call // the monitor's call
	err     error
	content [][]byte // PUBLISH: the bytes of each row
	changes atomic.Int64
	ended   bool        // access ENDED seen by react
	closed  atomic.Bool // ENDED and every row final, as react saw: its keys are no longer in flight
}

// linTimeout bounds one case run's S-LIN check; a timeout is a gap.
const linTimeout = 5 * time.Second

func newWorld(c *certifier, g *group, cs *caseDef, seed uint64, directed bool) (*world, error) {
	if err := c.beforeRun(g, cs, seed); err != nil {
		return nil, err
	}
	w := &world{
		c: c, g: g, cs: cs, seed: seed, directed: directed,
		rnd:  sim.NewRand(sim.SubSeed(seed, "drivertest/case")),
		kick: make(chan struct{}, 1), faults: cs.faults,
		byHandle: map[drivers.Handle]*arena.Arena{}, next: map[*arena.Arena]int{},
		pubOpen: map[string]int{}, fetchOpen: map[string]int{}, tainted: map[string]bool{}, objects: map[string][]byte{}, absent: map[string]bool{}, unknown: map[string]bool{},
		pc: NewPairCounter(), stepCap: caseSteps,
	}
	if c.h.SharedMemory {
		sh, err := arena.NewShared("")
		if err != nil {
			return nil, fmt.Errorf("drivertest: shared region memory: %w", err)
		}
		w.sh = sh
	}
	if c.h.RealTime {
		w.rtr = realtime.New(seed)
		w.rt = w.rtr
	} else {
		w.sched = sim.New(schedOptions(seed, directed))
		w.rt = w.sched
	}
	if !c.h.ExternalStore {
		st, err := memdriver.NewStore(memdriver.StoreOptions{OnEvent: w.storeEvent})
		if err != nil {
			return nil, err
		}
		w.store = st
	}
	ep, err := engine.NewEndpoint(engine.EndpointOptions{
		Name: "dt", RT: w.rt, Store: w.store, Caps: c.requestCaps(cs.caps), Faults: cs.faults, Seed: seed,
		New:       func(_ string, env Env) (drivers.Driver, error) { return safeNew(c.h, env) },
		Monitor:   monitor.Options{Truth: w.truth},
		Tune:      w.tune,
		Observers: []monitor.Observer{w.pc},
	})
	if err != nil {
		if w.rtr != nil {
			w.rtr.Close()
		}
		w.closeShared()
		var ee *engine.EndpointError
		if errors.As(err, &ee) {
			err = ee.Err
		}
		return nil, err
	}
	w.ep = ep
	w.d = ep.Monitor.Driver()
	w.tog, _ = w.d.(drivers.TogetherRegisterer)
	w.caps = ep.Monitor.Capabilities()
	return w, nil
}

// tune fits the monitor to the driver built: the faults it really injects
// excuse a FETCH FAULT of an absent key, and a driver that cannot report
// its own lock gets the bounded lock probe.
func (w *world) tune(raw drivers.Driver, opts *monitor.Options) {
	if f, ok := raw.(interface{ Faults() memdriver.FaultMix }); ok {
		w.faults = f.Faults() // what it really injects (a driver may raise rates)
		w.faultsKnown = true
	}
	// Without AbsentIsMiss a FETCH of an absent key may FAULT (the driver
	// promises nothing about absent keys), so FAULT is then excused like an
	// injected fault; the monitor's D-MISS-HONEST check does not look at the
	// declaration itself.
	// A driver that may fault on its own is asked again instead
	// (caseAbsentIsMiss): one FAULT of an absent key proves nothing there.
	injected := w.injectsRowFaults() || !raw.Capabilities().AbsentIsMiss || !w.faultsKnown
	opts.Injected = func(drivers.CallID, int) bool { return injected }
	_, prober := raw.(monitor.LockProber)
	switch {
	case w.c.h.RealTime:
		opts.LockProbe = realprobe.LockProbe(0)
		opts.CancelBound = realprobe.Stopwatch(0)
	case !prober:
		// A simulated driver that calls back under its lock would deadlock
		// the monitor's read. simprobe runs the read on its own goroutine
		// and decides by what the read does (returns, or parks on what the
		// callback holds), not by how long it takes: the same seed gives
		// the same verdict on any machine, however loaded.
		opts.LockProbe = simprobe.LockProbe()
	}
}

// schedOptions: the directed run uses a fixed, mild callback policy; each
// randomized run draws delay and coalescing from its seed, as the harness
// does, so the interleavings differ too.
func schedOptions(seed uint64, directed bool) sim.Options {
	if directed {
		return sim.Options{Seed: seed, MaxWakeDelay: 3 * time.Microsecond, CoalesceChance: 0.3}
	}
	r := sim.NewRand(sim.SubSeed(seed, "drivertest/scheduler"))
	delays := []time.Duration{0, 2 * time.Microsecond, 20 * time.Microsecond, 200 * time.Microsecond}
	return sim.Options{Seed: seed, MaxWakeDelay: delays[r.Intn(len(delays))], CoalesceChance: []float64{0, 0.2, 0.6}[r.Intn(3)]}
}

// faultFree: the driver reports its faults and injects none, so any FAULT,
// refusal or lookup error it answers is its own doing, not a transport's.
func (w *world) faultFree() bool {
	return w.faultsKnown && w.faults == (memdriver.FaultMix{})
}

// injectsRowFaults: the mix can turn a row FAULT, so a FAULT of an absent
// key is not by itself dishonest.
func (w *world) injectsRowFaults() bool {
	f := w.faults
	return f.RowFault > 0 || f.ErrorBefore > 0 || f.ErrorAfter > 0 || f.WrongLength > 0 || f.Timeout > 0 || f.NeverEnds > 0
}

// fail records a violation the case itself found, now (failAt places one
// about an earlier moment).
func (w *world) fail(rule rules.ID, format string, args ...any) {
	w.failAt(w.mark(), rule, format, args...)
}

// skip ends the run as not exercised, with the reason.
func (w *world) skip(format string, args ...any) { panic(skipRun{fmt.Sprintf(format, args...)}) }

// pick is a choice: the directed run takes dflt, randomized runs draw in
// [0, n).
func (w *world) pick(n, dflt int) int {
	if w.directed || n <= 1 {
		return dflt
	}
	return w.rnd.Intn(n)
}

// chance is a coin: the directed run takes dflt.
func (w *world) chance(p float64, dflt bool) bool {
	if w.directed {
		return dflt
	}
	return w.rnd.Chance(p)
}

// arena makes region memory: every slot lent (so a touch of it is legal
// until the case releases it), every touch logged for the memory oracle.
func (w *world) arena(label string, slots, slotBytes int) *arena.Arena {
	a := arena.New(label, slots, slotBytes, arena.Options{Clock: w.rt, OnTouch: w.onTouch, Shared: w.sh})
	if w.sh != nil {
		if _, _, ok := a.SharedFile(); !ok {
			// Once per certification: the driver mirrors the memory (copies
			// it at fixed points) instead of moving the suite's own bytes.
			gap := fmt.Sprintf("region memory could not be shared with the driver, which mirrors it instead: %v", w.sh.Err())
			w.mu.Lock()
			if !slices.Contains(w.c.gaps, gap) && !slices.Contains(w.gaps, gap) {
				w.gaps = append(w.gaps, gap)
			}
			w.mu.Unlock()
		}
	}
	for i := range slots {
		a.Lend(i, 1)
	}
	w.mu.Lock()
	w.arenas = append(w.arenas, a)
	w.ep.AddArena(a)
	w.mu.Unlock()
	return a
}

func (w *world) onTouch(t arena.Touch) {
	w.touches.Add(1)
	w.touchMu.Lock()
	w.touchLog = append(w.touchLog, touchAt{region: t.Region, off: t.Off, n: t.N})
	w.touchMu.Unlock()
	w.ep.Recorder.OnTouch(t)
}

// touchAt is where one touch fell: a region's bytes [off, off+n).
type touchAt struct {
	region string
	off, n int
}

// touchMark is the place in the touch log now: touchesOn counts from it.
func (w *world) touchMark() int {
	w.touchMu.Lock()
	defer w.touchMu.Unlock()
	return len(w.touchLog)
}

// touchesOn counts the touches since mark that fell on the slots of rows
// (rows on a handle the world never bound, or outside their region, have no
// bytes of their own: the memory oracle judges such touches).
func (w *world) touchesOn(mark int, rows []drivers.Row) int {
	type span struct {
		region   string
		from, to int
	}
	var spans []span
	for _, r := range rows {
		if a := w.arenaOf(r.Handle); a != nil && r.Slot >= 0 && r.Slot < a.Region().Slots {
			sb := a.Region().SlotBytes
			spans = append(spans, span{a.Label(), r.Slot * sb, (r.Slot + 1) * sb})
		}
	}
	w.touchMu.Lock()
	defer w.touchMu.Unlock()
	n := 0
	for _, t := range w.touchLog[min(mark, len(w.touchLog)):] {
		for _, s := range spans {
			if t.region == s.region && t.off < s.to && t.off+max(t.n, 1) > s.from {
				n++
				break
			}
		}
	}
	return n
}

// slots hands out n fresh slots of a.
func (w *world) slots(a *arena.Arena, n int) []int {
	w.mu.Lock()
	first := w.next[a]
	full := first+n > a.Region().Slots
	if !full {
		w.next[a] = first + n
	}
	w.mu.Unlock()
	if full {
		w.skip("drivertest: case %s ran out of slots in region %s (a suite bug: please report it)", w.cs.name, a.Label())
	}
	out := make([]int, n)
	for i := range out {
		out[i] = first + i
	}
	return out
}

// register registers a through the monitor (telling the pair counter
// first).
func (w *world) register(a *arena.Arena) (drivers.Handle, error) {
	return w.registerRegion(a.Region(), a)
}

func (w *world) registerRegion(r drivers.Region, a *arena.Arena) (drivers.Handle, error) {
	w.pc.Registering(r)
	h, err := w.d.Register(r)
	if err == nil && a != nil {
		w.mu.Lock()
		w.byHandle[h] = a
		w.mu.Unlock()
	}
	return h, err
}

// mustRegister registers a, retrying store refusals (legal, and injected
// by some fault mixes), or ends the run as not exercised.
func (w *world) mustRegister(a *arena.Arena) drivers.Handle {
	var err error
	for range 8 {
		var h drivers.Handle
		if h, err = w.register(a); err == nil {
			return h
		}
	}
	w.skip("registering a fresh region was refused 8 times (last: %v)", err)
	return 0
}

func (w *world) unregister(h drivers.Handle) error {
	w.pc.Unregistering(h)
	return w.d.Unregister(h)
}

func (w *world) registerTogether(as []*arena.Arena) ([]drivers.Handle, error) {
	rs := make([]drivers.Region, len(as))
	for i, a := range as {
		rs[i] = a.Region()
		w.pc.Registering(rs[i])
	}
	hs, err := w.tog.RegisterTogether(rs)
	if err == nil {
		w.mu.Lock()
		for i, h := range hs {
			if i < len(as) {
				w.byHandle[h] = as[i]
			}
		}
		w.mu.Unlock()
	}
	return hs, err
}

func (w *world) unregisterTogether(hs []drivers.Handle) error {
	for _, h := range hs {
		w.pc.Unregistering(h)
	}
	return w.tog.UnregisterTogether(hs)
}

// rows builds a batch's rows on fresh slots of a (registered as h).
func (w *world) rows(a *arena.Arena, h drivers.Handle, keys ...string) []drivers.Row {
	slots := w.slots(a, len(keys))
	rs := make([]drivers.Row, len(keys))
	for i, k := range keys {
		rs[i] = drivers.Row{Key: k, Handle: h, Slot: slots[i], Position: i}
	}
	return rs
}

// content is a fresh, unique object of n bytes.
func (w *world) content(n int) []byte {
	w.mu.Lock()
	w.nkey++
	g := sim.NewRand(sim.Mix(w.seed, uint64(w.nkey)<<8|0x5A))
	w.mu.Unlock()
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := g.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// submit fills PUBLISH slots with fresh content and submits the batch
// through the monitor. A refused submit is returned with err set.
func (w *world) submit(dir drivers.Direction, rows []drivers.Row) *callT {
	ct := &callT{w: w, b: drivers.RowBatch{Dir: dir, Rows: rows}}
	if dir == drivers.Publish {
		ct.content = make([][]byte, len(rows))
		for i, r := range rows {
			if a := w.arenaOf(r.Handle); a != nil && r.Slot >= 0 && r.Slot < a.Region().Slots {
				ct.content[i] = w.content(a.Region().SlotBytes)
				a.Fill(r.Slot, ct.content[i])
			}
		}
	}
	w.open(ct.b, +1)
	c, err := w.d.Submit(ct.b, ct.onChange)
	ct.c, ct.err = c, err
	if err != nil {
		escaped := !errors.Is(err, drivers.ErrInvalidSubmission) && !errors.Is(err, drivers.ErrClosed) && !errors.Is(err, drivers.ErrRejected)
		if !escaped {
			w.open(ct.b, -1)
		} else if dir == drivers.Publish {
			w.mu.Lock()
			for _, r := range rows {
				w.unknown[r.Key] = true // D-SUB-2: it may have escaped, forever (the key stays open)
			}
			w.mu.Unlock()
		}
		return ct
	}
	if w.sched != nil {
		// On the simulator nothing runs between Submit's return and this
		// read, so it is the call's state at return: a call that was already
		// over cannot race anything (the pair counter decides from it which
		// race pairs can occur at all).
		res := c.Results()
		w.pc.SubmitReturned(c.ID(), c.Access(), !slices.ContainsFunc(res, func(s drivers.Status) bool { return !s.Final() }) && len(res) == len(rows))
	}
	w.mu.Lock()
	w.calls = append(w.calls, ct)
	w.mu.Unlock()
	return ct
}

func (w *world) arenaOf(h drivers.Handle) *arena.Arena {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.byHandle[h]
}

// drain calls Drain through the monitor and tells the pair counter.
func (w *world) drain() drivers.DrainStatus {
	w.pc.Draining()
	st := w.d.Drain()
	w.pc.Drained(st)
	return st
}

// startDrain drains once and keeps re-polling from callbacks until done.
func (w *world) startDrain() drivers.DrainStatus {
	st := w.drain()
	w.mu.Lock()
	w.draining, w.drainDone = true, st.Done
	w.mu.Unlock()
	return st
}

func (w *world) drained() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.drainDone
}

// shutdown calls Shutdown through the monitor.
func (w *world) shutdown() []string {
	w.pc.ShuttingDown()
	ctx, cancel := w.c.ctx()
	defer cancel()
	labels := w.d.Shutdown(ctx)
	w.mu.Lock()
	w.shut = true
	w.mu.Unlock()
	return labels
}

// finish shuts the driver down (if the case did not), lets late events
// run, and judges the run with engine.Check: the monitor's end-of-run
// checks, the memory oracle, call liveness, what the case found itself and
// — when nothing else failed — S-LIN over the recorded history.
func (w *world) finish() (out []rules.Violation) {
	defer func() {
		if r := recover(); r != nil {
			out = append(out, rules.Violation{Rule: w.g.rule, Class: rules.Contract, Row: -1, Seed: w.seed, Detail: fmt.Sprintf("panic while shutting the driver down: %v", r)})
		}
		if w.rtr != nil {
			w.rtr.Close()
		}
		w.closeShared()
	}()
	w.mu.Lock()
	w.onEnded, w.onReact, w.draining = nil, nil, false
	shut := w.shut
	w.mu.Unlock()
	if w.sched != nil {
		w.noteStop()
		w.finishing = true
		w.stepCap = max(w.stepCap, w.sched.Steps()) + finishSteps
	}
	if !shut {
		w.shutdown()
	}
	idle := true
	if w.sched != nil {
		// Never past the cap, and never stopped by a panic: finish judges.
		if w.sched.Flood() == nil && w.sched.Steps() < w.stepCap {
			idle = w.sched.RunUntilIdle(w.stepCap-w.sched.Steps()) == nil
		}
		w.noteStop()
		idle = idle && w.stopped == nil
	} else {
		w.runFor(20 * time.Millisecond) // room for a callback after Shutdown (D-CB-5)
	}
	w.mu.Lock()
	found := append([]rules.Violation(nil), w.findings...)
	w.mu.Unlock()
	for _, u := range w.ep.Monitor.Undecided() {
		w.gaps = append(w.gaps, fmt.Sprintf("case %s/%s seed %d: %s", w.g.rule, w.cs.name, w.seed, u))
	}
	in := engine.CheckInput{
		Endpoints: []*engine.Endpoint{w.ep}, Found: found, Stopped: w.stopped,
		Finished: true, Idle: idle, // Shutdown returned: no callback may come (D-CB-5)
		At: w.rt.Now(), Seed: w.seed, StoreModel: model.DurableStore, LinTimeout: linTimeout, Lin: engine.LinIfClean,
	}
	if w.c.h.Evicting {
		in.StoreModel = model.EvictingStore
	}
	if w.extPuts {
		in.Lin = engine.LinSkip
	}
	res := engine.Check(in)
	if res.Lin.Outcome == porcupine.Unknown && res.Lin.Err == nil {
		w.gaps = append(w.gaps, fmt.Sprintf("the S-LIN check of case %s/%s seed %d timed out after %v", w.g.rule, w.cs.name, w.seed, linTimeout))
	}
	for _, v := range res.Violations {
		v.Endpoint = "" // one driver per world
		out = append(out, v)
	}
	return w.inCausalOrder(out) // the first cause first
}

// closeShared removes the run's shared region memory (the arenas keep a
// private copy of their bytes for the report).
func (w *world) closeShared() {
	if w.sh == nil {
		return
	}
	if err := w.sh.Close(); err != nil {
		w.gaps = append(w.gaps, fmt.Sprintf("case %s/%s seed %d: %v", w.g.rule, w.cs.name, w.seed, err))
	}
}
