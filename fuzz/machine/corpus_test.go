package machine_test

import (
	"flag"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/storesim/storesim/fuzz/corpusfile"
	"github.com/storesim/storesim/sim"
)

var writeCorpus = flag.Bool("writecorpus", false, "rewrite the generated seed corpus files under testdata/fuzz (read the diff)")

// machineCorpusSeeds make the state machine inputs of the committed seed
// corpus: random 4 KB inputs; these streams happen to end the repetition
// before the bytes run out (TestSeedCorpus checks it).
var machineCorpusSeeds = []uint64{0, 1, 2, 4}

func machineCorpus() []corpusfile.Entry {
	var out []corpusfile.Entry
	for i, seed := range machineCorpusSeeds {
		r := sim.NewRand(sim.SubSeed(seed, "fuzz/machine-corpus"))
		in := make([]byte, 4096)
		for j := range in {
			in[j] = byte(r.Uint64())
		}
		out = append(out, corpusfile.Entry{Target: "FuzzBackendStateMachine", Name: fmt.Sprintf("seed-%02d", i), Value: in})
	}
	return out
}

// TestSeedCorpus: the committed FuzzBackendStateMachine corpus files are
// the generated ones (run with -writecorpus to regenerate them, then read
// the diff), and valid rapid inputs (they do not run out of draws).
func TestSeedCorpus(t *testing.T) {
	for _, e := range machineCorpus() {
		if err := e.Sync(*writeCorpus); err != nil {
			t.Fatalf("%v: regenerate with go test ./fuzz/machine -run TestSeedCorpus -writecorpus (repro: go test ./fuzz/machine -run TestSeedCorpus)", err)
		}
		ran := false
		t.Run(e.Name, func(t *testing.T) {
			rapid.MakeFuzz(backendProperty)(t, e.Value.([]byte))
			ran = true // not reached when rapid skipped the input as invalid
		})
		if !ran {
			t.Fatalf("%s is not a valid state machine input: rapid skipped it (repro: go test ./fuzz/machine -run TestSeedCorpus)", e.Path())
		}
	}
	if *writeCorpus {
		t.Log("rewrote the seed corpus under testdata/fuzz: read the diff before committing")
	}
}
