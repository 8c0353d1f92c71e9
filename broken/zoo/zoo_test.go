package zoo

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/fuzz/engine"
)

// swarmLimit bounds a hunt in TestSwarmFinds: every caught bug is found
// within a few seeds (docs/ZOO.md), so 2 000 is a wide margin.
const swarmLimit = 2000

// root is the repository root, seen from this package's directory.
const root = "../.."

// overlayRepro is the command that builds a package with bug name planted.
func overlayRepro(cmd, name, pkg string) string {
	return fmt.Sprintf(`go %s -overlay "$(go run ./broken/zoo/realhunt overlay %s)" %s`, cmd, name, pkg)
}

// TestTable: one table entry per patches/<name>.patch file and back; an
// entry is either caught (rules it may trip, each a SPEC id or a harness
// class) or an escape that says which check is missing.
func TestTable(t *testing.T) {
	const repro = "(repro: go test ./broken/zoo -run TestTable)"
	files, err := filepath.Glob("patches/*")
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, f := range files {
		onDisk = append(onDisk, strings.TrimSuffix(filepath.Base(f), ".patch"))
		if !strings.HasSuffix(f, ".patch") {
			t.Errorf("%s: only <name>.patch files belong in patches/ %s", f, repro)
		}
	}
	var names []string
	caught := 0
	for _, b := range Bugs {
		names = append(names, b.Name)
		switch {
		case b.What == "" || !b.Breaks.Valid():
			t.Errorf("%s: needs What and a SPEC id in Breaks %s", b.Name, repro)
		case b.Caught() == (b.Blind != ""):
			t.Errorf("%s: give either Trips (caught) or Blind (escape), not both or neither %s", b.Name, repro)
		}
		for _, r := range b.Trips {
			if !r.Valid() {
				t.Errorf("%s: trip %v is not a rule of the contract %s", b.Name, r, repro)
			}
		}
		if b.Caught() {
			caught++
		}
	}
	slices.Sort(names)
	slices.Sort(onDisk)
	if !slices.Equal(names, onDisk) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Fatalf("table %v\npatches %v\nwant the same names, once each %s", names, onDisk, repro)
	}
	if caught < 15 {
		t.Fatalf("%d caught bugs in the zoo, want at least 15 %s", caught, repro)
	}
}

// TestPatches: every patch applies to the current backend, touches only its
// non-test Go files, compiles, and changes the build: the package archive of
// `go build -overlay` differs from the clean one. It only builds; the hunts
// are TestZooCaught's.
func TestPatches(t *testing.T) {
	if Planted() != "" {
		t.Skip("runs from a build without an overlay only")
	}
	build := func(t *testing.T, ov string) ([]byte, string, error) {
		a := filepath.Join(t.TempDir(), "backend.a")
		args := []string{"build", "-o", a}
		if ov != "" {
			args = append(args, "-overlay", ov)
		}
		cmd := exec.Command("go", append(args, "./backend")...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, string(out), err
		}
		b, err := os.ReadFile(a)
		return b, "", err
	}
	clean, out, err := build(t, "")
	if err != nil {
		t.Fatalf("the clean backend does not build: %v\n%s (repro: go build ./backend)", err, out)
	}
	cleanSum := sha256.Sum256(clean)
	for _, b := range Bugs {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			repro := fmt.Sprintf("(repro: go test ./broken/zoo -run 'TestPatches/^%s$')", b.Name)
			patch, err := os.ReadFile(filepath.Join(root, PatchPath(b.Name)))
			if err != nil {
				t.Fatalf("%v %s", err, repro)
			}
			files, err := Apply(root, patch)
			if err != nil {
				t.Fatalf("%s does not apply to the current backend: %v %s", PatchPath(b.Name), err, repro)
			}
			for path := range files {
				if filepath.Dir(path) != "backend" || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
					t.Errorf("%s touches %s: a planted bug changes non-test Go files of backend/ only %s", PatchPath(b.Name), path, repro)
				}
			}
			ov, err := Overlay(root, t.TempDir(), b.Name)
			if err != nil {
				t.Fatalf("%v %s", err, repro)
			}
			patched, out, err := build(t, ov)
			switch {
			case err != nil:
				t.Fatalf("the backend with %s does not compile: %v\n%s\n%s", PatchPath(b.Name), err, out, repro)
			case sha256.Sum256(patched) == cleanSum:
				t.Fatalf("the backend with %s builds to the same archive as the clean one: the patch changes nothing %s", PatchPath(b.Name), repro)
			}
		})
	}
}

// TestSwarmFinds hunts the bug planted in this build: the swarm must find a
// failing seed that names one of the bug's rules, and that seed must replay
// to the same rule and trace hash. Without an overlay it proves the hunt
// raises no false alarm on the clean backend. Escapes are hunted too and
// skipped with the reason the swarm is blind to them.
func TestSwarmFinds(t *testing.T) {
	name := Planted()
	repro := fmt.Sprintf("(repro: %s -run '^TestSwarmFinds$' -v)", overlayRepro("test", name, "./broken/zoo"))
	if name == "" {
		repro = "(repro: go test ./broken/zoo -run '^TestSwarmFinds$')"
		if h := HuntSwarm(0, 50, engine.Config{}); h.Found {
			t.Fatalf("the clean backend failed seed %d: %s %s", h.Seed, h.Detail, repro)
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

// quickZoo is the part of the zoo the normal test run builds: a memory, an
// outcome, a cut and a fold bug prove the overlay mechanism end to end, and
// four prove the reference model's youngest checks fire in the normal suite
// (an outcome's reason, one Cancel per call, a shutdown's retry, a
// shutdown that closes by stale reads). The full zoo runs with
// STORESIM_ZOO=1 (and in scripts/zoo.sh).
var quickZoo = []string{"outcome_is_end", "late_success", "nocut_key", "fault_as_miss", "shutdown_reason_lost", "cancel_flag_not_set", "retry_skips_close", "no_refresh_before_close"}

// TestZooCaught builds the package once per planted bug (go test -overlay)
// and runs TestSwarmFinds there.
func TestZooCaught(t *testing.T) {
	if Planted() != "" {
		t.Skip("runs from a build without an overlay only")
	}
	full := os.Getenv("STORESIM_ZOO") == "1"
	for _, b := range Bugs {
		if !b.Caught() || !full && !slices.Contains(quickZoo, b.Name) {
			continue
		}
		t.Run(b.Name, func(t *testing.T) {
			repro := fmt.Sprintf("(repro: %s -run '^TestSwarmFinds$' -v)", overlayRepro("test", b.Name, "./broken/zoo"))
			ov, err := Overlay(root, t.TempDir(), b.Name)
			if err != nil {
				t.Fatalf("%v %s", err, repro)
			}
			cmd := exec.Command("go", "test", "-overlay", ov, "-run", "^TestSwarmFinds$", "-count=1", "-v", ".")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v:\n%s\n%s", err, out, repro)
			}
			if !strings.Contains(string(out), "planted bug "+b.Name) || !strings.Contains(string(out), "caught: seed") {
				t.Fatalf("the build with the overlay did not hunt %s:\n%s\n%s", b.Name, out, repro)
			}
		})
	}
}
