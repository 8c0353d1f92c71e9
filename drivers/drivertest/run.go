package drivertest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Run is the go test entry point: it certifies the driver h builds
// (Options{Short: testing.Short()}) in subtests that each do their own
// work, so each one's time is its own and a -run pattern runs only what it
// names:
//
//   - one subtest per rule group (D-GEOM … capabilities), skipped with the
//     reason when the driver's declaration rules it out, and in it one per
//     directed case, which runs the case's directed run and its randomized
//     runs and fails with what they found;
//   - "swarm", one subtest per store profile ("default", "evicting"): the
//     backend-driven runs;
//   - "race-pairs", which fails on every pair never exercised (judged only
//     when the whole suite ran).
//
// A failure ends with the go test command that reruns exactly the run that
// found its first violation:
//
//	go test ./mine -run '^TestConformance$/^D-STATUS$/^fetch-absent-untouched$' -args -drivertest.seed=N [-drivertest.directed]
//
// -drivertest.seed makes each selected case (or swarm profile) run once,
// with that seed; -drivertest.directed picks the case's directed run.
//
//	func TestConformance(t *testing.T) {
//		drivertest.Run(t, drivertest.Harness{Name: "mine", New: newMine})
//	}
func Run(t *testing.T, h Harness) {
	t.Helper()
	RunWith(t, h, Options{Short: testing.Short()})
}

// RunWith is [Run] with explicit options; it returns the certificate of
// what ran. Options.Only limits it to one run; Options.Repro, when set,
// replaces the go test repro lines.
func RunWith(t *testing.T, h Harness, opts Options) Report {
	t.Helper()
	c := newCertifier(h, opts)
	c.collect = true
	base := t.Name()
	if c.opts.Repro == nil {
		c.opts.Repro = func(r Rerun) string { return goTestRepro(base, r) }
	}
	if !c.preflight() {
		t.Fatalf("%s: %s (repro: %s)", h.Name, c.unreachable, goTestRepro(base, Rerun{}))
	}
	c.probe = c.probeDriver()
	if c.probe.err != "" {
		t.Fatalf("%s: the driver could not be built: %s (repro: %s)", h.Name, c.probe.err, goTestRepro(base, Rerun{}))
	}
	var ran []string
	whole := !testSeed.set
	for _, g := range c.groups {
		did := false
		t.Run(g.rule.String(), func(t *testing.T) {
			did = true
			c.testGroup(t, g)
		})
		if did {
			ran = append(ran, g.rule.String())
		} else {
			whole = false
		}
	}
	swarmRan := false
	t.Run(SwarmGroup, func(t *testing.T) {
		swarmRan = true
		c.testSwarm(t)
	})
	whole = whole && swarmRan
	if !whole {
		c.subset = ran
		if c.subset == nil {
			c.subset = []string{}
		}
	}
	rep := c.report()
	t.Run("race-pairs", func(t *testing.T) {
		for _, p := range rep.RacePairs {
			if p.NotApplicable != "" {
				t.Logf("%s: not applicable: %s", p.Pair, p.NotApplicable)
				continue
			}
			t.Logf("%s: %d", p.Pair, p.Hits)
		}
		if c.partial() {
			t.Skipf("partial run: race pairs are judged only when the whole suite runs (%s)", goTestRepro(base, Rerun{}))
		}
		for _, p := range rep.RacePairs {
			if p.Hits == 0 && p.NotApplicable == "" {
				t.Errorf("gap: race pair %s was never exercised (repro: %s)", p.Pair, goTestRepro(base, Rerun{}))
			}
		}
	})
	if t.Failed() && !c.partial() {
		t.Logf("certificate:\n%s", rep.Table())
	}
	return rep
}

// pinned is the one run of a case (or swarm profile) that a seed flag or
// Options.Only asks for.
func (c *certifier) pinned() (seed uint64, directed, ok bool) {
	if c.opts.Only.Case != "" {
		return c.opts.Only.Seed, c.opts.Only.Directed, true
	}
	if testSeed.set {
		return testSeed.v, testDirected, true
	}
	return 0, false, false
}

// testGroup is a rule group's subtest: one subtest per directed case.
func (c *certifier) testGroup(t *testing.T, g *group) {
	if only := c.opts.Only; only.Case != "" && only.Group != g.rule.String() {
		t.Skipf("not selected (Options.Only: %s)", only)
	}
	if c.unreachable != "" {
		t.Skip("not run: " + c.unreachable)
	}
	if why := c.skipGroup(g); why != "" {
		t.Skip(why)
	}
	for i := range g.cases {
		cs := &g.cases[i]
		if only := c.opts.Only; only.Case != "" && only.Case != cs.name {
			continue
		}
		t.Run(cs.name, func(t *testing.T) { c.testCase(t, g, cs) })
	}
}

// testCase is a directed case's subtest: its directed run and randomized
// runs (or the one run pinned), failing with what they found.
func (c *certifier) testCase(t *testing.T, g *group, cs *caseDef) {
	if c.unreachable != "" {
		t.Skip("not run: " + c.unreachable)
	}
	if why := c.skipCase(g, cs); why != "" {
		t.Skip(why)
	}
	c.found = nil
	gaps := len(c.gaps)
	var ran int
	var skipped map[string]int
	if seed, directed, ok := c.pinned(); ok {
		skipped = map[string]int{}
		if why := c.runCaseSeed(g, cs, seed, directed); why != "" {
			skipped[why]++
		} else {
			ran++
		}
	} else {
		ran, skipped = c.runCase(g, cs)
	}
	c.reportFound(t, c.repro(Rerun{Group: g.rule.String(), Case: cs.name}), gaps)
	if ran == 0 && !t.Failed() {
		t.Skip(skipReasons(skipped))
	}
	if len(skipped) > 0 {
		t.Logf("partly skipped: %s", skipReasons(skipped))
	}
}

// testSwarm is the swarm's subtest: one subtest per store profile.
func (c *certifier) testSwarm(t *testing.T) {
	if only := c.opts.Only; only.Case != "" && only.Group != SwarmGroup {
		t.Skipf("not selected (Options.Only: %s)", only)
	}
	if why := c.skipSwarm(); why != "" {
		c.swarm.Note = why
		t.Skip(why)
	}
	for _, p := range c.profiles() {
		if only := c.opts.Only; only.Case != "" && only.Case != string(p) {
			continue
		}
		t.Run(string(p), func(t *testing.T) {
			c.found = nil
			gaps := len(c.gaps)
			if seed, _, ok := c.pinned(); ok {
				c.swarmProfile(p, &seed)
			} else {
				c.swarmProfile(p, nil)
			}
			c.reportFound(t, c.repro(Rerun{Group: SwarmGroup, Case: string(p)}), gaps)
		})
	}
}

// reportFound fails t with the violations its runs found (each names the
// row it counts against and its run) and the gaps after gaps, ending with
// the command that reruns the run of the first violation (or, for a gap
// alone, repro).
func (c *certifier) reportFound(t *testing.T, repro string, gaps int) {
	t.Helper()
	if len(c.found) > 0 {
		lines := make([]string, 0, len(c.found))
		for i, f := range c.found {
			if i == 20 {
				lines = append(lines, fmt.Sprintf("… and %d more", len(c.found)-i))
				break
			}
			lines = append(lines, fmt.Sprintf("[counts against %s] %s", f.row, f.text))
		}
		t.Errorf("%d violation(s):\n  %s\n(repro: %s)", len(c.found), strings.Join(lines, "\n  "), c.repro(c.found[0].run))
	}
	for _, g := range c.gaps[gaps:] {
		if strings.Contains(g, "(repro: ") {
			t.Errorf("gap: %s", g)
			continue
		}
		t.Errorf("gap: %s (repro: %s)", g, repro)
	}
	c.found = nil
}

// Check reports a certificate as subtests of t: one per rule group,
// failing with the violations and the report's repro, skipping with the
// reason, plus a "race-pairs" subtest that fails on every gap. [Run] does
// the work inside its subtests instead; Check is for a certificate made
// elsewhere.
func Check(t *testing.T, rep Report) {
	t.Helper()
	for _, rr := range rep.Rules {
		t.Run(rr.Rule, func(t *testing.T) {
			switch rr.Verdict {
			case Skip:
				t.Skip(rr.Reason)
			case Fail:
				t.Errorf("%s: %d violation(s), %d directed case(s), %d randomized seed(s):\n  %s\n(repro: %s)",
					rr.Rule, rr.Found, rr.Cases, len(rr.Seeds), strings.Join(rr.Violations, "\n  "), rr.Repro)
			default:
				if rr.Reason != "" {
					t.Log(rr.Reason)
				}
			}
		})
	}
	t.Run("race-pairs", func(t *testing.T) {
		for _, p := range rep.RacePairs {
			if p.NotApplicable != "" {
				t.Logf("%s: not applicable: %s", p.Pair, p.NotApplicable)
				continue
			}
			t.Logf("%s: %d", p.Pair, p.Hits)
		}
		for _, g := range rep.Gaps {
			t.Errorf("gap: %s (repro: %s)", g, reproOf(t))
		}
		if len(rep.Selected) > 0 {
			t.Skipf("partial run (%s): race pairs are judged only by a full certification", strings.Join(rep.Selected, " "))
		}
	})
}

// goTestRepro is the go test command that reruns r inside the test named
// base: the whole test (r.Group ""), a group's subtest, a case's (or swarm
// profile's) subtest, with the seed flags of one run.
func goTestRepro(base string, r Rerun) string {
	parts := strings.Split(base, "/")
	if r.Group != "" {
		parts = append(parts, r.Group)
		if r.Case != "" {
			parts = append(parts, r.Case)
		}
	}
	cmd := "go test " + packageDir() + " -run '" + anchored(parts) + "'"
	if r.Case != "" && r.Seed != 0 {
		cmd += fmt.Sprintf(" -args -drivertest.seed=%d", r.Seed)
		if r.Directed {
			cmd += " -drivertest.directed"
		}
	}
	return cmd
}

// anchored is a -run pattern matching exactly the (sub)test path parts.
func anchored(parts []string) string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(out, "/")
}

// reproOf is the command that reruns t: go test on the package directory
// (relative to the module root) with t's full name anchored.
func reproOf(t *testing.T) string {
	return fmt.Sprintf("go test %s -run '%s'", packageDir(), anchored(strings.Split(t.Name(), "/")))
}

// packageDir is the test's package as a path from its module root
// ("./drivers/drivertest"), or "." when the root cannot be found.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		if filepath.Dir(dir) == dir {
			return "."
		}
	}
}
