package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/drivertest"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/fuzz/workload"
)

// Factory builds one instance of a driver on what env gives it: the
// runtime it must schedule its work on, the simulated store, an instance
// name unique per runtime, the capabilities asked for and the fault mix to
// inject (a driver may ignore the last two). It is the shape of
// drivertest.Harness.New.
type Factory = registry.Factory

// Env is what a driver instance is built from (drivertest.Env).
type Env = registry.Env

// Options configure [Main]: the zero value is storesim itself.
type Options struct {
	// Name is the command's name, the first word of every repro line and
	// of the help (default: the base name of os.Args[0]).
	Name string
	// Drivers are the caller's own simulated drivers, by name, next to
	// storesim's (memory, together, broken:<Name>): run, replay, shrink and
	// scenario build them on the simulator, certify runs the conformance
	// suite on them, drivers lists them. A name is one word without "=",
	// and is none of storesim's own names, "mixed" or a redis:// URL.
	Drivers map[string]Factory
	// Version is what version, run's header and certificates state
	// (default "dev").
	Version string
	// Stdout and Stderr default to os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	_              struct{}
}

// Main runs the command line args (without the program name, as
// os.Args[1:]) and returns the exit code: storesim's whole CLI — run,
// replay, shrink, drivers, certify, scenario, version — with the drivers
// of opts next to storesim's. Every repro line it prints starts with
// opts.Name, so a driver author's own binary reruns its failures:
//
//	func main() {
//		os.Exit(cli.Main(os.Args[1:], cli.Options{Drivers: map[string]cli.Factory{"mine": newMine}}))
//	}
//
// An interrupt (^C) stops a swarm after the seeds in flight. A bad
// Options is one error line and exit 2.
func Main(args []string, opts Options) int {
	engine.TuneGC() // GOGC=1600 unless the environment says otherwise
	stdout, stderr := opts.Stdout, opts.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	a, err := newApp(opts)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", a.name, err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return runContext(withApp(ctx, a), args, stdout, stderr)
}

// app is what one invocation of the CLI is: its name, its version and its
// drivers. It travels in the context, so every command sees the same one.
type app struct {
	name, version string
	drivers       map[string]Factory
}

type appKey struct{}

func withApp(ctx context.Context, a *app) context.Context {
	return context.WithValue(ctx, appKey{}, a)
}

// storesimApp is the CLI without drivers of its own.
var storesimApp = &app{name: "storesim", version: version}

// appOf is the app of ctx (storesim's when it has none).
func appOf(ctx context.Context) *app {
	if a, ok := ctx.Value(appKey{}).(*app); ok {
		return a
	}
	return storesimApp
}

// newApp checks opts. The app it returns always has a name (for the error
// line).
func newApp(opts Options) (*app, error) {
	a := &app{name: opts.Name, version: opts.Version, drivers: map[string]Factory{}}
	if a.name == "" {
		a.name = strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe")
	}
	if a.version == "" {
		a.version = version
	}
	builtin := registry.Names()
	for name, f := range opts.Drivers {
		switch {
		case name == "" || strings.ContainsAny(name, " \t\n=#"):
			return a, fmt.Errorf("Options.Drivers: %q: a driver name is one word without '=' or '#'", name)
		case slices.Contains(builtin, name) || name == workload.Mixed || strings.HasPrefix(name, redisScheme):
			return a, fmt.Errorf("Options.Drivers: %q is storesim's own name (known: %s, mixed, redis://HOST:PORT)", name, strings.Join(builtin, ", "))
		case f == nil:
			return a, fmt.Errorf("Options.Drivers: %q has no factory", name)
		}
		a.drivers[name] = f
	}
	return a, nil
}

// names lists every simulated driver: the caller's, sorted, then
// storesim's.
func (a *app) names() []string {
	var own []string
	for n := range a.drivers {
		own = append(own, n)
	}
	sort.Strings(own)
	return append(own, registry.Names()...)
}

// checkDriver accepts the simulated drivers: the caller's and the
// registry's.
func (a *app) checkDriver(name string) error {
	if name == workload.Mixed || slices.Contains(a.names(), name) {
		return nil
	}
	if isRealStore(name) {
		return usagef("--driver %s: a real store cannot run in the simulator (replay, shrink, scenario); %s run --driver %s runs it in real time", name, a.name, name)
	}
	return usagef("--driver: unknown driver %q (known: %s)", name, strings.Join(a.names(), ", "))
}

// checkLog accepts a log whose every endpoint names a simulated driver.
func (a *app) checkLog(log *workload.Log) error {
	for _, e := range log.Endpoints {
		if e.Driver == workload.Mixed {
			return usagef("endpoint %s: driver=%s is a generator setting, not a driver (name memory, together, …)", e.Name, e.Driver)
		}
		if err := a.checkDriver(e.Driver); err != nil {
			var u *usageError
			if errors.As(err, &u) {
				return fmt.Errorf("%w: endpoint %s: %s", errInput, e.Name, strings.TrimPrefix(u.msg, "--driver: "))
			}
			return err
		}
	}
	return nil
}

// factory builds the endpoints' drivers of a simulated run: the test
// seam driverFactory when set, else the caller's drivers by name and the
// registry for the rest (nil, the engine's default, when the caller has
// none).
func (a *app) factory() engine.Factory {
	if driverFactory != nil {
		return driverFactory
	}
	if len(a.drivers) == 0 {
		return nil
	}
	return func(name string, env registry.Env) (drivers.Driver, error) {
		if f := a.drivers[name]; f != nil {
			return f(env)
		}
		return registry.New(name, env)
	}
}

// harness is what certify runs on a simulated driver.
func (a *app) harness(name string) drivertest.Harness {
	if f := a.drivers[name]; f != nil {
		return drivertest.Harness{Name: name, New: f}
	}
	return drivertest.Registered(name)
}

// command replaces the leading "storesim" of a repro line made by a
// package that knows no other name with the app's.
func (a *app) command(line string) string {
	if rest, ok := strings.CutPrefix(line, "storesim "); ok {
		return a.name + " " + rest
	}
	return line
}
