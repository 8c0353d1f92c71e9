// Package diff is the differential run: one op log played against two
// drivers, row by row, and their answers compared by what the contract
// fixes (SPEC §5, "Differential runs"; `storesim diff`).
//
// # How a log is played
//
// Each side (a driver and the store behind it) plays the log's publishes
// and fetches in log order, one driver call at a time, straight through the
// contract monitor — no backend, so a PUBLISH of a key already held really
// reaches the driver (D-SUB-4) instead of being served by a lookup. An op's
// masked-in rows are cut into batches as the backend cuts them (at
// MaxRowsPerOp, or a repeated key); before each FETCH batch its keys are
// looked up. Every row gets a fresh slot that is never reused, so no answer
// depends on memory given back. Each call is awaited: on the simulator until
// nothing is runnable, in real time until every row is final and access is
// evidenced, bounded by Side.Wait. Cancels, quiesces, probes and bad views
// are the backend's business and are not played; an endpoint's shutdown
// closes it for the ops after it. After the last op every key the log names
// is looked up and fetched once more through the first endpoint (the final
// store content), then every driver is shut down and each side is judged by
// the engine's checks (engine.Check: the monitor, the memory oracle,
// liveness, S-LIN over the sequential history).
//
// # What counts as a divergence
//
// Played one call at a time, the store model of SPEC §5.1 fixes what each
// answer may be given the side's own earlier answers (knowledge, judge.go):
// an OK FETCH holds the object of the first publish that stored the key; a
// FETCH MISS or a lookup "absent" of a held key is allowed only on an
// evicting store; a lookup "present" needs a publish that may have stored
// the key. FAULT, NOT_ATTEMPTED, a declined PUBLISH, a refused Submit and a
// lookup error are always allowed (freedoms, counted), and a FAULT publish
// may take effect later. A divergence is an answer of either side that no
// conforming driver could give: it names the row, both sides' answers, the
// side at fault, the rule it breaks and why.
//
// Determinism: the simulated side runs on the scheduler from the log's seed
// and replays bit for bit; a real-time side (realwait.go, the one file with
// goroutines and wall-clock waits) replays the workload.
package diff

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/workload"
)

// Side is one of the two drivers a diff compares.
type Side struct {
	// Name names the side in reports and repro commands: "memory",
	// "redis://127.0.0.1:6379".
	Name string
	// New builds the driver of one endpoint of the log (name is the
	// side's Name; env.RT the side's runtime, env.Store the simulated store
	// or nil in real time, env.Caps the endpoint's capabilities). Nil: the
	// registry (simulated drivers by name).
	New engine.Factory
	// RealTime: the driver runs its own goroutines against a real store;
	// the side runs on sim/realtime and waits in wall time.
	RealTime bool
	// Evicting: the store may drop keys at any time (memcached, a Redis
	// with a maxmemory policy). A simulated side evicts when the log's
	// store is "evicting".
	Evicting bool
	// Wait bounds, in real time, each call's wait for its final answer and
	// each lookup and shutdown (0: 10 s). A call still unanswered is
	// recorded as no answer (treated as FAULT).
	Wait time.Duration
	// Cleanup, when set, runs once after the side was judged (remove the
	// run's keys); its error is the Result's Err.
	Cleanup func() error
	_       struct{}
}

// Config shapes a diff run.
type Config struct {
	// Repro is the command that replays this run (it ends every report).
	Repro string
	// LinTimeout bounds each side's S-LIN check (0: 10 s).
	LinTimeout time.Duration
	_          struct{}
}

// Result is what a diff run found.
type Result struct {
	Seed uint64
	Log  *workload.Log
	// Sides are both sides' results, in the order given.
	Sides [2]SideResult
	// Divergences are the answers the contract forbids, in play order (at
	// most maxDivergences are kept; Diverged counts them all).
	Divergences []Divergence
	Diverged    int
	// Rows is how many row answers (lookups, publishes, fetches, the final
	// content) each side gave; Differ how many of them differed between the
	// sides while both were allowed.
	Rows, Differ int
	Repro        string
	// Err is a harness error: a side could not be built or cleaned up.
	Err error
}

// SideResult is one side's part of a Result.
type SideResult struct {
	Name string
	// Violations are the side's own findings (engine.Check), sorted.
	Violations []rules.Violation
	Verdict    engine.Verdict
	// Freedoms counts, per freedom of the contract, the rows that used it.
	Freedoms map[string]int
	// Played counts the driver calls and lookups made.
	Calls, Lookups int
}

// Divergence is one answer the contract forbids.
type Divergence struct {
	// Op is the op's index in the log; len(Log.Ops) for the final content.
	Op int
	// Row is the row's position in the op's view (the key's index among
	// the log's keys for the final content).
	Row      int
	Key      string
	Endpoint string
	// What is "publish", "fetch", "lookup", "final lookup" or "final
	// fetch".
	What string
	// Answers are both sides' answers to the row, in side order.
	Answers [2]string
	// Side is the index of the side whose answer is forbidden.
	Side int
	Rule rules.ID
	Why  string
}

// maxDivergences bounds the divergences a Result keeps.
const maxDivergences = 64

// ErrSide is wrapped by the Err of a side that could not be built.
var ErrSide = errors.New("diff: side")

// Verdict classes the result as a run's: a divergence or a side's safety
// or contract violation is Safety; then a side's harness error, liveness
// failure or unknown, in the CLI's order (1, 3, 4, 5).
func (r *Result) Verdict() engine.Verdict {
	if r.Diverged > 0 {
		return engine.Safety
	}
	var vs []engine.Verdict
	for _, s := range r.Sides {
		vs = append(vs, s.Verdict)
	}
	if r.Err != nil {
		vs = append(vs, engine.HarnessError)
	}
	for _, v := range []engine.Verdict{engine.Safety, engine.Liveness, engine.HarnessError, engine.Unknown} {
		if slices.Contains(vs, v) {
			return v
		}
	}
	return engine.Pass
}

// First is the first divergence, or nil.
func (r *Result) First() *Divergence {
	if len(r.Divergences) == 0 {
		return nil
	}
	return &r.Divergences[0]
}

// Report is the text report: the first divergence (or each side's first
// violation), and the repro command last.
func (r *Result) Report() string {
	var b strings.Builder
	if d := r.First(); d != nil {
		fmt.Fprintf(&b, "seed %d: %s diverges from %s at op %d (%s %s) row %d key %s: %s\n",
			r.Seed, r.Sides[d.Side].Name, r.Sides[1-d.Side].Name, d.Op, d.What, d.Endpoint, d.Row, d.Key, d.Rule)
		w := max(len(r.Sides[0].Name), len(r.Sides[1].Name))
		for i, a := range d.Answers {
			fmt.Fprintf(&b, "  %-*s  %s\n", w, r.Sides[i].Name, a)
		}
		fmt.Fprintf(&b, "  %s breaks %s: %s\n", r.Sides[d.Side].Name, d.Rule, d.Why)
		if r.Diverged > 1 {
			fmt.Fprintf(&b, "  (%d divergences in all; the first is the one to look at)\n", r.Diverged)
		}
	}
	for _, s := range r.Sides {
		if len(s.Violations) == 0 {
			continue
		}
		fmt.Fprintf(&b, "seed %d: %s: %s (%d violations; first: %s)\n", r.Seed, s.Name, s.Verdict, len(s.Violations), s.Violations[0])
	}
	if r.Err != nil {
		fmt.Fprintf(&b, "seed %d: harness error: %v\n", r.Seed, r.Err)
	}
	fmt.Fprintf(&b, "repro: %s\n", r.Repro)
	return b.String()
}

// Summary is one line: what was compared and which freedoms each side used.
func (r *Result) Summary() string {
	parts := []string{fmt.Sprintf("%d rows compared, %d differ within the contract's freedoms", r.Rows, r.Differ)}
	for _, s := range r.Sides {
		var fs []string
		for _, k := range sortedKeys(s.Freedoms) {
			fs = append(fs, fmt.Sprintf("%d %s", s.Freedoms[k], k))
		}
		if len(fs) > 0 {
			parts = append(parts, s.Name+": "+strings.Join(fs, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
