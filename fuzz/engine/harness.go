// Package engine is the run function: given an op log (or a seed that
// generates one), it builds the endpoints — lender, driver wrapped in the
// contract monitor, history recorder, backend — on one simulated store, plays
// the workload on the deterministic scheduler to quiescence, and runs every
// check of SPEC §5: linearizability (S-LIN, porcupine), memory safety
// (S-NO-LATE-ACCESS, D-ACCESS-END, D-SUB-6, MISS leaves the slot untouched),
// the contract monitor (D-*), the lender's backend properties (S-RELEASE,
// S-HOLD, S-MARKS) and liveness.
//
// A result is a pass or failures classed as safety or liveness (kept apart,
// as TigerBeetle does), with the trace hash that proves a replay identical.
// A porcupine timeout is its own verdict, never a pass.
//
// RunReal (realmode.go) is the same run function in real time, for real
// drivers over real stores: a seed then replays the workload, not the
// interleaving.
package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/model/lender"
	"github.com/storesim/storesim/model/refine"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

// Profile selects the fault mix and the store model of generated runs.
type Profile string

const (
	// Calm: no faults, durable store.
	Calm Profile = "calm"
	// Default: a swarm fault mix per endpoint (memdriver.Swarm), durable store.
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
	// MaxSteps bounds scheduler events; running out is a liveness failure
	// (default 5 000 000).
	MaxSteps uint64
	// Factory, when set, builds every endpoint's driver instead of the
	// registry (the conformance suite certifies a driver this way); the
	// endpoint's driver name is passed through.
	Factory func(name string, env registry.Env) (drivers.Driver, error)
	// Observers, when set, adds monitor observers to an endpoint (see observers.go).
	Observers func(endpoint string) []monitor.Observer
	_         struct{}
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
	if c.MaxSteps == 0 {
		c.MaxSteps = 5_000_000
	}
	return c
}

// Plan generates the op log of a seed.
func Plan(seed uint64, cfg Config) *workload.Log {
	cfg = cfg.withDefaults()
	gen := workload.GenConfig{Ops: cfg.Ops, Driver: cfg.Driver, Evicting: cfg.Profile == Evicting}
	if cfg.Profile != Calm {
		gen.Faults = func(seed uint64, endpoint string) []string {
			m := memdriver.Swarm(sim.SubSeed(seed, "faults/"+endpoint))
			// A registration that fails, and whose rollback fails too, leaves
			// regions in doubt (D-TOG-2): rare in the swarm's mix, so one
			// endpoint in ten is given registration trouble on purpose.
			if sim.NewRand(sim.SubSeed(seed, "faults/registration/"+endpoint)).Chance(0.1) {
				m.TogetherFail, m.RollbackFail = 0.5, 0.8
			}
			mix := m.String()
			if mix == "" {
				return nil
			}
			return strings.Split(strings.TrimSpace(mix), "\n")
		}
	}
	return workload.Generate(seed, gen)
}

// RunSeed generates the log of seed and runs it.
func RunSeed(seed uint64, cfg Config) *Result { return Run(Plan(seed, cfg), cfg) }

// Run plays a log to quiescence and checks it.
func Run(log *workload.Log, cfg Config) *Result {
	cfg = cfg.withDefaults()
	r := &run{log: log, cfg: cfg, res: &Result{Seed: log.Seed, Log: log, Config: cfg}}
	if err := r.setup(); err != nil {
		r.res.Verdict, r.res.Err = HarnessError, err
		return r.res
	}
	r.schedule()
	err := r.runToIdle()
	r.res.TraceHash, r.res.Steps, r.res.End = r.s.TraceHash(), r.s.Steps(), r.s.Now()
	r.check(err)
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
	clock sim.Clock      // s, or the realtime runtime: what the shared code stamps with
	store *memdriver.Store
	seq   atomic.Int64
	eps   []*endpoint
	byEp  map[string]*endpoint
	ops   []*opState
}

type endpoint struct {
	spec   workload.Endpoint
	lender *lender.Lender
	rec    *model.Recorder
	mon    *monitor.Monitor
	check  *backendCheck
	ref    *refine.Model // the backend's reference model (simulator only)
	b      *backend.Backend
	regErr error
	down   bool // Shutdown returned
	asked  bool // Shutdown called
	labels []string
}

type opState struct {
	op      workload.Op
	ep      *endpoint
	attempt *backend.Attempt
	skipped string
}

func (r *run) setup() error {
	r.s = sim.New(SchedOptions(r.log.Seed))
	r.clock = r.s
	store, err := memdriver.NewStore(memdriver.StoreOptions{
		Evicting: r.log.Store == "evicting", EvictChance: EvictChance(r.log.Store),
		Rand: r.s.Rand("harness/store"), OnEvent: r.storeEvent,
	})
	if err != nil {
		return err
	}
	r.store, r.byEp = store, map[string]*endpoint{}
	for _, spec := range r.log.Endpoints {
		ep, err := r.endpoint(spec)
		if err != nil {
			return fmt.Errorf("endpoint %s: %w", spec.Name, err)
		}
		r.eps = append(r.eps, ep)
		r.byEp[spec.Name] = ep
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
	if e.Kind != memdriver.EventPut || !e.Stored {
		return
	}
	if ep := r.byEp[e.By.Driver]; ep != nil {
		ep.rec.Put(r.s.Now(), e.By.Call, e.By.Row, e.Key)
	}
}

func (r *run) endpoint(spec workload.Endpoint) (*endpoint, error) {
	ep := &endpoint{spec: spec}
	ep.rec = model.NewRecorder(model.RecorderOptions{Seed: r.log.Seed, Sequence: &r.seq, StoreLogComplete: true, Lookups: true})
	specs := make([]lender.Spec, len(spec.Regions))
	for i, rs := range spec.Regions {
		specs[i] = lender.Spec{Label: rs.Label, Slots: rs.Slots, SlotBytes: rs.SlotBytes}
	}
	var err error
	if ep.lender, err = lender.NewWithArenas(arena.Options{Clock: r.s, OnTouch: ep.rec.OnTouch}, specs...); err != nil {
		return nil, err
	}
	mix, err := memdriver.ParseFaultMix(strings.Join(spec.Faults, "\n"))
	if err != nil {
		return nil, err
	}
	caps := drivers.Capabilities{MaxRowsPerOp: spec.MaxRows, AbsentIsMiss: spec.AbsentIsMiss, CanFetch: true, CanPublish: true, CanCancel: true}
	newDriver := registry.New
	if r.cfg.Factory != nil {
		newDriver = r.cfg.Factory
	}
	d, err := newDriver(spec.Driver, registry.Env{RT: r.s, Store: r.store, Name: spec.Name, Caps: caps, Faults: mix})
	if err != nil {
		return nil, err
	}
	if p, ok := d.(interface{ PendingCalls() []string }); ok {
		r.s.AddPending(spec.Name+"/driver", p.PendingCalls)
	}
	ep.check = newBackendCheck(r, ep)
	ep.mon = monitor.Wrap(d, monitor.Options{Clock: r.s, Seed: r.log.Seed, Observers: append([]monitor.Observer{ep.rec, ep.check}, r.cfg.observers(spec.Name)...)})
	ep.ref = refine.New(refine.Config{Endpoint: spec.Name, Clock: r.s, Seed: r.log.Seed})
	ep.b, ep.regErr = backend.New(r.s, ep.ref.Wrap(ep.mon.Driver()), ep.lender.Regions(), backend.Config{
		Name: spec.Name, MaxCallsInFlight: spec.InFlight, MaxQueuedCalls: spec.Queued,
		MaxUnprovable: spec.Unprovable, DrainTimeout: time.Millisecond, OnChange: ep.lender.OnChange,
	})
	if ep.b == nil {
		return nil, ep.regErr
	}
	ep.ref.SetBackend(ep.b.Capabilities(), ep.b.Config(), ep.b.Stats)
	r.s.AddPending(spec.Name+"/backend", ep.b.Pending)
	r.s.AddPending(spec.Name+"/shutdown", func() []string {
		if ep.asked && !ep.down {
			return []string{"shutdown has not returned"}
		}
		return nil
	})
	return ep, nil
}

func (r *run) schedule() {
	for i, op := range r.log.Ops {
		st := &opState{op: op, ep: r.byEp[op.Endpoint]}
		r.ops = append(r.ops, st)
		r.s.After(op.At, "op", func() { r.do(i, st) })
	}
}

func (r *run) do(i int, st *opState) {
	switch st.op.Kind {
	case workload.Publish, workload.Fetch:
		r.submit(i, st)
	case workload.Cancel:
		if t := r.ops[st.op.Target]; t.attempt != nil {
			t.ep.refCancel(t.attempt)
		}
	case workload.Shutdown:
		r.shutdown(st.ep)
	}
}

func (r *run) submit(i int, st *opState) {
	ep := st.ep
	loan, err := ep.lender.Lend(len(st.op.Keys))
	if err != nil {
		st.skipped = err.Error()
		return
	}
	if st.op.Kind == workload.Publish {
		for row := range st.op.Keys {
			ep.lender.Fill(loan, row, content(r.log.Seed, i, row, ep.spec.Regions[0].SlotBytes))
		}
	}
	ep.check.lend(loan, st)
	v, err := loan.View(ep.b, st.op.Keys, st.op.Mask)
	var a *backend.Attempt
	if err == nil {
		dir := drivers.Fetch
		if st.op.Kind == workload.Publish {
			dir = drivers.Publish
		}
		a, err = ep.admit(dir, v)
	}
	if err != nil {
		st.skipped = err.Error()
		if rerr := ep.lender.Return(loan); rerr != nil {
			r.res.add(ep.spec.Name, model.Violation{Rule: "harness", Class: model.Safety, Row: -1, At: r.clock.Now(), Seed: r.log.Seed, Detail: rerr.Error()})
		}
		return
	}
	st.attempt = a
	if err := ep.lender.Attach(loan, a); err != nil {
		r.res.add(ep.spec.Name, model.Violation{Rule: "harness", Class: model.Safety, Row: -1, At: r.clock.Now(), Seed: r.log.Seed, Detail: err.Error()})
	}
}

// content is the distinguishable object a publish writes: a function of the
// seed, the op and the row, so every publish carries its own digest.
func content(seed uint64, op, row, n int) []byte {
	g := sim.NewRand(sim.Mix(seed, uint64(op)<<20|uint64(row)))
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := g.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func (r *run) shutdown(ep *endpoint) {
	if ep.asked {
		return
	}
	ep.asked = true
	if ep.ref != nil {
		ep.ref.ShutdownAsked()
	}
	ep.b.Shutdown(func(labels []string) {
		ep.down, ep.labels = true, labels
		if ep.ref != nil {
			ep.ref.ShutdownReturned(labels)
		}
		ep.lender.ShutdownReturned(labels)
	})
}

// ctx is the context the harness hands to blocking driver calls; the
// simulated drivers answer at once.
var ctx = context.Background()
