package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExecURLs: exec:COMMAND is a real-time driver for certify and run; a
// command that cannot be parsed or started is one error line, exit 2 (no
// python needed).
func TestExecURLs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"run-empty", []string{"run", "--driver", "exec:"}, "want exec:COMMAND"},
		{"run-quote", []string{"run", "--driver", "exec:python3 'x.py"}, "unterminated ' quote"},
		{"run-missing", []string{"run", "--driver", "exec:storesim-no-such-driver-binary", "--seeds", "0:1"}, "executable file not found"},
		{"certify-missing", []string{"certify", "--driver", "exec:storesim-no-such-driver-binary"}, "executable file not found"},
		{"replay", []string{"replay", "--seed", "1", "--driver", "exec:true"}, "cannot run in the simulator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := storesim(tc.args...)
			if got.code != 2 || !strings.Contains(got.stderr, tc.want) || strings.Count(strings.TrimSpace(got.stderr), "\n") != 0 {
				t.Fatalf("storesim %v: exit %d, stderr %q; want exit 2 and one line with %q %s", tc.args, got.code, got.stderr, tc.want, repro(t))
			}
		})
	}
}

// TestExec certifies and runs Python drivers through exec: — a broken one
// fails on its rule with a repro line that quotes the command, a process
// writing garbage is reported (stderr, as it happens, and the report's
// gaps), the reference driver's seeds pass in real time, and a run whose
// process breaks the protocol is a harness error naming it. Skipped, saying
// why, without python3.
func TestExec(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skipf("python3 is not on PATH (%v): the Python drivers cannot run %s", err, repro(t))
	}
	dir, _ := filepath.Abs(filepath.Join("..", "..", "..", "python"))
	broken := "exec:" + py + " " + filepath.Join(dir, "broken_driver.py")
	ref := "exec:" + py + " " + filepath.Join(dir, "reference_driver.py")

	start := time.Now()
	defer func() { t.Logf("took %v", time.Since(start)) }()
	got := storesim("certify", "--driver", broken+" MissAsFault", "--rule", "D-MISS-HONEST", "--short")
	if quoted := "--driver '" + broken + " MissAsFault' --rule D-MISS-HONEST --case"; got.code != 1 || !strings.Contains(got.stdout, quoted) {
		t.Errorf("certify MissAsFault: exit %d, want 1 and a repro with %q\nstdout:\n%s\nstderr:\n%s %s", got.code, quoted, got.stdout, got.stderr, repro(t))
	}

	once := filepath.Join(t.TempDir(), "once")
	got = storesim("certify", "--driver", broken+" Garbage --after 6 --once "+once, "--rule", "D-STATUS", "--short")
	if got.code != 1 || !strings.Contains(got.stderr, "storesim certify: driver process") || !strings.Contains(got.stdout, "gap: driver process incident:") ||
		!strings.Contains(got.stderr, "not a protocol message") || !strings.Contains(got.stderr, "NOT certified") {
		t.Errorf("certify Garbage: exit %d, want 1, the incident on stderr and in the gaps\nstdout:\n%s\nstderr:\n%s %s", got.code, got.stdout, got.stderr, repro(t))
	}

	got = storesim("run", "--driver", ref+" --latency-ms 1", "--seeds", "0:2")
	if got.code != 0 || !strings.Contains(got.stderr, "seeds: 2 passed, 0 failed") {
		t.Errorf("run reference: exit %d\nstdout:\n%s\nstderr:\n%s %s", got.code, got.stdout, got.stderr, repro(t))
	}

	got = storesim("run", "--driver", broken+" Die --after 6 --latency-ms 1", "--seeds", "0:1")
	if out := got.stdout + got.stderr; got.code != 4 || !strings.Contains(out, "error=real time: cleanup: driver process") || !strings.Contains(out, "exit status 3") ||
		!strings.Contains(out, "repro: storesim run --driver '"+broken+" Die --after 6 --latency-ms 1' --seeds 0:1") {
		t.Errorf("run Die: exit %d, want 4 naming the incident, with a quoted repro\nstdout:\n%s\nstderr:\n%s %s", got.code, got.stdout, got.stderr, repro(t))
	}
}
