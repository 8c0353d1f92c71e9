package drivertest_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/drivertest"
)

// conformRuns is how many certifications TestConformingDrivers runs per
// driver: STORESIM_CONFORM_RUNS, else 2 (1 with -short). Run i uses base
// seed i+1, so every run is a different certification, and each replays.
func conformRuns(t *testing.T) int {
	runs := 2
	if testing.Short() {
		runs = 1
	}
	if s := os.Getenv("STORESIM_CONFORM_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("STORESIM_CONFORM_RUNS=%q: want a positive number (repro: STORESIM_CONFORM_RUNS=2 go test ./drivers/drivertest -run %s)", s, "'^TestConformingDrivers$'")
		}
		runs = n
	}
	return runs
}

// TestConformingDrivers tests the tester the other way round: nine
// unusual drivers that keep the contract (conformdrivers_test.go) each
// certify — no failed rule, no gap — in every one of conformRuns
// certifications. A race pair is excused only where the driver cannot give
// it a chance: the inline driver (nothing is ever in flight), the
// one-at-a-time and per-key drivers' repeated key (they never let two
// calls race on a key), and the
// one-row driver's cancel pair (CanCancel=false); every other driver keeps
// calls in flight and must exercise every pair.
//
// The acceptance run of the issue: 20 runs each while another process
// keeps both cores busy:
//
//	STORESIM_CONFORM_RUNS=20 go test ./drivers/drivertest -run '^TestConformingDrivers$' -count=1
func TestConformingDrivers(t *testing.T) {
	runs := conformRuns(t)
	opts := drivertest.Options{Seeds: 12}
	if testing.Short() {
		opts = drivertest.Options{Short: true}
	}
	inflight := []string{"cancel-vs-completion", "shutdown-vs-in-flight", "unregister-vs-in-flight", "drain-vs-late-callback", "repeated-key-in-flight"}
	// The pairs that must be excused, and the ones that may be (the suite
	// still cancels the one-row driver's calls in flight, and counts it).
	mustNA := map[string][]string{"inline": inflight, "one-at-a-time": {"repeated-key-in-flight"}, "per-key": {"repeated-key-in-flight"}}
	mayNA := map[string][]string{"one-row": {"cancel-vs-completion"}}
	for _, d := range conformDrivers {
		t.Run(d.name, func(t *testing.T) {
			h := drivertest.Harness{Name: "conform:" + d.name, New: func(env drivertest.Env) (drivers.Driver, error) { return d.new(env), nil }}
			repro := fmt.Sprintf("STORESIM_CONFORM_RUNS=%%d go test ./drivers/drivertest -run '^TestConformingDrivers$/^%s$' -count=1", d.name)
			for run := range runs {
				o := opts
				o.Seed = uint64(run + 1)
				rep := drivertest.Certify(h, o)
				if !rep.Certified {
					t.Fatalf("run %d of %d (seed %d): %s is not certified:\n%s(repro: %s)", run+1, runs, o.Seed, h.Name, rep.Table(), fmt.Sprintf(repro, run+1))
				}
				for _, p := range rep.RacePairs {
					must, may := slices.Contains(mustNA[d.name], p.Pair), slices.Contains(mayNA[d.name], p.Pair)
					if na := p.NotApplicable != ""; (must && !na) || (na && !must && !may) {
						t.Fatalf("run %d (seed %d): race pair %s: hits %d, not applicable %q; want excused: %v:\n%s(repro: %s)",
							run+1, o.Seed, p.Pair, p.Hits, p.NotApplicable, must, rep.Table(), fmt.Sprintf(repro, run+1))
					}
				}
				if run == 0 {
					t.Logf("%s: %d rule groups, swarm %d runs; race pairs %v", h.Name, len(rep.Rules), rep.Swarm.Runs, rep.RacePairs)
				}
			}
		})
	}
}

// TestNoPairExcusedInFlight: a driver that completes most calls inside
// Submit but leaves some in flight gets no race pair excused: each must be
// exercised or is a gap.
func TestNoPairExcusedInFlight(t *testing.T) {
	h := drivertest.Harness{Name: "mostly-inline", New: func(env drivertest.Env) (drivers.Driver, error) { return newMostlyInline(env), nil }}
	rep := drivertest.Certify(h, drivertest.Options{Short: true})
	for _, p := range rep.RacePairs {
		if p.NotApplicable != "" {
			t.Fatalf("race pair %s was excused (%s) for a driver that keeps calls in flight:\n%s(repro: go test ./drivers/drivertest -run '^TestNoPairExcusedInFlight$')", p.Pair, p.NotApplicable, rep.Table())
		}
	}
}

// TestUncontrolledLiesCaught: the flaky driver's freedom is a transport's
// (a FAULT, a lookup error, wherever it strikes), not a licence: with one
// lie planted it fails the lie's rule. A miss reported as a fault is found
// by asking again beside a present key (D-MISS-HONEST); a publish answered
// NOT_ATTEMPTED whose put ran is found by the store's log (D-STATUS), though
// the driver's puts name no call.
func TestUncontrolledLiesCaught(t *testing.T) {
	for _, tc := range []struct{ lie, rule string }{
		{"miss-as-fault", "D-MISS-HONEST"},
		{"ran-not-attempted", "D-STATUS"},
	} {
		t.Run(tc.lie, func(t *testing.T) {
			h := drivertest.Harness{Name: "conform:flaky-" + tc.lie, New: func(env drivertest.Env) (drivers.Driver, error) {
				d := newFlaky(env).(*fifo)
				d.lie = tc.lie
				return d, nil
			}}
			rep := drivertest.Certify(h, drivertest.Options{Short: true})
			if !slices.Contains(rep.Failed(), tc.rule) {
				t.Fatalf("the flaky driver that lies %s: failed %v, want %s:\n%s(repro: go test ./drivers/drivertest -run '^TestUncontrolledLiesCaught$/^%s$')", tc.lie, rep.Failed(), tc.rule, rep.Table(), tc.lie)
			}
		})
	}
}
