package fuzz

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/storesim/storesim/fuzz/corpusfile"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/sim"
)

var writeCorpus = flag.Bool("writecorpus", false, "rewrite the generated seed corpus files under testdata/fuzz (read the diff)")

// FuzzOpLog: any bytes decode to an op log (Decode) that the reference
// drivers must pass: every check of SPEC §5 via engine.Run. An input with
// nothing runnable is skipped as invalid, never a failure.
func FuzzOpLog(f *testing.F) {
	engine.TuneFuzzGC() // a fuzz worker's GC target (FuzzGCPercent)
	engine.TuneFuzzWorker()
	for _, seed := range opLogSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		engine.GrowStack() // each input runs on a new goroutine
		log, ok := Decode(data)
		if !ok {
			t.Skip("decodes to nothing runnable (invalid input)")
		}
		res := engine.Run(log, engine.Config{Lean: true}) // a failing input is played again in full for its report
		if res.Verdict != engine.Pass {
			t.Fatal(opLogFailure(res))
		}
		countExec(len(log.Ops))
	})
}

// countExec: with STORESIM_FUZZ_STATS=DIR, each fuzz worker process keeps
// DIR/<pid> up to date with "runs ops" (runnable inputs and their ops), so
// make bench can say how long the inputs behind its execs/s figure were.
var fuzzStats struct{ runs, ops int }

func countExec(ops int) {
	dir := os.Getenv("STORESIM_FUZZ_STATS")
	if dir == "" {
		return
	}
	fuzzStats.runs++
	fuzzStats.ops += ops
	if fuzzStats.runs%64 == 1 {
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprint(os.Getpid())), fmt.Appendf(nil, "%d %d\n", fuzzStats.runs, fuzzStats.ops), 0o644)
	}
}

// opLogFailure is the report of a failing decoded log. The harness's own
// repro line names a generated seed, which does not apply to a decoded log:
// the log itself and the corpus entry are the repro.
func opLogFailure(res *engine.Result) string {
	var b strings.Builder
	res.WriteReport(&b)
	fmt.Fprintf(&b, "(that repro line is for generated seeds; this log was decoded from fuzz bytes)\nop log:\n%s", res.Log)
	b.WriteString("repro: save the op log above to FILE and run `go run ./cmd/storesim replay FILE`, " +
		"or go test ./fuzz -run 'FuzzOpLog/<entry>' with the corpus entry go test -fuzz wrote under fuzz/testdata/fuzz/FuzzOpLog/")
	return b.String()
}

// FuzzParseOpLog: workload.Parse never panics on any text, and whatever it
// accepts prints (Log.String) and parses back to the same log.
func FuzzParseOpLog(f *testing.F) {
	engine.TuneFuzzWorker()
	for _, seed := range parseSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		l, err := workload.Parse(text)
		if err != nil {
			return // refusing is fine; panicking is not (the fuzzer reports panics)
		}
		printed := l.String()
		back, err := workload.Parse(printed)
		if err != nil {
			t.Fatalf("a parsed log prints to text Parse refuses: %v\ninput:\n%q\nprinted:\n%s(repro: go test ./fuzz -run 'FuzzParseOpLog/<entry>' with the corpus entry go test -fuzz wrote)", err, text, printed)
		}
		if !reflect.DeepEqual(l, back) || back.String() != printed {
			t.Fatalf("round trip changed the log\ninput:\n%q\nprinted:\n%s\nreprinted:\n%s(repro: go test ./fuzz -run 'FuzzParseOpLog/<entry>' with the corpus entry go test -fuzz wrote)", text, printed, back.String())
		}
	})
}

// opLogSeeds are FuzzOpLog's in-code seeds: one input per header shape and
// a few long ones (about 100 ops each) from a fixed stream.
func opLogSeeds() [][]byte {
	var out [][]byte
	for i, h0 := range []byte{0x00, 0x01, 0x53, 0xF7, 0x2A, 0x8D} {
		r := sim.NewRand(uint64(i) + 1)
		n := 40 + 200*(i%2)
		in := []byte{h0, byte(r.Uint64()), byte(r.Uint64()), byte(r.Uint64()), byte(r.Uint64()), byte(r.Uint64()), byte(r.Uint64())}
		for range n {
			in = append(in, byte(r.Uint64()))
		}
		out = append(out, in)
	}
	return out
}

// parseSeeds are FuzzParseOpLog's in-code seeds: generated logs of every
// shape, the format's doc example and a few near-misses.
func parseSeeds() []string {
	var out []string
	for seed := range uint64(4) {
		l := engine.Plan(seed, engine.Config{Ops: 6})
		out = append(out, l.String())
	}
	out = append(out,
		workload.Header+"\nseed 42\nstore durable\nendpoint A driver=memory rows=4 absent-is-miss=true inflight=4 queued=16 unprovable=8 regions=r0:8x64,r1:8x64\n"+
			"fault A row-fault rate=0.05\nop at=0us publish A keys=k1,k2 mask=11\nop at=3us fetch A keys=k1,k3 mask=10\nop at=5us cancel 0\nop at=90us shutdown A\nend\n",
		workload.Header+"\nendpoint A regions=r0:4x16\n# a comment\n\nop at=1us fetch A keys=k,k mask=01\nend\n",
		workload.HeaderV1+"\nendpoint A regions=r0:4x16\nop at=1us fetch A keys=k mask=1\n",
		"",
	)
	return out
}

// corpus is every generated seed corpus file: FuzzOpLog inputs of about 100
// ops with every header shape (the throughput goal is stated for 100-op
// inputs) and generated op logs for FuzzParseOpLog. (fuzz/machine generates
// the state machines' corpus.)
func corpus() []corpusfile.Entry {
	var out []corpusfile.Entry
	for i, in := range corpusInputs() {
		out = append(out, corpusfile.Entry{Target: "FuzzOpLog", Name: fmt.Sprintf("seed-%02d", i), Value: in})
	}
	for i, text := range parseSeeds() {
		out = append(out, corpusfile.Entry{Target: "FuzzParseOpLog", Name: fmt.Sprintf("seed-%02d", i), Value: text})
	}
	return out
}

// TestSeedCorpus: the committed corpus files are the generated ones (run
// with -writecorpus to regenerate them, then read the diff) and FuzzOpLog's
// decode to runnable logs of about 100 ops.
func TestSeedCorpus(t *testing.T) {
	for _, e := range corpus() {
		if err := e.Sync(*writeCorpus); err != nil {
			t.Fatalf("%v: regenerate with go test ./fuzz -run TestSeedCorpus -writecorpus (repro: go test ./fuzz -run TestSeedCorpus)", err)
		}
		if e.Target == "FuzzOpLog" {
			l, ok := Decode(e.Value.([]byte))
			if !ok || len(l.Ops) < 90 {
				t.Fatalf("%s decodes to %d ops, runnable=%t; want a runnable log of about 100 ops (repro: go test ./fuzz -run TestSeedCorpus)", e.Path(), len(l.Ops), ok)
			}
		}
	}
	if *writeCorpus {
		t.Log("rewrote the seed corpus under testdata/fuzz: read the diff before committing")
	}
}

// corpusInputs are the committed FuzzOpLog seeds: about 100 ops each, with
// every header shape (one or two endpoints, durable or evicting, every fault
// selection, both drivers).
func corpusInputs() [][]byte {
	var out [][]byte
	for i := range 8 {
		r := sim.NewRand(sim.SubSeed(uint64(i), "fuzz/corpus"))
		h0 := byte(i&3)<<2 | byte(i>>2&1) | byte(i&1)<<1 | 0xE0
		in := []byte{h0, byte(r.Uint64()), byte(r.Uint64()), byte(i), byte(r.Uint64()), byte(^i), byte(r.Uint64())}
		for ops := 0; ops < 100; ops++ {
			b := byte(r.Uint64())
			if b&15 == 15 { // keep mid-run shutdowns out of the seeds
				b ^= 1
			}
			arg := byte(r.Uint64())
			in = append(in, b, arg)
			if b&15 < 12 {
				for range 1 + int(arg&7) {
					in = append(in, byte(r.Uint64()))
				}
			}
		}
		out = append(out, in)
	}
	return out
}
