package machine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/corpusfile"
	"github.com/storesim/storesim/fuzz/machine"
)

// bytesMachineSeeds make the committed seed corpus of the byte-driven state
// machine (fuzz/targets.Machine): machine.Generate's inputs, 200 actions
// each, under testdata/fuzz/FuzzMachine/ (no target of this package
// has that name; fuzz/fuzztool zips the directory for the fuzzing
// builders).
var bytesMachineSeeds = []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}

func bytesMachineCorpus(t *testing.T) []corpusfile.Entry {
	t.Helper()
	var out []corpusfile.Entry
	for _, seed := range bytesMachineSeeds {
		in, err := machine.Generate(seed, 200, machine.Options{})
		if err != nil {
			t.Fatalf("machine.Generate(%d): the generated run fails: %v (repro: go test ./fuzz/machine -run TestBytesMachine)", seed, err)
		}
		out = append(out, corpusfile.Entry{Target: "FuzzMachine", Name: fmt.Sprintf("seed-%02d", seed), Value: in})
	}
	return out
}

// TestBytesMachine: the byte-driven state machine (machine.Bytes, what
// fuzz/targets.Machine runs) on its committed seed corpus. The committed
// files are the generated ones (-writecorpus rewrites them); each replays
// exactly the run Generate made (the two byte formats agree: the same
// counts); together they are not vacuous; and a driver with a planted bug
// fails through the same bytes, naming its rule.
func TestBytesMachine(t *testing.T) {
	const repro = "(repro: go test ./fuzz/machine -run TestBytesMachine)"
	entries := bytesMachineCorpus(t)
	var total machine.Stats
	for i, e := range entries {
		if err := e.Sync(*writeCorpus); err != nil {
			t.Fatalf("%v: regenerate with go test ./fuzz/machine -run TestBytesMachine -writecorpus %s", err, repro)
		}
		var gen, replay machine.Stats
		machine.Generate(bytesMachineSeeds[i], 200, machine.Options{Stats: &gen})
		if err := machine.RunBytes(e.Value.([]byte), machine.Options{Stats: &replay}); err != nil {
			t.Fatalf("%s fails on the reference drivers:\n%v\n%s", e.Path(), err, repro)
		}
		if gen != replay {
			t.Fatalf("%s replays another run than Generate made:\ngenerated %+v\nreplayed  %+v\n%s", e.Path(), gen, replay, repro)
		}
		total.Admitted += replay.Admitted
		total.Delivered += replay.Delivered
		total.Failed += replay.Failed
		total.Cancelled += replay.Cancelled
		total.Served += replay.Served
		total.Reordered += replay.Reordered
		total.Faults += replay.Faults
		total.MidShutdowns += replay.MidShutdowns
	}
	if total.Admitted < 100 || total.Delivered == 0 || total.Failed == 0 || total.Cancelled == 0 || total.Served == 0 || total.Reordered == 0 || total.Faults == 0 || total.MidShutdowns == 0 {
		t.Fatalf("the byte-driven corpus is too thin: %+v %s", total, repro)
	}
	t.Logf("byte-driven corpus: %+v", total)

	planted := []struct {
		name  string
		wrap  func(drivers.Driver) drivers.Driver
		rules []string
	}{
		{"silent", func(d drivers.Driver) drivers.Driver { return silent{d} }, []string{"D-CB-2"}},
		{"ends-early", func(d drivers.Driver) drivers.Driver { return endsEarly{d} }, []string{"D-ACCESS-END", "S-NO-LATE-ACCESS"}},
	}
	for _, p := range planted {
		t.Run(p.name, func(t *testing.T) {
			var msgs []string
			for _, e := range entries {
				if err := machine.RunBytes(e.Value.([]byte), machine.Options{Wrap: p.wrap}); err != nil {
					msgs = append(msgs, err.Error())
				}
			}
			for _, m := range msgs {
				for _, r := range p.rules {
					if strings.Contains(m, r) {
						return
					}
				}
			}
			t.Fatalf("the byte-driven machine on its corpus did not catch the planted %s bug (%d failures, none naming %v):\n%s\n(repro: go test ./fuzz/machine -run 'TestBytesMachine/%s')", p.name, len(msgs), p.rules, strings.Join(msgs, "\n"), p.name)
		})
	}
}
