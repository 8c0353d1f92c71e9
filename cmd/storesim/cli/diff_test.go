package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffUsage: every bad flag of diff is one line and exit 2, before any
// work.
func TestDiffUsage(t *testing.T) {
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.txt")
	if err := os.WriteFile(cut, []byte("storesim-oplog v2\nseed 1\nstore durable\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.txt")
	var b strings.Builder
	b.WriteString("storesim-oplog v2\nseed 1\nstore durable\nendpoint A driver=memory rows=4 absent-is-miss=true inflight=4 queued=16 unprovable=8 regions=r0:8x65536\n")
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	for range 2 {
		fmt.Fprintf(&b, "op at=0us publish A keys=%s mask=%s\n", strings.Join(keys, ","), strings.Repeat("1", len(keys)))
	}
	b.WriteString("end\n")
	if err := os.WriteFile(huge, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"huge-log", []string{"diff", "--driver", "memory", "--driver", "memory", "--log", huge}, "a diff gives every row a fresh slot"},
		{"one-driver", []string{"diff", "--driver", "memory"}, "give --driver exactly twice"},
		{"three-drivers", []string{"diff", "--driver", "memory", "--driver", "memory", "--driver", "together"}, "got 3"},
		{"unknown", []string{"diff", "--driver", "memory", "--driver", "nope"}, `unknown driver "nope"`},
		{"mixed", []string{"diff", "--driver", "memory", "--driver", "mixed"}, "name one"},
		{"bad-seeds", []string{"diff", "--driver", "memory", "--driver", "memory", "--seeds", "x"}, "bad --seeds"},
		{"random-seeds", []string{"diff", "--driver", "memory", "--driver", "memory", "--seeds", "random"}, "diff wants a range"},
		{"bad-profile", []string{"diff", "--driver", "memory", "--driver", "memory", "--profile", "wild"}, "--profile"},
		{"bad-ops", []string{"diff", "--driver", "memory", "--driver", "memory", "--ops", "0"}, "--ops 0"},
		{"log-and-seeds", []string{"diff", "--driver", "memory", "--driver", "memory", "--log", cut, "--seeds", "0:1"}, "--log FILE plays the file as written"},
		{"truncated-log", []string{"diff", "--driver", "memory", "--driver", "memory", "--log", cut}, "truncated"},
		{"missing-log", []string{"diff", "--driver", "memory", "--driver", "memory", "--log", filepath.Join(dir, "nope")}, "no such file"},
		{"wait-simulated", []string{"diff", "--driver", "memory", "--driver", "memory", "--wait", "1s"}, "memcached:// and redis:// drivers only"},
		{"bad-url", []string{"diff", "--driver", "memory", "--driver", "redis://nohost"}, "want redis://HOST:PORT"},
		{"unreachable", []string{"diff", "--driver", "memory", "--driver", "memcached://127.0.0.1:1"}, "memcached://127.0.0.1:1"},
		{"positional", []string{"diff", "--driver", "memory", "--driver", "memory", "extra"}, "unexpected argument"},
		{"bad-flag", []string{"diff", "--nope"}, "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := storesim(tc.args...)
			if got.code != exitUsage || !strings.Contains(got.stderr, tc.want) || strings.Count(strings.TrimSpace(got.stderr), "\n") != 0 || got.stdout != "" {
				t.Fatalf("storesim %v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q %s", tc.args, got.code, got.stdout, got.stderr, tc.want, repro(t))
			}
		})
	}
}

// TestDiffFindsLastWriter: diff against the planted divergence
// (broken:ServesLastWriter) exits 1, names the op, the row, the key, both
// answers and the rule, and ends with a command that reproduces exactly
// that report; memory against memory passes every seed.
func TestDiffFindsLastWriter(t *testing.T) {
	got := storesim("diff", "--driver", "memory", "--driver", "broken:ServesLastWriter", "--seeds", "3:2")
	if got.code != exitSafety || !strings.Contains(got.stderr, "seeds: 0 passed, 2 diverged, 0 failed otherwise") {
		t.Fatalf("diff memory vs broken:ServesLastWriter: exit %d\n%s%s %s", got.code, got.stdout, got.stderr, repro(t))
	}
	first := strings.SplitAfter(got.stdout, "\nrepro: ")
	if len(first) < 2 {
		t.Fatalf("no repro line:\n%s %s", got.stdout, repro(t))
	}
	for _, want := range []string{"seed 3: broken:ServesLastWriter diverges from memory at op ", "D-SUB-4", "(the first publish of k", "(a later publish of k", "broken:ServesLastWriter breaks D-SUB-4"} {
		if !strings.Contains(first[0], want) {
			t.Fatalf("the report lacks %q:\n%s %s", want, got.stdout, repro(t))
		}
	}
	line, _, _ := strings.Cut(first[1], "\n")
	const want = "storesim diff --driver memory --driver broken:ServesLastWriter --seeds 3:1 --profile calm --ops 100"
	if line != want {
		t.Fatalf("repro line %q, want %q %s", line, want, repro(t))
	}
	again := storesim(strings.Fields(line)[1:]...)
	if again.code != exitSafety || again.stdout != first[0]+line+"\n" {
		t.Fatalf("the repro line does not reproduce the report: exit %d\n%s\nwant:\n%s%s\n%s", again.code, again.stdout, first[0], line, repro(t))
	}
	ok := storesim("diff", "--driver", "memory", "--driver", "together", "--seeds", "0:20", "--profile", "default", "-v")
	if ok.code != exitPass || strings.Count(ok.stdout, ": pass (") != 20 || !strings.Contains(ok.stderr, "seeds: 20 passed, 0 diverged, 0 failed otherwise") {
		t.Fatalf("diff memory vs together: exit %d\n%s%s %s", ok.code, ok.stdout, ok.stderr, repro(t))
	}
}

// TestDiffLog: --log plays a saved op log (a failure folder's) as written,
// and its repro names the file.
func TestDiffLog(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if got := storesim("run", "--driver", "broken:LiesAboutAccess", "--seeds", "17:1", "--out", out); got.code != exitSafety {
		t.Fatalf("run: exit %d\n%s %s", got.code, got.stderr, repro(t))
	}
	folder := filepath.Join(out, "seed-17")
	got := storesim("diff", "--driver", "memory", "--driver", "broken:ServesLastWriter", "--log", folder)
	if got.code != exitSafety || !strings.Contains(got.stdout, "repro: storesim diff --driver memory --driver broken:ServesLastWriter --log "+folder+"\n") {
		t.Fatalf("diff --log %s: exit %d\n%s%s %s", folder, got.code, got.stdout, got.stderr, repro(t))
	}
	if got := storesim("diff", "--driver", "memory", "--driver", "memory", "--log", folder); got.code != exitPass {
		t.Fatalf("diff memory memory --log %s: exit %d\n%s%s %s", folder, got.code, got.stdout, got.stderr, repro(t))
	}
}

// TestDiffRealStores: memory against a real Redis and a real memcached
// agrees (exit 0), seed after seed, under two profiles. It needs the
// servers: scripts/with-redis.sh scripts/with-memcached.sh go test
// ./cmd/storesim/cli -run TestDiffRealStores.
func TestDiffRealStores(t *testing.T) {
	for _, st := range []struct{ name, scheme, env, required, script string }{
		{"redis", "redis://", "STORESIM_REDIS_ADDR", "STORESIM_REDIS_REQUIRED", "scripts/with-redis.sh"},
		{"memcached", "memcached://", "STORESIM_MEMCACHED_ADDR", "STORESIM_MEMCACHED_REQUIRED", "scripts/with-memcached.sh"},
	} {
		t.Run(st.name, func(t *testing.T) {
			addr := os.Getenv(st.env)
			if addr == "" {
				if os.Getenv(st.required) == "1" {
					t.Fatalf("%s=1 but %s is empty %s", st.required, st.env, repro(t))
				}
				t.Skipf("%s is not set; run: %s go test ./cmd/storesim/cli -run '^TestDiffRealStores$'", st.env, st.script)
			}
			for _, p := range []string{"calm", "default"} {
				got := storesim("diff", "--driver", "memory", "--driver", st.scheme+addr, "--seeds", "0:8", "--profile", p)
				if got.code != exitPass || !strings.Contains(got.stderr, "seeds: 8 passed, 0 diverged, 0 failed otherwise") {
					t.Fatalf("diff memory vs %s%s --profile %s: exit %d\n%s%s (repro: %s go test ./cmd/storesim/cli -run '^TestDiffRealStores$')", st.scheme, addr, p, got.code, got.stdout, got.stderr, st.script)
				}
			}
		})
	}
}

// TestDiffBlobFile: memory against an object store in a file bucket
// (blob:file:// on a temporary directory, no server needed) agrees, under
// two profiles.
func TestDiffBlobFile(t *testing.T) {
	const rerun = "go test ./cmd/storesim/cli -run '^TestDiffBlobFile$'"
	url := "blob:file://" + t.TempDir()
	for _, p := range []string{"calm", "default"} {
		got := storesim("diff", "--driver", "memory", "--driver", url, "--seeds", "0:6", "--profile", p)
		if got.code != exitPass || !strings.Contains(got.stderr, "seeds: 6 passed, 0 diverged, 0 failed otherwise") {
			t.Fatalf("diff memory vs %s --profile %s: exit %d\n%s%s (repro: %s)", url, p, got.code, got.stdout, got.stderr, rerun)
		}
	}
}
