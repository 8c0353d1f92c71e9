package engine

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateHashes = flag.Bool("update-hashes", false, "rewrite testdata/hashes.txt from this tree")

// hashSets are the seeds whose trace hash, verdict and step count are held
// fixed: each profile of the main job, and the simulated drivers one at a
// time. An optimisation must not change any of them (issue 18's rule:
// "the same seed gives the same trace hash and verdict before and after").
var hashSets = []struct {
	profile Profile
	driver  string
	seeds   uint64
}{
	{Default, "", 120},
	{Evicting, "", 60},
	{Calm, "", 40},
	{Default, "memory", 40},
	{Default, "together", 40},
}

func hashLines() []string {
	var out []string
	for _, hs := range hashSets {
		for seed := range hs.seeds {
			r := RunSeed(seed, Config{Profile: hs.profile, Driver: hs.driver})
			d := hs.driver
			if d == "" {
				d = "-"
			}
			out = append(out, fmt.Sprintf("%s %s %d %016x %s %d", hs.profile, d, seed, r.TraceHash, r.Verdict, r.Steps))
		}
	}
	return out
}

// TestHashesStable: the seeds of hashSets replay to the trace hashes, verdicts
// and step counts recorded in testdata/hashes.txt. A change that is meant to
// change the runs (a new fault kind, a new workload op) rewrites the file with
// -update-hashes and says so in its commit; an optimisation never does.
func TestHashesStable(t *testing.T) {
	compareHashFile(t, "hashes.txt", hashLines(), "go test ./fuzz/engine -run TestHashesStable")
}

// compareHashFile compares got, line by line, with testdata/name, or
// rewrites the file with -update-hashes.
func compareHashFile(t *testing.T, name string, got []string, repro string) {
	t.Helper()
	path := filepath.Join("testdata", name)
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
		t.Fatalf("%s has %d lines, the runs give %d (repro: %s; rewrite with -update-hashes only when the runs are meant to change)", path, len(want), len(got), repro)
	}
	bad := 0
	for i := range got {
		if got[i] != want[i] {
			if bad < 5 {
				t.Errorf("seed hash verdict steps:\n\twant %s\n\tgot  %s", want[i], got[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d seeds changed their trace (repro: %s; rewrite with -update-hashes only when the runs are meant to change)", bad, len(got), repro)
	}
}
