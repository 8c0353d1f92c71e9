package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/sim"
)

// genFlags are the flags that shape generated runs (run, replay --seed,
// shrink --seed).
type genFlags struct {
	app             *app // the CLI's name and drivers
	fs              *flag.FlagSet
	driver, profile string
	ops             int
	maxSteps        uint64
	linTimeout      time.Duration
	sched           string
	depth           int
	pctSteps        uint64
}

// driverFactory, when set, builds every endpoint's driver instead of the
// registry. It is a seam for this package's tests (planted failures), never
// set by the command itself.
var driverFactory func(name string, env registry.Env) (drivers.Driver, error)

func (g *genFlags) register(fs *flag.FlagSet) {
	g.fs = fs
	fs.StringVar(&g.driver, "driver", workload.Mixed, "driver of every endpoint (see storesim drivers); mixed draws memory or together per endpoint from the seed")
	fs.StringVar(&g.profile, "profile", string(engine.Default), "fault profile: calm (no faults), default (a swarm fault mix per seed; an evicting store in one seed of four), evicting (swarm faults on an evicting store)")
	fs.IntVar(&g.ops, "ops", 100, "generated ops per seed")
	fs.Uint64Var(&g.maxSteps, "max-steps", 0, "scheduler events per run before it counts as a livelock, a liveness failure (default 100000 + 50 per op: 105000 for 100 ops)")
	fs.DurationVar(&g.linTimeout, "lin-timeout", 0, "porcupine time limit per run; a timeout is the verdict unknown (default 10s)")
	fs.StringVar(&g.sched, "sched", "random", "scheduling policy of generated runs: random (seeded tie-breaks and callback delays) or pct (probabilistic concurrency testing: random priorities per event source, --depth - 1 priority change points; docs/PCT.md)")
	fs.IntVar(&g.depth, "depth", 3, fmt.Sprintf("--sched pct: the bug depth d aimed at, 1 to %d (d - 1 change points)", workload.MaxDepth))
	fs.Uint64Var(&g.pctSteps, "pct-steps", 0, fmt.Sprintf("--sched pct: the k steps the change points are drawn over (default %d × ops)", engine.PCTStepsPerOp))
}

// schedConfig validates --sched, --depth and --pct-steps into c.
func (g *genFlags) schedConfig(c *engine.Config, fs *flag.FlagSet) error {
	p, err := sim.ParsePolicy(g.sched)
	switch {
	case err != nil:
		return usagef("--sched: %v", err)
	case p != sim.PCT && (wasSet(fs, "depth") || wasSet(fs, "pct-steps")):
		return usagef("--depth and --pct-steps shape PCT schedules: give them with --sched pct")
	case g.depth < 1 || g.depth > workload.MaxDepth:
		return usagef("--depth %d: want 1 to %d", g.depth, workload.MaxDepth)
	case g.pctSteps > 1<<30:
		return usagef("--pct-steps %d: want at most %d", g.pctSteps, 1<<30)
	}
	if p == sim.PCT {
		c.Sched, c.Depth, c.PCTSteps = p, g.depth, g.pctSteps
	}
	return nil
}

// config validates the flags into a harness config.
func (g *genFlags) config() (engine.Config, error) {
	p, err := engine.ParseProfile(g.profile)
	if err != nil {
		return engine.Config{}, usagef("--profile: %v", err)
	}
	if g.ops <= 0 || g.ops > workload.MaxOps {
		return engine.Config{}, usagef("--ops %d: want a positive number of ops, at most %d (%s)", g.ops, workload.MaxOps, workload.LimitsDoc)
	}
	if err := g.app.checkDriver(g.driver); err != nil {
		return engine.Config{}, err
	}
	if g.linTimeout < 0 {
		return engine.Config{}, usagef("--lin-timeout %v: want a positive duration", g.linTimeout)
	}
	c := engine.Config{Driver: g.driver, Profile: p, Ops: g.ops}
	if err := g.schedConfig(&c, g.fs); err != nil {
		return engine.Config{}, err
	}
	return g.runConfig(c), nil
}

// runConfig adds the flags that apply to any run, generated or from a file,
// and the app's drivers and name.
func (g *genFlags) runConfig(c engine.Config) engine.Config {
	c.MaxSteps, c.LinTimeout, c.Factory, c.Command = g.maxSteps, g.linTimeout, g.app.factory(), g.app.name
	return c
}

// realFlags are run's flags for a real store (--driver redis://HOST:PORT or
// memcached://HOST:PORT).
// The run is then engine.RunReal: the seed's workload in real time against
// its driver, one seed after another unless --workers says otherwise
// (each seed has its own key prefix, so parallel seeds never see each
// other's keys; they only skew each other's timing).
type realFlags struct {
	addr, url string // host:port and the --driver URL; "" for simulated drivers
	stretch   float64
	wait      time.Duration

	// lost is set once the store stopped answering (outage.go): the swarm
	// stops, and the run is "store unreachable" (exit 2) rather than a
	// verdict on the seeds the outage failed.
	lost    atomic.Pointer[string]
	stopRun context.CancelFunc
}

func (f *realFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&f.stretch, "stretch", 0, fmt.Sprintf("redis:// and memcached:// only: issue each op at STRETCH × its virtual time (default %d; 1 is the most concurrent, and most attempts are then cancelled by the closing shutdowns)", engine.DefaultStretch))
	fs.DurationVar(&f.wait, "wait", 0, "redis:// and memcached:// only: how long after the last op every endpoint's shutdown may take; longer is a liveness failure (default 10s)")
}

// refuse rejects the real-time flags for a simulated driver.
func (f *realFlags) refuse(fs *flag.FlagSet) error {
	if wasSet(fs, "stretch") || wasSet(fs, "wait") {
		return errRealOnly("--stretch and --wait")
	}
	return nil
}

// config validates the flags of a real-time run into a harness config.
func (f *realFlags) config(g *genFlags, fs *flag.FlagSet) (engine.Config, error) {
	addr, err := parseRealURL(g.driver)
	if err != nil {
		return engine.Config{}, err
	}
	p, err := engine.ParseProfile(g.profile)
	switch {
	case err != nil:
		return engine.Config{}, usagef("--profile: %v", err)
	case g.ops <= 0 || g.ops > workload.MaxOps:
		return engine.Config{}, usagef("--ops %d: want a positive number of ops, at most %d (%s)", g.ops, workload.MaxOps, workload.LimitsDoc)
	case g.linTimeout < 0:
		return engine.Config{}, usagef("--lin-timeout %v: want a positive duration", g.linTimeout)
	case wasSet(fs, "max-steps"):
		return engine.Config{}, usagef("--max-steps: %s runs in real time, without scheduler steps (bound it with --wait)", g.driver)
	case wasSet(fs, "sched") || wasSet(fs, "depth") || wasSet(fs, "pct-steps"):
		return engine.Config{}, usagef("--sched, --depth, --pct-steps: %s runs in real time, where no scheduler decides the interleaving", g.driver)
	case f.stretch < 0 || f.stretch != f.stretch:
		return engine.Config{}, usagef("--stretch %g: want a positive factor", f.stretch)
	case f.wait < 0:
		return engine.Config{}, usagef("--wait %v: want a positive duration", f.wait)
	}
	f.addr, f.url = addr, g.driver
	// An exec: driver's name has spaces: quoted, the repro lines replay it.
	return engine.Config{Driver: shellQuote(g.driver), Profile: p, Ops: g.ops, LinTimeout: g.linTimeout, Command: g.app.name}, nil
}

// ping connects once, so an unreachable server is one error line (exit 2)
// rather than a harness error per seed.
func (f *realFlags) ping() error {
	d, err := newRealDriver(f.url, f.addr, "", drivers.Capabilities{})
	if err != nil {
		return fmt.Errorf("%s: %w", f.url, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.Shutdown(ctx)
	return nil
}

func (f *realFlags) effectiveStretch() float64 {
	if f.stretch == 0 {
		return engine.DefaultStretch
	}
	return f.stretch
}

// rd is the real store's driver of one seed's run: every endpoint's driver on a
// fresh key prefix (storesim-run/<seed>/<nanotime>/) with the endpoint's
// capabilities, and a cleanup that deletes the prefix's keys.
func (f *realFlags) rd(seed uint64) engine.RealDriver {
	addr, url := f.addr, f.url
	prefix := fmt.Sprintf("storesim-run/%d/%d/", seed, time.Now().UnixNano())
	if isExec(url) {
		// A process per endpoint, its store its own: nothing to flush. An
		// incident of a process (it died, hung, flooded or wrote garbage)
		// is the seed's cleanup error, once each.
		// The run's processes share one store: the scratch directory.
		var in execIncidents
		scratch, err := os.MkdirTemp("", "storesim-run-scratch-")
		return engine.RealDriver{
			Name: shellQuote(f.url), Stretch: f.stretch, Wait: f.wait,
			SharedMemory: true, // the processes map the lender's arenas themselves
			New: func(_ string, env registry.Env) (drivers.Driver, error) {
				if err != nil {
					return nil, err
				}
				return newExecDriver(addr, prefix, scratch, env.Caps, in.add)
			},
			Cleanup: func(context.Context) error {
				if scratch != "" {
					os.RemoveAll(scratch)
				}
				return in.err()
			},
		}
	}
	return engine.RealDriver{
		Name: f.url, Stretch: f.stretch, Wait: f.wait,
		New: func(_ string, env registry.Env) (drivers.Driver, error) {
			return newRealDriver(url, addr, prefix, env.Caps)
		},
		Cleanup: func(ctx context.Context) error {
			// A store that stopped answering would hold the admin client's
			// handshake up for its own dial timeouts: ask once, bounded.
			if err := storePing(ctx, url, addr); err != nil {
				return fmt.Errorf("store unreachable: %w", err)
			}
			admin, err := newRealDriver(url, addr, prefix, drivers.Capabilities{})
			if err != nil {
				return err
			}
			defer admin.Shutdown(ctx)
			return admin.Flush(ctx)
		},
	}
}

type runOpts struct {
	gen         genFlags
	cfg         engine.Config
	real        realFlags // a redis:// or memcached:// driver: the run is in real time
	seeds       seedSpec
	shard       shard
	budget      time.Duration
	workers     int
	json        bool
	out         string
	determinism bool
	verbose     bool
	quiet       bool
	base        uint64 // random seeds derive from it
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o runOpts
	o.gen.app = appOf(ctx)
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	o.gen.register(fs)
	seeds := fs.String("seeds", "0:1000", "seeds to run: START:COUNT, or random (fresh seeds until --budget ends)")
	shardFlag := fs.String("shard", "0/1", "run part I of N (0-based) of the seed range; N machines with I = 0…N-1 cover it exactly once")
	fs.DurationVar(&o.budget, "budget", 0, "stop starting seeds after this long (default 10m with --seeds random, none otherwise)")
	fs.IntVar(&o.workers, "workers", runtime.GOMAXPROCS(0), "seeds run in parallel (results and output do not depend on it; redis:// and memcached:// runs default to 1)")
	fs.BoolVar(&o.json, "json", false, "JSON Lines on stdout: one record per seed, then a summary record")
	fs.StringVar(&o.out, "out", "", "write one folder per failing seed here (oplog.txt, report.txt, timeline.html, porcupine.html, repro.txt); created now, refused when it is a file")
	fs.BoolVar(&o.determinism, "check-determinism", false, "run every seed twice; any trace-hash difference fails (exit 1)")
	fs.BoolVar(&o.verbose, "v", false, "print a line for every seed, not only failing ones")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar on the terminal (it is drawn only when stderr is a terminal anyway)")
	o.real.register(fs)
	pos, err := parseFlags(fs, args, stdout)
	if err == nil && len(pos) > 0 {
		err = usagef("unexpected argument %q (run takes only flags)", pos[0])
	}
	if err == nil {
		if isRealStore(o.gen.driver) {
			o.cfg, err = o.real.config(&o.gen, fs)
		} else if err = o.real.refuse(fs); err == nil {
			o.cfg, err = o.gen.config()
		}
	}
	if err == nil {
		o.seeds, err = parseSeeds(*seeds)
	}
	if err == nil {
		o.shard, err = parseShard(*shardFlag)
	}
	switch {
	case err != nil:
	case o.seeds.random && o.shard.n > 1:
		err = usagef("--shard splits a seed range; random seeds need none (every machine draws its own)")
	case o.workers < 1:
		err = usagef("--workers %d: want at least 1", o.workers)
	case o.budget < 0:
		err = usagef("--budget %v: want a positive duration", o.budget)
	case o.real.addr != "" && o.determinism:
		err = usagef("--check-determinism: %s runs in real time, where a seed replays the workload, not the interleaving: there is no trace hash to compare", o.gen.driver)
	}
	if err == nil {
		err = prepareOutDir("--out", o.out)
	}
	if err != nil {
		return flagErr("run", err, stderr)
	}
	if o.real.addr != "" {
		if !wasSet(fs, "workers") {
			o.workers = 1 // real waits: parallel runs would only skew each other's timing
		}
		if err := o.real.ping(); err != nil {
			return inputErr("run", err, stderr)
		}
	}
	if o.seeds.random {
		if o.budget == 0 {
			o.budget = 10 * time.Minute
		}
		// The CLI is outside the simulated core: a wall-clock base is fine
		// here, and every seed drawn from it is printed, so each replays.
		o.base = uint64(time.Now().UnixNano())
	}
	return o.swarm(ctx, stdout, stderr)
}

// outcome is one seed's result (and its second run with
// --check-determinism); no result: the seed was not run (the store was
// lost before it started).
type outcome struct {
	res    *engine.Result
	second *engine.Result
}

func (oc outcome) mismatch() bool {
	return oc.second != nil && (oc.second.TraceHash != oc.res.TraceHash || oc.second.Verdict != oc.res.Verdict || oc.second.Rule() != oc.res.Rule())
}

type job struct {
	seed uint64
	out  chan outcome
}

// swarm runs the seeds on a worker pool and emits the outcomes in seed
// order: a bounded queue of result channels keeps order and memory bounded
// whatever the number of workers.
func (o *runOpts) swarm(ctx context.Context, stdout, stderr io.Writer) int {
	if o.budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.budget)
		defer cancel()
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	o.real.stopRun = stop
	src := newSeedSource(o.seeds, o.shard, o.base)
	fmt.Fprintf(stderr, "storesim run: driver=%s profile=%s ops=%d seeds=%s", o.cfg.Driver, o.cfg.Profile, o.cfg.Ops, o.seeds)
	if o.cfg.Sched == sim.PCT {
		fmt.Fprintf(stderr, " sched=pct depth=%d", o.cfg.Depth)
	}
	if o.seeds.random {
		fmt.Fprintf(stderr, " (drawn from base %d; each seed is printed) budget=%v", o.base, o.budget)
	} else {
		if o.shard.n > 1 {
			fmt.Fprintf(stderr, " shard=%d/%d", o.shard.i, o.shard.n)
		}
		fmt.Fprintf(stderr, " (%s)", src.resolved())
	}
	fmt.Fprintf(stderr, " workers=%d version=%s\n", o.workers, o.gen.app.version)
	if o.real.addr != "" {
		fmt.Fprintf(stderr, "real time (stretch %g): a seed replays the workload, not the interleaving; no trace hashes; fault lines ignored; each seed on its own key prefix, flushed after\n", o.real.effectiveStretch())
	}

	jobs := make(chan job)
	order := make(chan chan outcome, 4*o.workers)
	var wg sync.WaitGroup
	for range o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				j.out <- o.runSeed(j.seed)
			}
		}()
	}
	go func() {
		defer close(order)
		defer close(jobs)
		for ctx.Err() == nil {
			seed, ok := src.Next()
			if !ok {
				return
			}
			out := make(chan outcome, 1)
			select {
			case order <- out:
			case <-ctx.Done():
				return
			}
			jobs <- job{seed, out} // every queued channel gets its job
		}
	}()

	t := newTally(o, src, stdout, stderr)
	for out := range order {
		if oc := <-out; oc.res != nil {
			t.add(oc)
		}
	}
	wg.Wait()
	return t.finish(ctx)
}

func (o *runOpts) runSeed(seed uint64) outcome {
	if o.real.addr != "" {
		if o.real.lost.Load() != nil {
			return outcome{} // the store stopped answering: not run (outage.go)
		}
		res := engine.RunReal(engine.Plan(seed, o.cfg), o.cfg, o.real.rd(seed))
		if res.Verdict != engine.Pass {
			o.real.stillAnswering(seed)
		}
		return outcome{res: res}
	}
	cfg := o.cfg
	cfg.Lean = true // a passing seed keeps no notes; a failing one is played again in full for its report
	oc := outcome{res: engine.RunSeed(seed, cfg)}
	if o.determinism {
		oc.second = engine.RunSeed(seed, cfg)
	}
	return oc
}

// reproOf is the command that replays a generated run: the harness's, plus
// the run flags it does not know about when they are not the defaults.
func reproOf(r *engine.Result) string {
	cmd := r.Repro()
	def := defaults()
	if r.Config.MaxSteps != 0 && r.Config.MaxSteps != def.MaxSteps {
		cmd += fmt.Sprintf(" --max-steps %d", r.Config.MaxSteps)
	}
	if r.Config.LinTimeout != 0 && r.Config.LinTimeout != def.LinTimeout {
		cmd += fmt.Sprintf(" --lin-timeout %v", r.Config.LinTimeout)
	}
	return cmd
}

// defaults are the harness's defaults for the run flags, read off the
// result of an empty run (the harness does not export them).
var defaults = sync.OnceValue(func() engine.Config {
	return engine.Run(&workload.Log{}, engine.Config{}).Config
})
