package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	const repro = "go test ./fuzz/engine -run TestPolicyHashesStable"
	path := filepath.Join("testdata", "hashes-policies.txt")
	got := policyHashLines()
	if *updateHashes {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with: %s -update-hashes)", err, repro)
	}
	want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(want) != len(got) {
		t.Fatalf("%s has %d lines, the runs give %d (repro: %s)", path, len(want), len(got), repro)
	}
	bad := 0
	for i := range got {
		if got[i] != want[i] {
			if bad < 5 {
				t.Errorf("policy seed hash verdict steps:\n\twant %s\n\tgot  %s", want[i], got[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d seeds changed their trace (repro: %s; rewrite with -update-hashes only when the runs are meant to change)", bad, len(got), repro)
	}
}
