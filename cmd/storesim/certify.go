package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/drivertest"
	"github.com/storesim/storesim/drivers/redisdriver"
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
// be built or a store that does not answer ("store unreachable: ADDR", one
// line, before any case or when it stops answering: reach.go).
func certifyCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("certify", flag.ContinueOnError)
	driver := fs.String("driver", "", "driver to certify: a name from storesim drivers, or redis://HOST:PORT")
	asJSON := fs.Bool("json", false, "print the certificate as JSON")
	var rules listFlag
	fs.Var(&rules, "rule", "certify only this rule group (repeatable, or comma-separated); race-pair gaps are then not judged")
	seeds := fs.Int("seeds", 0, "randomized runs per directed case (default: the suite's, see drivertest.Options.Seeds)")
	seed := fs.Uint64("seed", 0, "base seed every run derives from (default 1)")
	short := fs.Bool("short", false, "scale everything down (as go test -short)")
	evicting := fs.Bool("evicting", false, "redis:// only: the server may evict keys at any time (maxmemory policy or TTL)")
	wait := fs.Duration("wait", 0, "redis:// only: bound of each real-time wait (default 2s)")
	pos, err := parseFlags(fs, args, stdout)
	switch {
	case err != nil:
	case len(pos) > 0:
		err = usagef("unexpected argument %q (use --driver NAME)", pos[0])
	case *driver == "":
		err = usagef("give --driver NAME (see storesim drivers)")
	case *seeds < 0:
		err = usagef("--seeds %d: want a positive number", *seeds)
	case (*evicting || *wait != 0) && !strings.HasPrefix(*driver, redisScheme):
		err = usagef("--evicting and --wait apply to redis:// drivers only")
	}
	var h drivertest.Harness
	cleanup := func() {}
	if err == nil {
		if strings.HasPrefix(*driver, redisScheme) {
			h, cleanup, err = redisHarness(*driver, *evicting, *wait)
			if err == nil {
				h.Ping = func(ctx context.Context) error { return redisPing(ctx, strings.TrimPrefix(*driver, redisScheme)) }
			}
		} else if err = checkDriver(*driver); err == nil {
			h = drivertest.Registered(*driver)
		}
	}
	if err != nil {
		return inputErr("certify", err, stderr)
	}
	defer cleanup()
	reproFlags := ""
	if *seed != 0 {
		reproFlags += fmt.Sprintf(" --seed %d", *seed)
	}
	if *seeds != 0 {
		reproFlags += fmt.Sprintf(" --seeds %d", *seeds)
	}
	if *short {
		reproFlags += " --short"
	}
	start := time.Now()
	progress, progressDone := progressTo(stderr, isTerminal(stderr), *driver)
	rep := drivertest.Certify(h, drivertest.Options{
		Seeds: *seeds, Seed: *seed, Short: *short, Rules: rules, Wait: *wait, Version: version,
		Repro: func(rule string) string {
			return fmt.Sprintf("storesim certify --driver %s --rule %s%s", *driver, rule, reproFlags)
		},
		Progress: progress,
	})
	progressDone()
	if line, ok := unreachable(rep); ok {
		fmt.Fprintf(stderr, "storesim certify: %s\n", line)
		return exitUsage
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
		b, err := json.MarshalIndent(rep, "", "  ")
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

// redisHarness certifies a real Redis server: every driver instance of
// the run shares one fresh key prefix, MakeAbsent deletes through an admin
// driver on that prefix, and cleanup flushes the prefix.
func redisHarness(url string, evicting bool, wait time.Duration) (drivertest.Harness, func(), error) {
	addr := strings.TrimPrefix(url, redisScheme)
	if addr == "" || strings.ContainsAny(addr, "/ ") || !strings.Contains(addr, ":") {
		return drivertest.Harness{}, nil, usagef("--driver %q: want redis://HOST:PORT", url)
	}
	if err := preflight(addr, wait); err != nil {
		return drivertest.Harness{}, nil, err // before the admin client, which would wait its own dial timeout
	}
	prefix := fmt.Sprintf("storesim-certify/%d/", time.Now().UnixNano())
	admin, err := redisdriver.New(redisdriver.Config{Addr: addr, Prefix: prefix})
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
			return redisdriver.New(redisdriver.Config{Addr: addr, Prefix: prefix})
		},
		MakeAbsent: func(key string) error {
			c, cancel := ctx()
			defer cancel()
			return admin.Delete(c, key)
		},
	}
	cleanup := func() {
		c, cancel := ctx()
		defer cancel()
		admin.Flush(c)
		admin.Shutdown(c)
	}
	return h, cleanup, nil
}
