package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const builderModule = "github.com/AdamKorcz/go-118-fuzz-build"

// standIn replaces OSS-Fuzz's compile_native_go_fuzzer_v2 for the test: the
// same checks on the harness (one "func FUNCTION … testing.F" line among
// the package directory's Go files that name it), the same
// go-118-fuzz-build_v2 call, then a stop at the Go archive, where the real
// one links it with clang and libFuzzer ($CXX $LIB_FUZZING_ENGINE).
const standIn = `#!/bin/bash -eu
path=$1 function=$2 fuzzer=$3
dir=$(go list -tags gofuzz -f '{{.Dir}}' "$path")
files=$(grep -r -l --include='*.go' -s "$function" "$dir" || true)
n=$( (grep -r "func $function" $files || true) | grep -c "testing.F" || true)
if [ "$n" -ne 1 ]; then
	echo "compile_native_go_fuzzer_v2 (stand-in): want one func $function(f *testing.F) in $dir, found $n in: $files" >&2
	exit 1
fi
go-118-fuzz-build_v2 -tags gofuzz -o "$fuzzer.a" -func "$function" "$dir"
mv "$fuzzer.a" "$OUT/$fuzzer.a"
`

// frameCheck is a program, built in the copy against the testing package
// that build.sh added, that feeds each zip entry to that package's F.Fuzz
// and checks the argument it hands over is the committed input.
const frameCheck = `package main

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	fuzztesting "github.com/AdamKorcz/go-118-fuzz-build/testing"
)

func main() {
	zr, err := zip.OpenReader(os.Args[1])
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	for _, f := range zr.File {
		rc, _ := f.Open()
		in, _ := io.ReadAll(rc)
		want, err := os.ReadFile(filepath.Join(os.Args[2], f.Name))
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		var got []byte
		called := false
		%s.Fuzz(func(t *fuzztesting.T, data []byte) { got, called = data, true })
		if !called || !bytes.Equal(got, want) {
			fmt.Printf("%%s: f.Fuzz got %%q (called %%t), want %%q\n", f.Name, got, called, want)
			os.Exit(1)
		}
	}
	fmt.Println("ok", len(zr.File))
}
`

// TestClusterFuzzLiteBuild: .clusterfuzzlite/build.sh's Go step compiles.
// It runs the script on a copy of the module, with go-118-fuzz-build from
// the module proxy (the script's GO118_FUZZ_BUILD pinned to that version)
// behind a stand-in for compile_native_go_fuzzer_v2 that stops at the Go
// archive: every target of fuzztool list must come out as a c-archive
// exporting LLVMFuzzerTestOneInput, with its seed corpus zip, and every zip
// entry must reach f.Fuzz, through that version's testing package, as the
// committed input. Skipped, saying why, when the proxy does not serve the
// builder or there is no C compiler (a c-archive needs cgo).
func TestClusterFuzzLiteBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the libFuzzer build of every target takes a while")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	tmp := t.TempDir()
	outside := filepath.Join(tmp, "outside") // no go.mod: nothing of ours changes
	os.MkdirAll(outside, 0o755)
	gocmd := func(dir string, env []string, args ...string) (string, error) {
		cmd := exec.Command(gobin, args...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "GOWORK=off"), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	info, err := gocmd(outside, nil, "list", "-m", "-json", builderModule+"@latest")
	var mod struct{ Version string }
	if err != nil || json.Unmarshal([]byte(info), &mod) != nil || mod.Version == "" {
		t.Skipf("the module proxy does not serve %s, so build.sh's Go step is not checked: %v %s", builderModule, err, strings.TrimSpace(info))
	}
	if cc, _ := gocmd(outside, nil, "env", "CC"); func() bool { _, err := exec.LookPath(strings.TrimSpace(cc)); return err != nil }() {
		t.Skipf("no C compiler (go env CC = %q): go-118-fuzz-build makes a c-archive, which needs cgo", strings.TrimSpace(cc))
	}
	bin := filepath.Join(tmp, "bin")
	if out, err := gocmd(outside, []string{"GOBIN=" + bin}, "install", builderModule+"@"+mod.Version); err != nil {
		t.Skipf("go install %s@%s failed, so build.sh's Go step is not checked: %v\n%s", builderModule, mod.Version, err, out)
	}
	os.Symlink(filepath.Join(bin, "go-118-fuzz-build"), filepath.Join(bin, "go-118-fuzz-build_v2"))
	os.WriteFile(filepath.Join(bin, "compile_native_go_fuzzer_v2"), []byte(standIn), 0o755)

	// The builder rewrites files of the package it builds, and build.sh
	// adds a requirement to go.mod: both happen in a copy.
	src := filepath.Join(tmp, "src")
	module := filepath.Join(src, "storesim")
	if err := copyTree(filepath.Join("..", ".."), module); err != nil {
		t.Fatalf("copying the module: %v %s", err, repro(t))
	}
	out := filepath.Join(tmp, "out")
	os.MkdirAll(out, 0o755)
	sh := exec.Command("bash", filepath.Join(module, ".clusterfuzzlite", "build.sh"))
	sh.Dir = module
	sh.Env = append(os.Environ(), "SRC="+src, "OUT="+out, "GO118_FUZZ_BUILD="+mod.Version, "GOWORK=off",
		"PATH="+bin+string(os.PathListSeparator)+filepath.Dir(gobin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	log, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf(".clusterfuzzlite/build.sh with %s@%s: %v\n%s%s", builderModule, mod.Version, err, log, repro(t))
	}

	builder, err := gocmd(module, nil, "list", "-m", "-f", "{{.Dir}}", builderModule)
	if err != nil {
		t.Fatalf("go list -m %s in the copy: %v\n%s %s", builderModule, err, builder, repro(t))
	}
	enc, _ := pickEncoding("", strings.TrimSpace(builder))
	newF := "(&fuzztesting.F{Data: in, T: fuzztesting.NewT()})"
	if enc == "v2" {
		newF = "fuzztesting.NewF(in)"
	}
	check := filepath.Join(module, "internal", "framecheck")
	os.MkdirAll(check, 0o755)
	os.WriteFile(filepath.Join(check, "main.go"), []byte(fmt.Sprintf(frameCheck, newF)), 0o644)
	checker := filepath.Join(tmp, "framecheck")
	if out, err := gocmd(module, nil, "build", "-o", checker, "./internal/framecheck"); err != nil {
		t.Fatalf("building the frame check against %s@%s's testing package: %v\n%s %s", builderModule, mod.Version, err, out, repro(t))
	}

	for _, f := range fuzzers() {
		archive := filepath.Join(out, f.name+".a")
		a, err := os.ReadFile(archive)
		if err != nil || !bytes.Contains(a, []byte("LLVMFuzzerTestOneInput")) || !bytes.Contains(a, []byte("fuzz/targets."+f.target.Name)) {
			t.Fatalf("%s: not a libFuzzer archive of targets.%s (%v)\nbuild.sh said:\n%s%s", archive, f.target.Name, err, log, repro(t))
		}
		zipPath := filepath.Join(out, f.name+"_seed_corpus.zip")
		zr, err := zip.OpenReader(zipPath)
		if err != nil || len(zr.File) == 0 {
			t.Fatalf("%s: %v (or empty) %s", zipPath, err, repro(t))
		}
		zr.Close()
		entries, _ := readCorpus(root, f.corpus)
		want := filepath.Join(tmp, "want-"+f.name)
		os.MkdirAll(want, 0o755)
		for _, e := range entries {
			os.WriteFile(filepath.Join(want, strings.ReplaceAll(e.name, "/", "-")), e.data, 0o644)
		}
		if res, err := exec.Command(checker, zipPath, want).CombinedOutput(); err != nil || !strings.HasPrefix(string(res), "ok ") {
			t.Fatalf("%s, framed as %s, does not reach f.Fuzz as the committed inputs: %v\n%s%s", zipPath, enc, err, res, repro(t))
		}
	}
	t.Logf("%s@%s (%s encoding): %d targets built", builderModule, mod.Version, enc, len(fuzzers()))
}

// copyTree copies a directory tree, leaving out .git.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a worktree's .git file
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, info.Mode().Perm())
	})
}
