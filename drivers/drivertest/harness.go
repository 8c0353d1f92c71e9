package drivertest

import (
	"context"
	"runtime"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/registry"
)

// Env is what a fresh driver is built from: the runtime it must schedule
// its work on, the simulated store (nil for a driver over a real store), the
// capabilities the suite asks for (a simulated driver may honour them; a
// real one declares its own, and the suite tests what it declares), the
// fault mix to inject (honoured by the simulator's drivers, ignored by real
// ones) and an instance name unique per runtime. It is registry.Env, so a
// registry factory is a Harness factory.
type Env = registry.Env

// Harness is what a driver author hands the suite.
type Harness struct {
	// Name names the driver in the report ("memory", "broken:LostWakeup",
	// "redis", …).
	Name string
	// New builds a fresh driver on the fresh store (or runtime) of env. Each
	// case run calls it once; the suite shuts every driver down.
	New func(env Env) (drivers.Driver, error)
	// MakeAbsent, when set, deletes key from the store the driver talks to.
	// For real stores it is how the suite knows a key is absent (honesty
	// checks, D-MISS-HONEST, D-LOOK-2); without it and without a simulated
	// store those checks are skipped.
	MakeAbsent func(key string) error
	// RealTime says the driver runs its own goroutines (a real driver). Its
	// directed cases then run on sim/realtime with real waits bounded by
	// Options.Wait; its randomized runs use the same monitor, oracles and
	// porcupine model, but timing is real, so a seed replays the workload,
	// not the interleaving. The backend-driven swarm of fuzz/engine runs
	// only for simulated drivers.
	RealTime bool
	// ExternalStore says the driver talks to a store of its own (a real
	// Redis, a cloud store): Env.Store is then nil, and what the suite
	// knows of keys comes from MakeAbsent and from the driver's own answers.
	// Without it every case gets a fresh simulated store (memdriver.Store),
	// which is also the suite's ground truth.
	ExternalStore bool
	// Caps are the capabilities asked for in Env (zero: memdriver's
	// defaults: 4 rows, AbsentIsMiss, both directions, cancel).
	Caps drivers.Capabilities
	// Evicting says the store may drop keys at any time (a real cache): a
	// key then never counts as known present, and histories are checked
	// against the evicting store model.
	Evicting bool
	// Ping, when set, asks the store whether it answers, within ctx (a
	// real store: one dial and one round trip). The suite pings before
	// anything else, and again after every case run that failed or was
	// skipped; a store that does not answer ends the certification with
	// the one gap "store unreachable: <Ping's error>" (reach.go) instead of
	// a case after case of rule failures. Its error should start with the
	// store's address.
	Ping func(ctx context.Context) error
	// Independent says two drivers New builds share no mutable state (no
	// package-level counters, maps or caches), so the backend-driven swarm
	// may run several at once (Options.Workers). Without it the swarm runs
	// one run at a time: a driver that shares state between instances is
	// never refused for a race the suite made.
	Independent bool
	// SharedMemory says the driver maps region memory itself, from another
	// process (a driver process, drivers/procdriver): every case run's
	// arenas then live in a file-backed shared mapping (arena.Shared) that
	// the process maps too, so its writes land in the very slots the
	// suite's checks read, and the mapping is removed when the run ends.
	// Without it arenas are Go heap memory.
	SharedMemory bool
	_            struct{}
}

// Registered is the harness of a driver the registry knows ("memory",
// "together", "broken:<Name>"): what `storesim certify --driver NAME` runs.
func Registered(name string) Harness {
	// The registry's drivers (memdriver, its wrappers in package broken)
	// keep every piece of state in the instance.
	return Harness{Name: name, New: func(env Env) (drivers.Driver, error) { return registry.New(name, env) }, Independent: true}
}

// Options scale a certification.
type Options struct {
	// Seeds is the number of randomized runs of every case (0: 200; Short: 3;
	// real-time drivers run a sixteenth of it, at least 1).
	Seeds int
	// Swarm is the number of backend-driven harness runs per store profile
	// (0: 4×Seeds, at least 8; negative: none; real-time drivers: none).
	Swarm int
	// Short scales everything down for `go test -short`.
	Short bool
	// Seed is the base seed every run's seed derives from (0: 1).
	Seed uint64
	// Rules, when set, runs only these rule groups (to rerun a failing
	// one): the others are skipped ("not selected"), the swarm and the
	// race-pair gaps are not judged, and Report.Selected says the run was
	// partial, so Certified then speaks for the selected rules only.
	Rules []string
	// Wait bounds each real-time wait (0: 2 s).
	Wait time.Duration
	// Version is the storesim version the report states (0: [Version]).
	Version string
	// Only, when its Case is set, runs exactly the one run it names — a
	// case's directed run, one randomized run, or one swarm run — and
	// nothing else: what a failure's repro reruns. Rules, Seeds and Swarm
	// are then ignored; the report is partial (Selected names Only.Group,
	// Report.Rerun the run) and shows what that run found.
	Only Rerun
	// Repro, when set, is the command that reruns r: with r.Case set,
	// exactly that run (the repro of a failing rule group names the run
	// that found its first violation); with only r.Group, the whole group.
	// The default is storesim's: "storesim certify --driver NAME --rule
	// GROUP --case CASE --seed SEED [--directed]" ([CertifyArgs]), and for
	// a swarm run "storesim replay --seed SEED --driver NAME --profile P
	// --ops 100" ([SwarmReplay]). [Run] names its own go test subtests.
	Repro func(r Rerun) string
	// Progress, when set, is told before each selected rule group runs:
	// the group's place n (from 1) among the total selected, and its rule
	// (the CLI shows it on a terminal). [Run] does not call it.
	Progress func(n, total int, rule string)
	// Workers is how many backend-driven swarm runs go at once (0:
	// GOMAXPROCS for an Independent harness, else 1). The report is the
	// same for any value: runs are judged in seed order.
	Workers int
	_       struct{}
}

// Version is the storesim version a report states unless Options.Version
// says otherwise; release builds set it with
// -ldflags "-X github.com/storesim/storesim/drivers/drivertest.Version=v1.2.3".
var Version = "devel"

func (o Options) withDefaults(h Harness) Options {
	if o.Seeds <= 0 {
		o.Seeds = 200
		if o.Short {
			o.Seeds = 3
		}
	}
	if h.RealTime {
		o.Seeds = max(1, o.Seeds/16) // real waits: 12 at the default
	}
	switch {
	case o.Swarm == 0:
		o.Swarm = max(8, 4*o.Seeds)
	case o.Swarm < 0:
		o.Swarm = 0
	}
	if h.RealTime {
		o.Swarm = 0
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Wait <= 0 {
		o.Wait = 2 * time.Second
	}
	if o.Version == "" {
		o.Version = Version
	}
	if o.Workers <= 0 {
		o.Workers = 1
		if h.Independent {
			o.Workers = runtime.GOMAXPROCS(0)
		}
	}
	return o
}
