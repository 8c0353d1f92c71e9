package machine_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/storesim/storesim/fuzz/corpusfile"
	"github.com/storesim/storesim/fuzz/machine"
)

// failFileProperties names the property that replays each directory of
// rapid fail files under testdata/rapid (rapid names the directory after
// the test that wrote it).
var failFileProperties = map[string]func(*rapid.T){
	"TestBackendStateMachine": backendProperty,
}

// replayFailFile runs prop on one fail file exactly as rapid.Check replays
// it (no random checks after it, no new fail file written) and returns what
// rapid logged and whether the property failed.
func replayFailFile(t *testing.T, path string, prop func(*rapid.T)) (string, bool) {
	t.Helper()
	for name, v := range map[string]string{"rapid.failfile": path, "rapid.checks": "0", "rapid.nofailfile": "true"} {
		old := flag.Lookup(name).Value.String()
		if err := flag.Set(name, v); err != nil {
			t.Fatal(err)
		}
		defer flag.Set(name, old)
	}
	// A name no directory of testdata/rapid has, so rapid replays this file
	// alone.
	rec := &recordTB{name: "storesim-replay-" + filepath.Base(path)}
	rapid.Check(rec, prop)
	return rec.String(), rec.failed
}

// invalidFailFile is what rapid logs, and otherwise passes over in silence,
// when a fail file does not replay: its draws ran out (the property changed
// under it) or it was written by another rapid version.
func invalidFailFile(log string) bool {
	return strings.Contains(log, "is no longer valid") || strings.Contains(log, "ignoring fail file")
}

// TestRapidFailFilesReplay: every committed rapid fail file replays — the
// property runs it to its end and passes (the bug it recorded stays fixed).
// rapid itself skips a file that no longer replays with a log line only;
// this test fails instead, so a regression file never goes dead unnoticed.
func TestRapidFailFilesReplay(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join("testdata", "rapid"))
	if err != nil {
		t.Fatalf("no rapid fail files: %v (repro: go test ./fuzz/machine -run TestRapidFailFilesReplay)", err)
	}
	n := 0
	for _, d := range dirs {
		prop, ok := failFileProperties[d.Name()]
		if !ok {
			t.Fatalf("testdata/rapid/%s: no property replays this directory; add it to failFileProperties (repro: go test ./fuzz/machine -run TestRapidFailFilesReplay)", d.Name())
		}
		files, _ := filepath.Glob(filepath.Join("testdata", "rapid", d.Name(), "*.fail"))
		for _, f := range files {
			n++
			log, failed := replayFailFile(t, f, prop)
			switch {
			case invalidFailFile(log):
				t.Errorf("%s does not replay any more (rapid: %s); extend or regenerate it, see its header (repro: go test ./fuzz/machine -run TestRapidFailFilesReplay)", f, strings.TrimSpace(log))
			case failed:
				t.Errorf("%s fails again: the bug it recorded is back:\n%s(repro: go test ./fuzz/machine -run '^TestBackendStateMachine$' -rapid.failfile=%s)", f, log, f)
			}
		}
	}
	if n == 0 {
		t.Fatalf("testdata/rapid holds no fail file (repro: go test ./fuzz/machine -run TestRapidFailFilesReplay)")
	}
}

// TestRapidFailFileCheckCanFail: the check above does fire. The committed
// file cut back to the draws rapid first recorded (without the zeros its
// header explains) runs out of draws on the fixed backend, and rapid's
// "no longer valid" is seen.
func TestRapidFailFileCheckCanFail(t *testing.T) {
	if testing.Short() {
		t.Skip("rapid replays no fail file under -short, so there is nothing to report invalid (run without -short)")
	}
	src := filepath.Join("testdata", "rapid", "TestBackendStateMachine", "TestBackendStateMachine-unprovable-to-pending.fail")
	text, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(text), "\n"), "\n")
	for len(lines) > 0 && lines[len(lines)-1] == "0x0" {
		lines = lines[:len(lines)-1]
	}
	cut := filepath.Join(t.TempDir(), "cut.fail")
	if err := os.WriteFile(cut, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if log, _ := replayFailFile(t, cut, backendProperty); !invalidFailFile(log) {
		t.Fatalf("a fail file that runs out of draws was not reported as invalid; rapid logged:\n%s(repro: go test ./fuzz/machine -run TestRapidFailFileCheckCanFail)", log)
	}
}

// TestCorpusFilesReplay: every file of the committed fuzz corpus
// (testdata/fuzz/<target>/, generated or added by hand) is an input its
// target runs: the rapid state machine's are valid rapid inputs, the
// byte-driven machine's replay without an error. A file that no longer
// replays fails the test, never passes skipped. (Package fuzz checks its
// own targets' corpus the same way.)
func TestCorpusFilesReplay(t *testing.T) {
	files, err := corpusfile.Files()
	if err != nil {
		t.Fatalf("%v (repro: go test ./fuzz/machine -run TestCorpusFilesReplay)", err)
	}
	for _, cf := range files {
		f, v := cf.Path, cf.Value
		b, ok := v.([]byte)
		if !ok {
			t.Fatalf("%s holds a %T, want the []byte both machine targets take (repro: go test ./fuzz/machine -run TestCorpusFilesReplay)", f, v)
		}
		switch cf.Target {
		case "FuzzBackendStateMachine":
			ran := false
			t.Run(filepath.Base(f), func(t *testing.T) {
				rapid.MakeFuzz(backendProperty)(t, b)
				ran = true
			})
			if !ran {
				t.Fatalf("%s is not a valid state machine input: rapid skipped it (repro: go test ./fuzz/machine -run TestCorpusFilesReplay)", f)
			}
		case "FuzzMachine":
			// The byte-level state machine (target in fuzz/targets):
			// its seeds must replay without an error.
			if err := machine.RunBytes(b, machine.Options{}); err != nil {
				t.Fatalf("%s no longer replays: %v (repro: go test ./fuzz/machine -run TestCorpusFilesReplay)", f, err)
			}
		default:
			t.Fatalf("testdata/fuzz/%s: no fuzz target of that name (repro: go test ./fuzz/machine -run TestCorpusFilesReplay)", cf.Target)
		}
	}
}
