// Package targets holds storesim's fuzz targets as plain functions of the
// raw input bytes, for fuzzing builders outside go test: libFuzzer through
// go-118-fuzz-build (compile_native_go_fuzzer_v2 of OSS-Fuzz and
// ClusterFuzzLite, see .clusterfuzzlite/), or go-fuzz-style builders that
// call func(data []byte) int.
//
// One target per file; each file's target takes the bytes, returns 1 for an
// input that ran (0 for one with nothing runnable), and panics on a failure
// with the report and, last, the exact command that replays the input:
//
//	oplog.go    OpLog       bytes → op log (fuzz.Decode) → engine.Run on the
//	                        reference drivers; any verdict but pass fails
//	parse.go    ParseOpLog  workload.Parse never panics, and what it accepts
//	                        prints and parses back to the same log
//	machine.go  Machine     the backend state machine (fuzz/machine) with
//	                        every draw read from the bytes (machine.Bytes):
//	                        rapid needs the standard *testing.T, which a
//	                        libFuzzer build replaces, so this target decodes
//	                        the bytes itself
//
// Each has a non-panicking form, Check…, that returns the failure (tests
// plant driver bugs through it), and beside it, in <file>_fuzz_test.go, the
// native Go fuzz test FuzzX(f *testing.F) that go-118-fuzz-build compiles:
// its f.Fuzz body only calls the target, so the build needs nothing else
// from the test files. The seed corpora are the committed ones of packages
// fuzz and fuzz/machine (fuzz/testdata/fuzz/, fuzz/machine/testdata/fuzz/),
// zipped for the builders by go run ./fuzz/fuzztool corpus.
package targets

import (
	"fmt"
	"runtime/debug"
)

// Target is one entry point: its name (the native fuzz test is Fuzz+Name)
// and the function of the bytes.
type Target struct {
	Name string
	Run  func(data []byte) int
}

// All are the targets, in a fixed order.
var All = []Target{
	{"OpLog", OpLog},
	{"ParseOpLog", ParseOpLog},
	{"Machine", Machine},
}

// Repro is the command that replays an input on a target.
func Repro(target string, data []byte) string {
	return fmt.Sprintf("go run ./fuzz/fuzztool repro -target %s -hex %x", target, data)
}

// Failure is what a target panics with: the target, its report, and last
// the repro line.
func Failure(target string, data []byte, report string) string {
	return fmt.Sprintf("%s: %s\nrepro: %s", target, report, Repro(target, data))
}

func fail(target string, data []byte, report string) { panic(Failure(target, data, report)) }

// guard runs a check, turning a panic inside it into its failure (with the
// stack), so that the failure still ends with the repro line.
func guard(check func() (bool, error)) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = true, fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return check()
}
