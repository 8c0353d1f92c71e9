package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/scenarios"
)

// TestShrinkScenario (issue 7, part 5): shrink --scenario writes the
// minimized failure as a scenario file that passes as written, whose check
// names the rule the harness found, and that reports nothing on the memory
// driver; an unwritable path is an input error.
func TestShrinkScenario(t *testing.T) {
	dir := t.TempDir()
	out, scen := filepath.Join(dir, "min.txt"), filepath.Join(dir, "min-scenario.txt")
	got := storesim("shrink", "--seed", "0", "--driver", "broken:LiesAboutAccess", "--out", out, "--scenario", scen)
	if got.code != 0 || !strings.Contains(got.stderr, "scenario written to "+scen+"; its check reports D-ACCESS-END") {
		t.Fatalf("shrink: exit %d:\n%s %s", got.code, got.stderr, repro(t))
	}
	text, err := os.ReadFile(scen)
	if err != nil {
		t.Fatalf("%v %s", err, repro(t))
	}
	if !strings.HasPrefix(string(text), "# storesim shrink: safety failure, rule D-ACCESS-END") ||
		!strings.Contains(string(text), "# origin: storesim replay --seed 0 --driver broken:LiesAboutAccess") {
		t.Errorf("scenario header lacks the rule and origin:\n%s %s", text, repro(t))
	}
	res, err := scenarios.RunFile(scen, scenarios.Options{})
	if err != nil || !res.Passed() || !slices.Contains(res.Rules, rules.DAccessEnd) {
		t.Fatalf("scenario: err %v, passed %v, rules %v; want a pass that reports D-ACCESS-END\n%s %s", err, res.Passed(), res.Rules, text, repro(t))
	}
	_, check, _ := strings.Cut(string(text), "\ncheck\n----\n")
	if !strings.Contains(check, " D-ACCESS-END call") { // "EP D-ACCESS-END call …"
		t.Errorf("check output does not name D-ACCESS-END:\n%s %s", check, repro(t))
	}
	if mem, err := scenarios.RunFile(scen, scenarios.Options{Driver: "memory"}); err != nil || len(mem.Rules) > 0 {
		t.Errorf("on the memory driver: err %v, rules %v; want none %s", err, mem.Rules, repro(t))
	}
	if r := storesim("scenario", scen); r.code != 0 {
		t.Errorf("storesim scenario %s: exit %d\n%s%s %s", scen, r.code, r.stdout, r.stderr, repro(t))
	}
	bad := storesim("shrink", "--seed", "0", "--driver", "broken:LiesAboutAccess", "--out", out, "--scenario", filepath.Join(dir, "no", "such", "dir.txt"))
	if bad.code != 2 || !strings.Contains(bad.stderr, "--scenario") {
		t.Errorf("unwritable --scenario: exit %d, stderr %q; want exit 2 naming --scenario %s", bad.code, bad.stderr, repro(t))
	}
}
