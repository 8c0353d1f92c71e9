package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/fuzz/workload"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type cli struct {
	code           int
	stdout, stderr string
}

func storesim(args ...string) cli {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return cli{code, out.String(), errb.String()}
}

// repro names the go test command of the running (sub)test.
func repro(t *testing.T) string {
	return fmt.Sprintf("(repro: go test ./cmd/storesim/cli -run '^%s$')", strings.ReplaceAll(t.Name(), "/", "$/^"))
}

// plantedKey loses every change callback of a FETCH naming one key: a D-CB-2
// breach behind a key pattern, so failing seeds exist without package
// broken.
type plantedKey struct {
	drivers.Driver
	key string
}

func (p plantedKey) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	if b.Dir == drivers.Fetch && slices.Contains(b.Keys(), p.key) {
		onChange = func() {}
	}
	return p.Driver.Submit(b, onChange)
}

func plant(t *testing.T, f func(name string, env registry.Env) (drivers.Driver, error)) {
	t.Helper()
	driverFactory = f
	t.Cleanup(func() { driverFactory = nil })
}

func plantKey(t *testing.T) {
	plant(t, func(name string, env registry.Env) (drivers.Driver, error) {
		d, err := registry.New(name, env)
		if err != nil {
			return nil, err
		}
		return plantedKey{d, "k1"}, nil
	})
}

var closing = regexp.MustCompile(`(?m)^seeds: (\d+) passed, (\d+) failed\n\z`)

// TestExitCodes: each outcome class has its exit code; every usage or
// input error is one clear line on stderr and exit 2, never a panic.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	garbled := filepath.Join(dir, "garbled.txt")
	os.WriteFile(garbled, []byte("storesim-oplog v1\nendpoint A regions=r:4x16\nop at=0us fetch A keys=k1 mask=101\n"), 0o644)
	cases := []struct {
		name    string
		planted bool
		args    []string
		code    int
		stderr  string // a substring of stderr
	}{
		{"pass", false, []string{"run", "--seeds", "0:20", "--ops", "30"}, 0, "seeds: 20 passed, 0 failed"},
		{"safety", true, []string{"run", "--seeds", "0:20", "--ops", "30", "--profile", "calm"}, 1, " failed"},
		{"liveness", false, []string{"run", "--seeds", "0:1", "--max-steps", "50"}, 3, "seeds: 0 passed, 1 failed"},
		{"no-command", false, nil, 2, "usage: storesim"},
		{"unknown-command", false, []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"bad-flag", false, []string{"run", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"seeds-no-colon", false, []string{"run", "--seeds", "5"}, 2, "want START:COUNT"},
		{"seeds-not-number", false, []string{"run", "--seeds", "a:3"}, 2, `START "a"`},
		{"seeds-zero-count", false, []string{"run", "--seeds", "0:0"}, 2, "COUNT must be at least 1"},
		{"seeds-overflow", false, []string{"run", "--seeds", "18446744073709551615:2"}, 2, "past the largest seed"},
		{"unknown-driver", false, []string{"run", "--driver", "nope"}, 2, `unknown driver "nope"`},
		{"redis-bad-url", false, []string{"run", "--driver", "redis://nohost"}, 2, "want redis://HOST:PORT"},
		{"redis-unreachable", false, []string{"run", "--driver", "redis://127.0.0.1:1", "--seeds", "0:1"}, 2, "redis://127.0.0.1:1: redisdriver: connect"},
		{"redis-determinism", false, []string{"run", "--driver", "redis://127.0.0.1:1", "--check-determinism"}, 2, "a seed replays the workload, not the interleaving"},
		{"redis-max-steps", false, []string{"run", "--driver", "redis://127.0.0.1:1", "--max-steps", "9"}, 2, "without scheduler steps"},
		{"redis-stretch", false, []string{"run", "--driver", "redis://127.0.0.1:1", "--stretch", "-1"}, 2, "--stretch -1"},
		{"stretch-simulated", false, []string{"run", "--stretch", "2"}, 2, "apply to memcached:// and redis:// drivers only"},
		{"replay-redis", false, []string{"replay", "--seed", "1", "--driver", "redis://localhost:6379"}, 2, "cannot run in the simulator"},
		{"unknown-profile", false, []string{"run", "--profile", "loud"}, 2, `unknown profile "loud"`},
		{"bad-ops", false, []string{"run", "--ops", "0"}, 2, "--ops 0"},
		{"shard-index", false, []string{"run", "--shard", "2/2"}, 2, "must be below the shard count"},
		{"shard-garbled", false, []string{"run", "--shard", "x"}, 2, "want I/N"},
		{"shard-random", false, []string{"run", "--seeds", "random", "--shard", "0/2"}, 2, "random seeds need none"},
		{"workers", false, []string{"run", "--workers", "0"}, 2, "--workers 0"},
		{"run-positional", false, []string{"run", "extra"}, 2, `unexpected argument "extra"`},
		{"replay-nothing", false, []string{"replay"}, 2, "give --seed N"},
		{"replay-both", false, []string{"replay", "--seed", "1", "x.txt"}, 2, "not both"},
		{"replay-missing-file", false, []string{"replay", filepath.Join(dir, "absent.txt")}, 2, "no such file"},
		{"replay-garbled-file", false, []string{"replay", garbled}, 2, "line 3"},
		{"replay-file-with-ops", false, []string{"replay", garbled, "--ops", "5"}, 2, "a FILE replays as written"},
		{"sched-unknown", false, []string{"run", "--sched", "fair"}, 2, `unknown scheduling policy "fair"`},
		{"sched-depth-random", false, []string{"run", "--depth", "2"}, 2, "give them with --sched pct"},
		{"sched-depth-range", false, []string{"run", "--sched", "pct", "--depth", "0"}, 2, "--depth 0: want 1 to 64"},
		{"sched-file", false, []string{"replay", garbled, "--sched", "pct"}, 2, "its own sched section"},
		{"sched-redis", false, []string{"run", "--driver", "redis://127.0.0.1:1", "--sched", "pct"}, 2, "no scheduler decides the interleaving"},
		{"shrink-passing", false, []string{"shrink", "--seed", "1", "--ops", "20"}, 2, "nothing to shrink"},
		{"shrink-bad-time", false, []string{"shrink", "--seed", "1", "--time", "-1s"}, 2, "--time"},
		{"version-args", false, []string{"version", "x"}, 2, "takes no arguments"},
		{"help", false, []string{"run", "-h"}, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.planted {
				plantKey(t)
			}
			got := storesim(tc.args...)
			if got.code != tc.code || !strings.Contains(got.stderr, tc.stderr) {
				t.Fatalf("storesim %q: exit %d, stderr:\n%s\nwant exit %d and %q %s", tc.args, got.code, got.stderr, tc.code, tc.stderr, repro(t))
			}
			if strings.Contains(got.stderr, "panic") || strings.Contains(got.stderr, "goroutine ") {
				t.Fatalf("storesim %q panicked:\n%s %s", tc.args, got.stderr, repro(t))
			}
			if tc.code == 2 && len(tc.args) > 0 && strings.Count(strings.TrimSpace(got.stderr), "\n") != 0 {
				t.Fatalf("storesim %q: a usage error takes one line, got:\n%s %s", tc.args, got.stderr, repro(t))
			}
			if tc.args != nil && tc.args[0] == "run" && tc.code != 2 && tc.name != "help" && !closing.MatchString(got.stderr) {
				t.Fatalf("storesim %q: stderr does not end with the closing line:\n%s %s", tc.args, got.stderr, repro(t))
			}
		})
	}
}

// records parses JSON Lines output.
func records(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v %s", sc.Text(), err, repro(t))
		}
		out = append(out, m)
	}
	return out
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestJSONShape: one record per seed in seed order with seed, trace_hash
// (16 hex digits), verdict, class, rule and repro, then one summary that
// adds up; nothing else on stdout.
func TestJSONShape(t *testing.T) {
	plantKey(t)
	got := storesim("run", "--seeds", "10:20", "--ops", "30", "--json", "--profile", "calm")
	recs := records(t, got.stdout)
	if len(recs) != 21 {
		t.Fatalf("%d JSON lines, want 20 seeds and a summary %s", len(recs), repro(t))
	}
	wantKeys := []string{"class", "failures", "repro", "rule", "seed", "steps", "trace_hash", "type", "verdict"}
	hexHash := regexp.MustCompile(`^[0-9a-f]{16}$`)
	failed := 0
	for i, r := range recs[:20] {
		ks := slices.DeleteFunc(keysOf(r), func(k string) bool { return k == "error" || k == "out" || k == "second_trace_hash" })
		if !slices.Equal(ks, wantKeys) || r["type"] != "seed" || r["seed"] != fmt.Sprint(10+i) || !hexHash.MatchString(r["trace_hash"].(string)) {
			t.Fatalf("record %d: %v, want keys %v, seed %d, a 16-digit hex trace_hash %s", i, r, wantKeys, 10+i, repro(t))
		}
		wantRepro := fmt.Sprintf("storesim replay --seed %d --driver mixed --profile calm --ops 30", 10+i)
		if r["repro"] != wantRepro {
			t.Fatalf("record %d: repro %q, want %q %s", i, r["repro"], wantRepro, repro(t))
		}
		switch r["verdict"] {
		case "pass":
			if r["class"] != "pass" || r["rule"] != "" {
				t.Fatalf("record %d: a pass with class %v rule %v %s", i, r["class"], r["rule"], repro(t))
			}
		case "safety":
			failed++
			if r["class"] != "contract" || r["rule"] != "D-CB-2" {
				t.Fatalf("record %d: the planted failure has class %v rule %v, want contract D-CB-2 %s", i, r["class"], r["rule"], repro(t))
			}
		default:
			t.Fatalf("record %d: verdict %v %s", i, r["verdict"], repro(t))
		}
	}
	sum := recs[20]
	if sum["type"] != "summary" || sum["seeds"] != 20.0 || sum["failed"] != float64(failed) || sum["passed"] != float64(20-failed) ||
		sum["safety"] != float64(failed) || sum["exit"] != float64(got.code) || failed == 0 || got.code != 1 {
		t.Fatalf("summary %v after %d failures, exit %d %s", sum, failed, got.code, repro(t))
	}
}

// TestWorkersIndependent: the same seeds print the same bytes with 1 and 2
// workers (issue 7: identical (seed, trace_hash) sets; here the whole
// output, which is stronger).
func TestWorkersIndependent(t *testing.T) {
	a := storesim("run", "--seeds", "0:300", "--json", "--workers", "1")
	b := storesim("run", "--seeds", "0:300", "--json", "--workers", "2")
	if a.code != 0 || b.code != 0 {
		t.Fatalf("exit %d and %d:\n%s\n%s %s", a.code, b.code, a.stderr, b.stderr, repro(t))
	}
	if len(records(t, a.stdout)) != 301 || a.stdout != b.stdout {
		t.Fatalf("--workers 1 and 2 print different output (or not 301 lines) %s", repro(t))
	}
}

// TestShardCoverage: shards tile any range exactly once, both in the
// arithmetic and through the command.
func TestShardCoverage(t *testing.T) {
	t.Run("arithmetic", func(t *testing.T) {
		for _, start := range []uint64{0, 7, 1<<64 - 1000} {
			for _, count := range []uint64{1, 2, 3, 10, 999, 1000} {
				for n := uint64(1); n <= 12; n++ {
					next := start
					for i := range n {
						s, c := shard{i, n}.cut(start, count)
						if s != next || c > count/n+1 || c+1 < count/n {
							t.Fatalf("shard %d/%d of %d:%d is %d:%d, want to start at %d with %d or %d seeds %s", i, n, start, count, s, c, next, count/n, count/n+1, repro(t))
						}
						next = s + c
					}
					if next != start+count {
						t.Fatalf("shards of %d:%d over %d end at %d %s", start, count, n, next, repro(t))
					}
				}
			}
		}
		if s, c := (shard{1, 3}).cut(0, 1<<64-1); s != 6148914691236517205 || c != 6148914691236517205 {
			t.Fatalf("shard 1/3 of the whole seed space: %d:%d %s", s, c, repro(t))
		}
	})
	t.Run("command", func(t *testing.T) {
		seen := map[float64]int{}
		for i := range 3 {
			got := storesim("run", "--seeds", "5:20", "--ops", "30", "--json", "--shard", fmt.Sprintf("%d/3", i))
			recs := records(t, got.stdout)
			for _, r := range recs[:len(recs)-1] {
				n, _ := strconv.ParseFloat(r["seed"].(string), 64)
				seen[n]++
			}
		}
		for s := 5; s < 25; s++ {
			if seen[float64(s)] != 1 {
				t.Fatalf("seed %d run %d times by shards 0/3..2/3 %s", s, seen[float64(s)], repro(t))
			}
		}
		if len(seen) != 20 {
			t.Fatalf("shards ran %d distinct seeds, want 20 %s", len(seen), repro(t))
		}
	})
}

// TestFailureFolderReplays: --out saves a folder per failing seed; replay
// of the folder, of the seed, and of a --save'd log reproduce the trace
// hash and rule; --viz writes porcupine's HTML.
func TestFailureFolderReplays(t *testing.T) {
	plantKey(t)
	dir := t.TempDir()
	got := storesim("run", "--seeds", "0:10", "--ops", "30", "--profile", "calm", "--json", "--out", dir)
	var fail map[string]any
	for _, r := range records(t, got.stdout) {
		if r["verdict"] == "safety" {
			fail = r
			break
		}
	}
	if fail == nil {
		t.Fatalf("no failing seed in 0:10 with the planted driver %s", repro(t))
	}
	folder := fail["out"].(string)
	for _, f := range []string{"oplog.txt", "report.txt", "timeline.html", "porcupine.html", "repro.txt"} {
		if st, err := os.Stat(filepath.Join(folder, f)); err != nil || st.Size() == 0 {
			t.Fatalf("failure folder lacks %s: %v %s", f, err, repro(t))
		}
	}
	hash, rule := fail["trace_hash"].(string), fail["rule"].(string)
	saved := filepath.Join(dir, "saved.txt")
	viz := filepath.Join(dir, "v.html")
	args := strings.Fields(strings.TrimPrefix(fail["repro"].(string), "storesim "))
	cases := []struct {
		name string
		args []string
	}{
		{"folder", []string{"replay", folder}},
		{"oplog", []string{"replay", filepath.Join(folder, "oplog.txt"), "--json"}},
		{"seed", append(args, "--save", saved, "--viz", viz)},
		{"saved", []string{"replay", saved}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := storesim(tc.args...)
			if r.code != 1 || !strings.Contains(r.stdout, hash) || !strings.Contains(r.stdout, rule) || !strings.Contains(r.stderr, "trace "+hash) {
				t.Fatalf("storesim %q: exit %d, want 1 with trace %s and rule %s:\n%s%s %s", tc.args, r.code, hash, rule, r.stdout, r.stderr, repro(t))
			}
		})
	}
	if html, err := os.ReadFile(viz); err != nil || !bytes.Contains(html, []byte("<html")) {
		t.Fatalf("--viz wrote no HTML: %v %s", err, repro(t))
	}
}

// TestShrinkCommand: shrink of a failing seed writes an op log of at most
// 10 ops that fails with the same rule when replayed.
func TestShrinkCommand(t *testing.T) {
	plantKey(t)
	out := filepath.Join(t.TempDir(), "min.txt")
	got := storesim("shrink", "--seed", "0", "--profile", "calm", "--ops", "60", "--out", out)
	if got.code != 0 || !strings.Contains(got.stderr, "D-CB-2 kept") {
		t.Fatalf("shrink: exit %d:\n%s %s", got.code, got.stderr, repro(t))
	}
	text, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	log, err := workload.Parse(string(text))
	if err != nil || len(log.Ops) > 10 {
		t.Fatalf("shrunk log: %v, %d ops:\n%s %s", err, len(log.Ops), text, repro(t))
	}
	if !bytes.Contains(text, []byte("# replay: storesim replay "+out)) || !bytes.Contains(text, []byte("# origin: storesim replay --seed 0")) {
		t.Fatalf("shrunk file header lacks the replay and origin commands:\n%s %s", text, repro(t))
	}
	r := storesim("replay", out)
	if r.code != 1 || !strings.Contains(r.stdout, "rule=D-CB-2") {
		t.Fatalf("replay of the shrunk log: exit %d\n%s %s", r.code, r.stdout, repro(t))
	}
}

// TestCheckDeterminism: a deterministic driver passes; a driver whose
// random streams differ between two runs of one seed fails with exit 1
// and names the seed.
func TestCheckDeterminism(t *testing.T) {
	t.Run("deterministic", func(t *testing.T) {
		if got := storesim("run", "--seeds", "0:20", "--ops", "30", "--check-determinism"); got.code != 0 {
			t.Fatalf("exit %d:\n%s%s %s", got.code, got.stdout, got.stderr, repro(t))
		}
	})
	t.Run("nondeterministic", func(t *testing.T) {
		var builds atomic.Int64
		plant(t, func(name string, env registry.Env) (drivers.Driver, error) {
			env.Name = fmt.Sprintf("%s-%d", env.Name, builds.Add(1)) // a new random stream each build
			return registry.New(name, env)
		})
		got := storesim("run", "--seeds", "3:2", "--ops", "30", "--check-determinism", "--workers", "1")
		if got.code != 1 || !strings.Contains(got.stdout, "seed 3:") || !strings.Contains(got.stdout, "determinism: a second run gave") ||
			!strings.Contains(got.stdout, "--seeds 3:1 --check-determinism") {
			t.Fatalf("exit %d, want 1 naming seed 3:\n%s%s %s", got.code, got.stdout, got.stderr, repro(t))
		}
	})
}

// TestOutputStreams: text mode prints only failing seeds on stdout, no
// progress bar off a terminal, and random seeds are each printed.
func TestOutputStreams(t *testing.T) {
	got := storesim("run", "--seeds", "0:5", "--ops", "20")
	if got.stdout != "" || strings.Contains(got.stderr, "\r") {
		t.Fatalf("passing run printed on stdout %q or a progress bar off a terminal %s", got.stdout, repro(t))
	}
	got = storesim("run", "--seeds", "random", "--budget", "50ms", "--ops", "20", "--workers", "1")
	lines := strings.Split(strings.TrimSpace(got.stdout), "\n")
	m := closing.FindStringSubmatch(got.stderr)
	if got.code != 0 || m == nil || m[1] != fmt.Sprint(len(lines)) || !strings.HasPrefix(lines[0], "seed ") {
		t.Fatalf("random run: exit %d, %d seed lines, stderr:\n%s %s", got.code, len(lines), got.stderr, repro(t))
	}
	got = storesim("drivers")
	if got.code != 0 || !strings.Contains(got.stdout, "\nmemory ") || !strings.Contains(got.stdout, "\ntogether ") {
		t.Fatalf("drivers: exit %d:\n%s %s", got.code, got.stdout, repro(t))
	}
}

// TestScenarioCommand: the committed scenario files pass; a block whose
// output differs is exit 1 with its diff; a truncated or garbled file is
// one error line naming file and line, exit 2.
func TestScenarioCommand(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("../../../scenarios/testdata/end_to_end.txt")
	if err != nil {
		t.Fatal(err)
	}
	differs := filepath.Join(dir, "differs.txt")
	os.WriteFile(differs, bytes.Replace(good, []byte("B ready\n"), []byte("B ready, or is it\n"), 1), 0o644)
	truncated := filepath.Join(dir, "truncated.txt")
	os.WriteFile(truncated, []byte("store durable\n----\nstore durable seed=1\n\nendpoint A regions=r0:4x64\n"), 0o644)
	garbled := filepath.Join(dir, "garbled.txt")
	os.WriteFile(garbled, []byte("frob x\n----\n"), 0o644)
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"committed", []string{"scenario", "../../../scenarios/testdata"}, 0, "ok    ../../../scenarios/testdata/end_to_end.txt", "0 failed, 0 malformed"},
		{"differs", []string{"scenario", differs}, 1, "+ B ready\n", "1 failed"},
		{"truncated", []string{"scenario", truncated}, 2, "", truncated + ":5: truncated block"},
		{"garbled", []string{"scenario", garbled}, 2, "", garbled + `:1: unknown command "frob"`},
		{"missing", []string{"scenario", filepath.Join(dir, "absent")}, 2, "", "no such file"},
		{"bad-driver", []string{"scenario", "--driver", "nope", differs}, 2, "", `unknown driver "nope"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := storesim(tc.args...)
			if got.code != tc.code || !strings.Contains(got.stdout, tc.stdout) || !strings.Contains(got.stderr, tc.stderr) {
				t.Fatalf("storesim %q: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d, %q, %q %s", tc.args, got.code, got.stdout, got.stderr, tc.code, tc.stdout, tc.stderr, repro(t))
			}
			if tc.code == 2 && strings.Count(got.stderr, "storesim scenario:") != 1 {
				t.Fatalf("storesim %q: want one error line, got:\n%s %s", tc.args, got.stderr, repro(t))
			}
		})
	}
}

// TestBrokenDriverFoundReplayedShrunk (issue 7, must show): a swarm on
// broken:LiesAboutAccess fails; the printed repro command reproduces the
// same rule and trace hash; shrink yields at most 10 ops that still fail.
func TestBrokenDriverFoundReplayedShrunk(t *testing.T) {
	got := storesim("run", "--driver", "broken:LiesAboutAccess", "--seeds", "0:20", "--ops", "30", "--json")
	var fail map[string]any
	for _, r := range records(t, got.stdout) {
		if r["type"] == "seed" && r["verdict"] != "pass" {
			fail = r
			break
		}
	}
	if got.code != 1 || fail == nil || fail["rule"] != "D-ACCESS-END" {
		t.Fatalf("exit %d, first failure %v; want exit 1 and a D-ACCESS-END seed %s", got.code, fail, repro(t))
	}
	args := strings.Fields(strings.TrimPrefix(fail["repro"].(string), "storesim "))
	r := storesim(append(args, "--json")...)
	again := records(t, r.stdout)
	if r.code != 1 || len(again) != 1 || again[0]["trace_hash"] != fail["trace_hash"] || again[0]["rule"] != fail["rule"] {
		t.Fatalf("%s: exit %d, %v; the run printed %v %s", fail["repro"], r.code, again, fail, repro(t))
	}
	out := filepath.Join(t.TempDir(), "min.txt")
	s := storesim(append([]string{"shrink"}, append(args[1:], "--out", out)...)...)
	text, err := os.ReadFile(out)
	if s.code != 0 || err != nil {
		t.Fatalf("shrink: exit %d, %v\n%s %s", s.code, err, s.stderr, repro(t))
	}
	log, err := workload.Parse(string(text))
	if err != nil || len(log.Ops) > 10 {
		t.Fatalf("shrunk log: %v, %d ops\n%s %s", err, len(log.Ops), text, repro(t))
	}
	if r := storesim("replay", out, "--json"); r.code != 1 || !strings.Contains(r.stdout, `"rule":"D-ACCESS-END"`) {
		t.Fatalf("replay of the shrunk log: exit %d\n%s %s", r.code, r.stdout, repro(t))
	}
	// The shrunk log is a regression test: the reference driver passes it.
	if r := storesim("replay", out, "--driver", "memory"); r.code != 0 {
		t.Fatalf("the shrunk log fails on the memory driver too: exit %d\n%s %s", r.code, r.stdout, repro(t))
	}
}
