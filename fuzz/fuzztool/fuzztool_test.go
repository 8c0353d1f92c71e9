package main

import (
	"archive/zip"
	"bytes"
	"encoding/hex"
	"fmt"
	"github.com/storesim/storesim/fuzz/workload"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/fuzz/targets"
)

// root is the module root, which fuzzers' corpus directories are under.
const root = "../.."

func repro(t *testing.T) string {
	return fmt.Sprintf("(repro: go test ./fuzz/fuzztool -run '^%s$')", strings.ReplaceAll(t.Name(), "/", "$/^"))
}

type result struct {
	code           int
	stdout, stderr string
}

func fuzztool(args ...string) result {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// TestCorpusRuns: every entry point of fuzz/targets runs every committed
// corpus file that seeds it, and passes, and most of them run (decode to a
// runnable log, parse): the corpus is not vacuous.
func TestCorpusRuns(t *testing.T) {
	for _, f := range fuzzers() {
		t.Run(f.target.Name, func(t *testing.T) {
			entries, err := readCorpus(root, f.corpus)
			if err != nil || len(entries) == 0 {
				t.Fatalf("corpus of %s (%v): %d entries, %v %s", f.target.Name, f.corpus, len(entries), err, repro(t))
			}
			ran := 0
			for _, e := range entries {
				var n int
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Fatalf("%s on %s:\n%v", f.target.Name, e.name, r)
						}
					}()
					n = f.target.Run(e.data)
				}()
				ran += n
			}
			if 2*ran < len(entries) {
				t.Fatalf("%s ran %d of its %d corpus inputs (the others had nothing runnable or did not parse): want most to run %s", f.target.Name, ran, len(entries), repro(t))
			}
		})
	}
}

// TestHarnessFiles: each target's native fuzz test FuzzNAME(f *testing.F)
// is alone in its file, and no other Go file under fuzz/targets names it:
// compile_native_go_fuzzer_v2 greps the package directory for the name and
// wants one such line, and coverage builds pass the one file it found.
func TestHarnessFiles(t *testing.T) {
	dir := filepath.Join("..", "targets")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v %s", dir, err, repro(t))
	}
	got := fuzztool("list")
	lines := strings.Split(strings.TrimSpace(got.stdout), "\n")
	if got.code != 0 || len(lines) != len(targets.All) {
		t.Fatalf("fuzztool list: exit %d\n%s%s %s", got.code, got.stdout, got.stderr, repro(t))
	}
	for _, line := range lines {
		parts := strings.Fields(line)
		if len(parts) != 3 || parts[0] != pkg || !regexp.MustCompile(`^storesim_[a-z_]+$`).MatchString(parts[2]) {
			t.Fatalf("fuzztool list line %q: want %s FuzzNAME storesim_name %s", line, pkg, repro(t))
		}
		fn := parts[1]
		var naming, defining []string
		for _, f := range files {
			text, _ := os.ReadFile(f)
			if strings.Contains(string(text), fn) {
				naming = append(naming, filepath.Base(f))
			}
			if regexp.MustCompile(`(?m)^func ` + fn + `\(f \*testing\.F\) \{$`).Match(text) {
				defining = append(defining, filepath.Base(f))
			}
		}
		if len(defining) != 1 || len(naming) != 1 || !strings.HasSuffix(defining[0], "_fuzz_test.go") {
			t.Fatalf("%s: defined as func %s(f *testing.F) in %v and named in %v; want one file, NAME_fuzz_test.go, that does both %s", fn, fn, defining, naming, repro(t))
		}
	}
}

// TestCorpusZip: fuzztool corpus writes FUZZER_seed_corpus.zip for every
// target, and each entry unframes, in every encoding, to exactly the
// committed input; the encoding follows the builder module's testing
// package; bad arguments are one line and exit 2.
func TestCorpusZip(t *testing.T) {
	for _, enc := range []string{"v2", "headers", "raw"} {
		t.Run(enc, func(t *testing.T) {
			out := t.TempDir()
			got := fuzztool("corpus", "-out", out, "-root", root, "-encoding", enc)
			if got.code != 0 {
				t.Fatalf("fuzztool corpus -encoding %s: exit %d\n%s %s", enc, got.code, got.stderr, repro(t))
			}
			for _, f := range fuzzers() {
				entries, _ := readCorpus(root, f.corpus)
				want := map[string][]byte{}
				for _, e := range entries {
					if _, ok := frame(e.data, enc); ok {
						want[strings.ReplaceAll(e.name, "/", "-")] = e.data
					}
				}
				zr, err := zip.OpenReader(filepath.Join(out, f.name+"_seed_corpus.zip"))
				if err != nil {
					t.Fatalf("%s: %v %s", f.name, err, repro(t))
				}
				for _, zf := range zr.File {
					rc, _ := zf.Open()
					in, _ := io.ReadAll(rc)
					rc.Close()
					data, ok := unframe(in, enc)
					if w, known := want[zf.Name]; !known || !ok || !bytes.Equal(data, w) {
						t.Fatalf("%s: zip entry %s unframes (%s) to %q (ok %t), want %q %s", f.name, zf.Name, enc, data, ok, w, repro(t))
					}
					delete(want, zf.Name)
				}
				zr.Close()
				if len(want) > 0 || len(entries) == 0 {
					t.Fatalf("%s: %d corpus inputs missing from the zip %s", f.name, len(want), repro(t))
				}
			}
		})
	}
	t.Run("builder", func(t *testing.T) {
		old, cur := t.TempDir(), t.TempDir()
		os.MkdirAll(filepath.Join(old, "testing"), 0o755)
		os.MkdirAll(filepath.Join(cur, "testing"), 0o755)
		os.MkdirAll(filepath.Join(cur, "input"), 0o755)
		os.WriteFile(filepath.Join(cur, "input", "reader.go"), nil, 0o644)
		for dir, want := range map[string]string{old: "headers", cur: "v2"} {
			if got, err := pickEncoding("", dir); got != want || err != nil {
				t.Fatalf("-builder %s: %q %v, want %s %s", dir, got, err, want, repro(t))
			}
		}
	})
	for _, bad := range [][]string{
		{"corpus"},
		{"corpus", "-out", t.TempDir(), "-encoding", "zip"},
		{"corpus", "-out", t.TempDir(), "-builder", t.TempDir()},
		{"corpus", "-out", t.TempDir(), "-root", t.TempDir()},
		{"frobnicate"},
	} {
		got := fuzztool(bad...)
		if got.code != 2 || strings.Count(got.stderr, "\n") != 1 || !strings.HasPrefix(got.stderr, "fuzztool: ") {
			t.Fatalf("fuzztool %q: exit %d, stderr %q; want exit 2 and one line %s", bad, got.code, got.stderr, repro(t))
		}
	}
}

// brokenFactory builds every endpoint on broken:LiesAboutAccess.
func brokenFactory(_ string, env registry.Env) (drivers.Driver, error) {
	return registry.New("broken:LiesAboutAccess", env)
}

// TestFailuresEndWithRepro: a planted driver bug fails the OpLog checks
// with the rule named; a target's failure ends with the repro command, and
// that command, run, replays the same input (a failing one exits 1, a
// passing one 0); a crash file is unframed as the builder framed it; bad
// arguments exit 2.
func TestFailuresEndWithRepro(t *testing.T) {
	entries, err := readCorpus(root, []string{"fuzz/testdata/fuzz/FuzzOpLog"})
	if err != nil {
		t.Fatal(err)
	}
	caught := 0
	for _, e := range entries {
		ran, err := targets.CheckOpLog(e.data, engine.Config{Factory: brokenFactory})
		if ran && err != nil && strings.Contains(err.Error(), "D-ACCESS-END") && strings.Contains(err.Error(), "op log:\n"+workload.Header) {
			caught++
		}
	}
	if caught == 0 {
		t.Fatalf("CheckOpLog passed every corpus input on broken:LiesAboutAccess %s", repro(t))
	}
	data := entries[0].data
	msg := targets.Failure("OpLog", data, "a report")
	want := fmt.Sprintf("OpLog: a report\nrepro: go run ./fuzz/fuzztool repro -target OpLog -hex %x", data)
	if msg != want {
		t.Fatalf("Failure:\n%s\nwant\n%s %s", msg, want, repro(t))
	}
	// The repro command's arguments, as the line gives them.
	args := strings.Fields(strings.TrimPrefix(msg[strings.LastIndex(msg, "repro: "):], "repro: go run ./fuzz/fuzztool "))
	if got := fuzztool(args...); got.code != 0 || got.stdout != fmt.Sprintf("OpLog: pass (%d bytes)\n", len(data)) {
		t.Fatalf("fuzztool %q: exit %d\n%s%s %s", args, got.code, got.stdout, got.stderr, repro(t))
	}
	// A failing input: the target panics with its failure; repro prints
	// it and exits 1.
	all = append(all, targets.Target{Name: "Planted", Run: func(d []byte) int { panic(targets.Failure("Planted", d, "planted")) }})
	t.Cleanup(func() { all = all[:len(all)-1] })
	if got := fuzztool("repro", "-target", "Planted", "-hex", "0102"); got.code != 1 || got.stdout != "Planted: planted\nrepro: go run ./fuzz/fuzztool repro -target Planted -hex 0102\n" {
		t.Fatalf("fuzztool repro of a failing input: exit %d, stdout %q %s", got.code, got.stdout, repro(t))
	}

	dir := t.TempDir()
	corpusFile := filepath.Join(root, "fuzz", "testdata", "fuzz", "FuzzOpLog", "seed-00")
	crash := filepath.Join(dir, "crash-v2")
	framed, _ := frame(data, "v2")
	os.WriteFile(crash, framed, 0o644)
	crashHeaders := filepath.Join(dir, "crash-headers")
	framedH, _ := frame(data, "headers")
	os.WriteFile(crashHeaders, framedH, 0o644)
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte{0, 1}, 0o644)
	for _, args := range [][]string{
		{"repro", "-target", "OpLog", corpusFile},
		{"repro", "-target", "OpLog", crash},
		{"repro", "-target", "OpLog", "-encoding", "headers", crashHeaders},
		{"repro", "-target", "Machine", filepath.Join(root, "fuzz", "machine", "testdata", "fuzz", "FuzzMachine", "seed-00")},
		{"repro", "-target", "ParseOpLog", "-hex", hex.EncodeToString([]byte("storesim-oplog v1\n"))},
	} {
		if got := fuzztool(args...); got.code != 0 || !strings.Contains(got.stdout, ": pass (") {
			t.Fatalf("fuzztool %q: exit %d\n%s%s %s", args, got.code, got.stdout, got.stderr, repro(t))
		}
	}
	for _, args := range [][]string{
		{"repro", "-target", "Nope", "-hex", "00"},
		{"repro", "-target", "OpLog"},
		{"repro", "-target", "OpLog", "-hex", "zz"},
		{"repro", "-target", "OpLog", "-hex", "00", corpusFile},
		{"repro", "-target", "OpLog", filepath.Join(dir, "absent")},
		{"repro", "-target", "OpLog", "-encoding", "headers", short},
		{"repro", "-target", "OpLog", "-encoding", "gzip", crash},
	} {
		if got := fuzztool(args...); got.code != 2 || strings.Count(got.stderr, "\n") != 1 {
			t.Fatalf("fuzztool %q: exit %d, stderr %q; want exit 2 and one line %s", args, got.code, got.stderr, repro(t))
		}
	}
}
