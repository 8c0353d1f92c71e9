package drivertest

import (
	"flag"
	"fmt"
	"slices"
	"strconv"

	"github.com/storesim/storesim/fuzz/engine"
)

// SwarmGroup is the [Rerun.Group] of a backend-driven swarm run; its
// cases are the store profiles ([SwarmProfiles]).
const SwarmGroup = "swarm"

// Rerun names one run of the suite exactly, as a violation names it: the
// rule group and directed case it belongs to, and the run's own seed.
// Directed marks the case's directed run (fixed choices); otherwise it is
// the randomized run of that seed. A backend-driven swarm run is Group
// [SwarmGroup] with its store profile as the Case. With only Group set, a
// Rerun names the whole group.
//
// On the simulator a run is a function of its Rerun and the harness: the
// same Rerun shows the same violations (Options.Only reruns it). In real
// time it replays the workload, not the interleaving.
type Rerun struct {
	Group    string `json:"group"`
	Case     string `json:"case,omitempty"`
	Seed     uint64 `json:"seed,omitempty"`
	Directed bool   `json:"directed,omitempty"`
}

// String is "D-GEOM/bad-geometry-refused, directed seed N" (or "random seed N").
func (r Rerun) String() string {
	if r.Case == "" {
		return r.Group
	}
	kind := "random"
	if r.Directed {
		kind = "directed"
	}
	if r.Group == SwarmGroup {
		kind = "swarm"
	}
	return fmt.Sprintf("%s/%s, %s seed %d", r.Group, r.Case, kind, r.Seed)
}

// Cases lists the directed cases of a rule group, in run order (nil for a
// group the suite does not have). [SwarmGroup]'s cases are its profiles.
func Cases(group string) []string {
	if group == SwarmGroup {
		return SwarmProfiles()
	}
	for _, g := range allGroups() {
		if g.rule.String() == group {
			var out []string
			for _, cs := range g.cases {
				out = append(out, cs.name)
			}
			return out
		}
	}
	return nil
}

// SwarmProfiles lists the store profiles of the backend-driven swarm, in
// run order.
func SwarmProfiles() []string {
	var out []string
	for _, p := range swarmProfiles {
		out = append(out, string(p))
	}
	return out
}

// defaultRepro is the storesim command that reruns r: `storesim certify`
// for a group or one case run, `storesim replay` for a swarm run (the
// harness's own repro, which also shows its timeline and shrinks).
func defaultRepro(driver string, r Rerun) string {
	switch {
	case r.Group == SwarmGroup:
		return SwarmReplay(driver, r)
	case r.Case == "":
		return fmt.Sprintf("storesim certify --driver %s --rule %s", driver, r.Group)
	}
	return "storesim certify " + CertifyArgs(driver, r)
}

// CertifyArgs are the arguments of `certify` that rerun r exactly:
// "--driver NAME --rule GROUP --case CASE --seed SEED" and, for the
// directed run, "--directed". A CLI puts its own name in front.
func CertifyArgs(driver string, r Rerun) string {
	s := fmt.Sprintf("--driver %s --rule %s --case %s --seed %d", driver, r.Group, r.Case, r.Seed)
	if r.Directed {
		s += " --directed"
	}
	return s
}

// SwarmReplay is the `storesim replay` command of a swarm run r (the
// harness's repro: engine.Result.Repro); a CLI of another name replaces
// the leading "storesim".
func SwarmReplay(driver string, r Rerun) string {
	res := engine.Result{Seed: r.Seed, Config: engine.Config{Driver: driver, Profile: engine.Profile(r.Case)}}
	return res.Repro()
}

// The go test flags that pick one run of each case a -run pattern selects
// in [Run]: a failure's go test repro names them after -args.
var (
	testSeed     seedFlag
	testDirected bool
)

func init() {
	if flag.Lookup("drivertest.seed") == nil {
		flag.Var(&testSeed, "drivertest.seed", "drivertest.Run: run each case (or swarm profile) that -run selects once, with this seed, as a failure's repro names it")
		flag.BoolVar(&testDirected, "drivertest.directed", false, "drivertest.Run with -drivertest.seed: the case's directed run (fixed choices), not a randomized one")
	}
}

// seedFlag is a uint64 flag that knows whether it was set.
type seedFlag struct {
	v   uint64
	set bool
}

func (f *seedFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return strconv.FormatUint(f.v, 10)
}

func (f *seedFlag) Set(s string) error {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("want a seed (an unsigned integer), got %q", s)
	}
	f.v, f.set = v, true
	return nil
}

// knownRun says why r names no run of the suite ("" when it does).
func knownRun(r Rerun) string {
	if r.Group != SwarmGroup && !slices.Contains(Rules(), r.Group) {
		return fmt.Sprintf("unknown rule group %q", r.Group)
	}
	if cases := Cases(r.Group); !slices.Contains(cases, r.Case) {
		return fmt.Sprintf("rule group %s has no case %q (known: %v)", r.Group, r.Case, cases)
	}
	return ""
}
