package drivertest_test

import (
	"fmt"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/diff"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/registry"
)

// TestDiffConformingDrivers: the reference driver against each of the
// eight unusual conforming drivers (inline completion, staging copies, one
// row per call, one direction only, …) never diverges in a differential
// run (package fuzz/diff): what they do differently is a freedom of the
// contract, never a divergence. Every seed runs twice; the verdicts and
// summaries must match (no flakes).
func TestDiffConformingDrivers(t *testing.T) {
	seeds := uint64(20)
	if testing.Short() {
		seeds = 5
	}
	for _, cd := range conformDrivers {
		t.Run(cd.name, func(t *testing.T) {
			newDriver := cd.new
			side := diff.Side{Name: cd.name, New: func(_ string, env registry.Env) (drivers.Driver, error) { return newDriver(env), nil }}
			rows := 0
			for _, p := range []engine.Profile{engine.Calm, engine.Evicting} {
				for seed := range seeds {
					log := engine.Plan(seed, engine.Config{Driver: "memory", Profile: p})
					cfg := diff.Config{Repro: fmt.Sprintf("go test ./drivers/drivertest -run 'TestDiffConformingDrivers/%s' (seed %d, profile %s)", cd.name, seed, p)}
					res := diff.Run(log, diff.Side{Name: "memory"}, side, cfg)
					if v := res.Verdict(); v != engine.Pass {
						t.Fatalf("memory vs %s, seed %d, profile %s: %s, want a pass:\n%s", cd.name, seed, p, v, res.Report())
					}
					again := diff.Run(log, diff.Side{Name: "memory"}, side, cfg)
					if again.Verdict() != res.Verdict() || again.Summary() != res.Summary() {
						t.Fatalf("seed %d played twice differs:\n%s\n%s\n(repro: %s)", seed, res.Summary(), again.Summary(), cfg.Repro)
					}
					rows += res.Rows
				}
			}
			t.Logf("memory vs %s: %d rows compared", cd.name, rows)
		})
	}
}
