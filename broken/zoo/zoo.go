// Package zoo is the bug zoo: the table of planted backend bugs, the rules
// the swarm is expected to name for each, the patches that plant them, and
// the swarm hunt that looks for the first failing seed.
//
// # How a bug is planted
//
// The backend under backend/ is the backend that ships: it carries no
// planted bug. Each bug is a small patch against it,
// patches/<name>.patch (`git diff` format, paths from the repository root).
// [Overlay] applies one to throw-away copies of the files it touches and
// writes an overlay file for `go build|test|run -overlay`; a binary built
// with it carries that one bug, and [Planted] names it (the overlay adds a
// file to this package that sets it). `go run ./broken/zoo/realhunt overlay
// <name>` prints such an overlay's path. TestPatches proves in the normal
// suite that every patch still applies, compiles and changes the build.
//
// # How a bug is hunted
//
// Inside a build with a bug planted, [HuntSwarm] runs harness seeds in order
// from a start seed, as `storesim run` does, and stops at the first seed
// whose verdict is not a pass. TestSwarmFinds does that for the bug planted;
// TestZooCaught (without an overlay) builds and runs TestSwarmFinds once per
// bug with `go test -overlay`.
//
// Wall-clock measurements (time to detect, the naive stress test) live in
// broken/zoo/realhunt and broken/zoo/realstress, because the code they
// measure may not read the clock or start goroutines.
//
// # Escapes
//
// Some bugs are planted although the swarm cannot see them: the table says
// why ([Bug.Blind]), so docs/ZOO.md lists the checks that are missing rather
// than hiding the bug. They are hunted and reported like the others.
package zoo

import (
	"slices"

	"github.com/storesim/storesim/fuzz/engine"
)

// Bug is one planted bug.
type Bug struct {
	// Name names the patch: patches/<Name>.patch.
	Name string
	// Breaks is the SPEC rule of the backend the bug breaks.
	Breaks string
	// What the planted code does wrong.
	What string
	// Trips lists the rules the swarm may name as a failing seed's first
	// rule: the rule it should trip first, then the accepted consequences
	// (a corrupted slot may surface first as S-LIN). "liveness" is the
	// harness's hang rule; a backend panic is the harness's B-SUBMIT.
	// Empty for an escape.
	Trips []string
	// Blind says, for an escape, which check the swarm lacks.
	Blind string
}

// Caught reports whether the swarm is expected to catch the bug.
func (b Bug) Caught() bool { return len(b.Trips) > 0 }

// Accepts reports whether rule is one the bug may trip.
func (b Bug) Accepts(rule string) bool { return slices.Contains(b.Trips, rule) }

// Bugs is the zoo, caught bugs first. Each name has a patches/<name>.patch
// file (TestTable).
var Bugs = []Bug{
	{Name: "ended_at_results", Breaks: "B-ACCESS", What: "a batch whose results are folded counts as ENDED before its call has access evidence",
		Trips: []string{"S-NO-LATE-ACCESS", "S-RELEASE", "S-LIN", "B-ACCESS"}},
	{Name: "unprovable_as_ended", Breaks: "B-ACCESS", What: "an UNPROVABLE call counts as ENDED, so its retained slots are released for reuse",
		Trips: []string{"S-NO-LATE-ACCESS", "S-RELEASE", "S-LIN", "B-ACCESS"}},
	{Name: "any_call_ended", Breaks: "B-ACCESS", What: "an attempt is ENDED as soon as one of its calls is",
		Trips: []string{"S-NO-LATE-ACCESS", "S-RELEASE", "S-LIN", "B-ACCESS"}},
	{Name: "outcome_is_end", Breaks: "B-ACCESS", What: "a committed outcome is taken as proof that access ended",
		Trips: []string{"S-NO-LATE-ACCESS", "S-RELEASE", "S-LIN", "B-ACCESS"}},
	{Name: "cancel_proves_end", Breaks: "B-CANCEL", What: "a forwarded cancel is taken as proof that the call's access ended (D-CAN-2)",
		Trips: []string{"S-NO-LATE-ACCESS", "S-RELEASE", "S-LIN", "B-ACCESS", "B-BOUND"}},
	{Name: "fold_stops_listening", Breaks: "B-ACCESS", What: "a call is no longer observed once its results are folded, so later access evidence is lost",
		Trips: []string{"liveness"}},
	{Name: "dropped_still_queued", Breaks: "B-CANCEL", What: "dropped batches are marked dropped but left in the dispatch queue, so they still run",
		Trips: []string{"B-SUBMIT", "S-RELEASE", "S-NO-LATE-ACCESS", "S-LIN", "B-CUT", "B-ACCESS", "B-CANCEL"}},
	{Name: "cancel_no_settle", Breaks: "B-CANCEL", What: "cancel commits Cancelled but does not re-derive access: a cancelled queued attempt stays PENDING",
		Trips: []string{"S-HOLD", "liveness", "B-ACCESS"}},
	{Name: "late_success", Breaks: "B-OUTCOME", What: "a late success overrides a committed cancel",
		Trips: []string{"S-MARKS", "S-RELEASE", "B-OUTCOME", "B-FETCH", "B-PUBLISH"}},
	{Name: "cancel_overrides", Breaks: "B-OUTCOME", What: "a cancel overrides a committed delivery",
		Trips: []string{"S-MARKS", "S-RELEASE", "B-CANCEL", "B-OUTCOME"}},
	{Name: "marks_shift", Breaks: "S-MARKS", What: "served marks are set one view position too far",
		Trips: []string{"S-MARKS", "B-FETCH", "B-PUBLISH"}},
	{Name: "marks_batch_index", Breaks: "S-MARKS", What: "served marks use the row's index in its batch, not its view position",
		Trips: []string{"S-MARKS", "B-FETCH", "B-PUBLISH"}},
	{Name: "mask_ignored", Breaks: "B-SUBMIT", What: "masked-out rows are sent to the store too",
		Trips: []string{"S-MARKS", "B-CUT", "B-ACCESS"}},
	{Name: "hold_early", Breaks: "S-HOLD", What: "shutdown answers at once with no labels when no attempt lacks an outcome, although access is still pending",
		Trips: []string{"S-HOLD", "S-NO-LATE-ACCESS", "liveness", "B-SHUT"}},
	{Name: "timeout_no_labels", Breaks: "S-HOLD", What: "a drain that timed out reports a clean shutdown (no labels)",
		Trips: []string{"S-HOLD", "S-NO-LATE-ACCESS", "B-SHUT"}},
	{Name: "no_drain_deadline", Breaks: "B-SHUT", What: "the drain deadline never fires, so a call that never ends hangs shutdown",
		Trips: []string{"liveness", "B-SHUT"}},

	{Name: "nocut_key", Breaks: "B-CUT", What: "no cut at a repeated key, so one batch names a key twice",
		Trips: []string{"B-CUT", "B-BOUND", "B-ACCESS"}},
	{Name: "nocut_max", Breaks: "B-CUT", What: "no cut at MaxRowsPerOp",
		Trips: []string{"B-CUT", "B-BOUND"}},
	{Name: "lookup_outage_as_miss", Breaks: "B-FETCH", What: "a look-up outage is read as \"every key absent\"",
		Trips: []string{"B-FETCH", "B-CUT", "B-ACCESS", "B-PROGRESS", "B-MODEL"}},
	{Name: "fault_as_miss", Breaks: "B-FETCH", What: "a FAULT row is folded as a miss, so the attempt is Delivered partially",
		Trips: []string{"B-FETCH", "B-PUBLISH", "B-MODEL"}},
	{Name: "raced_declined_swapped", Breaks: "B-PUBLISH", What: "after a declined publish, present and absent are swapped (raced vs declined)",
		Trips: []string{"B-PUBLISH"}},
	{Name: "publish_rewrites_present", Breaks: "B-PUBLISH", What: "keys found present are published again instead of served",
		Trips: []string{"B-CUT", "B-ACCESS"}},
	{Name: "cancel_not_forwarded", Breaks: "B-CANCEL", What: "cancel is never forwarded to in-flight calls",
		Trips: []string{"B-CANCEL"}},
	{Name: "gauge_not_decremented", Breaks: "B-BOUND", What: "the unprovable gauge is not decremented when proof arrives",
		Trips: []string{"B-PROGRESS", "B-BOUND"}},
	{Name: "inflight_leak_unprovable", Breaks: "B-BOUND", What: "an UNPROVABLE call keeps its in-flight slot",
		Trips: []string{"B-PROGRESS", "B-BOUND"}},
	{Name: "slot_leak_refused", Breaks: "B-BOUND", What: "a refused submit never gives its in-flight slot back",
		Trips: []string{"B-PROGRESS", "B-BOUND"}},
	{Name: "indoubt_ignored", Breaks: "S-HOLD", What: "an in-doubt registration is treated as refused, so its regions are never reported",
		Blind: "the reference model requires region:<label>:in-doubt for every in-doubt region (B-SHUT), but the memory drivers label their own in-doubt regions at shutdown, and the union hides the omission: the bug shows only when the driver closed the region itself (about 1 seed in 170)"},
	{Name: "bindings_dropped", Breaks: "B-SHUT", What: "earlier bindings are forgotten when a later registration fails",
		Trips: []string{"B-SHUT"}},
	{Name: "submit_error_no_escape", Breaks: "D-SUB-2", What: "a Submit error that is not a sentinel is taken as \"nothing escaped\"",
		Trips: []string{"B-ACCESS", "B-BOUND"}},
	{Name: "drain_no_wait", Breaks: "D-DRAIN-1", What: "shutdown does not wait for the driver to drain",
		Trips: []string{"B-SHUT"}},
}

// planted is set by the file an [Overlay] adds to this package.
var planted string

// Planted names the bug planted in this build: "" unless it was built with
// an [Overlay].
func Planted() string { return planted }

// Lookup finds a bug by name.
func Lookup(name string) (Bug, bool) {
	for _, b := range Bugs {
		if b.Name == name {
			return b, true
		}
	}
	return Bug{}, false
}

// Hunt is what a swarm hunt found.
type Hunt struct {
	Start uint64 // first seed run
	Tried uint64 // seeds run, including the failing one
	Found bool
	Seed  uint64 // the failing seed, when Found
	// Verdict and Rule of the failing seed (a backend panic is the
	// harness's B-SUBMIT failure).
	Verdict string
	Rule    string
	Detail  string
	Result  *engine.Result
}

// HuntSwarm runs seeds start, start+1, … (at most limit) in the current build
// and stops at the first that does not pass. A porcupine timeout (Unknown)
// or a harness error is not a find; the hunt goes on.
func HuntSwarm(start, limit uint64, cfg engine.Config) Hunt {
	h := Hunt{Start: start}
	for seed := start; seed < start+limit; seed++ {
		h.Tried++
		if res := engine.RunSeed(seed, cfg); res.Verdict == engine.Safety || res.Verdict == engine.Liveness {
			h.Found, h.Seed, h.Verdict, h.Rule, h.Result = true, seed, string(res.Verdict), res.Rule(), res
			h.Detail = res.Failures[0].String()
			return h
		}
	}
	return h
}
