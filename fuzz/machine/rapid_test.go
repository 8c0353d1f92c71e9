package machine_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/machine"
)

// machineRepro is how a failure of the state machine replays: rapid names
// the fail file it wrote (testdata/rapid/…), and go test -fuzz the corpus
// entry (testdata/fuzz/FuzzBackendStateMachine/…).
const machineRepro = "(repro: go test ./fuzz/machine -run '^TestBackendStateMachine$' -rapid.failfile=FILE with the fail file rapid names below, " +
	"or go test ./fuzz/machine -run 'FuzzBackendStateMachine/ENTRY' with the corpus entry go test -fuzz wrote)"

// TestBackendStateMachine: rapid draws operations, faults and the schedule
// of this package's state machine (two endpoints on one store)
// and checks every invariant after each action and every check of SPEC §5
// at the end. Fail files under testdata/rapid/TestBackendStateMachine/
// replay first.
func TestBackendStateMachine(t *testing.T) {
	var st machine.Stats
	rapid.Check(t, property(machine.Options{Stats: &st}))
	if t.Failed() {
		return
	}
	t.Logf("state machine: %+v", st)
	// Not vacuous: over the default 100 checks the machine admits, delivers,
	// fails and cancels attempts, reorders deliveries, changes faults and
	// shuts endpoints down mid-run.
	if testing.Short() {
		// rapid runs 20 checks under -short, from a seed of its own: too few
		// for every rare event each time, so only admissions are counted.
		if st.Admitted < 20 {
			t.Fatalf("state machine too thin: %+v (repro: go test -short ./fuzz/machine -run '^TestBackendStateMachine$')", st)
		}
		return
	}
	if st.Admitted < 100 || st.Delivered == 0 || st.Failed == 0 || st.Cancelled == 0 || st.Reordered == 0 || st.Faults == 0 || st.MidShutdowns == 0 || st.Served == 0 {
		t.Fatalf("state machine too thin: %+v (repro: go test ./fuzz/machine -run '^TestBackendStateMachine$')", st)
	}
}

// FuzzBackendStateMachine is the same property driven by go test -fuzz
// bytes (rapid.MakeFuzz). An input that runs out of bytes is invalid
// (skipped), never a failure. Fuzzing builders outside go test cannot use
// rapid (it needs the standard *testing.T): fuzz/targets.Machine drives the
// same machine from raw bytes (machine.Bytes).
func FuzzBackendStateMachine(f *testing.F) {
	engine.TuneFuzzWorker()
	f.Fuzz(rapid.MakeFuzz(backendProperty))
}

// backendProperty is the one property body behind both entry points.
func backendProperty(t *rapid.T) { property(machine.Options{})(t) }

// property is the machine run by rapid.
func property(opts machine.Options) func(*rapid.T) {
	p := machine.Property(opts)
	return func(t *rapid.T) { p(rapidT{t}) }
}

// rapidT is machine.T over rapid: each draw is the rapid generator of the
// same name and label, so rapid shrinks every draw of the machine.
type rapidT struct{ t *rapid.T }

func (r rapidT) Uint64(label string) uint64 { return rapid.Uint64().Draw(r.t, label) }
func (r rapidT) Bool(label string) bool     { return rapid.Bool().Draw(r.t, label) }
func (r rapidT) IntRange(min, max int, label string) int {
	return rapid.IntRange(min, max).Draw(r.t, label)
}

// Index draws like rapid.SampledFrom over n items (the draw depends only
// on n), so the bits are those SampledFrom of the items would take.
func (r rapidT) Index(n int, label string) int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return rapid.SampledFrom(idx).Draw(r.t, label)
}

func (r rapidT) Distinct(from []string, max int, label string) []string {
	return rapid.SliceOfNDistinct(rapid.SampledFrom(from), 0, max, rapid.ID[string]).Draw(r.t, label)
}

func (r rapidT) Fatalf(format string, args ...any) {
	r.t.Fatalf(format+" "+machineRepro, args...)
}

func (r rapidT) Skip(reason string) { r.t.Skip(reason) }

// Repeat is rapid's, with the actions rapid.StateMachineActions would list
// for the machine (its one action, Act, and Check).
func (r rapidT) Repeat(act, check func(machine.T)) {
	r.t.Repeat(map[string]func(*rapid.T){
		"Act": func(t *rapid.T) { act(rapidT{t}) },
		"":    func(t *rapid.T) { check(rapidT{t}) },
	})
}
