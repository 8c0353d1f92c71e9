package zoo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/fuzz/engine"
)

// swarmLimit bounds a hunt in TestSwarmFinds: every caught bug is found
// within a few seeds (docs/ZOO.md), so 2 000 is a wide margin.
const swarmLimit = 2000

// TestTable: one table entry per backend/zoo_<name>.go file and back; an
// entry is either caught (rules it may trip, each a SPEC id or a harness
// class) or an escape that says which check is missing.
func TestTable(t *testing.T) {
	const repro = "(repro: go test ./broken/zoo -run TestTable)"
	files, err := filepath.Glob("../../backend/zoo_*.go")
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, f := range files {
		n := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "zoo_"), ".go")
		if n != "off" && !strings.HasSuffix(f, "_test.go") {
			onDisk = append(onDisk, n)
		}
	}
	var names []string
	rule := regexp.MustCompile(`^([DBS]-[A-Z0-9-]+|liveness|panic)$`)
	caught := 0
	for _, b := range Bugs {
		names = append(names, b.Name)
		switch {
		case b.What == "" || !rule.MatchString(b.Breaks):
			t.Errorf("%s: needs What and a SPEC id in Breaks %s", b.Name, repro)
		case b.Caught() == (b.Blind != ""):
			t.Errorf("%s: give either Trips (caught) or Blind (escape), not both or neither %s", b.Name, repro)
		}
		for _, r := range b.Trips {
			if !rule.MatchString(r) {
				t.Errorf("%s: trip %q is neither a SPEC id nor liveness/panic %s", b.Name, r, repro)
			}
		}
		if b.Caught() {
			caught++
		}
	}
	slices.Sort(names)
	slices.Sort(onDisk)
	if !slices.Equal(names, onDisk) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Fatalf("table %v\nfiles %v\nwant the same names, once each %s", names, onDisk, repro)
	}
	if caught < 15 {
		t.Fatalf("%d caught bugs in the zoo, want at least 15 %s", caught, repro)
	}
}

// TestSwarmFinds hunts the bug compiled into this build: the swarm must find
// a failing seed that names one of the bug's rules, and that seed must replay
// to the same rule and trace hash. Without a zoo tag it proves the hunt
// raises no false alarm on the correct backend. Escapes are hunted too and
// skipped with the reason the swarm is blind to them.
func TestSwarmFinds(t *testing.T) {
	name := backend.ZooBug()
	repro := fmt.Sprintf("(repro: go test -tags zoo_%s ./broken/zoo -run '^TestSwarmFinds$' -v)", name)
	if name == "" {
		repro = "(repro: go test ./broken/zoo -run '^TestSwarmFinds$')"
		if h := HuntSwarm(0, 50, engine.Config{}); h.Found {
			t.Fatalf("the untagged backend failed seed %d: %s %s", h.Seed, h.Detail, repro)
		}
		return
	}
	bug, ok := Lookup(name)
	if !ok {
		t.Fatalf("build carries planted bug %q, which the table lacks %s", name, repro)
	}
	t.Logf("planted bug %s (%s): %s", name, bug.Breaks, bug.What)
	if !bug.Caught() {
		h := HuntSwarm(0, 300, engine.Config{})
		t.Skipf("escape: found=%v after %d seeds (%s %s); the swarm is blind to it: %s", h.Found, h.Tried, h.Rule, h.Detail, bug.Blind)
	}
	h := HuntSwarm(0, swarmLimit, engine.Config{})
	switch {
	case !h.Found:
		t.Fatalf("no failing seed in %d; want one of %v %s", h.Tried, bug.Trips, repro)
	case !bug.Accepts(h.Rule):
		t.Fatalf("seed %d failed with %s (%s), want one of %v %s", h.Seed, h.Rule, h.Detail, bug.Trips, repro)
	}
	t.Logf("caught: seed %d (%d seeds) %s: %s", h.Seed, h.Tried, h.Rule, h.Detail)
	if h.Result == nil {
		return // a panic: no trace hash to replay
	}
	again := engine.RunSeed(h.Seed, engine.Config{})
	if again.Rule() != h.Rule || again.TraceHash != h.Result.TraceHash {
		t.Fatalf("seed %d replayed to %s %016x, first run %s %016x %s", h.Seed, again.Rule(), again.TraceHash, h.Rule, h.Result.TraceHash, repro)
	}
}

// quickZoo is the part of the zoo the normal test run builds: one memory bug
// and one outcome bug, enough to prove the tag mechanism end to end. The
// full zoo runs with STORESIM_ZOO=1 (and in scripts/zoo.sh).
var quickZoo = []string{"outcome_is_end", "late_success", "nocut_key", "fault_as_miss"}

// TestZooCaught builds the package once per planted bug (go test -tags
// zoo_<name>) and runs TestSwarmFinds there.
func TestZooCaught(t *testing.T) {
	if backend.ZooBug() != "" {
		t.Skip("runs from the untagged build only")
	}
	full := os.Getenv("STORESIM_ZOO") == "1"
	for _, b := range Bugs {
		if !b.Caught() || !full && !slices.Contains(quickZoo, b.Name) {
			continue
		}
		t.Run(b.Name, func(t *testing.T) {
			cmd := exec.Command("go", "test", "-tags", "zoo_"+b.Name, "-run", "^TestSwarmFinds$", "-count=1", "-v", ".")
			out, err := cmd.CombinedOutput()
			repro := fmt.Sprintf("(repro: go test -tags zoo_%s ./broken/zoo -run '^TestSwarmFinds$' -v)", b.Name)
			if err != nil {
				t.Fatalf("%v:\n%s\n%s", err, out, repro)
			}
			if !strings.Contains(string(out), "planted bug "+b.Name) || !strings.Contains(string(out), "caught: seed") {
				t.Fatalf("the tagged build did not hunt %s:\n%s\n%s", b.Name, out, repro)
			}
		})
	}
}
