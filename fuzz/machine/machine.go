// Package machine is the backend state machine behind the fuzz targets:
// two endpoints on one store (the reference drivers memory and together,
// AbsentIsMiss true and false), driven by a source of draws that decides
// the operations, the faults and the schedule (which queued event runs
// next). Invariants are checked after every action; every check of SPEC §5
// runs at the end, through engine.Check.
//
// The machine does not know where its draws come from. T is that source:
// the tests of this package drive it with rapid (TestBackendStateMachine,
// FuzzBackendStateMachine: rapid shrinks operations, faults and schedule
// together), and Bytes drives it from raw bytes with no testing package at
// all, for fuzzing builders outside go test (fuzz/targets.Machine).
package machine

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/model/lender"
	"github.com/storesim/storesim/sim"
)

// T is the source of every draw the machine makes, and where it reports.
// Each method is one draw of rapid's with the same name and label
// (Index(n) is rapid.SampledFrom over n items; Distinct is
// rapid.SliceOfNDistinct of SampledFrom(from) with at most max items), so a
// rapid-backed T consumes exactly the bits the machine always drew.
type T interface {
	Uint64(label string) uint64
	Bool(label string) bool
	IntRange(min, max int, label string) int
	Index(n int, label string) int
	Distinct(from []string, max int, label string) []string
	// Fatalf reports a failure and ends the run (it does not return); the
	// implementation adds the repro line of its own entry point.
	Fatalf(format string, args ...any)
	// Skip ends the run as an invalid input, never a failure. Like
	// Fatalf, it does not return.
	Skip(reason string)
	// Repeat runs act until the source says stop (or act skips), and check
	// before the first act and after each one.
	Repeat(act, check func(T))
}

// pick draws one of xs.
func pick[E any](t T, xs []E, label string) E { return xs[t.Index(len(xs), label)] }

// Options let tests of the tester plant a driver bug and count what the
// machine did.
type Options struct {
	// Wrap, if set, wraps each endpoint's driver (inside the monitor).
	Wrap  func(drivers.Driver) drivers.Driver
	Stats *Stats
}

// Stats count what runs did, so a test can prove they were not vacuous.
type Stats struct {
	Admitted, Refused, Delivered, Failed, Cancelled, Served int
	Reordered, Faults, MidShutdowns, Steps                  int
}

// Property is one whole run of the machine: set up from draws, repeat
// actions with invariant checks, then the final checks.
func Property(opts Options) func(T) {
	return func(t T) {
		m := newMachine(t, opts)
		t.Repeat(m.Act, m.Check)
		m.finish(t)
	}
}

// Bounds of the machine: small, so keys repeat within and across views and
// the backend's bounds are reached.
const (
	machineKeys   = 6
	machineRows   = 4
	machineSlots  = 8
	slotBytes     = 16
	runBurstSteps = 64
	finishSteps   = 1_000_000
)

// runtime is the scheduler as the backend and drivers see it; it remembers
// which labels are change-callback wakes, since only those (and events due
// now) may be delivered out of time order (see machine.deliverable).
type runtime struct {
	*sim.Scheduler
	wakes map[string]bool
}

func (r *runtime) Wake(label string, fn func()) func() {
	r.wakes[label] = true
	return r.Scheduler.Wake(label, fn)
}

// WakeRun is Wake for sim.WakeRun (the backend's change callbacks come this
// way): without it the embedded Scheduler's would answer, unseen.
func (r *runtime) WakeRun(label string, run sim.Runner) func() {
	r.wakes[label] = true
	return r.Scheduler.WakeRun(label, run)
}

// endpoint is what fuzz/engine builds, plus the memdriver behind it (the
// fault action sets its rates).
type endpoint struct {
	*engine.Endpoint
	name string
	drv  *memdriver.Driver
}

// tracked is one admitted attempt and what the checks remember of it.
type tracked struct {
	ep     *endpoint
	kind   string
	mask   []bool
	a      *backend.Attempt
	commit string // the outcome when first seen committed ("" before)
	access drivers.Access
}

type machine struct {
	opts     Options
	stats    *Stats
	rt       *runtime
	seed     uint64
	evicting bool
	store    *memdriver.Store
	seq      atomic.Int64
	eps      []*endpoint
	atts     []*tracked
	publish  int // content counter
	actions  map[string]func(T)
}

func newMachine(t T, opts Options) *machine {
	m := &machine{opts: opts, stats: opts.Stats, seed: t.Uint64("seed"), evicting: t.Bool("evicting")}
	m.rt = &runtime{Scheduler: sim.New(sim.Options{
		Seed:           m.seed,
		MaxWakeDelay:   []time.Duration{0, 2 * time.Microsecond, 20 * time.Microsecond}[t.Index(3, "wake-delay")],
		CoalesceChance: []float64{0, 0.5}[t.Index(2, "coalesce")],
	}), wakes: map[string]bool{}}
	so := memdriver.StoreOptions{OnEvent: m.storeEvent}
	if m.evicting {
		so.Evicting, so.EvictChance, so.Rand = true, 0.05, m.rt.Rand("fuzz/store")
	}
	var err error
	if m.store, err = memdriver.NewStore(so); err != nil {
		t.Fatalf("store: %v", err)
	}
	for _, name := range []string{"A", "B"} {
		m.eps = append(m.eps, m.newEndpoint(t, name))
	}
	m.actions = map[string]func(T){
		"publish":  func(t T) { m.submit(t, drivers.Publish) },
		"fetch":    func(t T) { m.submit(t, drivers.Fetch) },
		"cancel":   m.cancel,
		"deliver":  m.deliver,
		"run":      m.run,
		"fault":    m.fault,
		"shutdown": m.shutdown,
	}
	return m
}

// drawMix draws a fault mix through its printed form (a few kinds, each at
// a rate that shrinks towards the smallest).
func drawMix(t T, name string) memdriver.FaultMix {
	kinds := t.Distinct(memdriver.FaultNames(), 4, name+"/faults")
	sort.Strings(kinds)
	var lines []string
	for _, k := range kinds {
		rate := pick(t, []float64{0.05, 0.2, 0.5, 1}, name+"/rate/"+k)
		lines = append(lines, fmt.Sprintf("fault %s rate=%g", k, rate))
	}
	mix, err := memdriver.ParseFaultMix(strings.Join(lines, "\n"))
	if err != nil {
		t.Fatalf("fault mix %q: %v", lines, err)
	}
	return mix
}

func (m *machine) newEndpoint(t T, name string) *endpoint {
	ep := &endpoint{name: name}
	caps := drivers.Capabilities{
		MaxRowsPerOp: t.IntRange(1, 4, name+"/rows"),
		AbsentIsMiss: t.Bool(name + "/absent-is-miss"),
		CanFetch:     true, CanPublish: true, CanCancel: true,
	}
	together := t.Bool(name + "/together")
	cfg := backend.Config{
		MaxCallsInFlight: t.IntRange(1, 4, name+"/inflight"),
		MaxQueuedCalls:   t.IntRange(1, 8, name+"/queued"),
		MaxUnprovable:    t.IntRange(1, 4, name+"/unprovable"),
		DrainTimeout:     time.Millisecond,
	}
	nRegs := t.IntRange(1, 2, name+"/regions")
	mix := drawMix(t, name)
	var specs []lender.Spec
	for j := range nRegs {
		specs = append(specs, lender.Spec{Label: fmt.Sprintf("%s%d", name, j), Slots: machineSlots, SlotBytes: slotBytes})
	}
	newDriver := func(_ string, env registry.Env) (drivers.Driver, error) {
		cfg := memdriver.Config{Name: env.Name, Caps: env.Caps, Faults: env.Faults}
		var d drivers.Driver
		if together {
			td := memdriver.NewTogether(env.RT, env.Store, cfg)
			ep.drv, d = td.Driver, td
		} else {
			ep.drv = memdriver.New(env.RT, env.Store, cfg)
			d = ep.drv
		}
		if m.opts.Wrap != nil {
			d = m.opts.Wrap(d)
		}
		return d, nil
	}
	// A registration error (a drawn register fault) leaves a backend that
	// refuses admission: still a run worth checking.
	var err error
	ep.Endpoint, err = engine.NewEndpoint(engine.EndpointOptions{
		Name: name, New: newDriver, RT: m.rt, Sched: m.rt.Scheduler, Store: m.store, Caps: caps, Faults: mix, Seed: m.seed,
		Recorder: model.RecorderOptions{Sequence: &m.seq, StoreLogComplete: true},
		Memory:   specs, Backend: cfg,
	})
	if err != nil {
		t.Fatalf("endpoint %s: %v", name, err)
	}
	return ep
}

func (m *machine) storeEvent(e memdriver.StoreEvent) {
	if e.Kind != memdriver.EventPut || !e.Stored {
		return
	}
	named := false
	for _, ep := range m.eps {
		if ep.name == e.By.Driver {
			ep.Recorder.Put(m.rt.Now(), e.By.Call, e.By.Row, e.Key)
			named = true
		}
	}
	if !named { // a put no endpoint's call names (model.Recorder.UnattributedPut)
		for _, ep := range m.eps {
			ep.Recorder.UnattributedPut(e.Key)
		}
	}
}

// Act is the state machine's one action: it draws among the actions valid
// now, so no draw is ever wasted on a rejected action (PERF-NOTES: with
// rapid.MakeFuzz, retry-until-valid lets the fuzzer find all-rejected
// inputs). When nothing is valid (every endpoint shut down, nothing queued)
// the step is an invalid draw, which ends the repetition; never a failure.
func (m *machine) Act(t T) {
	valid := m.valid()
	if len(valid) == 0 {
		t.Bool("nothing-valid")
		t.Skip("nothing valid: every endpoint shut down and the scheduler idle")
	}
	m.actions[pick(t, valid, "action")](t)
}

// valid lists the actions that can do something now, in a fixed order,
// each as often as its weight: submits and deliveries make up most of a run;
// a mid-run shutdown, which ends an endpoint's part, is rare.
func (m *machine) valid() []string {
	var out []string
	if m.open() != nil {
		out = append(out, "publish", "publish", "publish", "fetch", "fetch", "fetch", "fault", "fault")
	}
	if !m.rt.Idle() {
		out = append(out, "deliver", "deliver", "deliver", "deliver", "run")
	}
	if len(m.atts) > 0 {
		out = append(out, "cancel")
	}
	if m.open() != nil && len(m.atts) > 0 {
		out = append(out, "shutdown")
	}
	return out
}

// open lists the endpoints not yet asked to shut down.
func (m *machine) open() []*endpoint {
	var out []*endpoint
	for _, ep := range m.eps {
		if !ep.Asked {
			out = append(out, ep)
		}
	}
	return out
}

// submit lends slots for a view of drawn keys (repeats within the view and
// across views in flight come from the small key space) and submits it.
func (m *machine) submit(t T, dir drivers.Direction) {
	ep := pick(t, m.eps, "endpoint")
	n := t.IntRange(1, machineRows, "rows")
	keys := make([]string, n)
	mask := make([]bool, n)
	for i := range n {
		keys[i] = fmt.Sprintf("k%d", t.IntRange(0, machineKeys-1, "key"))
		mask[i] = t.IntRange(0, 7, "mask-out") != 7
	}
	loan, err := ep.Lender.Lend(n)
	if err != nil {
		return // every slot is lent or retained: a valid no-op
	}
	if dir == drivers.Publish {
		m.publish++
		for i := range n {
			ep.Lender.Fill(loan, i, content(m.seed, m.publish, i))
		}
	}
	// A view needs live bindings: after shutdown or a failed registration
	// the lender cannot build one (a valid no-op).
	v, err := loan.View(ep.Backend, keys, mask)
	before := ep.Backend.Stats()
	var a *backend.Attempt
	if err == nil {
		if dir == drivers.Publish {
			a, err = ep.Backend.Publish(v)
		} else {
			a, err = ep.Backend.Fetch(v)
		}
		// B-SUBMIT: a refusal says which, and consumes nothing.
		if err != nil && !errors.Is(err, backend.ErrSubmissionRejected) && !errors.Is(err, drivers.ErrInvalidSubmission) {
			t.Fatalf("B-SUBMIT: %s %v on %s refused with an error that wraps neither ErrSubmissionRejected nor ErrInvalidSubmission: %v", dir, keys, ep.name, err)
		}
	}
	if err != nil {
		if after := ep.Backend.Stats(); after.InFlight != before.InFlight || after.Queued != before.Queued || after.Calls != before.Calls {
			t.Fatalf("B-SUBMIT: refused %s %v on %s consumed capacity: in flight %d→%d, queued %d→%d, calls %d→%d",
				dir, keys, ep.name, before.InFlight, after.InFlight, before.Queued, after.Queued, before.Calls, after.Calls)
		}
		if rerr := ep.Lender.Return(loan); rerr != nil {
			t.Fatalf("lender: returning a refused loan: %v", rerr)
		}
		m.count(func(s *Stats) { s.Refused++ })
		return
	}
	// B-BOUND: admitted only if every batch fits and the unprovable gauge
	// does not exceed its limit.
	cfg := ep.Backend.Config()
	if before.Unprovable > cfg.MaxUnprovable {
		t.Fatalf("B-BOUND: %s admitted %s %v with %d UNPROVABLE calls > MaxUnprovable %d", ep.name, dir, keys, before.Unprovable, cfg.MaxUnprovable)
	}
	if fit := cfg.MaxCallsInFlight + cfg.MaxQueuedCalls; before.InFlight+before.Queued+a.Batches() > fit {
		t.Fatalf("B-BOUND: %s admitted %s %v of %d batches with %d in flight and %d queued > %d",
			ep.name, dir, keys, a.Batches(), before.InFlight, before.Queued, fit)
	}
	if err := ep.Lender.Attach(loan, a); err != nil {
		t.Fatalf("lender: attach: %v", err)
	}
	m.count(func(s *Stats) { s.Admitted++ })
	m.atts = append(m.atts, &tracked{ep: ep, kind: dir.String(), mask: mask, a: a, access: drivers.AccessPending})
}

// content is a publish's object: distinct per publish and row, so every
// published value has its own digest (S-LIN tells writers apart).
func content(seed uint64, publish, row int) []byte {
	g := sim.NewRand(sim.Mix(seed, uint64(publish)<<8|uint64(row)))
	b := make([]byte, slotBytes)
	for i := 0; i < len(b); i += 8 {
		v := g.Uint64()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// cancel cancels an admitted attempt, committed or not (B-CANCEL: only an
// uncommitted one may become Cancelled; a committed one keeps its outcome).
func (m *machine) cancel(t T) {
	tr := pick(t, m.atts, "attempt")
	was := tr.a.Committed()
	before := outcomeKey(tr.a)
	got := tr.a.Cancel()
	switch {
	case was && got:
		t.Fatalf("B-OUTCOME: Cancel of %s attempt %d on %s committed over %s", tr.kind, tr.a.ID(), tr.ep.name, before)
	case was && outcomeKey(tr.a) != before:
		t.Fatalf("B-OUTCOME: Cancel changed %s attempt %d on %s from %s to %s", tr.kind, tr.a.ID(), tr.ep.name, before, outcomeKey(tr.a))
	case !was && tr.a.State() != backend.Cancelled:
		t.Fatalf("B-CANCEL: Cancel of uncommitted %s attempt %d on %s left it %s (Cancel returned %t)", tr.kind, tr.a.ID(), tr.ep.name, outcomeKey(tr.a), got)
	}
}

// deliverable lists the events that may run next: index 0 is the one Step
// would run (it moves the clock); then every other event due now (the
// scheduler's tie-break could have put any of them first) and every queued
// change-callback wake (a callback may come sooner than its drawn delay).
// Timers due later keep their order: a real clock never fires them early.
func (m *machine) deliverable() []sim.EventInfo {
	q := m.rt.Queued()
	if len(q) == 0 {
		return nil
	}
	out := []sim.EventInfo{q[0]}
	for _, e := range q[1:] {
		if e.At == m.rt.Now() || m.rt.wakes[e.Label] {
			out = append(out, e)
		}
	}
	return out
}

// deliver runs one event rapid picks among the deliverable ones; shrinking
// moves the pick towards the scheduler's own order.
func (m *machine) deliver(t T) {
	evs := m.deliverable()
	i := t.IntRange(0, len(evs)-1, "event")
	if i == 0 {
		m.rt.Step()
		return
	}
	m.count(func(s *Stats) { s.Reordered++ })
	if !m.rt.Deliver(evs[i].ID) {
		t.Fatalf("sim: Deliver(%d %q) ran nothing though Queued listed it", evs[i].ID, evs[i].Label)
	}
}

// run steps up to a drawn number of events in the scheduler's order.
func (m *machine) run(t T) {
	n := t.IntRange(1, runBurstSteps, "steps")
	for range n {
		if !m.rt.Step() {
			return
		}
	}
}

// fault changes one fault rate of a live driver (memdriver.SetFault: every
// such fault is legal behaviour) or, on an evicting store, makes a key's
// next FETCH stale.
func (m *machine) fault(t T) {
	ep := pick(t, m.open(), "endpoint")
	names := memdriver.FaultNames()
	if m.evicting {
		names = append(names[:len(names):len(names)], "inject-stale-lookup")
	}
	kind := pick(t, names, "fault")
	if kind == "inject-stale-lookup" {
		ep.drv.InjectStaleLookup(fmt.Sprintf("k%d", t.IntRange(0, machineKeys-1, "key")))
		return
	}
	rate := pick(t, []float64{0, 0.2, 1}, "rate")
	m.count(func(s *Stats) { s.Faults++ })
	if err := ep.drv.SetFault(kind, rate); err != nil {
		t.Fatalf("SetFault(%q, %v): %v", kind, rate, err)
	}
}

func (m *machine) shutdown(t T) {
	m.count(func(s *Stats) { s.MidShutdowns++ })
	m.shutdownEndpoint(pick(t, m.open(), "endpoint"))
}

// count updates the stats, when a test asked for them.
func (m *machine) count(f func(*Stats)) {
	if m.stats != nil {
		f(m.stats)
	}
}

func (m *machine) shutdownEndpoint(ep *endpoint) { ep.Shutdown(nil) }

func outcomeKey(a *backend.Attempt) string {
	o := a.Outcome()
	return fmt.Sprintf("%v served=%v reason=%v", o.State, o.Served, o.Reason)
}

// Check runs after every action: the invariants that must hold at every
// instant, not only at the end.
func (m *machine) Check(t T) {
	for _, tr := range m.atts {
		// B-OUTCOME: committed once, never changed; Delivered serves only
		// asked (masked-in) rows.
		if tr.commit != "" {
			if now := outcomeKey(tr.a); now != tr.commit {
				t.Fatalf("B-OUTCOME: %s attempt %d on %s changed its committed outcome %s to %s", tr.kind, tr.a.ID(), tr.ep.name, tr.commit, now)
			}
		} else if tr.a.Committed() {
			tr.commit = outcomeKey(tr.a)
			if o := tr.a.Outcome(); o.State == backend.Delivered {
				for i, s := range o.Served {
					if s && (i >= len(tr.mask) || !tr.mask[i]) {
						t.Fatalf("B-OUTCOME: %s attempt %d on %s served row %d that was not asked (mask %v)", tr.kind, tr.a.ID(), tr.ep.name, i, tr.mask)
					}
				}
			}
		}
		// B-ACCESS: an attempt's access moves only as D-ACCESS allows
		// (ENDED is final: the lender may already have reused the slots;
		// UNPROVABLE only becomes ENDED). The fail file
		// TestBackendStateMachine-unprovable-to-pending.fail replays the
		// UNPROVABLE → PENDING move this check found in the backend.
		if acc := tr.a.Access(); acc != tr.access {
			if !tr.access.CanBecome(acc) {
				t.Fatalf("B-ACCESS: %s attempt %d on %s went from access %v to %v (D-ACCESS allows UNPROVABLE only to become ENDED)", tr.kind, tr.a.ID(), tr.ep.name, tr.access, acc)
			}
			tr.access = acc
		}
	}
	for _, ep := range m.eps {
		if vs := ep.Lender.Violations(); len(vs) > 0 {
			t.Fatalf("%s: lender/arena: %v", ep.name, vs)
		}
		if vs := ep.Monitor.Violations(); len(vs) > 0 {
			t.Fatalf("%s: contract monitor: %v", ep.name, vs)
		}
		// B-BOUND: the backend's gauges, and an independent count of the
		// calls the monitor saw submitted without access evidence (the
		// monitor learns evidence before the backend does, so this count is
		// never above the backend's).
		st, cfg := ep.Backend.Stats(), ep.Backend.Config()
		if st.InFlight > cfg.MaxCallsInFlight || st.Queued > cfg.MaxQueuedCalls {
			t.Fatalf("B-BOUND: %s has %d calls in flight (max %d) and %d queued (max %d)", ep.name, st.InFlight, cfg.MaxCallsInFlight, st.Queued, cfg.MaxQueuedCalls)
		}
		pending := 0
		for _, c := range ep.Recorder.Calls() {
			if c.Access == drivers.AccessPending {
				pending++
			}
		}
		if pending > cfg.MaxCallsInFlight {
			t.Fatalf("B-BOUND: %s: the driver holds %d calls without access evidence > MaxCallsInFlight %d", ep.name, pending, cfg.MaxCallsInFlight)
		}
	}
}

// finish is the end of every run: stabilize (run what is runnable), shut
// every endpoint down, run to quiescence, then every check of SPEC §5
// through engine.Check — liveness, the contract monitor's end-of-run checks,
// the lender and arenas, the memory oracle, the backend's boundary checks,
// attempt outcomes, and S-LIN over the merged history.
func (m *machine) finish(t T) {
	for i := 0; i < finishSteps && m.rt.Step(); i++ {
	}
	for _, ep := range m.open() {
		m.shutdownEndpoint(ep)
	}
	runErr := m.rt.RunUntilIdle(finishSteps)
	in := engine.CheckInput{
		Stopped: runErr, Finished: runErr == nil, Idle: runErr == nil, ExpectShutdown: true,
		At: m.rt.Now(), Seed: m.seed, StoreModel: model.DurableStore,
	}
	if m.evicting {
		in.StoreModel = model.EvictingStore
	}
	for _, ep := range m.eps {
		in.Endpoints = append(in.Endpoints, ep.Endpoint)
	}
	m.count(func(s *Stats) { s.Steps += int(m.rt.Steps()) })
	for _, tr := range m.atts {
		in.Attempts = append(in.Attempts, engine.Attempt{Endpoint: tr.ep.Endpoint, Label: tr.kind, Attempt: tr.a})
		m.count(func(s *Stats) {
			switch o := tr.a.Outcome(); o.State {
			case backend.Delivered:
				s.Delivered++
				for _, v := range o.Served {
					if v {
						s.Served++
					}
				}
			case backend.Failed:
				s.Failed++
			case backend.Cancelled:
				s.Cancelled++
			}
		})
	}
	res := engine.Check(in)
	var fails []string
	for _, v := range res.Violations {
		fails = append(fails, v.String())
	}
	if res.Lin.Outcome == porcupine.Unknown {
		fails = append(fails, "S-LIN: "+res.Lin.String())
	}
	if len(fails) > 0 {
		t.Fatalf("%d failures at %v:\n  %s", len(fails), in.At, strings.Join(fails, "\n  "))
	}
}
