package engine

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/model/lender"
	"github.com/storesim/storesim/model/refine"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

// Factory builds one endpoint's driver: name is the driver's name
// ("memory", "broken:<Name>", or whatever a real store's factory reads),
// env what it runs on. registry.New is the simulator's.
type Factory func(name string, env registry.Env) (drivers.Driver, error)

// EndpointOptions says how to build one endpoint. Everything that differs
// between the simulator and real time, and between the callers — the run
// function, scenario files, the conformance suite, the rapid state machine
// — is an option here; the wiring is NewEndpoint's alone.
type EndpointOptions struct {
	// Name names the endpoint in reports and is the driver's instance name
	// (store events carry it).
	Name string
	// Driver is the driver's name handed to New (default "memory").
	Driver string
	// New builds the driver (nil: registry.New).
	New Factory
	// RT is the runtime everything runs on: the scheduler, or sim/realtime.
	RT sim.Runtime
	// Sched, in a simulated run, is the scheduler behind RT: the endpoint
	// names what it waits on (AddPending), so a hang names it.
	Sched *sim.Scheduler
	// Store is the shared simulated store (nil for a real store).
	Store  *memdriver.Store
	Caps   drivers.Capabilities
	Faults memdriver.FaultMix
	Seed   uint64
	// Ops, when known, is about how many ops the endpoint runs: the
	// recorder, the lender, the backend and the reference model start
	// with room for what that many need (0: for an endpoint of a 100-op
	// run).
	Ops int
	// Recorder configures the history recorder; its Seed is Seed and its
	// Ops Ops.
	Recorder model.RecorderOptions
	// Monitor configures the contract monitor: Truth, Injected, LockProbe,
	// CancelBound, FullSizeMinCalls. Clock, Seed, Ops and Observers are set
	// here.
	Monitor monitor.Options
	// Tune, when set, adjusts Monitor to the driver built, before the
	// monitor wraps it (the conformance suite picks its lock probe and its
	// fault excuses by what the driver is and declares).
	Tune func(d drivers.Driver, mo *monitor.Options)
	// Observers see every boundary event, after the recorder and the
	// endpoint's oracles (a scenario's printer, race-pair counters).
	Observers []monitor.Observer
	// OnTouch sees every touch of the endpoint's memory, after the recorder.
	OnTouch func(arena.Touch)
	// Shared, when set, places the lender's arenas in that shared memory
	// (arena.Options.Shared): a driver process maps them itself.
	Shared *arena.Shared
	// Memory is the lender's regions. Without any, the endpoint has no
	// lender and no backend: the caller drives the monitored driver itself
	// (the conformance suite) and adds its memory with AddArena.
	Memory []lender.Spec
	// Claim, when set, is what the backend is asked to register instead of
	// the lender's regions (a scenario states bad geometry this way).
	Claim func(*lender.Lender) ([]drivers.Region, error)
	// Backend configures the backend; its Name is Name, its OnChange the
	// lender's and its Attempts Ops.
	Backend backend.Config
	// Later: the backend is built by Register, not by NewEndpoint.
	Later bool
	// OnAttempt, when set, sees every attempt change the backend reports
	// (Config.OnChange), after the lender did: the run function notes
	// outcomes, access and the lender's releases for the timeline.
	OnAttempt func(*backend.Attempt)
	// Model, in a simulated run, builds the backend on the reference model's
	// tap (model/refine: B-MODEL, B-PROGRESS); the caller must then admit,
	// cancel and shut down through the Endpoint (Admit, Cancel, Shutdown) and
	// call the model after every scheduler step.
	Model bool
	// Lies, in a simulated run, are contract-breaking answers told to the
	// backend between the monitor and the backend (lies.go).
	Lies Lies
	// probes, in a simulated run, runs the log's driver probes on the
	// endpoint and judges them as one of its oracles (probe.go).
	probes *prober
	_      struct{}
}

// Endpoint is one endpoint of a run: a driver wrapped in the contract
// monitor, with the history recorder, the endpoint's oracles and the
// caller's observers on it; and, with Memory, the lender whose arenas are
// its memory and the backend under test.
type Endpoint struct {
	Name string
	// Driver is the driver as built (unwrapped): fault injection, and a
	// direct shutdown when the backend never shut it down.
	Driver   drivers.Driver
	Monitor  *monitor.Monitor
	Recorder *model.Recorder
	Lender   *lender.Lender   // nil without Memory
	Regions  []drivers.Region // what the backend registers
	// Backend is nil before Register, and when it refused its config or
	// regions (RegErr says why; a backend whose registration failed exists
	// and refuses admission).
	Backend *backend.Backend
	RegErr  error
	// Asked: Shutdown was called. Down: a backend shutdown returned, with
	// Labels.
	Asked, Down bool
	Labels      []string
	// Retried: the owner asked again at quiescence because the shutdown
	// returned labels (run.retryShutdowns).
	Retried bool

	opts    EndpointOptions
	arenas  []*arena.Arena // memory outside the lender (AddArena)
	oracles []Oracle
	probes  *prober // the driver probes (probe.go), nil outside the run function
	// observersInl holds the monitor's usual observers (the recorder and
	// the oracles that watch the boundary) in the endpoint's allocation.
	observersInl [4]monitor.Observer
	// The names of the backend's and the shutdown's waits (AddPending),
	// set with Sched.
	pendingBackend, pendingShutdown string
	// Ref is the backend's reference model (EndpointOptions.Model).
	Ref *refine.Model
}

// EndpointError is an error of NewEndpoint: the part that failed (ErrMemory,
// ErrDriver, ErrBackend) and why.
type EndpointError struct {
	Part, Err error
}

func (e *EndpointError) Error() string   { return e.Part.Error() + ": " + e.Err.Error() }
func (e *EndpointError) Unwrap() []error { return []error{e.Part, e.Err} }

// The parts of an EndpointError.
var (
	// ErrMemory: the lender refused the region specs (or Claim failed).
	ErrMemory = errors.New("memory")
	// ErrDriver: the factory did not build a driver.
	ErrDriver = errors.New("driver")
	// ErrBackend: the backend refused its config or regions.
	ErrBackend = errors.New("backend")
)

// NewEndpoint builds an endpoint: recorder, lender (with Memory; every
// touch of its arenas goes to the recorder, then OnTouch), driver, monitor
// (recorder, the oracles that watch the boundary, then Observers), and —
// unless Later — the backend.
// On an error the returned endpoint is non-nil once its driver exists (so
// the caller can shut the driver down).
func NewEndpoint(o EndpointOptions) (*Endpoint, error) {
	if o.Driver == "" {
		o.Driver = "memory"
	}
	if o.New == nil {
		o.New = registry.New
	}
	ep := &Endpoint{Name: o.Name, opts: o}
	ro := o.Recorder
	ro.Seed, ro.Ops = o.Seed, o.Ops
	ep.Recorder = model.NewRecorder(ro)
	if len(o.Memory) > 0 {
		onTouch := ep.Recorder.OnTouch
		if then := o.OnTouch; then != nil { // not o: a closure over it would move o to the heap
			onTouch = func(t arena.Touch) { ep.Recorder.OnTouch(t); then(t) }
		}
		l, err := lender.NewWithArenas(arena.Options{Clock: o.RT, OnTouch: onTouch, Shared: o.Shared}, o.Memory...)
		if err != nil {
			return nil, &EndpointError{ErrMemory, err}
		}
		if o.Ops > 0 {
			l.Reserve(o.Ops)
		}
		// One view in three spans the regions: first-fit alone keeps a view
		// in one region until it runs out, and a batch mixing regions (and
		// their slot sizes) is what per-row accounting gets wrong.
		l.SpreadEvery(3)
		ep.Lender, ep.Regions = l, l.Regions()
		if o.Claim != nil {
			if ep.Regions, err = o.Claim(l); err != nil {
				return nil, &EndpointError{ErrMemory, err}
			}
		}
	}
	d, err := safeNew(o.New, o.Driver, registry.Env{RT: o.RT, Store: o.Store, Name: o.Name, Caps: o.Caps, Faults: o.Faults})
	if err != nil {
		return nil, &EndpointError{ErrDriver, err}
	}
	ep.Driver = d
	if r, ok := d.(interface{ Reserve(ops int) }); ok && o.Ops > 0 {
		r.Reserve(o.Ops) // memdriver: its records' first chunks
	}
	if o.Sched != nil {
		var pendingDriver string
		pendingDriver, ep.pendingBackend, ep.pendingShutdown = pendingNames(o.Name)
		if p, ok := d.(interface{ PendingCalls() []string }); ok {
			o.Sched.AddPending(pendingDriver, p.PendingCalls)
		}
	}
	ep.oracles = endpointOracles(ep)
	mo := o.Monitor
	if o.Tune != nil {
		tuned := mo // escapes (Tune is a func value): only when there is one
		o.Tune(d, &tuned)
		mo = tuned
	}
	mo.Clock, mo.Seed, mo.Ops = o.RT, o.Seed, o.Ops
	mo.Observers = ep.observersInl[:0]
	if n := 1 + len(ep.oracles) + len(o.Observers); n > len(ep.observersInl) {
		mo.Observers = make([]monitor.Observer, 0, n)
	}
	mo.Observers = append(mo.Observers, ep.Recorder)
	for _, or := range ep.oracles {
		if _, blind := or.(blindOracle); !blind {
			mo.Observers = append(mo.Observers, or)
		}
	}
	mo.Observers = append(mo.Observers, o.Observers...)
	ep.Monitor = monitor.Wrap(d, mo)
	if ep.Lender == nil || o.Later {
		return ep, nil
	}
	return ep, ep.Register()
}

// safeNew turns a panicking factory into an error (bad input never panics
// the harness) and refuses a factory that returns no driver.
func safeNew(f Factory, name string, env registry.Env) (d drivers.Driver, err error) {
	defer func() {
		if p := recover(); p != nil {
			d, err = nil, fmt.Errorf("driver factory panicked: %v", p)
		}
	}()
	d, err = f(name, env)
	if err == nil && d == nil {
		err = errors.New("driver factory returned no driver")
	}
	return d, err
}

// Register builds the backend on the monitored driver, which validates and
// registers Regions. A refused config or geometry leaves Backend nil; a
// failed registration leaves a backend that refuses admission. Either way
// the error is RegErr; Register returns it (as an EndpointError) only when
// there is no backend.
func (ep *Endpoint) Register() error {
	cfg := ep.opts.Backend
	cfg.Name, cfg.Attempts = ep.Name, ep.opts.Ops
	d := ep.Monitor.Driver()
	if ep.opts.Lies.any() && ep.opts.Sched != nil {
		d = newLiar(d, ep.opts.Lies, sim.NewRand(sim.SubSeed(ep.opts.Seed, "liar/"+ep.Name)))
	}
	var ref *refine.Model
	if ep.opts.Model && ep.opts.Sched != nil {
		ep.Ref = refine.New(refine.Config{Endpoint: ep.Name, Clock: ep.opts.RT, Seed: ep.opts.Seed, Attempts: ep.opts.Ops})
		d, ref = ep.Ref.Wrap(d), ep.Ref
	}
	// One hook (one closure) tells the model, then the lender, then the
	// caller.
	l, then := ep.Lender, ep.opts.OnAttempt
	owner := impatientOwner(ep.opts)
	cfg.OnChange = func(a *backend.Attempt) {
		if ref != nil {
			ref.Notified(a)
		}
		l.OnChange(a)
		if then != nil {
			then(a)
		}
		if owner != nil && a.State() == backend.Pending && (a.Access() == drivers.AccessUnprovable || owner.Chance(0.05)) {
			ep.Cancel(a) // from inside the notification: the backend is re-entered while it reports
		}
	}
	var crash *panicError
	func() {
		defer func() {
			if p := recover(); p != nil { // the backend's bug: the seed fails (B-SUBMIT), the swarm goes on
				crash = &panicError{value: p, where: panicSite(string(debug.Stack()))}
			}
		}()
		ep.Backend, ep.RegErr = backend.New(ep.opts.RT, d, ep.Regions, cfg)
	}()
	if crash != nil {
		ep.Backend = nil
		return &EndpointError{ErrBackend, crash}
	}
	if ep.Backend == nil {
		return &EndpointError{ErrBackend, ep.RegErr}
	}
	if ep.Ref != nil {
		ep.Ref.SetBackend(ep.Backend.Capabilities(), cfg, ep.Backend.Config(), ep.Backend.Stats)
	}
	if s := ep.opts.Sched; s != nil {
		s.AddPending(ep.pendingBackend, ep.Backend.Pending)
		s.AddPending(ep.pendingShutdown, func() []string {
			if ep.Asked && !ep.Down {
				return []string{"shutdown has not returned"}
			}
			return nil
		})
	}
	return nil
}

// pendingNames are the names of an endpoint's waits in a hang report
// (Scheduler.AddPending): "<name>/driver", "/backend" and "/shutdown", cut
// from one string.
func pendingNames(name string) (driver, backend, shutdown string) {
	s := name + "/driver" + name + "/backend" + name + "/shutdown"
	d, b := len(name)+len("/driver"), len(name)+len("/backend")
	return s[:d], s[d : d+b], s[d+b:]
}

// Shutdown shuts the backend down. When it returns its labels, the
// endpoint is Down, the lender is told (S-HOLD), then then runs (if set).
// Every call asks again (backend shutdown is idempotent); a caller that
// wants one shutdown checks Asked first.
func (ep *Endpoint) Shutdown(then func(labels []string)) {
	ep.Asked = true
	ask := 0
	if ep.Ref != nil {
		ask = ep.Ref.ShutdownAsked()
	}
	ep.Backend.Shutdown(func(labels []string) {
		ep.Down, ep.Labels = true, labels
		if ep.Ref != nil {
			ep.Ref.ShutdownReturned(ask, labels)
			ep.Ref.HandlesAfterShutdown(ep.Backend.Handle)
		}
		ep.Lender.ShutdownReturned(labels)
		if then != nil {
			then(labels)
		}
	})
}

// AddArena adds memory outside the lender (registered by the caller with
// the monitored driver) to what the memory oracle judges.
func (ep *Endpoint) AddArena(a *arena.Arena) {
	if ep.arenas == nil {
		ep.arenas = make([]*arena.Arena, 0, 8) // a run's probes add several: not through append's 1, 2, 4
	}
	ep.arenas = append(ep.arenas, a)
}

// Arenas is the endpoint's memory: what AddArena added, then the lender's.
func (ep *Endpoint) Arenas() []*arena.Arena {
	var lent []*arena.Arena // a copy already
	if ep.Lender != nil {
		lent = ep.Lender.Arenas()
	}
	if len(ep.arenas) == 0 {
		return lent
	}
	return append(append(make([]*arena.Arena, 0, len(ep.arenas)+len(lent)), ep.arenas...), lent...)
}

// impatientOwner is the stream of an endpoint whose owner gives up on an
// attempt from inside its OnChange report — at once when its access turns
// UNPROVABLE, now and then on any report of a Pending one — so the backend
// is re-entered while it reports (one simulated endpoint in four, drawn
// from the seed; nil for the others). Nothing forbids an owner to call the
// backend back from OnChange, and a report made while the backend reports
// must not be lost.
func impatientOwner(o EndpointOptions) *sim.Rand {
	if o.Sched == nil || !o.Model {
		return nil
	}
	r := sim.NewRand(sim.SubSeed(o.Seed, "owner/"+o.Name))
	if !r.Chance(0.25) {
		return nil
	}
	return r
}
