package engine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/registry"
)

// TestLeanMatchesFull: a Lean run keeps every check: over passing seeds of
// every profile and failing seeds (a driver that loses its callbacks), the
// lean run's trace hash, verdict and findings equal the full run's, and a
// failing lean run comes back with the full run's notes.
func TestLeanMatchesFull(t *testing.T) {
	const repro = "go test ./fuzz/engine -run TestLeanMatchesFull"
	lossy := func(name string, env registry.Env) (drivers.Driver, error) {
		d, err := registry.New(name, env)
		if err != nil {
			return nil, err
		}
		return silent{d}, nil
	}
	findings := func(r *Result) []string {
		var out []string
		for _, v := range r.Failures {
			out = append(out, fmt.Sprintf("%s %s", v.Rule, v.Detail))
		}
		return out
	}
	failed := 0
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"default", Config{}},
		{"evicting", Config{Profile: Evicting}},
		{"calm", Config{Profile: Calm}},
		{"lossy", Config{Profile: Calm, Factory: lossy}},
	} {
		for seed := range uint64(40) {
			full := RunSeed(seed, tc.cfg)
			leanCfg := tc.cfg
			leanCfg.Lean = true
			lean := RunSeed(seed, leanCfg)
			if lean.TraceHash != full.TraceHash || lean.Verdict != full.Verdict || !slices.Equal(findings(lean), findings(full)) {
				t.Fatalf("%s seed %d: lean %s %v, full %s %v (repro: %s)", tc.name, seed, lean.Summary(), findings(lean), full.Summary(), findings(full), repro)
			}
			if full.Verdict != Pass {
				failed++
				if len(lean.Notes) == 0 || len(lean.Notes) != len(full.Notes) {
					t.Fatalf("%s seed %d: a failing lean run came back with %d notes, the full run has %d (repro: %s)", tc.name, seed, len(lean.Notes), len(full.Notes), repro)
				}
			}
		}
	}
	if failed == 0 {
		t.Fatalf("no seed failed: the lossy driver must make lean runs replay in full (repro: %s)", repro)
	}
}
