package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/diff"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/fuzz/workload"
)

// driverList is a repeatable --driver.
type driverList []string

func (d *driverList) String() string     { return strings.Join(*d, ",") }
func (d *driverList) Set(v string) error { *d = append(*d, v); return nil }

// diffOpts are diff's flags, checked.
type diffOpts struct {
	app      *app
	drivers  driverList
	seeds    seedSpec
	profile  engine.Profile
	ops      int
	logFile  string
	log      *workload.Log // --log, parsed
	wait     time.Duration
	evicting bool
	lin      time.Duration
	verbose  bool
	flags    *flag.FlagSet
}

// diffCmd is `storesim diff --driver A --driver B [--seeds START:COUNT |
// --log FILE]`: the differential run of package fuzz/diff.
func diffCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := diffOpts{app: appOf(ctx)}
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	o.flags = fs
	fs.Var(&o.drivers, "driver", "a driver to compare, given twice: a simulated driver (see storesim drivers), redis://HOST:PORT, memcached://HOST:PORT or 'exec:COMMAND [ARGS…]' (real time)")
	seeds := fs.String("seeds", "0:100", "seeds whose generated op logs are played: START:COUNT")
	profile := fs.String("profile", string(engine.Calm), "profile of the generated logs: calm (no faults, durable store), default (the swarm's fault mix on the simulated side; an evicting store in one seed of four), evicting")
	fs.IntVar(&o.ops, "ops", 100, "generated ops per seed")
	fs.StringVar(&o.logFile, "log", "", "play this op log (or failure folder) instead of generated ones (its endpoints' drivers are replaced by the two --driver)")
	fs.DurationVar(&o.wait, "wait", 0, "real-time drivers: how long one call, lookup or shutdown may take before it counts as unanswered (default 10s)")
	fs.BoolVar(&o.evicting, "evicting", false, "real-time drivers: the store may evict keys at any time (a Redis with a maxmemory policy; memcached:// always may)")
	fs.DurationVar(&o.lin, "lin-timeout", 0, "porcupine time limit per side and seed (default 10s)")
	fs.BoolVar(&o.verbose, "v", false, "print a line for every seed, not only diverging ones")
	pos, err := parseFlags(fs, args, stdout)
	if err == nil && len(pos) > 0 {
		err = usagef("unexpected argument %q (diff takes only flags)", pos[0])
	}
	if err == nil {
		err = o.check(*seeds, *profile)
	}
	if err != nil {
		return inputErr("diff", err, stderr)
	}
	for _, d := range o.drivers {
		if isRealStore(d) {
			rf := realFlags{}
			addr, _ := parseRealURL(d)
			rf.addr, rf.url = addr, d
			if err := rf.ping(); err != nil {
				return inputErr("diff", err, stderr)
			}
		}
	}
	return o.run(ctx, stdout, stderr)
}

// check validates the flags into o.
func (o *diffOpts) check(seeds, profile string) error {
	if len(o.drivers) != 2 {
		return usagef("give --driver exactly twice (the two drivers to compare), got %d", len(o.drivers))
	}
	for _, d := range o.drivers {
		if isRealStore(d) {
			if _, err := parseRealURL(d); err != nil {
				return err
			}
			continue
		}
		if err := o.app.checkDriver(d); err != nil {
			return err
		}
		if d == workload.Mixed {
			return usagef("--driver %s draws a driver per endpoint; name one (memory, together, …)", d)
		}
	}
	real := isRealStore(o.drivers[0]) || isRealStore(o.drivers[1])
	switch {
	case o.wait < 0:
		return usagef("--wait %v: want a positive duration", o.wait)
	case (o.evicting || wasSet(o.flags, "wait")) && !real:
		return errRealOnly("--evicting and --wait")
	case o.lin < 0:
		return usagef("--lin-timeout %v: want a positive duration", o.lin)
	}
	if o.logFile != "" {
		if wasSet(o.flags, "seeds") || wasSet(o.flags, "profile") || wasSet(o.flags, "ops") {
			return usagef("--seeds, --profile and --ops shape generated logs; --log FILE plays the file as written")
		}
		log, err := readLog(o.logFile)
		if err != nil {
			return err
		}
		if err := diff.CheckLog(log); err != nil {
			return fmt.Errorf("%w: %s: %w", errInput, o.logFile, err)
		}
		o.log = log
		return nil
	}
	p, err := engine.ParseProfile(profile)
	if err != nil {
		return usagef("--profile: %v", err)
	}
	o.profile = p
	if o.ops <= 0 || o.ops > workload.MaxOps {
		return usagef("--ops %d: want a positive number of ops, at most %d (%s)", o.ops, workload.MaxOps, workload.LimitsDoc)
	}
	s, err := parseSeeds(seeds)
	if err != nil {
		return err
	}
	if s.random {
		return usagef("bad --seeds %q: diff wants a range START:COUNT", seeds)
	}
	o.seeds = s
	return nil
}

// run plays every seed (or the log) and prints what diverged.
func (o *diffOpts) run(ctx context.Context, stdout, stderr io.Writer) int {
	a, b := o.drivers[0], o.drivers[1]
	what := fmt.Sprintf("seeds=%s profile=%s ops=%d", o.seeds, o.profile, o.ops)
	if o.log != nil {
		what = "log=" + o.logFile
	}
	fmt.Fprintf(stderr, "storesim diff: %s vs %s %s version=%s (each call awaited in log order; docs/SPEC.md §5, differential runs)\n", shellQuote(a), shellQuote(b), what, o.app.version)
	counts := map[engine.Verdict]int{}
	total, diverged := 0, 0
	lost := "" // a real store that stopped answering
	one := func(seed uint64, log *workload.Log) {
		res := diff.Run(log, o.side(a, seed), o.side(b, seed), diff.Config{Repro: o.repro(seed), LinTimeout: o.lin})
		total++
		v := res.Verdict()
		counts[v]++
		if res.Diverged > 0 {
			diverged++
		}
		switch {
		case v != engine.Pass:
			fmt.Fprint(stdout, res.Report())
		case o.verbose:
			fmt.Fprintf(stdout, "seed %d: pass (%s)\n", res.Seed, res.Summary())
		}
		if lost == "" {
			// Every seed: against a dead store every answer is a FAULT, which
			// is always allowed, so only asking tells an outage from a pass.
			lost = o.lost(seed)
		}
	}
	if o.log != nil {
		one(o.log.Seed, o.log)
	} else {
		for i := range o.seeds.count {
			if ctx.Err() != nil || lost != "" {
				break
			}
			seed := o.seeds.start + i
			one(seed, engine.Plan(seed, engine.Config{Driver: "memory", Profile: o.profile, Ops: o.ops}))
		}
	}
	fmt.Fprintf(stderr, "seeds: %d passed, %d diverged, %d failed otherwise\n", counts[engine.Pass], diverged, total-counts[engine.Pass]-diverged)
	if lost != "" {
		fmt.Fprintf(stderr, "storesim diff: %s\n", lost)
		return exitUsage // as run and certify: an outage is no verdict
	}
	for _, v := range []engine.Verdict{engine.Safety, engine.Liveness, engine.HarnessError, engine.Unknown} {
		if counts[v] > 0 {
			return map[engine.Verdict]int{engine.Safety: exitSafety, engine.Liveness: exitLiveness, engine.HarnessError: exitHarness, engine.Unknown: exitInconclusive}[v]
		}
	}
	if ctx.Err() != nil {
		return exitHarness // interrupted: not every seed ran
	}
	return exitPass
}

// lost asks every real store of the diff once, after each seed: the first that does not answer (within the wait, default 2 s) ends
// the diff as "store unreachable" (see run's stillAnswering).
func (o *diffOpts) lost(seed uint64) string {
	for _, d := range o.drivers {
		if !isRealStore(d) || isExec(d) {
			continue
		}
		addr, _ := parseRealURL(d)
		wait := o.wait
		if wait <= 0 {
			wait = 2 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		err := storePing(ctx, d, addr)
		cancel()
		if err != nil {
			return fmt.Sprintf("store unreachable: %v; it stopped answering during seed %d, so that seed's findings are the outage's, not divergences (rerun when %s answers again)", err, seed, d)
		}
	}
	return ""
}

// repro is the command that replays one seed's diff.
func (o *diffOpts) repro(seed uint64) string {
	cmd := fmt.Sprintf("%s diff --driver %s --driver %s", o.app.name, shellQuote(o.drivers[0]), shellQuote(o.drivers[1]))
	if o.log != nil {
		cmd += " --log " + shellQuote(o.logFile)
	} else {
		cmd += fmt.Sprintf(" --seeds %d:1 --profile %s --ops %d", seed, o.profile, o.ops)
	}
	if o.evicting {
		cmd += " --evicting"
	}
	if o.wait != 0 {
		cmd += " --wait " + o.wait.String()
	}
	return cmd
}

// side is one --driver as the diff plays it: a simulated driver by name,
// or a real store on a fresh key prefix of its own, flushed after.
func (o *diffOpts) side(name string, seed uint64) diff.Side {
	if !isRealStore(name) {
		return diff.Side{Name: name, New: o.app.factory()}
	}
	addr, _ := parseRealURL(name)
	prefix := fmt.Sprintf("storesim-diff/%d/%d/", seed, time.Now().UnixNano())
	s := diff.Side{Name: shellQuote(name), RealTime: true, Wait: o.wait,
		Evicting: o.evicting || strings.HasPrefix(name, memcachedScheme)}
	if isExec(name) {
		// One process per endpoint; the processes of one seed share a
		// scratch directory (their store).
		var in execIncidents
		scratch, err := os.MkdirTemp("", "storesim-diff-scratch-")
		s.New = func(_ string, env registry.Env) (drivers.Driver, error) {
			if err != nil {
				return nil, err
			}
			return newExecDriver(addr, prefix, scratch, env.Caps, in.add)
		}
		s.Cleanup = func() error {
			if scratch != "" {
				os.RemoveAll(scratch)
			}
			return in.err()
		}
		return s
	}
	s.New = func(_ string, env registry.Env) (drivers.Driver, error) {
		return newRealDriver(name, addr, prefix, env.Caps)
	}
	s.Cleanup = func() error {
		wait := o.wait
		if wait <= 0 {
			wait = 10 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := storePing(ctx, name, addr); err != nil { // before a client that would wait its own dial timeouts
			return fmt.Errorf("store unreachable: %w", err)
		}
		admin, err := newRealDriver(name, addr, prefix, drivers.Capabilities{})
		if err != nil {
			return err
		}
		defer admin.Shutdown(ctx)
		return admin.Flush(ctx)
	}
	return s
}
