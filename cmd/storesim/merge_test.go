package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The swarm the merge tests shard: a broken driver, so failing seeds
// exist, on a range small enough to be quick.
var mergeSwarm = []string{"--driver", "broken:LiesAboutAccess", "--seeds", "0:30", "--ops", "30"}

// buildStoresim builds the command once into a temporary directory.
func buildStoresim(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH to build storesim: %v %s", err, repro(t))
	}
	bin := filepath.Join(t.TempDir(), "storesim")
	out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/storesim: %v\n%s %s", err, out, repro(t))
	}
	return bin
}

// splitRecords parses run --json output into its seed lines and its summary.
func splitRecords(t *testing.T, stdout string) ([]string, map[string]any) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	var sum map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum["type"] != "summary" {
		t.Fatalf("last line %q is not a summary (%v) %s", lines[len(lines)-1], err, repro(t))
	}
	return lines[:len(lines)-1], sum
}

// TestMergeShardsEqualsOneRun: N processes of the built binary run the
// shards of one range side by side; merged, they give exactly what one
// unsharded run gives: the same seed records byte for byte (so the same
// failures, in seed order, with their repro lines and saved folders), the
// same counts per verdict and per class, and the same exit code.
func TestMergeShardsEqualsOneRun(t *testing.T) {
	bin := buildStoresim(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "failures")
	const n = 3
	files := make([]string, n)
	codes := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		files[i] = filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.Create(files[i])
			if err != nil {
				errs[i] = err
				return
			}
			defer f.Close()
			cmd := exec.Command(bin, append([]string{"run", "--shard", fmt.Sprintf("%d/%d", i, n), "--json", "--out", out, "--workers", "1"}, mergeSwarm...)...)
			cmd.Stdout = f
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err = cmd.Run()
			codes[i] = cmd.ProcessState.ExitCode()
			if _, ok := err.(*exec.ExitError); !ok && err != nil {
				errs[i] = fmt.Errorf("%v\n%s", err, stderr.String())
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d/%d: %v %s", i, n, err, repro(t))
		}
	}
	// The unsharded run saves its folders in the same place, so the seed
	// records name the same folders.
	one := exec.Command(bin, append([]string{"run", "--json", "--out", out}, mergeSwarm...)...)
	var oneOut bytes.Buffer
	one.Stdout = &oneOut
	if err := one.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("the unsharded run: %v %s", err, repro(t))
		}
	}
	oneCode := one.ProcessState.ExitCode()
	oneSeeds, oneSum := splitRecords(t, oneOut.String())
	if oneCode != exitSafety || oneSum["safety"].(float64) == 0 || oneSum["passed"].(float64) == 0 {
		t.Fatalf("the unsharded run of %q: exit %d, summary %v; want safety failures and passes to merge %s", mergeSwarm, oneCode, oneSum, repro(t))
	}
	for i, c := range codes {
		if c != exitSafety && c != exitPass {
			t.Fatalf("shard %d/%d exited %d %s", i, n, c, repro(t))
		}
	}

	// Given in reverse, so the merge must sort.
	slices.Reverse(files)
	got := storesim(append([]string{"merge", "--json"}, files...)...)
	mSeeds, mSum := splitRecords(t, got.stdout)
	if got.code != oneCode || mSum["exit"] != float64(oneCode) {
		t.Fatalf("merge exit %d (summary exit %v), the unsharded run's %d\n%s %s", got.code, mSum["exit"], oneCode, got.stderr, repro(t))
	}
	if strings.Join(mSeeds, "\n") != strings.Join(oneSeeds, "\n") {
		t.Fatalf("merged seed records differ from the unsharded run's:\nmerged:\n%s\none run:\n%s %s", strings.Join(mSeeds, "\n"), strings.Join(oneSeeds, "\n"), repro(t))
	}
	if mSum["shards"] != float64(n) {
		t.Fatalf("merged summary %v: want shards %d %s", mSum, n, repro(t))
	}
	delete(mSum, "shards")
	if a, b := fmt.Sprint(mSum), fmt.Sprint(oneSum); a != b {
		t.Fatalf("merged summary\n%s\nunsharded summary\n%s %s", a, b, repro(t))
	}
	// Every failing seed's folder is there: the artifact a CI job keeps.
	for _, line := range mSeeds {
		var r map[string]any
		json.Unmarshal([]byte(line), &r)
		if r["verdict"] == "pass" {
			continue
		}
		if _, err := os.Stat(filepath.Join(r["out"].(string), "repro.txt")); err != nil {
			t.Fatalf("seed %v failed but its folder is missing: %v %s", r["seed"], err, repro(t))
		}
	}

	// The text form lists exactly the failing seeds, in seed order.
	text := storesim(append([]string{"merge"}, files...)...)
	var want []string
	for _, line := range oneSeeds {
		var r map[string]any
		json.Unmarshal([]byte(line), &r)
		if r["verdict"] != "pass" {
			want = append(want, fmt.Sprintf("seed %v: %v", r["seed"], r["verdict"]))
		}
	}
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^seed (\d+): (\w+)`).FindAllStringSubmatch(text.stdout, -1) {
		listed = append(listed, fmt.Sprintf("seed %s: %s", m[1], m[2]))
	}
	if text.code != oneCode || strings.Join(listed, ",") != strings.Join(want, ",") {
		t.Fatalf("merge (text): exit %d, listed %v, want %v\n%s %s", text.code, listed, want, text.stderr, repro(t))
	}
	wantClosing := fmt.Sprintf("seeds: %v passed, %v failed\n", oneSum["passed"], oneSum["failed"])
	if !strings.HasSuffix(text.stderr, wantClosing) {
		t.Fatalf("merge stderr does not end with %q:\n%s %s", wantClosing, text.stderr, repro(t))
	}
}

// shardFiles runs the shards of mergeSwarm in this process, with extra
// run flags, and writes each one's stdout to DIR/shard-I.jsonl.
func shardFiles(t *testing.T, dir string, n int, extra ...string) []string {
	t.Helper()
	var files []string
	for i := range n {
		args := append([]string{"run", "--json", "--shard", fmt.Sprintf("%d/%d", i, n)}, mergeSwarm...)
		got := storesim(append(args, extra...)...)
		if got.code != exitSafety && got.code != exitPass {
			t.Fatalf("storesim %q: exit %d\n%s %s", args, got.code, got.stderr, repro(t))
		}
		f := filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i))
		if err := os.WriteFile(f, []byte(got.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// edit rewrites a run --json file record by record.
func edit(t *testing.T, src, dst string, f func(line int, rec map[string]any) (keep bool)) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var rec map[string]any
		d := json.NewDecoder(strings.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&rec); err != nil {
			t.Fatalf("%s:%d: %v", src, i+1, err)
		}
		if !f(i+1, rec) {
			continue
		}
		b, _ := json.Marshal(rec)
		out.Write(b)
		out.WriteByte('\n')
	}
	if err := os.WriteFile(dst, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// oneLine: stderr holds exactly one line, the merge error, and no panic.
func oneLine(t *testing.T, got cli) {
	t.Helper()
	if strings.Count(got.stderr, "\n") != 1 || !strings.HasPrefix(got.stderr, "storesim merge: ") || strings.Contains(got.stderr, "goroutine ") {
		t.Fatalf("want one error line, got:\n%s %s", got.stderr, repro(t))
	}
}

// TestMergeCoverage: a shard missing or given twice, or seeds missing from
// an interrupted shard, are each reported (with the run command that fills
// the gap), alongside the counts of what is there, and exit 2 whatever the
// seeds say; two runs of one shard that disagree are named.
func TestMergeCoverage(t *testing.T) {
	dir := t.TempDir()
	files := shardFiles(t, dir, 3)
	if got := storesim(append([]string{"merge"}, files...)...); got.code != exitSafety || strings.Contains(got.stderr, "missing") || strings.Contains(got.stderr, "duplicate") {
		t.Fatalf("merge of every shard: exit %d\n%s %s", got.code, got.stderr, repro(t))
	}
	// Shard 1 holds seeds 10:10 of 0:30.
	interrupted := filepath.Join(dir, "interrupted.jsonl")
	edit(t, files[1], interrupted, func(_ int, rec map[string]any) bool {
		switch rec["type"] {
		case "seed":
			seed := fmt.Sprint(rec["seed"]) // a number or a string
			return seed != "12" && seed != "17"
		case "summary":
			// As if the run stopped early: the counts are its records'.
			rec["interrupted"] = true
		}
		return true
	})
	// Recount the edited summary from its records.
	fixCounts(t, interrupted)
	disagree := filepath.Join(dir, "disagree.jsonl")
	edit(t, files[1], disagree, func(_ int, rec map[string]any) bool {
		if fmt.Sprint(rec["seed"]) == "10" {
			rec["trace_hash"] = "0123456789abcdef"
		}
		return true
	})
	cases := []struct {
		name  string
		files []string
		want  []string // substrings of stderr, each on a line of its own
	}{
		{"missing", []string{files[0], files[2]}, []string{
			"storesim merge: missing shard 1/3 of range 0:30 (seeds 10:10): no file holds it; run it with storesim run --seeds 0:30 --shard 1/3 --json --driver broken:LiesAboutAccess --profile default --ops 30\n"}},
		{"missing-two", []string{files[1]}, []string{"missing shard 0/3 of range 0:30 (seeds 0:10)", "missing shard 2/3 of range 0:30 (seeds 20:10)"}},
		{"duplicate", []string{files[0], files[1], files[2], files[1]}, []string{
			fmt.Sprintf("storesim merge: duplicate shard 1/3: %s and %s both hold it; %s is left out\n", files[1], files[1], files[1])}},
		{"duplicate-disagrees", []string{files[0], files[1], files[2], disagree}, []string{
			"and they disagree on seed 10", "repro: storesim run --seeds 10:1 --check-determinism --driver broken:LiesAboutAccess --profile default --ops 30)\n"}},
		{"interrupted", []string{files[0], interrupted, files[2]}, []string{
			interrupted + ": shard 1/3 lacks 2 of its 10 seeds (its summary says the run was interrupted): START:COUNT 12:1 17:1; run them with storesim run --seeds START:COUNT --json --driver broken:LiesAboutAccess --profile default --ops 30\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := storesim(append([]string{"merge", "--json"}, c.files...)...)
			if got.code != exitUsage {
				t.Fatalf("merge %v: exit %d, want 2\n%s %s", c.files, got.code, got.stderr, repro(t))
			}
			for _, w := range c.want {
				if !strings.Contains(got.stderr, w) {
					t.Fatalf("merge %v: stderr lacks %q:\n%s %s", c.files, w, got.stderr, repro(t))
				}
			}
			// The counts of what is there are still printed, marked exit 2.
			_, sum := splitRecords(t, got.stdout)
			if sum["exit"] != float64(exitUsage) || sum["seeds"].(float64) == 0 || !closing.MatchString(got.stderr) {
				t.Fatalf("merge %v: summary %v\n%s %s", c.files, sum, got.stderr, repro(t))
			}
		})
	}
}

// TestMergeEmptyShard: a range smaller than the shard count leaves some
// shards without seeds; their files still count, and the merge covers the
// range.
func TestMergeEmptyShard(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := range 3 {
		got := storesim("run", "--driver", "memory", "--seeds", "5:2", "--ops", "10", "--json", "--shard", fmt.Sprintf("%d/3", i))
		f := filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i))
		os.WriteFile(f, []byte(got.stdout), 0o644)
		files = append(files, f)
	}
	got := storesim(append([]string{"merge"}, files...)...)
	if got.code != exitPass || !strings.HasSuffix(got.stderr, "seeds: 2 passed, 0 failed\n") {
		t.Fatalf("merge of 5:2 in 3 shards: exit %d\n%s %s", got.code, got.stderr, repro(t))
	}
	got = storesim("merge", files[0], files[2])
	if got.code != exitUsage || !strings.Contains(got.stderr, "missing shard 1/3 of range 5:2 (seeds 5:1)") {
		t.Fatalf("merge without shard 1/3: exit %d\n%s %s", got.code, got.stderr, repro(t))
	}
}

// fixCounts rewrites a file's summary counts from its seed records (what a
// run interrupted after those seeds would have written).
func fixCounts(t *testing.T, path string) {
	t.Helper()
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var seeds []seedLine
	for i, l := range lines[:len(lines)-1] {
		s := seedLine{line: i + 1}
		if err := json.Unmarshal([]byte(l), &s.rec); err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, s)
	}
	c := tallyOf(seeds)
	edit(t, path, path, func(_ int, rec map[string]any) bool {
		if rec["type"] == "summary" {
			rec["seeds"], rec["passed"], rec["failed"], rec["safety"], rec["classes"] = c.Seeds, c.Passed, c.Failed, c.Safety, c.Classes
		}
		return true
	})
}

// TestMergeSeedsAsStrings: seeds written as JSON strings ("seed": "17", as
// a consumer that keeps 64-bit seeds exact writes them) merge exactly as
// numbers do; a string that is not a seed is an input error.
func TestMergeSeedsAsStrings(t *testing.T) {
	dir := t.TempDir()
	files := shardFiles(t, dir, 2)
	asNumbers := storesim(append([]string{"merge"}, files...)...)
	var strs []string
	for i, f := range files {
		s := filepath.Join(dir, fmt.Sprintf("strings-%d.jsonl", i))
		edit(t, f, s, func(_ int, rec map[string]any) bool {
			if n, ok := rec["seed"].(json.Number); ok {
				rec["seed"] = string(n)
			}
			return true
		})
		strs = append(strs, s)
	}
	asStrings := storesim(append([]string{"merge"}, strs...)...)
	if asStrings.code != asNumbers.code || asStrings.stdout != asNumbers.stdout || asNumbers.stdout == "" {
		t.Fatalf("seeds as strings: exit %d\n%s\nas numbers: exit %d\n%s %s", asStrings.code, asStrings.stdout, asNumbers.code, asNumbers.stdout, repro(t))
	}
	big := filepath.Join(dir, "big.jsonl")
	os.WriteFile(big, []byte(`{"type":"seed","seed":"18446744073709551615","trace_hash":"0000000000000001","verdict":"pass","class":"pass","rule":"","repro":"x","steps":1,"failures":0}
{"type":"summary","driver":"memory","profile":"calm","ops":5,"range":"18446744073709551615:1","shard":"0/1","seeds":1,"passed":1,"failed":0,"safety":0,"liveness":0,"unknown":0,"harness_error":0,"determinism_mismatch":0,"classes":{"pass":1},"exit":0}
`), 0o644)
	if got := storesim("merge", big); got.code != exitPass || !strings.HasSuffix(got.stderr, "seeds: 1 passed, 0 failed\n") {
		t.Fatalf("the largest seed as a string: exit %d\n%s %s", got.code, got.stderr, repro(t))
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"type":"seed","seed":"seventeen","verdict":"pass","class":"pass"}`+"\n"), 0o644)
	got := storesim("merge", bad)
	oneLine(t, got)
	if got.code != exitUsage || !strings.Contains(got.stderr, bad+`:1: seed record: "seventeen" is not a non-negative integer`) {
		t.Fatalf("a seed that is no number: exit %d\n%s %s", got.code, got.stderr, repro(t))
	}
}

// TestMergeBadInput: input that is not run --json output is one line that
// names FILE:LINE, exit 2, nothing merged, never a panic.
func TestMergeBadInput(t *testing.T) {
	dir := t.TempDir()
	files := shardFiles(t, dir, 2)
	good, _ := os.ReadFile(files[0])
	lines := strings.SplitAfter(string(good), "\n")
	nSeeds := len(lines) - 2 // the last element is "" after the final newline
	summary := lines[nSeeds]
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	otherOps := filepath.Join(dir, "other-ops.jsonl")
	edit(t, files[1], otherOps, func(_ int, rec map[string]any) bool {
		if rec["type"] == "summary" {
			rec["ops"] = 31
		}
		return true
	})
	oldSummary := filepath.Join(dir, "old.jsonl")
	edit(t, files[0], oldSummary, func(_ int, rec map[string]any) bool {
		delete(rec, "range")
		delete(rec, "shard")
		return true
	})
	wrongCount := filepath.Join(dir, "wrong-count.jsonl")
	edit(t, files[0], wrongCount, func(_ int, rec map[string]any) bool {
		if rec["type"] == "summary" {
			rec["safety"] = 0
		}
		return true
	})
	wrongExit := filepath.Join(dir, "wrong-exit.jsonl")
	edit(t, files[0], wrongExit, func(_ int, rec map[string]any) bool {
		if rec["type"] == "summary" {
			rec["exit"] = 0
		}
		return true
	})
	outside := filepath.Join(dir, "outside.jsonl")
	edit(t, files[0], outside, func(line int, rec map[string]any) bool {
		if line == 2 {
			rec["seed"] = 20 // shard 0/2 of 0:30 holds 0:15
		}
		return true
	})
	cases := []struct {
		name  string
		files []string
		want  string // the one stderr line, a substring
	}{
		{"no-files", nil, "give one or more FILEs"},
		{"absent", []string{filepath.Join(dir, "absent.jsonl")}, "absent.jsonl: no such file"},
		{"empty", []string{write("empty.jsonl", ""), files[1]}, "empty.jsonl: empty file: no records"},
		{"truncated", []string{write("cut.jsonl", strings.Join(lines[:3], "")+lines[3][:len(lines[3])/2]), files[1]}, "cut.jsonl:4: truncated line: the file ends in the middle of a record"},
		{"cut-before-summary", []string{write("nosum.jsonl", strings.Join(lines[:nSeeds], "")), files[1]}, fmt.Sprintf("nosum.jsonl:%d: the file ends without a summary record after %d seed records", nSeeds, nSeeds)},
		{"not-json", []string{write("garbled.jsonl", lines[0]+"seed 3 failed\n"+strings.Join(lines[2:], "")), files[1]}, "garbled.jsonl:2: not a JSON record"},
		{"blank-line", []string{write("blank.jsonl", lines[0]+"\n"+strings.Join(lines[1:], "")), files[1]}, "blank.jsonl:2: blank line"},
		{"wrong-type", []string{write("type.jsonl", lines[0]+`{"type":"progress","seed":1}`+"\n"+strings.Join(lines[2:], "")), files[1]}, `type.jsonl:2: record type "progress": want "seed" or "summary"`},
		{"no-type", []string{write("notype.jsonl", `{"seed":0}`+"\n"+strings.Join(lines[1:], "")), files[1]}, `notype.jsonl:1: a record without a "type" field`},
		{"not-an-object", []string{write("array.jsonl", "[1,2]\n"+summary), files[1]}, "array.jsonl:1: not a JSON record"},
		{"record-after-summary", []string{write("after.jsonl", string(good)+lines[0]), files[1]}, fmt.Sprintf("after.jsonl:%d: a seed record after the summary (line %d)", nSeeds+2, nSeeds+1)},
		{"two-runs", []string{write("two.jsonl", string(good)+string(good)), files[1]}, fmt.Sprintf("two.jsonl:%d: a seed record after the summary", nSeeds+2)},
		{"seed-twice", []string{write("twice.jsonl", lines[0]+lines[0]+strings.Join(lines[2:], "")), files[1]}, "twice.jsonl:2: seed 0 again (first on line 1)"},
		{"bad-verdict", []string{write("verdict.jsonl", strings.Replace(lines[0], `"verdict":"`, `"verdict":"x`, 1)+strings.Join(lines[1:], "")), files[1]}, "verdict.jsonl:1: a seed record whose verdict is not one of pass, safety"},
		{"old-summary", []string{oldSummary, files[1]}, fmt.Sprintf(`old.jsonl:%d: the summary has no "range" and "shard" fields`, nSeeds+1)},
		{"counts", []string{wrongCount, files[1]}, fmt.Sprintf("wrong-count.jsonl:%d: the summary says safety 0, but the file's seed records give", nSeeds+1)},
		{"exit", []string{wrongExit, files[1]}, fmt.Sprintf("wrong-exit.jsonl:%d: the summary's exit 0 does not follow from its counts", nSeeds+1)},
		{"outside", []string{outside, files[1]}, "outside.jsonl:2: seed 20 is outside shard 0/2 of range 0:30 (seeds 0:15)"},
		{"other-swarm", []string{files[0], otherOps}, "other-ops.jsonl is not a shard of the swarm of " + files[0]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := storesim(append([]string{"merge"}, c.files...)...)
			if got.code != exitUsage || !strings.Contains(got.stderr, c.want) || got.stdout != "" {
				t.Fatalf("merge %v: exit %d, stdout %q, stderr:\n%s\nwant exit 2, no stdout, and %q %s", c.files, got.code, got.stdout, got.stderr, c.want, repro(t))
			}
			oneLine(t, got)
		})
	}
}
