package engine

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/sim"
)

// TestCheckVerdict: Check reports what the caller found and what stopped
// the run, stamped with the seed and sorted, and the first violation's
// class decides the verdict (harness, then safety and contract, then
// liveness); porcupine's Unknown is its own verdict; LinIfClean runs S-LIN
// only on a clean run.
func TestCheckVerdict(t *testing.T) {
	found := func(rule rules.ID, class rules.Class, at int) rules.Violation {
		return rules.Violation{Rule: rule, Class: class, Row: -1, At: time.Duration(at)}
	}
	cases := []struct {
		name    string
		in      CheckInput
		verdict Verdict
		first   rules.ID
		linRan  bool
	}{
		{"clean", CheckInput{}, Pass, 0, true},
		{"contract", CheckInput{Found: []rules.Violation{found(rules.DCB2, rules.Contract, 5)}}, Safety, rules.DCB2, true},
		{"safety before liveness", CheckInput{Found: []rules.Violation{found(rules.LiveHang, rules.Liveness, 1), found(rules.SRelease, rules.Safety, 9)}}, Safety, rules.SRelease, true},
		{"contract and safety by time", CheckInput{Found: []rules.Violation{found(rules.SRelease, rules.Safety, 9), found(rules.DCB2, rules.Contract, 5)}}, Safety, rules.DCB2, true},
		{"a finding before harness", CheckInput{Found: []rules.Violation{found(rules.HarnessErr, rules.Harness, 1), found(rules.DCB2, rules.Contract, 9)}}, Safety, rules.DCB2, true},
		{"harness alone", CheckInput{Found: []rules.Violation{found(rules.HarnessErr, rules.Harness, 9)}}, HarnessError, rules.HarnessErr, true},
		{"liveness", CheckInput{Found: []rules.Violation{found(rules.DSub3, rules.Liveness, 1)}}, Liveness, rules.DSub3, true},
		{"panic is B-SUBMIT", CheckInput{Stopped: &panicError{value: "boom", where: "here"}}, Safety, rules.BSubmit, true},
		{"hang is liveness", CheckInput{Stopped: &sim.HangError{Pending: []string{"A/backend: attempt 1"}}}, Liveness, rules.LiveHang, true},
		{"step limit is liveness", CheckInput{Stopped: errors.New("sim: step limit")}, Liveness, rules.LiveHang, true},
		{"lin if clean, not clean", CheckInput{Lin: LinIfClean, Found: []rules.Violation{found(rules.DCB2, rules.Contract, 5)}}, Safety, rules.DCB2, false},
		{"lin if clean, clean", CheckInput{Lin: LinIfClean}, Pass, 0, true},
		{"lin skipped", CheckInput{Lin: LinSkip}, Pass, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repro := "(repro: go test ./fuzz/engine -run 'TestCheckVerdict/" + strings.ReplaceAll(tc.name, " ", "_") + "')"
			tc.in.Seed, tc.in.StoreModel = 42, model.DurableStore
			res := Check(tc.in)
			if got := res.Verdict(); got != tc.verdict {
				t.Fatalf("verdict %s, want %s; violations %v %s", got, tc.verdict, res.Violations, repro)
			}
			if tc.first != 0 && (len(res.Violations) == 0 || res.Violations[0].Rule != tc.first) {
				t.Fatalf("first violation %v, want %s %s", res.Violations, tc.first, repro)
			}
			for _, v := range res.Violations {
				if v.Seed != 42 {
					t.Fatalf("violation %v not stamped with the seed %s", v, repro)
				}
			}
			if ran := res.Lin.Outcome != ""; ran != tc.linRan {
				t.Fatalf("S-LIN ran %v, want %v %s", ran, tc.linRan, repro)
			}
		})
	}
	if v := (CheckResult{Lin: model.CheckResult{Outcome: porcupine.Unknown}}).Verdict(); v != Unknown {
		t.Fatalf("a porcupine timeout is %s, want %s (repro: go test ./fuzz/engine -run TestCheckVerdict)", v, Unknown)
	}
}

// TestOneEndpointBuilder: outside the packages that define them, only
// NewEndpoint wraps a driver in the monitor, builds a recorder, a lender
// or a backend — the callers of the engine (scenarios, drivertest, the
// CLI, the fuzz targets and state machine) hold no private copy of the
// wiring. (Tests of the oracles themselves, in their own packages, and the
// broken drivers' directed worlds are not callers of the engine.)
func TestOneEndpointBuilder(t *testing.T) {
	banned := map[string]bool{"monitor.Wrap": true, "model.NewRecorder": true, "lender.NewWithArenas": true, "lender.New": true, "backend.New": true}
	var bad []string
	for _, root := range []string{"..", "../../scenarios", "../../drivers/drivertest", "../../cmd"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || filepath.Base(path) == "endpoint.go" {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && banned[id.Name+"."+sel.Sel.Name] {
						bad = append(bad, path+": "+id.Name+"."+sel.Sel.Name)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("endpoint wiring outside engine.NewEndpoint:\n%s\n(repro: go test ./fuzz/engine -run TestOneEndpointBuilder)", strings.Join(bad, "\n"))
	}
}
