package drivertest

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/storesim/storesim/broken"
)

// TestRerunReproduces: every failing rule group of every broken driver
// names the run of its first violation (RuleResult.First, and its repro
// names that case and seed), and rerunning exactly that run (Options.Only)
// shows the same violation first, in the same row.
func TestRerunReproduces(t *testing.T) {
	for _, s := range broken.All() {
		t.Run(string(s.Name), func(t *testing.T) {
			h := Registered(s.RegistryName())
			rep := Certify(h, short)
			failed := 0
			for _, rr := range rep.Rules {
				if rr.Verdict != Fail {
					continue
				}
				failed++
				first := rr.First
				if first == nil || first.Case == "" || first.Seed == 0 {
					t.Fatalf("%s failed, but names no run to rerun: %+v (repro: %s)", rr.Rule, first, reproOf(t))
				}
				want := "storesim certify " + CertifyArgs(h.Name, *first)
				if first.Group == SwarmGroup {
					want = fmt.Sprintf("storesim replay --seed %d --driver %s --profile %s --ops 100", first.Seed, h.Name, first.Case)
				}
				if rr.Repro != want {
					t.Fatalf("%s: repro %q, want %q (repro: %s)", rr.Rule, rr.Repro, want, reproOf(t))
				}
				again := Certify(h, Options{Only: *first})
				got, _ := again.Rule(rr.Rule)
				if got.Verdict != Fail || got.Violations[0] != rr.Violations[0] || again.Rerun == nil || *again.Rerun != *first {
					t.Fatalf("%s: the rerun of %s gave %s, first violation\n  %v\nwant\n  %s\n%s(repro: %s)", rr.Rule, first, got.Verdict, got.Violations, rr.Violations[0], again.Table(), reproOf(t))
				}
			}
			if failed == 0 {
				t.Fatalf("%s failed no rule:\n%s(repro: %s)", s.Name, rep.Table(), reproOf(t))
			}
		})
	}
}

// TestOnlyUnknownRun: an Options.Only that names no run is a gap, never a
// pass.
func TestOnlyUnknownRun(t *testing.T) {
	for _, only := range []Rerun{{Group: "D-NOPE", Case: "x", Seed: 1}, {Group: "D-GEOM", Case: "nope", Seed: 1}, {Group: SwarmGroup, Case: "calm", Seed: 1}} {
		rep := Certify(Registered("memory"), Options{Only: only})
		if rep.Certified || len(rep.Gaps) != 1 || !strings.Contains(rep.Gaps[0], "Options.Only") {
			t.Errorf("Only %+v: certified %v, gaps %v; want one gap naming Options.Only (repro: %s)", only, rep.Certified, rep.Gaps, reproOf(t))
		}
	}
}

// TestRunHelper is the conformance test of a broken driver that
// TestRunSubtestsRerun runs in a child process (it skips otherwise).
func TestRunHelper(t *testing.T) {
	if os.Getenv("DRIVERTEST_RUN_HELPER") == "" {
		t.Skip("run by TestRunSubtestsRerun in a child process")
	}
	Run(t, Registered("broken:LiesAboutAccess"))
}

var (
	goTestLine = regexp.MustCompile(`\(repro: go test \./drivers/drivertest -run '([^']+)' -args (-drivertest\.seed=\d+(?: -drivertest\.directed)?)\)`)
	firstFound = regexp.MustCompile(`violation\(s\):\n\s+(\[counts against [^\]]+\] .*)\n`)
)

// TestRunSubtestsRerun: Run does each group's work inside the group's
// subtest, so -run '^T$/^D-ACCESS-END$' runs only that group (and its
// cases); the failure it prints ends with the go test command of one
// case run, and that command shows the same violation first.
func TestRunSubtestsRerun(t *testing.T) {
	child := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], append([]string{"-test.v", "-test.short", "-test.count=1"}, args...)...)
		cmd.Env = append(os.Environ(), "DRIVERTEST_RUN_HELPER=1")
		out, err := cmd.CombinedOutput()
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("%v: %v, want a failing test run:\n%s(repro: %s)", args, err, out, reproOf(t))
		}
		return string(out)
	}
	out := child("-test.run", "^TestRunHelper$/^D-ACCESS-END$")
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, "=== RUN   "); ok && name != "TestRunHelper" && !strings.HasPrefix(name, "TestRunHelper/D-ACCESS-END") {
			t.Fatalf("-run '^TestRunHelper$/^D-ACCESS-END$' ran %s:\n%s(repro: %s)", name, out, reproOf(t))
		}
	}
	m, f := goTestLine.FindStringSubmatch(out), firstFound.FindStringSubmatch(out)
	if m == nil || f == nil || !strings.Contains(out, "=== RUN   TestRunHelper/D-ACCESS-END/no-touch-after-ended") {
		t.Fatalf("no case subtest failing with a violation and a go test repro:\n%s(repro: %s)", out, reproOf(t))
	}
	again := child(append([]string{"-test.run", m[1]}, strings.Fields(m[2])...)...)
	g := firstFound.FindStringSubmatch(again)
	if g == nil || g[1] != f[1] {
		t.Fatalf("go test -run '%s' -args %s: first violation\n  %v\nwant\n  %s\n%s(repro: %s)", m[1], m[2], g, f[1], again, reproOf(t))
	}
	if n := strings.Count(again, "=== RUN   "); n != 3 {
		t.Fatalf("the rerun ran %d (sub)tests, want the test, the group and the case:\n%s(repro: %s)", n, again, reproOf(t))
	}
}

// TestRunConforming: a conforming driver passes every subtest of Run —
// every group's cases, both swarm profiles and race-pairs, which judges
// the pairs because the whole suite ran.
func TestRunConforming(t *testing.T) {
	opts := Options{Seeds: 12}
	if testing.Short() {
		opts = short
	}
	rep := RunWith(t, Registered("together"), opts)
	if len(rep.Selected) > 0 || !rep.Certified || len(rep.Swarm.Profiles) != len(SwarmProfiles()) {
		t.Fatalf("Run of the whole suite: selected %v, certified %v, swarm %+v; want a full certificate:\n%s(repro: %s)", rep.Selected, rep.Certified, rep.Swarm, rep.Table(), reproOf(t))
	}
}
