package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/storesim/storesim/broken"
	"github.com/storesim/storesim/fuzz/workload"
)

// TestHelpEveryCommand: -h, --help and -help exit 0 on every command and
// print its forms, positional arguments included, and the exit codes, on
// stdout; storesim help and storesim --help list every command.
func TestHelpEveryCommand(t *testing.T) {
	forms := map[string]string{"replay": "replay FILE|DIR", "shrink": "shrink FILE|DIR", "scenario": "scenario [FILE|DIR…]", "certify": "certify --driver NAME", "version": "storesim --version"}
	for _, c := range commands() {
		for _, h := range []string{"-h", "--help", "-help"} {
			t.Run(c.name+h, func(t *testing.T) {
				got := storesim(c.name, h)
				if got.code != exitPass || got.stderr != "" || !strings.HasPrefix(got.stdout, "usage: storesim "+c.name) || !strings.Contains(got.stdout, exitCodes) {
					t.Fatalf("storesim %s %s: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0, the usage line and the exit codes on stdout %s", c.name, h, got.code, got.stdout, got.stderr, repro(t))
				}
				if f, ok := forms[c.name]; ok && !strings.Contains(got.stdout, f) {
					t.Fatalf("storesim %s %s does not show the form %q:\n%s %s", c.name, h, f, got.stdout, repro(t))
				}
			})
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		got := storesim(args...)
		for _, c := range commands() {
			if got.code != exitPass || !strings.Contains(got.stdout, "  "+c.name+" ") {
				t.Fatalf("storesim %s: exit %d, does not list %s:\n%s %s", args[0], got.code, c.name, got.stdout, repro(t))
			}
		}
	}
}

// TestVersion: storesim version and storesim --version print the same
// block: version, module, commit, time, modified, go; a binary without VCS
// information says the commit is unknown and why; stamps and build
// information fill it in.
func TestVersion(t *testing.T) {
	a, b := storesim("version"), storesim("--version")
	if a.code != 0 || b.code != 0 || a.stdout != b.stdout {
		t.Fatalf("version: exit %d, --version: exit %d; outputs differ:\n%s\n%s %s", a.code, b.code, a.stdout, b.stdout, repro(t))
	}
	for _, want := range []string{"storesim ", "module:   github.com/storesim/storesim", "commit:   ", "time:     ", "modified: ", "go:       go1."} {
		if !strings.Contains(a.stdout, want) {
			t.Fatalf("version lacks %q:\n%s %s", want, a.stdout, repro(t))
		}
	}
	none := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Path: "github.com/storesim/storesim", Version: "(devel)"}}, true
	}
	var buf bytes.Buffer
	readBuild(none).write(&buf, "storesim")
	if !strings.Contains(buf.String(), "commit:   unknown (no VCS information") || !strings.Contains(buf.String(), "-buildvcs=false") || !strings.Contains(buf.String(), "time:     unknown") {
		t.Fatalf("without VCS information:\n%s %s", buf.String(), repro(t))
	}
	vcs := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Path: "github.com/storesim/storesim", Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-11-30T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}, true
	}
	saved := version
	version = defaultVersion
	defer func() { version = saved }()
	buf.Reset()
	readBuild(vcs).write(&buf, "storesim")
	for _, want := range []string{"storesim v1.2.3\n", "commit:   0123abcd (from vcs)", "time:     2026-11-30T12:00:00Z", "modified: true"} {
		if !strings.Contains(buf.String(), want) {
			t.Fatalf("with build information, lacks %q:\n%s %s", want, buf.String(), repro(t))
		}
	}
	commit = "feedface"
	defer func() { commit = "" }()
	if b := readBuild(vcs); b.Commit != "feedface" || b.Source != "ldflags" {
		t.Fatalf("an -ldflags commit stamp does not win over the build information: %+v %s", b, repro(t))
	}
	if b := readBuild(func() (*debug.BuildInfo, bool) { return nil, false }); !strings.HasPrefix(b.Module, "unknown") {
		t.Fatalf("no build information: module %q %s", b.Module, repro(t))
	}
}

// TestJSONSeedsAsStrings: run --json and certify --json write 64-bit
// seeds as strings, exactly, and keep every other field a number.
func TestJSONSeedsAsStrings(t *testing.T) {
	got := storesim("run", "--seeds", "18446744073709551610:2", "--ops", "10", "--json")
	recs := records(t, got.stdout)
	if got.code != 0 || len(recs) != 3 || recs[0]["seed"] != "18446744073709551610" || recs[1]["seed"] != "18446744073709551611" {
		t.Fatalf("run --json: exit %d, %v; want the seeds as exact strings %s", got.code, recs, repro(t))
	}
	if _, ok := recs[0]["steps"].(float64); !ok {
		t.Fatalf("run --json: steps is %T, want a number %s", recs[0]["steps"], repro(t))
	}
	c := storesim("certify", "--driver", "memory", "--short", "--rule", "D-GEOM", "--seed", "18446744073709551615", "--json")
	var rep map[string]any
	if err := json.Unmarshal([]byte(c.stdout), &rep); err != nil || rep["seed"] != "18446744073709551615" {
		t.Fatalf("certify --json: exit %d, %v, seed %v; want \"18446744073709551615\":\n%s%s %s", c.code, err, rep["seed"], c.stdout, c.stderr, repro(t))
	}
	rs, _ := rep["rules"].([]any)
	seen := 0
	for _, r := range rs {
		rule := r.(map[string]any)
		if _, ok := rule["cases"].(float64); !ok {
			t.Fatalf("certify --json: cases became %T %s", rule["cases"], repro(t))
		}
		seeds, _ := rule["seeds"].([]any)
		for _, s := range seeds {
			if _, ok := s.(string); !ok {
				t.Fatalf("certify --json: a seed of %v is %T, want a string %s", rule["rule"], s, repro(t))
			}
			seen++
		}
	}
	if seen == 0 {
		t.Fatalf("certify --json listed no seeds to check:\n%s %s", c.stdout, repro(t))
	}
	out, err := seedsAsStrings([]byte(`{"b":1,"seed":18446744073709551615,"a":[{"seeds":[1,2],"n":3}],"x_seed":4,"s":"t"}`))
	want := "{\n  \"b\": 1,\n  \"seed\": \"18446744073709551615\",\n  \"a\": [\n    {\n      \"seeds\": [\n        \"1\",\n        \"2\"\n      ],\n      \"n\": 3\n    }\n  ],\n  \"x_seed\": \"4\",\n  \"s\": \"t\"\n}"
	if err != nil || string(out) != want {
		t.Fatalf("seedsAsStrings: %v\n%s\nwant\n%s %s", err, out, want, repro(t))
	}
}

// TestRunHeaderRange: the run header states the seeds it resolved.
func TestRunHeaderRange(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"--seeds 5:2", "seeds=5:2 (5..6)"},
		{"--seeds 7:1", "seeds=7:1 (seed 7)"},
		{"--seeds 5:20 --shard 1/3", "seeds=5:20 shard=1/3 (11..17)"},
	} {
		got := storesim(append([]string{"run", "--ops", "10"}, strings.Fields(tc.args)...)...)
		if got.code != 0 || !strings.Contains(got.stderr, tc.want) {
			t.Fatalf("run %s: exit %d, header:\n%s\nwant %q %s", tc.args, got.code, got.stderr, tc.want, repro(t))
		}
	}
}

// TestDriversSayWhatBreaks: storesim drivers names, for every broken
// driver, the rule it breaks and its planted fault (broken.Spec), and says
// the plain drivers break nothing.
func TestDriversSayWhatBreaks(t *testing.T) {
	got := storesim("drivers")
	lines := map[string]string{}
	for _, l := range strings.Split(got.stdout, "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			lines[f[0]] = l
		}
	}
	for _, n := range broken.Names() {
		s, _ := broken.Lookup(string(n))
		l := lines[broken.Prefix+string(n)]
		if !strings.Contains(l, "breaks "+s.Rule.String()) || !strings.Contains(l, s.Fault) {
			t.Fatalf("storesim drivers on %s: %q, want its rule %s and fault %q %s", n, l, s.Rule, s.Fault, repro(t))
		}
	}
	for _, n := range []string{"memory", "together", "mixed"} {
		if !strings.Contains(lines[n], "breaks nothing") {
			t.Fatalf("storesim drivers on %s: %q %s", n, lines[n], repro(t))
		}
	}
}

// oneLine checks a usage or input error: exit 2, one line on stderr saying
// want, no panic, nothing on stdout.
func oneErrLine(t *testing.T, got cli, want string) {
	t.Helper()
	if got.code != exitUsage || !strings.Contains(got.stderr, want) || strings.Count(strings.TrimRight(got.stderr, "\n"), "\n") != 0 || got.stdout != "" || strings.Contains(got.stderr, "panic") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit 2 and one line saying %q %s", got.code, got.stdout, got.stderr, want, repro(t))
	}
}

// TestOutputPathsCheckedFirst: an output path that cannot be written is
// refused before any work, with one line and exit 2, and nothing is left
// behind; run --out FILE never loses the failure folders.
func TestOutputPathsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "afile")
	os.WriteFile(file, []byte("keep me\n"), 0o644)
	missing := filepath.Join(dir, "no", "such", "dir", "x.html")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"run-out-file", []string{"run", "--seeds", "0:5", "--out", file}, "--out " + file + ": is a file, not a directory"},
		{"run-out-under-file", []string{"run", "--seeds", "0:5", "--out", filepath.Join(file, "sub")}, "cannot create the directory"},
		{"replay-viz-dir", []string{"replay", "--seed", "1", "--viz", dir}, "is a directory"},
		{"replay-viz-missing", []string{"replay", "--seed", "1", "--viz", missing}, "does not exist"},
		{"replay-save-missing", []string{"replay", "--seed", "1", "--save", missing}, "--save " + missing},
		{"shrink-out-missing", []string{"shrink", "--seed", "17", "--driver", "broken:LiesAboutAccess", "--out", missing}, "--out " + missing},
		{"shrink-scenario-dir", []string{"shrink", "--seed", "17", "--driver", "broken:LiesAboutAccess", "--scenario", dir}, "--scenario " + dir + ": is a directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := storesim(tc.args...)
			oneErrLine(t, got, tc.want)
			if strings.Contains(got.stderr, "storesim run: driver=") || strings.HasPrefix(got.stderr, "shrink: ") {
				t.Fatalf("work started before the output path was checked:\n%s %s", got.stderr, repro(t))
			}
		})
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me\n" {
		t.Fatalf("the file given as --out was changed: %q %s", b, repro(t))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("the checks left files behind: %v %s", entries, repro(t))
	}
	// A writable --out directory is made before the run and gets the folders.
	out := filepath.Join(dir, "new", "out")
	plantKey(t)
	if got := storesim("run", "--seeds", "0:10", "--ops", "30", "--profile", "calm", "--out", out); got.code != exitSafety {
		t.Fatalf("run --out %s: exit %d:\n%s %s", out, got.code, got.stderr, repro(t))
	}
	if m, _ := filepath.Glob(filepath.Join(out, "seed-*", "timeline.html")); len(m) == 0 {
		t.Fatalf("run --out wrote no failure folder with its timeline %s", repro(t))
	}
}

// TestBadInputOneLine: oversized geometry, too many ops, a cut op log and an
// empty scenario file are each one clear line and exit 2, never a crash.
func TestBadInputOneLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	good := workload.Generate(3, workload.GenConfig{Ops: 10}).String()
	huge := write("huge.txt", workload.Header+"\nendpoint A regions=A0:3000000000x16\nend\n")
	cut := write("cut.txt", good[:len(good)/2])
	noEnd := write("noend.txt", strings.TrimSuffix(good, "end\n"))
	empty := write("empty.txt", "")
	comments := write("comments.txt", "# nothing but\n# comments\n")
	hugeScen := write("hugescen.txt", "store durable\n----\nstore durable seed=0 wake-delay=0s coalesce=0 evict-chance=0\n\nendpoint A regions=A0:3000000000x16\n----\n")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"huge-region", []string{"replay", huge}, "at most 65536 slots per region (docs/FORMATS.md)"},
		{"huge-region-shrink", []string{"shrink", huge}, "at most 65536 slots per region"},
		{"cut-log", []string{"replay", cut}, "truncated"},
		{"no-end", []string{"replay", noEnd}, "truncated: no \"end\" line"},
		{"ops-flag", []string{"run", "--ops", "1000000"}, "at most 100000"},
		{"empty-scenario", []string{"scenario", empty}, empty + ":1: no command block"},
		{"comment-scenario", []string{"scenario", comments}, "no command block"},
		{"huge-scenario", []string{"scenario", hugeScen}, hugeScen + ":5: endpoint: bad argument regions"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := storesim(tc.args...)
			if tc.args[0] == "scenario" {
				// scenario closes with its tally line; the error is the one line before it.
				lines := strings.Split(strings.TrimRight(got.stderr, "\n"), "\n")
				if got.code != exitUsage || len(lines) != 2 || !strings.Contains(lines[0], tc.want) || !strings.HasPrefix(lines[1], "scenarios: 0 passed, 0 failed, 1 malformed") {
					t.Fatalf("storesim %q: exit %d, stderr:\n%s\nwant exit 2, one error line saying %q and the tally %s", tc.args, got.code, got.stderr, tc.want, repro(t))
				}
				return
			}
			oneErrLine(t, got, tc.want)
		})
	}
	if r := storesim("replay", write("good.txt", good)); r.code != exitPass {
		t.Fatalf("the uncut log does not replay: exit %d\n%s %s", r.code, r.stderr, repro(t))
	}
}

// TestProgressOnlyOnTerminal: run, certify, shrink and scenario redraw a
// status line when stderr is a terminal, never with --quiet, and never
// when stderr is not a terminal.
func TestProgressOnlyOnTerminal(t *testing.T) {
	cmds := map[string][]string{
		"run":      {"run", "--seeds", "0:30", "--ops", "20"},
		"certify":  {"certify", "--driver", "memory", "--short", "--rule", "D-GEOM"},
		"shrink":   {"shrink", "--seed", "17", "--driver", "broken:LiesAboutAccess", "--time", "30s"},
		"scenario": {"scenario", "../../../scenarios/testdata/end_to_end.txt"},
	}
	for name, args := range cmds {
		t.Run(name, func(t *testing.T) {
			code, term, ok := onTerminal(t, args...)
			if !ok {
				t.Skip("no pseudo-terminal on this machine (/dev/ptmx)")
			}
			if code != exitPass || !strings.Contains(term, "\r") {
				t.Fatalf("storesim %q on a terminal: exit %d, no progress line:\n%q %s", args, code, term, repro(t))
			}
			code, term, _ = onTerminal(t, append(args, "--quiet")...)
			if code != exitPass || strings.Contains(term, "\r\033[K") || strings.Contains(term, "\r[") {
				t.Fatalf("storesim %q --quiet on a terminal drew progress:\n%q %s", args, term, repro(t))
			}
			got := storesim(args...)
			if got.code != exitPass || strings.Contains(got.stderr, "\r") || strings.Contains(got.stderr, "shrink: run ") {
				t.Fatalf("storesim %q off a terminal printed progress:\n%q %s", args, got.stderr, repro(t))
			}
		})
	}
}

// TestVizWritesTimeline: replay --viz FILE writes the timeline page to FILE
// and porcupine's view next to it, linked from the page; a failure folder's
// timeline links the folder's porcupine.html.
func TestVizWritesTimeline(t *testing.T) {
	dir := t.TempDir()
	viz := filepath.Join(dir, "t.html")
	got := storesim("replay", "--seed", "17", "--driver", "broken:LiesAboutAccess", "--viz", viz)
	page, err := os.ReadFile(viz)
	if got.code != exitSafety || err != nil || !bytes.Contains(page, []byte(`id="storesim-status"`)) || !bytes.Contains(page, []byte(`href="t.porcupine.html"`)) {
		t.Fatalf("replay --viz: exit %d, %v; the page is not the timeline linking t.porcupine.html:\n%s %s", got.code, err, got.stderr, repro(t))
	}
	if st, err := os.Stat(filepath.Join(dir, "t.porcupine.html")); err != nil || st.Size() == 0 {
		t.Fatalf("replay --viz wrote no porcupine view next to the page: %v %s", err, repro(t))
	}
	out := filepath.Join(dir, "out")
	if got := storesim("run", "--driver", "broken:LiesAboutAccess", "--seeds", "17:1", "--out", out); got.code != exitSafety {
		t.Fatalf("run --out: exit %d:\n%s %s", got.code, got.stderr, repro(t))
	}
	folder, err := os.ReadFile(filepath.Join(out, "seed-17", "timeline.html"))
	if err != nil || !bytes.Contains(folder, []byte(`href="porcupine.html"`)) || !bytes.Contains(folder, []byte("storesim replay --seed 17 --driver broken:LiesAboutAccess")) {
		t.Fatalf("the failure folder's timeline.html does not link porcupine.html or lacks the repro: %v %s", err, repro(t))
	}
}
