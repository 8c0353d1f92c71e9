// Package zoo is the bug zoo's test driver: the table of planted backend
// bugs (each behind its own build tag zoo_<name>, see backend/zoo.go), the
// rules the swarm is expected to name for each, and the swarm hunt that looks
// for the first failing seed.
//
// # How a bug is hunted
//
// A planted bug exists only in a binary built with -tags zoo_<name>; such a
// build reports it through backend.ZooBug. Inside that build, [HuntSwarm]
// runs harness seeds in order from a start seed, as `storesim run` does, and
// stops at the first seed whose verdict is not a pass. TestSwarmFinds does
// that for the bug compiled in; TestZooCaught (untagged) builds and runs
// TestSwarmFinds once per bug with `go test -tags zoo_<name>`.
//
// Wall-clock measurements (time to detect, the naive stress test) live in
// broken/zoo/realhunt and broken/zoo/realstress, because code
// under backend/ may not read the clock or start goroutines.
//
// # Escapes
//
// Some bugs are planted although the swarm cannot see them: the table says
// why ([Bug.Blind]), so docs/ZOO.md lists the checks that are missing rather
// than hiding the bug. They are hunted and reported like the others.
package zoo

import (
	"slices"

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
)

// Bug is one planted bug.
type Bug struct {
	// Name is the tag suffix: build with -tags zoo_<Name>.
	Name string
	// Breaks is the SPEC rule of the backend the bug breaks.
	Breaks rules.ID
	// What the planted code does wrong.
	What string
	// Trips lists the rules the swarm may name as a failing seed's first
	// rule: the rule it should trip first, then the accepted consequences
	// (a corrupted slot may surface first as S-LIN). "liveness" is the
	// harness's hang rule; a backend panic is the harness's B-SUBMIT.
	// Empty for an escape.
	Trips []rules.ID
	// Blind says, for an escape, which check the swarm lacks.
	Blind string
}

// Caught reports whether the swarm is expected to catch the bug.
func (b Bug) Caught() bool { return len(b.Trips) > 0 }

// Accepts reports whether rule is one the bug may trip.
func (b Bug) Accepts(rule rules.ID) bool { return slices.Contains(b.Trips, rule) }

// Bugs is the zoo, caught bugs first. Each name has a backend/zoo_<name>.go
// file (TestTable).
var Bugs = []Bug{
	{Name: "ended_at_results", Breaks: rules.BAccess, What: "a batch whose results are folded counts as ENDED before its call has access evidence",
		Trips: []rules.ID{rules.SNoLateAccess, rules.SRelease, rules.SLin}},
	{Name: "unprovable_as_ended", Breaks: rules.BAccess, What: "an UNPROVABLE call counts as ENDED, so its retained slots are released for reuse",
		Trips: []rules.ID{rules.SNoLateAccess, rules.SRelease, rules.SLin}},
	{Name: "any_call_ended", Breaks: rules.BAccess, What: "an attempt is ENDED as soon as one of its calls is",
		Trips: []rules.ID{rules.SNoLateAccess, rules.SRelease, rules.SLin}},
	{Name: "outcome_is_end", Breaks: rules.BAccess, What: "a committed outcome is taken as proof that access ended",
		Trips: []rules.ID{rules.SNoLateAccess, rules.SRelease, rules.SLin}},
	{Name: "cancel_proves_end", Breaks: rules.BCancel, What: "a forwarded cancel is taken as proof that the call's access ended (D-CAN-2)",
		Trips: []rules.ID{rules.SNoLateAccess, rules.SRelease, rules.SLin}},
	{Name: "fold_stops_listening", Breaks: rules.BAccess, What: "a call is no longer observed once its results are folded, so later access evidence is lost",
		Trips: []rules.ID{rules.LiveHang}},
	{Name: "dropped_still_queued", Breaks: rules.BCancel, What: "dropped batches are marked dropped but left in the dispatch queue, so they still run",
		Trips: []rules.ID{rules.BSubmit, rules.SRelease, rules.SNoLateAccess, rules.SLin}},
	{Name: "cancel_no_settle", Breaks: rules.BCancel, What: "cancel commits Cancelled but does not re-derive access: a cancelled queued attempt stays PENDING",
		Trips: []rules.ID{rules.SHold, rules.LiveHang}},
	{Name: "late_success", Breaks: rules.BOutcome, What: "a late success overrides a committed cancel",
		Trips: []rules.ID{rules.SMarks, rules.SRelease}},
	{Name: "cancel_overrides", Breaks: rules.BOutcome, What: "a cancel overrides a committed delivery",
		Trips: []rules.ID{rules.SMarks, rules.SRelease}},
	{Name: "marks_shift", Breaks: rules.SMarks, What: "served marks are set one view position too far",
		Trips: []rules.ID{rules.SMarks}},
	{Name: "marks_batch_index", Breaks: rules.SMarks, What: "served marks use the row's index in its batch, not its view position",
		Trips: []rules.ID{rules.SMarks}},
	{Name: "mask_ignored", Breaks: rules.BSubmit, What: "masked-out rows are sent to the store too",
		Trips: []rules.ID{rules.SMarks}},
	{Name: "hold_early", Breaks: rules.SHold, What: "shutdown answers at once with no labels when no attempt lacks an outcome, although access is still pending",
		Trips: []rules.ID{rules.SHold, rules.SNoLateAccess, rules.LiveHang}},
	{Name: "timeout_no_labels", Breaks: rules.SHold, What: "a drain that timed out reports a clean shutdown (no labels)",
		Trips: []rules.ID{rules.SHold, rules.SNoLateAccess}},
	{Name: "no_drain_deadline", Breaks: rules.BShut, What: "the drain deadline never fires, so a call that never ends hangs shutdown",
		Trips: []rules.ID{rules.LiveHang, rules.BShut}},

	{Name: "nocut_key", Breaks: rules.BCut, What: "no cut at a repeated key, so one batch names a key twice",
		Trips: []rules.ID{rules.BCut}},
	{Name: "nocut_max", Breaks: rules.BCut, What: "no cut at MaxRowsPerOp",
		Trips: []rules.ID{rules.BCut}},
	{Name: "lookup_outage_as_miss", Breaks: rules.BFetch, What: "a look-up outage is read as \"every key absent\"",
		Blind: "no check compares an attempt's served rows with what the store held: a fetch reported all-miss, or a publish that re-puts, breaks no store-level rule"},
	{Name: "fault_as_miss", Breaks: rules.BFetch, What: "a FAULT row is folded as a miss, so the attempt is Delivered partially",
		Trips: []rules.ID{rules.BFetch, rules.BPublish}},
	{Name: "raced_declined_swapped", Breaks: rules.BPublish, What: "after a declined publish, present and absent are swapped (raced vs declined)",
		Blind: "a publish's served set is never checked against the store"},
	{Name: "publish_rewrites_present", Breaks: rules.BPublish, What: "keys found present are published again instead of served",
		Blind: "a conforming store keeps the first object (D-SUB-4), so the extra put changes nothing observable; only the wasted calls show"},
	{Name: "cancel_not_forwarded", Breaks: rules.BCancel, What: "cancel is never forwarded to in-flight calls",
		Blind: "calls then run to completion, which a cancel may legally lose to; nothing checks that a cancel reached the driver"},
	{Name: "gauge_not_decremented", Breaks: rules.BBound, What: "the unprovable gauge is not decremented when proof arrives",
		Blind: "admission is then refused (ErrTooManyUnprovable) and the harness counts refused ops as skipped, never as failures; no progress check"},
	{Name: "inflight_leak_unprovable", Breaks: rules.BBound, What: "an UNPROVABLE call keeps its in-flight slot",
		Blind: "queued batches stall until the final shutdown cancels them, which is a legal outcome; no check for progress before shutdown"},
	{Name: "slot_leak_refused", Breaks: rules.BBound, What: "a refused submit never gives its in-flight slot back",
		Blind: "as inflight_leak_unprovable: the stall ends at shutdown as legal cancels"},
	{Name: "indoubt_ignored", Breaks: rules.SHold, What: "an in-doubt registration is treated as refused, so its regions are never reported",
		Blind: "the driver's own shutdown labels name the in-doubt regions, which hides the backend's omission; the lender does not compare labels with regions still registered"},
	{Name: "bindings_dropped", Breaks: rules.BShut, What: "earlier bindings are forgotten when a later registration fails",
		Blind: "the driver's shutdown releases the forgotten bindings (D-SHUT-1), so nothing is left registered"},
	{Name: "submit_error_no_escape", Breaks: rules.DSub2, What: "a Submit error that is not a sentinel is taken as \"nothing escaped\"",
		Blind: "the simulated driver's injected Submit error never actually lets a transfer escape, so the slot released early is never touched"},
	{Name: "drain_no_wait", Breaks: rules.DDrain1, What: "shutdown does not wait for the driver to drain",
		Blind: "the driver's Shutdown marks the calls it stopped waiting for UNPROVABLE and labels them, so the shortcut stays safe"},
}

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
	Rule    rules.ID
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
