package machine_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/storesim/storesim/sim"
)

var writeCorpus = flag.Bool("writecorpus", false, "rewrite the generated seed corpus files under testdata/fuzz (read the diff)")

// corpusEntry is one committed seed corpus file.
type corpusEntry struct {
	target, name string
	value        []byte
}

func (e corpusEntry) path() string { return filepath.Join("testdata", "fuzz", e.target, e.name) }

// body is the file in go's corpus format.
func (e corpusEntry) body() string { return fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", e.value) }

// machineCorpusSeeds make the state machine inputs of the committed seed
// corpus: random 4 KB inputs; these streams happen to end the repetition
// before the bytes run out (TestSeedCorpus checks it).
var machineCorpusSeeds = []uint64{0, 1, 2, 4}

func machineCorpus() []corpusEntry {
	var out []corpusEntry
	for i, seed := range machineCorpusSeeds {
		r := sim.NewRand(sim.SubSeed(seed, "fuzz/machine-corpus"))
		in := make([]byte, 4096)
		for j := range in {
			in[j] = byte(r.Uint64())
		}
		out = append(out, corpusEntry{"FuzzBackendStateMachine", fmt.Sprintf("seed-%02d", i), in})
	}
	return out
}

// TestSeedCorpus: the committed FuzzBackendStateMachine corpus files are
// the generated ones (run with -writecorpus to regenerate them, then read
// the diff), and valid rapid inputs (they do not run out of draws).
func TestSeedCorpus(t *testing.T) {
	for _, e := range machineCorpus() {
		if *writeCorpus {
			if err := os.MkdirAll(filepath.Dir(e.path()), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(e.path(), []byte(e.body()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(e.path())
		if err != nil || string(got) != e.body() {
			t.Fatalf("corpus file %s is missing or stale (%v): regenerate with go test ./fuzz/machine -run TestSeedCorpus -writecorpus (repro: go test ./fuzz/machine -run TestSeedCorpus)", e.path(), err)
		}
		ran := false
		t.Run(e.name, func(t *testing.T) {
			rapid.MakeFuzz(backendProperty)(t, e.value)
			ran = true // not reached when rapid skipped the input as invalid
		})
		if !ran {
			t.Fatalf("%s is not a valid state machine input: rapid skipped it (repro: go test ./fuzz/machine -run TestSeedCorpus)", e.path())
		}
	}
	if *writeCorpus {
		t.Log("rewrote the seed corpus under testdata/fuzz: read the diff before committing")
	}
}

// readCorpusFile reads one []byte value of go's corpus format ("go test
// fuzz v1", then []byte("…")), the one argument both machine targets take.
func readCorpusFile(path string) ([]byte, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.SplitN(strings.TrimRight(string(text), "\n"), "\n", 2)
	if len(lines) != 2 || lines[0] != "go test fuzz v1" {
		return nil, errBadCorpus
	}
	inner, ok := strings.CutPrefix(strings.TrimSpace(lines[1]), "[]byte(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return nil, errBadCorpus
	}
	s, err := strconv.Unquote(strings.TrimSuffix(inner, ")"))
	return []byte(s), err
}

var errBadCorpus = errors.New(`not a one-value corpus file (go test fuzz v1, then []byte("…"))`)
