package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/registry"
)

// TestSwarmReference: the reference drivers pass every check on many seeds
// under the default fault mix and the evicting profile (issue: 2 000 seeds
// each; -short runs 100).
func TestSwarmReference(t *testing.T) {
	n := uint64(2000)
	if testing.Short() {
		n = 100
	}
	for _, drv := range []string{"memory", "together"} {
		for _, p := range []Profile{Default, Evicting} {
			t.Run(drv+"/"+string(p), func(t *testing.T) {
				var attempts, delivered, failed int
				for seed := range n {
					res := RunSeed(seed, Config{Driver: drv, Profile: p})
					if res.Verdict != Pass {
						var b strings.Builder
						res.WriteReport(&b)
						t.Fatalf("%s", b.String())
					}
					attempts += res.Attempts
					delivered += res.Delivered
					failed += res.Failed
				}
				// Not vacuous: the swarm admits, delivers and fails attempts.
				if attempts < int(n)*10 || delivered == 0 || failed == 0 {
					t.Fatalf("swarm too thin: %d attempts, %d delivered, %d failed over %d seeds (repro: go test ./fuzz/engine -run 'TestSwarmReference/%s/%s')", attempts, delivered, failed, n, drv, p)
				}
			})
		}
	}
}

// TestReplayIdentical: a seed, and the printed-and-parsed log of it, replay
// to the same trace hash and verdict.
func TestReplayIdentical(t *testing.T) {
	for seed := range uint64(50) {
		a := RunSeed(seed, Config{})
		b := RunSeed(seed, Config{})
		if a.TraceHash != b.TraceHash || a.Verdict != b.Verdict {
			t.Fatalf("seed %d: %s vs %s (repro: go test ./fuzz/engine -run TestReplayIdentical)", seed, a.Summary(), b.Summary())
		}
		log, err := parseBack(a)
		if err != nil {
			t.Fatal(err)
		}
		if c := Run(log, Config{}); c.TraceHash != a.TraceHash {
			t.Fatalf("seed %d: the op log replays to %016x, the seed to %016x (repro: go test ./fuzz/engine -run TestReplayIdentical)", seed, c.TraceHash, a.TraceHash)
		}
	}
	if RunSeed(1, Config{}).TraceHash == RunSeed(2, Config{}).TraceHash {
		t.Fatalf("seeds 1 and 2 share a trace hash (repro: go test ./fuzz/engine -run TestReplayIdentical)")
	}
}

// silent drops every change callback of the wrapped driver's calls: a lost
// wake-up the monitor must name (D-CB-2), not a pass.
type silent struct{ drivers.Driver }

func (s silent) Submit(b drivers.RowBatch, _ func()) (drivers.Call, error) {
	return s.Driver.Submit(b, func() {})
}

func (s silent) Shutdown(ctx context.Context) []string { return s.Driver.Shutdown(ctx) }

// TestCheckersFire: a driver fault planted around a reference driver makes
// the run fail with the rule's id.
func TestCheckersFire(t *testing.T) {
	cases := []struct {
		name string
		wrap func(drivers.Driver) drivers.Driver
		rule rules.ID
	}{
		{"lost callbacks", func(d drivers.Driver) drivers.Driver { return silent{d} }, rules.DCB2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			factory := func(name string, env registry.Env) (drivers.Driver, error) {
				d, err := registry.New(name, env)
				if err != nil {
					return nil, err
				}
				return tc.wrap(d), nil
			}
			hits := 0
			for seed := range uint64(20) {
				if res := RunSeed(seed, Config{Profile: Calm, Factory: factory}); res.Verdict == Safety && res.Rule() == tc.rule {
					hits++
				}
			}
			if hits == 0 {
				t.Fatalf("no seed of 20 failed with %s (repro: go test ./fuzz/engine -run 'TestCheckersFire/%s')", tc.rule, tc.name)
			}
		})
	}
}

func TestReportNamesRuleAndRepro(t *testing.T) {
	factory := func(name string, env registry.Env) (drivers.Driver, error) {
		d, err := registry.New(name, env)
		return silent{d}, err
	}
	for seed := range uint64(20) {
		res := RunSeed(seed, Config{Profile: Calm, Factory: factory})
		if res.Verdict == Pass {
			continue
		}
		var b strings.Builder
		res.WriteReport(&b)
		out := b.String()
		want := fmt.Sprintf("repro: storesim replay --seed %d --driver mixed --profile calm --ops 100", seed)
		if !strings.Contains(out, res.Rule().String()) || !strings.Contains(out, want) {
			t.Fatalf("report lacks the rule %q or %q:\n%s (repro: go test ./fuzz/engine -run TestReportNamesRuleAndRepro)", res.Rule(), want, out)
		}
		return
	}
	t.Fatalf("no failing seed to report on (repro: go test ./fuzz/engine -run TestReportNamesRuleAndRepro)")
}

// panicky panics inside the first change callback it delivers: the run
// must end as a B-SUBMIT failure of the seed, not crash the swarm.
type panicky struct{ drivers.Driver }

func (p panicky) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	return p.Driver.Submit(b, func() { panic("planted") })
}

func TestPanicIsAFailure(t *testing.T) {
	factory := func(name string, env registry.Env) (drivers.Driver, error) {
		d, err := registry.New(name, env)
		return panicky{d}, err
	}
	res := RunSeed(0, Config{Profile: Calm, Factory: factory})
	if res.Verdict != Safety || res.Rule() != rules.BSubmit || !strings.Contains(res.Failures[0].Detail, "planted") {
		t.Fatalf("got %s, want a B-SUBMIT failure naming the panic (repro: go test ./fuzz/engine -run TestPanicIsAFailure)", res.Summary())
	}
}
