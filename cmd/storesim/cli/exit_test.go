package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/registry"
)

// TestVerdictExitCodes: every verdict has its own exit code, for one run
// (replay) and for a swarm (run), where several verdicts meet and the first
// of 1, 3, 4, 5, 2 wins.
func TestVerdictExitCodes(t *testing.T) {
	var (
		pass     = &engine.Result{Verdict: engine.Pass}
		safety   = &engine.Result{Verdict: engine.Safety}
		liveness = &engine.Result{Verdict: engine.Liveness}
		unknown  = &engine.Result{Verdict: engine.Unknown}
		crash    = &engine.Result{Verdict: engine.HarnessError, Err: errors.New("real time: cleanup: flush refused")}
		badLog   = &engine.Result{Verdict: engine.HarnessError, Err: fmt.Errorf("endpoint A: %w: unknown driver", engine.ErrBadLog)}
	)
	cases := []struct {
		name string
		runs []*engine.Result
		want int
	}{
		{"pass", []*engine.Result{pass}, exitPass},
		{"safety", []*engine.Result{safety}, exitSafety},
		{"liveness", []*engine.Result{liveness}, exitLiveness},
		{"harness-crash", []*engine.Result{crash}, exitHarness},
		{"inconclusive", []*engine.Result{unknown}, exitInconclusive},
		{"bad-op-log", []*engine.Result{badLog}, exitUsage},
		{"safety-over-liveness", []*engine.Result{pass, liveness, safety}, exitSafety},
		{"liveness-over-crash", []*engine.Result{crash, liveness}, exitLiveness},
		{"crash-over-inconclusive", []*engine.Result{unknown, crash}, exitHarness},
		{"inconclusive-over-bad-log", []*engine.Result{badLog, unknown}, exitInconclusive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.runs) == 1 {
				if got := verdictExit(tc.runs[0]); got != tc.want {
					t.Errorf("verdictExit(%s, err %v) = %d, want %d %s", tc.runs[0].Verdict, tc.runs[0].Err, got, tc.want, repro(t))
				}
			}
			tl := &tally{o: &runOpts{}, stdout: io.Discard, stderr: io.Discard}
			for _, r := range tc.runs {
				tl.add(outcome{res: r})
			}
			if got := tl.exitCode(); got != tc.want {
				t.Errorf("a swarm of %d runs exits %d, want %d %s", len(tc.runs), got, tc.want, repro(t))
			}
		})
	}
}

// TestHarnessExitCodes: through the CLI, a driver factory that fails is a
// crash of the harness (4), while an op log naming an unknown driver is an
// input error (2).
func TestHarnessExitCodes(t *testing.T) {
	t.Run("factory-fails", func(t *testing.T) {
		plant(t, func(string, registry.Env) (drivers.Driver, error) { return nil, errors.New("planted: no driver today") })
		got := storesim("run", "--seeds", "0:2", "--ops", "10", "--json")
		if got.code != exitHarness || !strings.Contains(got.stdout, `"verdict":"harness-error"`) || !strings.Contains(got.stdout, `"exit":4`) {
			t.Fatalf("exit %d, want 4 with harness-error records:\n%s%s %s", got.code, got.stdout, got.stderr, repro(t))
		}
	})
	t.Run("unknown-driver-in-log", func(t *testing.T) {
		log := engine.Plan(1, engine.Config{Ops: 10})
		log.Endpoints[0].Driver = "nope"
		path := filepath.Join(t.TempDir(), "oplog.txt")
		if err := os.WriteFile(path, []byte(log.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		got := storesim("replay", path)
		if got.code != exitUsage || !strings.Contains(got.stderr, `unknown driver "nope"`) {
			t.Fatalf("replay of a log naming an unknown driver: exit %d, want 2 naming it:\n%s%s %s", got.code, got.stdout, got.stderr, repro(t))
		}
	})
}

// TestHelpListsExitCodes: every command's -h lists the exit codes.
func TestHelpListsExitCodes(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			got := storesim(c.name, "-h")
			if got.code != exitPass || !strings.Contains(got.stdout, exitCodes) {
				t.Fatalf("storesim %s -h: exit %d, stdout lacks the exit codes:\n%s%s %s", c.name, got.code, got.stdout, got.stderr, repro(t))
			}
		})
	}
	if got := storesim("help"); !strings.Contains(got.stdout, exitCodes) {
		t.Fatalf("storesim help lacks the exit codes:\n%s %s", got.stdout, repro(t))
	}
}
