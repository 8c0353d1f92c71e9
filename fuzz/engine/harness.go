// Package engine is the run function: given an op log (or a seed that
// generates one), it builds the endpoints — lender, driver wrapped in the
// contract monitor, history recorder, backend — on one simulated store, plays
// the workload on the deterministic scheduler to quiescence, and runs every
// check of SPEC §5: linearizability (S-LIN, porcupine), memory safety
// (S-NO-LATE-ACCESS, D-ACCESS-END, D-SUB-6, MISS leaves the slot untouched),
// the contract monitor (D-*), the lender's backend properties (S-RELEASE,
// S-HOLD, S-MARKS), the backend's boundary checks (B-CUT, B-FETCH,
// B-PUBLISH) and liveness.
//
// Two pieces are the project's one copy, used by every caller (the run
// function, scenario files, the conformance suite, the rapid state machine):
//
//   - NewEndpoint (endpoint.go) assembles an endpoint — driver, contract
//     monitor, recorder, the endpoint's oracles, the caller's observers and,
//     with memory, lender and backend — on the simulator or in real time;
//   - Check (check.go) judges a finished run with every oracle and returns
//     one sorted slice of rules.Violation; Verdict classes it.
//
// A further oracle (the reference model of the backend, model/refine) plugs
// in once, in endpointOracles (oracles.go): every endpoint then carries it
// and Check judges it.
//
// A result is a pass or failures classed as harness, safety (and contract)
// or liveness (kept apart, as TigerBeetle does), with the trace hash that
// proves a replay identical. A porcupine timeout is its own verdict, never a
// pass.
//
// RunReal (realmode.go) is the same run function in real time, for real
// drivers over real stores: a seed then replays the workload, not the
// interleaving.
package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/model/lender"
	"github.com/storesim/storesim/sim"
)

// Profile selects the fault mix and the store model of generated runs.
type Profile string

const (
	// Calm: no faults, durable store.
	Calm Profile = "calm"
	// Default: a swarm fault mix per endpoint (memdriver.Swarm); the store
	// is durable in three seeds of four and evicting in the fourth (drawn
	// from the seed), so the main job also meets evictions and stale
	// lookups (present at the lookup, gone at the fetch).
	Default Profile = "default"
	// Evicting: swarm faults on an evicting store, checked against the
	// evicting model.
	Evicting Profile = "evicting"
)

// ErrBadProfile names an unknown profile.
var ErrBadProfile = errors.New("unknown profile")

// ParseProfile reads a profile name.
func ParseProfile(s string) (Profile, error) {
	switch p := Profile(s); p {
	case Calm, Default, Evicting:
		return p, nil
	}
	return "", fmt.Errorf("%w %q (want calm, default or evicting)", ErrBadProfile, s)
}

// Config shapes a run. Zero fields take defaults.
type Config struct {
	Driver  string  // driver of every generated endpoint (default workload.Mixed: memory or together per endpoint)
	Profile Profile // default Default
	Ops     int     // generated ops (default 100)
	// LinTimeout bounds the porcupine check (default 10 s); a timeout is
	// the Unknown verdict.
	LinTimeout time.Duration
	// MaxSteps bounds scheduler events; running out is a liveness failure,
	// a livelock (default DefaultMaxSteps + StepsPerOp per op of the log:
	// 105 000 for 100 ops).
	MaxSteps uint64
	// Factory, when set, builds every endpoint's driver instead of the
	// registry (the conformance suite certifies a driver this way); the
	// endpoint's driver name is passed through.
	Factory Factory
	// Observers, when set, adds monitor observers to an endpoint (the
	// conformance suite counts race pairs on every endpoint's monitor).
	Observers func(endpoint string) []monitor.Observer
	// Command is the program whose command line replays the run: the first
	// word of Repro (default "storesim"; a CLI built on cmd/storesim/cli
	// under another name states its own).
	Command string
	// Sched is the scheduling policy of generated runs (sim.Random by
	// default; sim.PCT with Depth and PCTSteps, 0 for the estimate
	// PCTSteps): Plan writes it into the log's sched section, which is what
	// a run obeys (sched.go).
	Sched    sim.Policy
	Depth    int
	PCTSteps uint64
	// RecordSchedule keeps the run's decisions in Result.Schedule.
	RecordSchedule bool
	// AllNotes keeps Result.Ops, Result.Calls and Result.Notes (the
	// recorders' notes and those of what became of every attempt and loan:
	// the timeline's) for a passing run too; a failing run always has them.
	// The swarm leaves it off: a passing seed then copies and formats none.
	AllNotes bool
	// Lean plays a run without what only its report reads (the recorders'
	// notes, the attempt events); every check still runs. A lean run that
	// does not pass is played again in full, and that result — with its
	// notes — is returned; the two must agree on trace hash and verdict,
	// else the result is a HarnessError saying so. The swarm and the fuzz
	// targets run lean; AllNotes overrides it.
	Lean bool
	// noModel leaves the reference model out: only BenchmarkModelCost
	// sets it, to measure what the model costs.
	noModel bool
	_       struct{}
}

func (c Config) withDefaults() Config {
	if c.Driver == "" {
		c.Driver = workload.Mixed
	}
	if c.Profile == "" {
		c.Profile = Default
	}
	if c.Ops <= 0 {
		c.Ops = 100
	}
	if c.LinTimeout <= 0 {
		c.LinTimeout = 10 * time.Second
	}
	if c.Command == "" {
		c.Command = "storesim"
	}
	return c
}

// Plan generates the op log of a seed.
func Plan(seed uint64, cfg Config) *workload.Log {
	cfg = cfg.withDefaults()
	evicting := cfg.Profile == Evicting ||
		cfg.Profile == Default && sim.NewRand(sim.SubSeed(seed, "profile/store")).Chance(0.25)
	gen := workload.GenConfig{Ops: cfg.Ops, Driver: cfg.Driver, Evicting: evicting}
	if cfg.Profile != Calm {
		gen.Faults = func(seed uint64, endpoint string) []string {
			m := memdriver.Swarm(sim.SubSeed(seed, "faults/"+endpoint))
			// A registration that fails, and whose rollback fails too, leaves
			// regions in doubt (D-TOG-2): rare in the swarm's mix, so one
			// endpoint in ten is given registration trouble on purpose.
			lines := swarmLies(seed, endpoint)
			if reg := sim.NewRand(sim.SubSeed(seed, "faults/registration/"+endpoint)); reg.Chance(0.1) {
				m.TogetherFail, m.RollbackFail = 0.5, 0.8
				// Half the time the driver's shutdown labels are lost too: the
				// backend must then name its regions in doubt itself (B-SHUT).
				if reg.Chance(0.5) {
					lines = append(lines, "fault lie-shutdown-labels rate=1")
				}
			}
			if mix := m.String(); mix != "" {
				lines = append(strings.Split(strings.TrimSpace(mix), "\n"), lines...)
			}
			return lines
		}
	}
	log := workload.Generate(seed, gen)
	log.Sched = cfg.schedSection()
	return log
}

// RunSeed generates the log of seed and runs it.
func RunSeed(seed uint64, cfg Config) *Result { return Run(Plan(seed, cfg), cfg) }

// Run plays a log to quiescence and checks it.
func Run(log *workload.Log, cfg Config) *Result {
	cfg = cfg.withDefaults()
	if cfg.Lean && !cfg.AllNotes {
		lean := play(log, cfg)
		if lean.Verdict == Pass || lean.Verdict == HarnessError && lean.Steps == 0 {
			return lean
		}
		full := cfg
		full.Lean = false
		res := play(log, full)
		if res.TraceHash != lean.TraceHash || res.Verdict != lean.Verdict {
			res.Verdict = HarnessError
			res.Err = fmt.Errorf("%w: the lean run gave %s trace=%016x, the full run %s trace=%016x (a check depends on notes; please report it)",
				ErrLeanMismatch, lean.Verdict, lean.TraceHash, res.Verdict, res.TraceHash)
		}
		return res
	}
	return play(log, cfg)
}

// ErrLeanMismatch: a Lean run and its full replay disagreed (Config.Lean).
var ErrLeanMismatch = errors.New("engine: lean and full runs disagree")

// play is Run without the lean-then-full logic.
func play(log *workload.Log, cfg Config) *Result {
	r := &run{log: log, cfg: cfg, res: &Result{Seed: log.Seed, Log: log, Config: cfg}, maxSteps: cfg.MaxSteps}
	if r.maxSteps == 0 {
		r.maxSteps = defaultMaxSteps(len(log.Ops))
	}
	if err := r.setup(); err != nil {
		var crash *panicError
		if !errors.As(err, &crash) {
			r.res.Verdict, r.res.Err = HarnessError, err
			return r.res
		}
		// backend.New panicked: judged as a run stopped by a backend panic.
		r.res.TraceHash, r.res.Steps, r.res.End = r.s.TraceHash(), r.s.Steps(), r.s.Now()
		r.judge(crash)
		return r.res
	}
	r.schedule()
	err := r.runToIdle()
	r.res.TraceHash, r.res.Steps, r.res.End = r.s.TraceHash(), r.s.Steps(), r.s.Now()
	r.res.Schedule = r.s.Recorded()
	r.judge(err)
	return r.res
}

// SchedOptions derives the scheduler's callback policy from the seed, so
// every seed also explores a different delivery policy. Scenario files
// converted from op logs use it too.
func SchedOptions(seed uint64) sim.Options {
	r := sim.NewRand(sim.SubSeed(seed, "harness/scheduler"))
	delays := []time.Duration{0, 2 * time.Microsecond, 20 * time.Microsecond, 200 * time.Microsecond}
	return sim.Options{
		Seed:           seed,
		MaxWakeDelay:   delays[r.Intn(len(delays))],
		CoalesceChance: []float64{0, 0.2, 0.6}[r.Intn(3)],
	}
}

type run struct {
	log   *workload.Log
	cfg   Config
	res   *Result
	s     *sim.Scheduler // nil in real time (realmode.go)
	rt    sim.Runtime    // s, or the realtime runtime
	store *memdriver.Store
	seq   atomic.Int64
	eps   []*Endpoint
	ops   []*opState
	fill  []byte            // publish content, reused (Lender.Fill copies it)
	view  drivers.View      // the ops' views, reused (Lender.ViewInto)
	found []rules.Violation // what the harness itself found (a lender refusing a loan back)
	// attempts and attemptNotes follow every attempt for the timeline
	// (attempt.go): outcome, access and the lender's release, as notes.
	attempts      map[*backend.Attempt]*attemptSeen
	seen          []attemptSeen // the current chunk the attempts' records live in
	attemptEvents []attemptEvent
	// attemptNotesDropped counts the attempt events beyond model.MaxNotes.
	attemptNotesDropped int
	facts               *probeFacts // what the store did with the probes' keys (probe.go)
	// maxSteps is the run's step cap: Config.MaxSteps, else the default
	// for the log's ops.
	maxSteps uint64
}

type opState struct {
	op      *workload.Op // the log's, read only
	ep      *Endpoint
	attempt *backend.Attempt
	skip    error // why the op was skipped (nil: it was not); formatted only for a report
	r       *run  // Run's receiver: the op's event is its state, no closure
	i       int
}

// Run is the op's scheduled event (sim.Runner).
func (st *opState) Run() { st.r.do(st.i, st) }

func (r *run) setup() error {
	o := SchedFor(r.log)
	o.Record = r.cfg.RecordSchedule
	r.s = sim.New(o)
	// Every op up front, and the events in flight: over 300 seeds of 2, 35
	// and 100 ops at most 15 more, 3 in the median.
	r.s.Reserve(len(r.log.Ops) + 16)
	r.rt = r.s
	store, err := memdriver.NewStore(memdriver.StoreOptions{
		Evicting: r.log.Store == "evicting", EvictChance: EvictChance(r.log.Store),
		Rand: r.s.Rand("harness/store"), OnEvent: r.storeEvent,
	})
	if err != nil {
		return err
	}
	r.store = store
	r.facts = newProbeFacts(store, r.log)
	r.eps = make([]*Endpoint, 0, len(r.log.Endpoints))
	for _, spec := range r.log.Endpoints {
		ep, err := r.endpoint(spec)
		if err != nil {
			return fmt.Errorf("endpoint %s: %w", spec.Name, err)
		}
		r.eps = append(r.eps, ep)
	}
	return nil
}

// EvictChance is the store's eviction probability per stored put in a
// profile's store ("durable" or "evicting").
func EvictChance(store string) float64 {
	if store == "evicting" {
		return 0.05
	}
	return 0
}

func (r *run) storeEvent(e memdriver.StoreEvent) {
	if r.facts != nil {
		r.facts.event(e, r.s.Now())
	}
	if e.Kind != memdriver.EventPut || !e.Stored {
		return
	}
	if ep := r.endpointNamed(e.By.Driver); ep != nil {
		ep.Recorder.Put(r.s.Now(), e.By.Call, e.By.Row, e.Key)
		return
	}
	for _, ep := range r.eps { // a put no endpoint's call names (model.Recorder.UnattributedPut)
		ep.Recorder.UnattributedPut(e.Key)
	}
}

// endpointNamed is the endpoint of that name (the last one declared, should
// a log name one twice), nil if none. A log declares a few: a scan finds one
// sooner than a map's hash, and saves making the map per run.
func (r *run) endpointNamed(name string) *Endpoint {
	for i := len(r.eps) - 1; i >= 0; i-- {
		if r.eps[i].Name == name {
			return r.eps[i]
		}
	}
	return nil
}

// endpoint builds the endpoint a log line declares, on the simulator. An
// error is the log's (ErrBadLog: a bad fault line, region shape, backend
// config, an unknown driver name) unless Config.Factory failed.
func (r *run) endpoint(spec workload.Endpoint) (*Endpoint, error) {
	lies, faults, err := splitLies(spec.Faults)
	if err != nil {
		return nil, fmt.Errorf("%w: endpoint %s: %w", ErrBadLog, spec.Name, err)
	}
	mix, err := memdriver.ParseFaultLines(faults...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadLog, err)
	}
	if len(spec.Regions) == 0 {
		return nil, fmt.Errorf("%w: no regions", ErrBadLog)
	}
	o := r.endpointOptions(spec)
	o.RT, o.Sched, o.Store, o.Faults = r.s, r.s, r.store, mix
	o.Recorder = model.RecorderOptions{Sequence: &r.seq, StoreLogComplete: true, Lookups: true, NoNotes: !r.notes()}
	o.Ops = r.opsOn(spec.Name)
	o.Backend.DrainTimeout = time.Millisecond
	o.Model, o.Lies = !r.cfg.noModel, lies
	if r.notes() { // only reports read what became of the attempts (Config.Lean)
		o.OnAttempt = func(a *backend.Attempt) { r.attemptChanged(spec.Name, a) }
	}
	pr := newProber(r) // the driver probes (probe.go) and their ground truth
	o.probes, o.Monitor.Truth, o.Monitor.Injected = pr, r.facts.truth, pr.injected
	ep, err := NewEndpoint(o)
	if ep != nil {
		pr.ctl, _ = ep.Driver.(faultControl)
	}
	if err != nil && (r.cfg.Factory == nil || !errors.Is(err, ErrDriver)) {
		err = fmt.Errorf("%w: %w", ErrBadLog, err)
	}
	return ep, err
}

// opsOn counts the log's ops on endpoint name: what its recorder, lender
// and model presize for (EndpointOptions.Ops).
func (r *run) opsOn(name string) int {
	n := 0
	for i := range r.log.Ops {
		if r.log.Ops[i].Endpoint == name {
			n++
		}
	}
	return n
}

// endpointOptions is what a log's endpoint line says, in either mode.
func (r *run) endpointOptions(spec workload.Endpoint) EndpointOptions {
	memory := make([]lender.Spec, len(spec.Regions))
	for i, rs := range spec.Regions {
		memory[i] = lender.Spec{Label: rs.Label, Slots: rs.Slots, SlotBytes: rs.SlotBytes}
	}
	var observers []monitor.Observer
	if r.cfg.Observers != nil {
		observers = r.cfg.Observers(spec.Name)
	}
	return EndpointOptions{
		Name: spec.Name, Driver: spec.Driver, New: r.cfg.Factory, Seed: r.log.Seed,
		Caps:      drivers.Capabilities{MaxRowsPerOp: spec.MaxRows, AbsentIsMiss: spec.AbsentIsMiss, CanFetch: spec.Dirs != "publish", CanPublish: spec.Dirs != "fetch", CanCancel: true},
		Observers: observers,
		Memory:    memory,
		Backend:   backend.Config{MaxCallsInFlight: spec.InFlight, MaxQueuedCalls: spec.Queued, MaxUnprovable: spec.Unprovable},
	}
}

func (r *run) schedule() {
	r.ops = make([]*opState, 0, len(r.log.Ops))
	sts := make([]opState, len(r.log.Ops)) // one allocation for every op's state
	for i := range r.log.Ops {
		st := &sts[i] // zero: the fields are set in place, the op copied once
		st.op, st.r, st.i = &r.log.Ops[i], r, i
		st.ep = r.endpointNamed(st.op.Endpoint)
		r.ops = append(r.ops, st)
		r.s.AfterRun(st.op.At, "op", st)
	}
}

// errProbesSimOnly is why a probe op is skipped in real time.
var errProbesSimOnly = errors.New("driver probes run on the simulator only")

func (r *run) do(i int, st *opState) {
	switch st.op.Kind {
	case workload.Publish, workload.Fetch:
		r.submit(i, st)
	case workload.Cancel:
		if t := r.ops[st.op.Target]; t.attempt != nil {
			t.ep.Cancel(t.attempt)
		}
	case workload.Shutdown:
		r.shutdown(st.ep)
	case workload.Probe:
		if st.ep.probes == nil {
			st.skip = errProbesSimOnly
			return
		}
		st.ep.probes.start(i, st)
	case workload.Quiesce:
		var as []*backend.Attempt
		for _, t := range st.op.Targets {
			if a := r.ops[t].attempt; a != nil && r.ops[t].ep == st.ep {
				as = append(as, a)
			}
		}
		if st.ep.Backend != nil && len(as) > 0 {
			st.ep.Quiesce(as...)
		}
	}
}

func (r *run) submit(i int, st *opState) {
	ep := st.ep
	loan, err := ep.Lender.Lend(len(st.op.Keys))
	if err != nil {
		st.skip = err
		return
	}
	if st.op.Kind == workload.Publish {
		for row := range st.op.Keys {
			r.fill = contentInto(r.fill, r.log.Seed, i, row, ep.Regions[0].SlotBytes)
			ep.Lender.Fill(loan, row, r.fill) // Fill copies: r.fill is reused
		}
	}
	v, err := loan.ViewInto(r.view, ep.Backend, st.op.Keys, st.op.Mask)
	if err == nil {
		r.view = v // reused: admission copies what it keeps of a view
	}
	var a *backend.Attempt
	if err == nil && st.op.Bad != "" {
		v = ep.spoil(v, st.op.Bad)
	}
	if err == nil {
		dir := drivers.Fetch
		if st.op.Kind == workload.Publish {
			dir = drivers.Publish
		}
		a, err = ep.Admit(dir, v)
	}
	if err != nil {
		st.skip = err
		if rerr := ep.Lender.Return(loan); rerr != nil {
			r.harness(ep, rerr)
		}
		return
	}
	st.attempt = a
	if err := ep.Lender.Attach(loan, a); err != nil {
		r.harness(ep, err)
	}
	r.attemptAdmitted(i, ep, a, loan)
}

// harness records a failure of the harness itself (the lender refusing what
// the harness asks of it): the run cannot be trusted.
func (r *run) harness(ep *Endpoint, err error) {
	r.found = append(r.found, rules.Violation{Rule: rules.HarnessErr, Class: rules.Harness, Endpoint: ep.Name, Row: -1, At: r.rt.Now(), Seed: r.log.Seed, Detail: err.Error()})
}

// Content is the distinguishable object a publish row writes: a function
// of the seed, the op and the row, so every publish carries its own digest.
// A run's publishes (and a differential run's, fuzz/diff) write it.
func Content(seed uint64, op, row, n int) []byte {
	return contentInto(nil, seed, op, row, n)
}

// contentInto is Content written into buf's storage when it is large enough.
func contentInto(buf []byte, seed uint64, op, row, n int) []byte {
	g := sim.NewRand(sim.Mix(seed, uint64(op)<<20|uint64(row)))
	b := buf[:0]
	if cap(b) < n {
		b = make([]byte, n)
	}
	b = b[:n]
	i := 0
	for ; i+8 <= n; i += 8 { // a word at a time, least significant byte first
		binary.LittleEndian.PutUint64(b[i:], g.Uint64())
	}
	if i < n { // the tail of a size that is not a multiple of 8
		v := g.Uint64()
		for j := range n - i {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func (r *run) shutdown(ep *Endpoint) {
	if !ep.Asked || !ep.Down { // a second op before the first's done ran: the owner asks again
		ep.Shutdown(nil)
	}
}

// retryShutdowns is the owner's retry (SPEC §3: "A later Shutdown retries
// what remains"): at quiescence, every endpoint whose shutdown returned
// labels is shut down once more, since calls may have ended since, and the
// run goes on to quiescence again. It reports whether it asked any.
func (r *run) retryShutdowns() bool {
	asked := false
	for _, ep := range r.eps {
		if ep.Backend == nil || !ep.Down || len(ep.Labels) == 0 || ep.Retried {
			continue
		}
		ep.Retried, ep.Down, asked = true, false, true
		ep.Shutdown(nil)
	}
	return asked
}
