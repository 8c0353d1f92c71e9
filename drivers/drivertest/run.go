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
// (Options{Short: testing.Short()}) and reports one subtest per rule group —
// failing with the violations and a repro command, skipping with the reason
// — plus a "race-pairs" subtest that fails on every gap.
//
//	func TestConformance(t *testing.T) {
//		drivertest.Run(t, drivertest.Harness{Name: "mine", New: newMine})
//	}
func Run(t *testing.T, h Harness) {
	t.Helper()
	RunWith(t, h, Options{Short: testing.Short()})
}

// RunWith is [Run] with explicit options.
func RunWith(t *testing.T, h Harness, opts Options) {
	t.Helper()
	rep := Certify(h, opts)
	Check(t, rep)
}

// Check reports a certificate as subtests of t (what [Run] does after
// certifying).
func Check(t *testing.T, rep Report) {
	t.Helper()
	for _, rr := range rep.Rules {
		t.Run(rr.Rule, func(t *testing.T) {
			switch rr.Verdict {
			case Skip:
				t.Skip(rr.Reason)
			case Fail:
				t.Errorf("%s: %d violation(s), %d directed case(s), %d randomized seed(s):\n  %s\n(repro: %s)",
					rr.Rule, rr.Found, rr.Cases, len(rr.Seeds), strings.Join(rr.Violations, "\n  "), reproOf(t))
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

// reproOf is the command that reruns t: go test on the package directory
// (relative to the module root) with t's full name anchored.
func reproOf(t *testing.T) string {
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return fmt.Sprintf("go test %s -run '%s'", packageDir(), strings.Join(parts, "/"))
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
