package engine

import (
	"fmt"
	"testing"

	"github.com/storesim/storesim/sim"
)

// policyHashLines are the seeds held fixed under the scheduling policies
// TestHashesStable does not run: PCT (depth 3), and a script — each seed's
// random-policy decisions recorded (ScheduleOf) and replayed as its log's
// sched section, which draws nothing from the seed.
func policyHashLines() []string {
	var out []string
	for seed := range uint64(40) {
		r := RunSeed(seed, Config{Sched: sim.PCT, Depth: 3})
		out = append(out, fmt.Sprintf("pct-3 %d %016x %s %d", seed, r.TraceHash, r.Verdict, r.Steps))
	}
	for seed := range uint64(20) {
		log := Plan(seed, Config{})
		sc, _ := ScheduleOf(log, Config{})
		log.Sched.Script = sc
		r := Run(log, Config{})
		out = append(out, fmt.Sprintf("script %d %016x %s %d", seed, r.TraceHash, r.Verdict, r.Steps))
	}
	return out
}

// TestPolicyHashesStable is TestHashesStable for PCT and scripted runs
// (testdata/hashes-policies.txt; -update-hashes rewrites it, under the same
// rule: never for an optimisation).
func TestPolicyHashesStable(t *testing.T) {
	compareHashFile(t, "hashes-policies.txt", policyHashLines(), "go test ./fuzz/engine -run TestPolicyHashesStable")
}
