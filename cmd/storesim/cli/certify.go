package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/drivertest"
	"github.com/storesim/storesim/fuzz/workload"
)

// listFlag is a repeatable flag that also takes comma-separated values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// certifyCmd runs the conformance suite (drivers/drivertest) on one driver
// and prints the per-rule table, or the certificate as JSON. Exit 0 when
// certified, 1 when a rule failed or a gap (a race pair never exercised)
// keeps it from being certified, 2 on usage errors, a driver that cannot
// be built or a real store that does not answer ("store unreachable: ADDR",
// one line, before any case or when it stops answering: reach.go). A
// failing rule's repro reruns exactly the run that found its first
// violation: --rule GROUP --case CASE --seed SEED [--directed]. On a
// terminal the progress line names the rule group that runs ("rule group
// n of N").
func certifyCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := appOf(ctx)
	fs := flag.NewFlagSet("certify", flag.ContinueOnError)
	driver := fs.String("driver", "", "driver to certify: a name from "+a.name+" drivers, or redis://HOST:PORT or memcached://HOST:PORT, or blob:BUCKET-URL (blob:file:///DIR, blob:s3://BUCKET?endpoint=…), or exec:COMMAND [ARGS…] (a driver process speaking docs/PROTOCOL.md)")
	asJSON := fs.Bool("json", false, "print the certificate as JSON")
	var rules listFlag
	fs.Var(&rules, "rule", "certify only this rule group (repeatable, or comma-separated); race-pair gaps are then not judged")
	seeds := fs.Int("seeds", 0, "randomized runs per directed case (default: the suite's, see drivertest.Options.Seeds)")
	seed := fs.Uint64("seed", 0, "base seed every run derives from (default 1); with --case, the seed of the one run to rerun, as a failure's repro names it")
	caseName := fs.String("case", "", "with one --rule and --seed: rerun exactly one run of this directed case of the group (a failure's repro)")
	directed := fs.Bool("directed", false, "with --case: the case's directed run (fixed choices), not the randomized run of --seed")
	short := fs.Bool("short", false, "scale everything down (as go test -short)")
	evicting := fs.Bool("evicting", false, "redis:// and memcached:// only: the server may evict keys at any time (maxmemory policy, TTL, a cache's LRU)")
	wait := fs.Duration("wait", 0, "redis:// and memcached:// only: bound of each real-time wait (default 2s)")
	quiet := quietFlag(fs)
	pos, err := parseFlags(fs, args, stdout)
	switch {
	case err != nil:
	case len(pos) > 0:
		err = usagef("unexpected argument %q (use --driver NAME)", pos[0])
	case *driver == "":
		err = usagef("give --driver NAME (see %s drivers)", a.name)
	case *caseName != "" && len(rules) != 1:
		err = usagef("--case %s: give exactly one --rule, the group the case belongs to", *caseName)
	case *caseName != "" && !wasSet(fs, "seed"):
		err = usagef("--case %s: give --seed N, the seed of the run to rerun (as the failure names it)", *caseName)
	case *caseName != "" && wasSet(fs, "seeds"):
		err = usagef("--seeds: --case reruns one run; its --seed is the run's own")
	case *directed && *caseName == "":
		err = usagef("--directed picks a case's directed run: give --rule, --case and --seed")
	case *caseName != "" && len(drivertest.Cases(rules[0])) > 0 && !slices.Contains(drivertest.Cases(rules[0]), *caseName):
		err = usagef("--case: rule group %s has no case %q (known: %s)", rules[0], *caseName, strings.Join(drivertest.Cases(rules[0]), ", "))
	case *seeds < 0:
		err = usagef("--seeds %d: want a positive number", *seeds)
	case (*evicting || *wait != 0) && !isRealStore(*driver):
		err = errRealOnly("--evicting and --wait")
	}
	var h drivertest.Harness
	cleanup := func() {}
	var addIncidents func(*drivertest.Report) // exec: drivers: process incidents become gaps
	if err == nil {
		if isExec(*driver) {
			h, addIncidents, err = execHarness(*driver, *evicting, stderr)
		} else if isRealStore(*driver) {
			h, cleanup, err = realHarness(*driver, *evicting, *wait)
		} else if err = a.checkDriver(*driver); err == nil {
			if *driver == workload.Mixed {
				err = usagef("--driver %s: a generator setting, not a driver: certify one driver (see %s drivers)", *driver, a.name)
			}
			h = a.harness(*driver)
		}
	}
	if err != nil {
		return inputErr("certify", err, stderr)
	}
	defer cleanup()
	// What every repro keeps: the real-time settings of a redis:// driver.
	keep := ""
	if *evicting {
		keep += " --evicting"
	}
	if *wait != 0 {
		keep += fmt.Sprintf(" --wait %v", *wait)
	}
	// What reruns a whole group the same way: the seed flags.
	scale := ""
	if *seed != 0 {
		scale += fmt.Sprintf(" --seed %d", *seed)
	}
	if *seeds != 0 {
		scale += fmt.Sprintf(" --seeds %d", *seeds)
	}
	if *short {
		scale += " --short"
	}
	opts := drivertest.Options{
		Seeds: *seeds, Seed: *seed, Short: *short, Rules: rules, Wait: *wait, Version: a.version,
		Repro: func(r drivertest.Rerun) string {
			name := shellQuote(*driver) // exec:COMMAND ARGS is one word of the repro line
			switch {
			case r.Group == drivertest.SwarmGroup:
				return a.command(drivertest.SwarmReplay(name, r))
			case r.Case == "":
				return fmt.Sprintf("%s certify --driver %s --rule %s%s%s", a.name, name, r.Group, keep, scale)
			}
			return fmt.Sprintf("%s certify %s%s", a.name, drivertest.CertifyArgs(name, r), keep)
		},
	}
	if *caseName != "" {
		opts.Seed, opts.Only = 0, drivertest.Rerun{Group: rules[0], Case: *caseName, Seed: *seed, Directed: *directed}
	}
	start := time.Now()
	line := newLiveLine(stderr, *quiet)
	prog := newCertifyProgress(line, *driver)
	opts.Progress = prog.group
	stop := line.ticking(prog.text)
	rep := drivertest.Certify(h, opts)
	stop()
	if what, ok := unreachable(rep); ok {
		fmt.Fprintf(stderr, "storesim certify: %s\n", what)
		return exitUsage
	}
	if addIncidents != nil {
		addIncidents(&rep)
	}
	for _, r := range rules {
		if _, ok := rep.Rule(r); !ok {
			var known []string
			for _, rr := range rep.Rules {
				known = append(known, rr.Rule)
			}
			return inputErr("certify", usagef("--rule: unknown rule group %q (known: %s)", r, strings.Join(known, " ")), stderr)
		}
	}
	if *asJSON {
		b, err := json.Marshal(rep)
		if err == nil {
			b, err = seedsAsStrings(b) // 64-bit seeds as strings, as run --json
		}
		if err != nil {
			return inputErr("certify", err, stderr)
		}
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		io.WriteString(stdout, rep.Table())
	}
	took := time.Since(start).Round(time.Millisecond)
	for _, g := range rep.Gaps {
		if strings.HasPrefix(g, "the driver could not be built") {
			fmt.Fprintf(stderr, "storesim certify: %s: %s\n", *driver, g)
			return exitUsage
		}
	}
	if rep.Rerun != nil {
		return rerunExit(rep, *driver, took, stderr)
	}
	if rep.Certified {
		fmt.Fprintf(stderr, "certify: %s certified (%d rule groups, %v)\n", *driver, len(rep.Rules), took)
		return exitPass
	}
	var why []string
	if f := rep.Failed(); len(f) > 0 {
		why = append(why, "failed "+strings.Join(f, " "))
	}
	if len(rep.Gaps) > 0 {
		why = append(why, fmt.Sprintf("%d gap(s)", len(rep.Gaps)))
	}
	fmt.Fprintf(stderr, "certify: %s NOT certified: %s (%v)\n", *driver, strings.Join(why, "; "), took)
	return exitSafety
}

// realHarness certifies a real Redis or memcached server: every driver
// instance of the run shares one fresh key prefix, MakeAbsent deletes
// through an admin driver on that prefix, and cleanup flushes the prefix.
// A server that does not answer one PING (memcached: version) within wait
// is an unreachableError before anything is built; Ping lets the suite
// notice one that stops answering.
func realHarness(url string, evicting bool, wait time.Duration) (drivertest.Harness, func(), error) {
	addr, err := parseRealURL(url)
	if err != nil {
		return drivertest.Harness{}, nil, err
	}
	if err := preflight(url, addr, wait); err != nil {
		return drivertest.Harness{}, nil, err // before the admin client, which would wait its own dial timeout
	}
	prefix := fmt.Sprintf("storesim-certify/%d/", time.Now().UnixNano())
	admin, err := newRealDriver(url, addr, prefix, drivers.Capabilities{})
	if err != nil {
		return drivertest.Harness{}, nil, fmt.Errorf("%s: %w", url, err)
	}
	if wait <= 0 {
		wait = 2 * time.Second
	}
	ctx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(context.Background(), wait) }
	h := drivertest.Harness{
		Name:          url,
		RealTime:      true,
		ExternalStore: true, // the server, not a simulated store, is the truth
		Evicting:      evicting,
		New: func(env drivertest.Env) (drivers.Driver, error) {
			return newRealDriver(url, addr, prefix, drivers.Capabilities{})
		},
		MakeAbsent: func(key string) error {
			c, cancel := ctx()
			defer cancel()
			return admin.Delete(c, key)
		},
		Ping: func(c context.Context) error { return storePing(c, url, addr) },
	}
	cleanup := func() {
		c, cancel := ctx()
		defer cancel()
		admin.Flush(c)
		admin.Shutdown(c)
	}
	return h, cleanup, nil
}

// rerunExit closes a rerun of one run (--case): what it found, and exit 1
// when it found anything.
func rerunExit(rep drivertest.Report, driver string, took time.Duration, stderr io.Writer) int {
	run := rep.Rerun.String()
	if rr, ok := rep.Rule(rep.Rerun.Group); ok && rr.Verdict == drivertest.Skip {
		fmt.Fprintf(stderr, "certify: %s: %s did not run: %s (%v)\n", driver, run, rr.Reason, took)
		return exitPass
	}
	if rep.Certified {
		fmt.Fprintf(stderr, "certify: %s: %s passed (%v)\n", driver, run, took)
		return exitPass
	}
	var why []string
	if f := rep.Failed(); len(f) > 0 {
		why = append(why, "failed "+strings.Join(f, " "))
	}
	if len(rep.Gaps) > 0 {
		why = append(why, fmt.Sprintf("%d gap(s)", len(rep.Gaps)))
	}
	fmt.Fprintf(stderr, "certify: %s: %s: %s (%v)\n", driver, run, strings.Join(why, "; "), took)
	return exitSafety
}
