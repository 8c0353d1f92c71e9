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
// HuntSwarm takes the run's engine.Config, so a hunt may run under PCT
// (engine.Config.Sched); the ordering bugs (Bug.Depth > 0) are hunted with
// both policies by `realhunt pct`, and scripts/pct.sh writes docs/PCT.md.
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

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
)

// Bug is one planted bug.
type Bug struct {
	// Name names the patch: patches/<Name>.patch.
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
	// Depth, for a bug planted to need an interleaving, is its depth in
	// the sense of PCT (sim.PCT): the number of ordering constraints
	// between events the scheduler may order either way that trigger it.
	// 0: not an ordering bug. docs/PCT.md hunts these with both policies.
	Depth int
}

// Caught reports whether the swarm is expected to catch the bug.
func (b Bug) Caught() bool { return len(b.Trips) > 0 }

// Accepts reports whether rule is one the bug may trip.
func (b Bug) Accepts(rule rules.ID) bool { return slices.Contains(b.Trips, rule) }

// Bugs is the zoo, caught bugs first. Each name has a patches/<name>.patch
// file (TestTable).
var Bugs = []Bug{
	{Name: "ended_at_results", Breaks: rules.BAccess, What: "a batch whose results are folded counts as ENDED before its call has access evidence",
		Trips: []rules.ID{rules.SNoLateAccess, rules.SRelease, rules.SLin, rules.BAccess}},
	{Name: "unprovable_as_ended", Breaks: rules.BAccess, What: "an UNPROVABLE call counts as ENDED, so its retained slots are released for reuse",
		Trips: []rules.ID{rules.SNoLateAccess, rules.SRelease, rules.SLin, rules.BAccess}},
	{Name: "any_call_ended", Breaks: rules.BAccess, What: "an attempt is ENDED as soon as one of its calls is",
		Trips: []rules.ID{rules.SNoLateAccess, rules.SRelease, rules.SLin, rules.BAccess}},
	{Name: "outcome_is_end", Breaks: rules.BAccess, What: "a committed outcome is taken as proof that access ended",
		Trips: []rules.ID{rules.SNoLateAccess, rules.SRelease, rules.SLin, rules.BAccess}},
	{Name: "cancel_proves_end", Breaks: rules.BCancel, What: "a forwarded cancel is taken as proof that the call's access ended (D-CAN-2)",
		Trips: []rules.ID{rules.SNoLateAccess, rules.SRelease, rules.SLin, rules.BAccess, rules.BBound}},
	{Name: "fold_stops_listening", Breaks: rules.BAccess, What: "a call is no longer observed once its results are folded, so later access evidence is lost",
		Trips: []rules.ID{rules.LiveHang, rules.BShut}},
	{Name: "dropped_still_queued", Breaks: rules.BCancel, What: "dropped batches are marked dropped but left in the dispatch queue, so they still run",
		Trips: []rules.ID{rules.BSubmit, rules.SRelease, rules.SNoLateAccess, rules.SLin, rules.BCut, rules.BAccess, rules.BCancel, rules.BBound}},
	{Name: "cancel_no_settle", Breaks: rules.BCancel, What: "cancel commits Cancelled but does not re-derive access: a cancelled queued attempt stays PENDING",
		Trips: []rules.ID{rules.SHold, rules.LiveHang, rules.BAccess}},
	{Name: "late_success", Breaks: rules.BOutcome, What: "a late success overrides a committed cancel",
		Trips: []rules.ID{rules.SMarks, rules.SRelease, rules.BOutcome, rules.BFetch, rules.BPublish}},
	{Name: "cancel_overrides", Breaks: rules.BOutcome, What: "a cancel overrides a committed delivery",
		Trips: []rules.ID{rules.SMarks, rules.SRelease, rules.BCancel, rules.BOutcome}},
	{Name: "marks_shift", Breaks: rules.SMarks, What: "served marks are set one view position too far",
		Trips: []rules.ID{rules.SMarks, rules.BFetch, rules.BPublish}},
	{Name: "marks_batch_index", Breaks: rules.SMarks, What: "served marks use the row's index in its batch, not its view position",
		Trips: []rules.ID{rules.SMarks, rules.BFetch, rules.BPublish}},
	{Name: "mask_ignored", Breaks: rules.BSubmit, What: "masked-out rows are sent to the store too",
		Trips: []rules.ID{rules.SMarks, rules.BCut, rules.BAccess}},
	{Name: "hold_early", Breaks: rules.SHold, What: "shutdown answers at once with no labels when no attempt lacks an outcome, although access is still pending",
		Trips: []rules.ID{rules.SHold, rules.SNoLateAccess, rules.LiveHang, rules.BShut}},
	{Name: "timeout_no_labels", Breaks: rules.SHold, What: "a drain that timed out reports a clean shutdown (no labels)",
		Trips: []rules.ID{rules.SHold, rules.SNoLateAccess, rules.BShut}},
	{Name: "no_drain_deadline", Breaks: rules.BShut, What: "the drain deadline never fires, so a call that never ends hangs shutdown",
		Trips: []rules.ID{rules.LiveHang, rules.BShut}},

	{Name: "nocut_key", Breaks: rules.BCut, What: "no cut at a repeated key, so one batch names a key twice",
		Trips: []rules.ID{rules.BCut, rules.BBound, rules.BAccess}},
	{Name: "nocut_max", Breaks: rules.BCut, What: "no cut at MaxRowsPerOp",
		Trips: []rules.ID{rules.BCut, rules.BBound}},
	{Name: "lookup_outage_as_miss", Breaks: rules.BFetch, What: "a look-up outage is read as \"every key absent\"",
		Trips: []rules.ID{rules.BFetch, rules.BPublish, rules.BCut, rules.BAccess, rules.BProgress, rules.BModel}},
	{Name: "fault_as_miss", Breaks: rules.BFetch, What: "a FAULT row is folded as a miss, so the attempt is Delivered partially",
		Trips: []rules.ID{rules.BFetch, rules.BPublish, rules.BModel}},
	{Name: "raced_declined_swapped", Breaks: rules.BPublish, What: "after a declined publish, present and absent are swapped (raced vs declined)",
		Trips: []rules.ID{rules.BPublish}},
	{Name: "publish_rewrites_present", Breaks: rules.BPublish, What: "keys found present are published again instead of served",
		Trips: []rules.ID{rules.BCut, rules.BAccess}},
	{Name: "cancel_not_forwarded", Breaks: rules.BCancel, What: "cancel is never forwarded to in-flight calls",
		Trips: []rules.ID{rules.BCancel}},
	{Name: "gauge_not_decremented", Breaks: rules.BBound, What: "the unprovable gauge is not decremented when proof arrives",
		Trips: []rules.ID{rules.BProgress, rules.BBound, rules.BSubmit}},
	{Name: "inflight_leak_unprovable", Breaks: rules.BBound, What: "an UNPROVABLE call keeps its in-flight slot",
		Trips: []rules.ID{rules.BProgress, rules.BBound, rules.BSubmit}},
	{Name: "slot_leak_refused", Breaks: rules.BBound, What: "a refused submit never gives its in-flight slot back",
		Trips: []rules.ID{rules.BProgress, rules.BBound, rules.BSubmit}},
	// Modelled on requests aborted during an async KV transfer whose transfer bookkeeping stays live and is waited on for good (TensorRT-LLM #12116/#12117, vLLM #46283).
	{Name: "cancel_answer_abandons", Breaks: rules.BCancel, What: "a call whose Cancel panics or answers anything but REQUESTED (ALREADY_DONE when completion won the race) is given up on: never observed again, so its evidence never arrives",
		Trips: []rules.ID{rules.LiveHang}},
	// Modelled on transfer time-outs and clean-up evaluated on one path only, so leaked slots exhaust the pool and admission stalls (sglang #31800, Mooncake receivers stuck in Transferring).
	{Name: "reap_on_admit_only", Breaks: rules.BBound, What: "the in-flight slots of calls that reached evidence are freed only by a clean-up that runs when a new view is admitted, never from the change callback, so queued batches wait for the next admission",
		Trips: []rules.ID{rules.BBound}},
	// Modelled on a batch status aggregated by overwriting, the last task's status winning (Mooncake #2055: FAILED + COMPLETED).
	{Name: "success_overwrites_fault", Breaks: rules.BFetch, What: "a FAULT row only sets the attempt's status, which the next batch that completes overwrites: the failure is forgotten and the attempt Delivered",
		Trips: []rules.ID{rules.BModel, rules.BFetch, rules.BPublish}},
	// Modelled on a request's memory freed when some but not all of its transfer handles are done (vLLM #19874; TensorRT-LLM #17223: pages released before transfer completion).
	{Name: "ended_at_last_batch", Breaks: rules.BAccess, What: "an attempt's access is ENDED as soon as its last batch's access is (ended or dropped), although earlier batches' calls may still write their slots",
		Trips: []rules.ID{rules.BAccess, rules.SNoLateAccess}},
	// Modelled on failed KV loads counted as loaded, the request going on with missing KV (vLLM kv_load_failure_policy, LMCache #1835, vllm-ascend #10561).
	{Name: "failed_fetch_delivered", Breaks: rules.BFetch, What: "a fetch that fails after some rows arrived is committed Delivered with those rows, as if the load had succeeded",
		Trips: []rules.ID{rules.BFetch}},
	// Modelled on "all quiet" checks that return on the first quiet member
	// of a group (a wait-for-all written as a wait-for-any).
	{Name: "quiesce_any", Breaks: rules.BAccess, What: "Quiesce answers true as soon as one listed attempt is quiet",
		Trips: []rules.ID{rules.BAccess}},
	// Modelled on request validation that lost a clause in a refactor.
	{Name: "empty_key_accepted", Breaks: rules.BSubmit, What: "a view row with an empty key is admitted instead of refused",
		Trips: []rules.ID{rules.BSubmit, rules.BCut, rules.BBound, rules.BAccess, rules.SLin, rules.HarnessErr}},
	// Modelled on buffer-index checks off by one at the end of a pool.
	{Name: "slot_past_end", Breaks: rules.BSubmit, What: "a row at the slot just past its region's end is taken as inside the registration",
		Trips: []rules.ID{rules.BSubmit, rules.BCut, rules.BAccess, rules.BBound, rules.BPublish, rules.BFetch}}, // the fold rules: the Failed reason names the driver's refusal, at the instant of the stray call
	// Modelled on in-flight limits checked with <= instead of <.
	{Name: "inflight_off_by_one", Breaks: rules.BBound, What: "the dispatch loop admits a call while in-flight <= MaxCallsInFlight, so MaxCallsInFlight+1 calls run at once",
		Trips: []rules.ID{rules.BBound}},
	// Modelled on a get that returns 0 bytes taken as a hit (LMCache #497: the Mooncake store answers an absent key with a 0-length value, not None).
	{Name: "empty_get_served", Breaks: rules.BFetch, What: "a fetch row answered MISS (nothing read into the slot) is folded as served",
		Trips: []rules.ID{rules.BFetch}},
	// Ordering bugs (Depth): each needs the scheduler to order events it may order either way. Modelled on completion handlers that
	// take a late or early callback for a duplicate (lost wake-ups: vLLM #19874-style bookkeeping; Mooncake transfer-status polling).
	{Name: "callback_overtakes", Breaks: rules.BAccess, Depth: 1,
		What:  "a callback delivered before the callback of an earlier trigger (of another call) is taken for a stale duplicate and dropped: one ordering (a later trigger delivered first) loses a wake-up",
		Trips: []rules.ID{rules.LiveHang, rules.BShut, rules.SHold}},
	{Name: "ack_split_drops", Breaks: rules.BAccess, Depth: 2,
		What:  "callbacks are acknowledged in two posted halves, and a callback delivered between the halves is taken for the one acknowledged and dropped: two orderings (after the first half, before the second) lose a wake-up",
		Trips: []rules.ID{rules.LiveHang, rules.BShut, rules.SHold}},
	{Name: "ack_split_waits", Breaks: rules.BAccess, Depth: 3,
		What:  "as ack_split_drops, but a callback delivered between the halves is parked, and dropped only when a callback outstanding at the first half is still outstanding after the second: three orderings lose a wake-up",
		Trips: []rules.ID{rules.LiveHang, rules.BShut, rules.SHold}},
	{Name: "indoubt_ignored", Breaks: rules.SHold, What: "an in-doubt registration is treated as refused, so its regions are never reported",
		Trips: []rules.ID{rules.BShut}},
	// Modelled on failed loads whose block ids are still reported loaded (vLLM invalid_block_ids, LMCache #1835).
	{Name: "failed_reports_served", Breaks: rules.SMarks, What: "a Failed attempt's outcome carries the rows that arrived before the failure as served",
		Trips: []rules.ID{rules.BFetch, rules.BPublish}},
	// Modelled on "the cache block is in the storage, but it can't be retrieved" (LMCache #1690): exists said yes, the get read nothing.
	{Name: "stale_lookup_miss_served", Breaks: rules.BFetch, What: "a fetch row whose key was present at lookup but answered MISS (nothing read) is counted as served",
		Trips: []rules.ID{rules.BFetch}},
	// Modelled on batch existence answers of the wrong shape read as "not present".
	{Name: "lookup_short_as_absent", Breaks: rules.BFetch, What: "a lookup that answers fewer bools than keys, without an error, is accepted and the missing keys read as absent",
		Trips: []rules.ID{rules.BFetch, rules.BAccess, rules.BBound, rules.BModel, rules.BPublish, rules.BCut}},
	// Modelled on a length check that guards only the index it reads: extra answers are taken as harmless.
	{Name: "lookup_long_accepted", Breaks: rules.BFetch, What: "a lookup that answers more bools than keys, without an error, is accepted: the keys are read from the first answers",
		Trips: []rules.ID{rules.BFetch, rules.BPublish}},
	{Name: "bindings_dropped", Breaks: rules.BShut, What: "earlier bindings are forgotten when a later registration fails",
		Trips: []rules.ID{rules.BShut}},
	{Name: "submit_error_no_escape", Breaks: rules.DSub2, What: "a Submit error that is not a sentinel is taken as \"nothing escaped\"",
		Trips: []rules.ID{rules.BAccess, rules.BBound}},
	{Name: "drain_no_wait", Breaks: rules.DDrain1, What: "shutdown does not wait for the driver to drain",
		Trips: []rules.ID{rules.BShut}},
	// Modelled on a cancel path that reuses the user-cancel error: the caller cannot tell "you cancelled" from "we shut down".
	{Name: "shutdown_reason_lost", Breaks: rules.BShut, What: "the attempts a shutdown cancels carry ErrCancelled, the reason of Attempt.Cancel, not ErrShutdown",
		Trips: []rules.ID{rules.BShut}},
	// Modelled on retry paths that repeat only the last step: the owner's second Shutdown never closes the bindings freed since the first.
	{Name: "retry_skips_close", Breaks: rules.BShut, What: "a Shutdown after the first one finished shuts the driver down again but closes no binding, so regions freed since stay bound",
		Trips: []rules.ID{rules.BShut}},
	// Modelled on teardown code that trusts its cached state: the calls whose last callbacks have not run yet still look busy.
	{Name: "no_refresh_before_close", Breaks: rules.BShut, What: "shutdown closes bindings without reading the calls first (D-DRAIN-2: their last callbacks may not have run), so a region whose calls all ended stays bound and is reported retained",
		Trips: []rules.ID{rules.BShut}},
	// Modelled on error paths that assume earlier progress: the rollback of a failed registration reads the last binding.
	{Name: "new_panics_first_refusal", Breaks: rules.BSubmit, What: "when the first region's registration is refused, New reads the last binding, which does not exist, and panics",
		Trips: []rules.ID{rules.BSubmit}},
	// Found by an audit against unseen backend bugs (issue "See every backend bug"), each a plausible slip:
	{Name: "unregistered_refused", Breaks: rules.BSubmit, What: "a view with a row outside any live registration is refused as invalid instead of admitted and Failed at once",
		Trips: []rules.ID{rules.BSubmit}},
	{Name: "unregistered_after_room", Breaks: rules.BSubmit, What: "room is checked before the rows' registration, so a view with an unregistered row is refused when the backend is full instead of Failed at once",
		Trips: []rules.ID{rules.BSubmit}},
	{Name: "cancel_folded_calls", Breaks: rules.BCancel, What: "a stopped attempt's calls whose results are all final (access still PENDING) are cancelled too",
		Trips: []rules.ID{rules.BCancel}},
	{Name: "drain_poll_not_on_callback", Breaks: rules.BShut, What: "a change callback during shutdown no longer polls Drain, so every shutdown waits out the drain deadline",
		Trips: []rules.ID{rules.BShut}},
	{Name: "register_continues", Breaks: rules.BModel, What: "registration goes on after a region is refused instead of stopping at the first failure",
		Trips: []rules.ID{rules.BModel}},
	{Name: "shutdown_ctx_not_cancelled", Breaks: rules.BShut, What: "after the drain deadline the driver is shut down with a live context, so it may go on waiting",
		Trips: []rules.ID{rules.BShut}},
	{Name: "labels_unsorted", Breaks: rules.BShut, What: "the shutdown's labels are its own followed by the driver's, neither sorted nor deduplicated",
		Trips: []rules.ID{rules.BShut}},
	{Name: "waiters_not_cleared", Breaks: rules.BShut, What: "the shutdown's waiters are not cleared once told, so a retry runs every earlier done again",
		Trips: []rules.ID{rules.BShut}},
	{Name: "register_binds_on_error", Breaks: rules.BShut, What: "a refused Register's zero handle is bound anyway, and shutdown closes it",
		Trips: []rules.ID{rules.BShut}},
	{Name: "shutdown_range_open", Breaks: rules.BShut, What: "shutdown cancels the Pending attempts from a list it changes while iterating, so some are never cancelled",
		Trips: []rules.ID{rules.BShut}},
	// Modelled on a once-only flag lost in a refactor: every cancel of an attempt cancels its running calls again.
	{Name: "cancel_flag_not_set", Breaks: rules.BCancel, What: "a running call is never marked cancelled, so a later cancel of its attempt (after it failed, or cancelled twice) forwards another Cancel",
		Trips: []rules.ID{rules.BCancel}},
	// The map path of long views (more than the 64 rows checkView scans), which the swarm reached only once views could be that long:
	{Name: "bigview_index_after", Breaks: rules.BSubmit, What: "a long view's slot index is written before it is read, so every row of a view of more than 64 rows repeats a slot and the view is refused",
		Trips: []rules.ID{rules.BSubmit}},
	{Name: "bigview_dup_unseen", Breaks: rules.BSubmit, What: "a long view's slot index is read but its answer dropped, so a view of more than 64 rows that uses a slot twice is admitted",
		Trips: []rules.ID{rules.BSubmit, rules.BCut}},
	// Reached only once regions of one endpoint could have different slot sizes:
	{Name: "bytes_first_region", Breaks: rules.BBound, What: "the bytes a call retains are counted with its first row's slot size for every row, wrong when a batch spans regions of different sizes",
		Trips: []rules.ID{rules.BBound}},
	// Reached only once the workload spoiled masked-out rows (bad=masked-…), which take no part in a view:
	{Name: "masked_empty_key", Breaks: rules.BSubmit, What: "the empty-key check runs before the mask is read, so a well-formed view whose masked-out row has no key is refused",
		Trips: []rules.ID{rules.BSubmit}},
	{Name: "masked_outside", Breaks: rules.BSubmit, What: "every view row is checked against the live registrations, masked-out ones too, so a view whose masked-out row lies outside them fails at once",
		Trips: []rules.ID{rules.BSubmit, rules.BPublish, rules.BFetch}},
	// Reached only once the swarm's liar could make Contains panic (lie-lookup-panics):
	{Name: "lookup_panic_unrecovered", Breaks: rules.BSubmit, What: "a panic in the driver's Contains is not recovered and escapes the backend",
		Trips: []rules.ID{rules.BSubmit}},
	{Name: "lookup_panic_as_absent", Breaks: rules.BFetch, What: "a panic in the driver's Contains is taken as every key absent instead of a lookup error",
		Trips: []rules.ID{rules.BFetch, rules.BPublish}},
	{Name: "lookup_panic_plain_error", Breaks: rules.BFetch, What: "a panic in the driver's Contains becomes an error that does not wrap ErrLookup",
		Trips: []rules.ID{rules.BFetch, rules.BPublish}},
	// Found by the fourth audit against unseen backend bugs: reachable, but judged by no check until then.
	{Name: "no_initial_drain_poll", Breaks: rules.BShut, What: "Shutdown polls Drain only from change callbacks, so a backend with nothing left to drain waits out the deadline and hands its driver a cancelled context",
		Trips: []rules.ID{rules.BShut}},
	{Name: "report_no_flush", Breaks: rules.BAccess, What: "the shutdown's done runs before the pending OnChange reports, so the owner hears the labels before some attempts' final access",
		Trips: []rules.ID{rules.BAccess}},
	{Name: "handle_ignores_live", Breaks: rules.BShut, What: "Handle answers a binding whose close succeeded, so after a shutdown the owner is told a released region is still bound",
		Trips: []rules.ID{rules.BShut}},
	{Name: "retry_recloses_dead", Breaks: rules.BShut, What: "a shutdown retry closes again the handles whose close already succeeded",
		Trips: []rules.ID{rules.BShut}},
	// Reached only once bad views could put a row at slot -1 (bad=below):
	{Name: "negative_slot_accepted", Breaks: rules.BSubmit, What: "the registration check tests only the slot's upper end, so a row at slot -1 goes to the driver instead of failing the attempt at once",
		Trips: []rules.ID{rules.BSubmit}},
	// Reached only once the memory driver could answer a stale close with ErrStaleHandle (stale-close-error):
	{Name: "stale_close_as_failure", Breaks: rules.BShut, What: "a close answered ErrStaleHandle is recorded as a failed unregister, so the region is reported held for ever",
		Trips: []rules.ID{rules.BShut}},
	// Reached only once the owner could ask again while the first shutdown runs:
	{Name: "second_shutdown_waiter_dropped", Breaks: rules.BShut, What: "a Shutdown called while one runs loses its done, so that owner never hears the labels",
		Trips: []rules.ID{rules.BShut}},
	// Reached only once an owner could call the backend back from inside OnChange (an impatient owner):
	{Name: "flush_dirty_cleared_late", Breaks: rules.BAccess, What: "a report's dirty mark is cleared after OnChange ran, so a change the owner caused from inside OnChange is never reported",
		Trips: []rules.ID{rules.BAccess}},
	{Name: "flush_reuses_list", Breaks: rules.BAccess, What: "the list being reported becomes the new dirty list, so a change made from inside OnChange is cleared with it",
		Trips: []rules.ID{rules.BAccess, rules.BSubmit}},
	// Reached only once a close could be answered ErrBusy by a store other owners share (lie-unregister-busy):
	{Name: "busy_close_as_closed", Breaks: rules.BShut, What: "a close answered ErrBusy marks the binding closed, so the region is released while the store still has it",
		Trips: []rules.ID{rules.BShut}},
	// The mutants of the fourth audit that the swarm caught at once, kept so it goes on catching them:
	{Name: "room_unprovable_ge", Breaks: rules.BSubmit, What: "unprovable bound > → >= (refuses when exactly at MaxUnprovable)",
		Trips: []rules.ID{rules.BSubmit}},
	{Name: "room_capacity_ge", Breaks: rules.BSubmit, What: "capacity have+n > limit → >= (refuses a view that exactly fits)",
		Trips: []rules.ID{rules.BSubmit}},
	{Name: "room_ignores_inflight", Breaks: rules.BBound, What: "capacity counts only queued batches, not calls in flight",
		Trips: []rules.ID{rules.BBound}},
	{Name: "dupslot_ignores_handle", Breaks: rules.BSubmit, What: "same-slot check (small views) compares Slot only, not Handle",
		Trips: []rules.ID{rules.BSubmit}},
	{Name: "unregistered_no_settle", Breaks: rules.BAccess, What: "unregistered-row attempt committed Failed without settle: access stays PENDING",
		Trips: []rules.ID{rules.BAccess}},
	{Name: "closed_not_counted", Breaks: rules.BBound, What: "refusal of a closed backend does not bump Stats.Rejected",
		Trips: []rules.ID{rules.BBound}},
	{Name: "invalid_counted_rejected", Breaks: rules.BBound, What: "malformed view counted as Rejected instead of Invalid",
		Trips: []rules.ID{rules.BBound}},
	{Name: "keepsall_first_only", Breaks: rules.BCut, What: "keepsAll decides from the first key only (fast path skips the filter)",
		Trips: []rules.ID{rules.BCut}},
	{Name: "rejected_submit_escapes", Breaks: rules.BAccess, What: "ErrRejected Submit not taken as \"nothing escaped\": call UNPROVABLE",
		Trips: []rules.ID{rules.BAccess}},
	{Name: "escaped_call_not_live", Breaks: rules.BShut, What: "an erroring (maybe escaped) Submit's stuck call not kept in b.live",
		Trips: []rules.ID{rules.BShut}},
	{Name: "wronglen_not_stuck", Breaks: rules.BAccess, What: "wrong number of results fails the attempt but does not make the call stuck UNPROVABLE",
		Trips: []rules.ID{rules.BAccess}},
	{Name: "forget_on_evidence", Breaks: rules.BShut, What: "call removed from live at any evidence (UNPROVABLE too), not only ENDED",
		Trips: []rules.ID{rules.BShut}},
	{Name: "recheck_needs_two", Breaks: rules.BCut, What: "declined publish rows rechecked only when ≥2 of them (>0 → >1)",
		Trips: []rules.ID{rules.BPublish, rules.BCut}},
	{Name: "recheck_error_declined", Breaks: rules.BPublish, What: "recheck lookup error read as \"all absent\" (declined) instead of Failed",
		Trips: []rules.ID{rules.BPublish}},
	{Name: "notattempted_fetch_miss", Breaks: rules.BFetch, What: "a FETCH NOT_ATTEMPTED row folded as a miss",
		Trips: []rules.ID{rules.BFetch}},
	{Name: "fail_no_cancel", Breaks: rules.BCancel, What: "fail() drops queued batches but forwards no Cancel to running calls",
		Trips: []rules.ID{rules.BCancel}},
	{Name: "unprovable_not_sticky", Breaks: rules.BAccess, What: "settle lets UNPROVABLE fall back to PENDING when the bad call is later proven ENDED",
		Trips: []rules.ID{rules.BAccess}},
	{Name: "pending_beats_unprovable", Breaks: rules.BAccess, What: "attemptAccess: a PENDING batch outranks an UNPROVABLE one",
		Trips: []rules.ID{rules.BAccess}},
	{Name: "access_change_not_notified", Breaks: rules.BAccess, What: "access change in settle does not call changed (no OnChange)",
		Trips: []rules.ID{rules.BAccess}},
	{Name: "labels_why_from_stuck", Breaks: rules.BShut, What: "call label reason from c.stuck instead of c.access (UNPROVABLE shown as pending)",
		Trips: []rules.ID{rules.BShut}},
	{Name: "busy_ignores_unprovable", Breaks: rules.BShut, What: "closeBindings treats non-stuck UNPROVABLE calls as not naming their regions",
		Trips: []rules.ID{rules.BShut}},
	{Name: "together_indoubt_inverted", Breaks: rules.BShut, What: "UnregisterTogether InDoubtError: named/unnamed regions swapped",
		Trips: []rules.ID{rules.BShut}},
	{Name: "unknown_reg_error_as_refusal", Breaks: rules.BShut, What: "noteInDoubt: an unknown Register error is taken as a refusal (not in doubt)",
		Trips: []rules.ID{rules.BShut}},
	{Name: "together_short_indoubt_off_by_one", Breaks: rules.BShut, What: "short together-registration: in-doubt slice starts at len(hs)+1",
		Trips: []rules.ID{rules.BShut}},
	{Name: "short_lookup_wraps_wronglength", Breaks: rules.BPublish, What: "wrong-length lookup error unwraps to ErrWrongLength, not ErrLookup",
		Trips: []rules.ID{rules.BFetch, rules.BPublish}},
	{Name: "slotbytes_uses_slots", Breaks: rules.BBound, What: "slotBytes sums region.Slots instead of SlotBytes (RetainedBytes)",
		Trips: []rules.ID{rules.BBound}},
	{Name: "cancel_first_call_only", Breaks: rules.BCancel, What: "cancelCalls stops after the first Cancel it forwards",
		Trips: []rules.ID{rules.BCancel}},
	// Mutation audit 5: escapes until the model checked refusal errors, the
	// generator spoiled any masked-in row, left bounds at their default and
	// made one-direction drivers, and the liar answered long and panicked in
	// Shutdown:
	{Name: "overcap_wraps_unprovable", Breaks: rules.BSubmit, What: "a full backend's refusal unwraps to ErrTooManyUnprovable, not ErrOverCapacity",
		Trips: []rules.ID{rules.BSubmit}},
	{Name: "unregistered_same_handle_skipped", Breaks: rules.BSubmit, What: "the outside-region check skips rows on the handle it checked last, so their slot bound is never checked",
		Trips: []rules.ID{rules.BSubmit}},
	{Name: "supports_publish_only", Breaks: rules.BSubmit, What: "only an unsupported PUBLISH is refused; a FETCH on a driver without CanFetch goes to the driver",
		Trips: []rules.ID{rules.BSubmit}},
	{Name: "default_unprovable_copy_paste", Breaks: rules.BBound, What: "a zero MaxUnprovable takes DefaultMaxCallsInFlight (copy-paste)",
		Trips: []rules.ID{rules.BBound}},
	{Name: "wronglen_longer_accepted", Breaks: rules.BAccess, What: "only a short results answer is a whole-call failure; a longer one is folded",
		Trips: []rules.ID{rules.BAccess, rules.BFetch, rules.BPublish, rules.BSubmit}},
	{Name: "driver_shutdown_panic_unlabelled", Breaks: rules.BShut, What: "a panicking driver Shutdown is recovered with no label: the shutdown looks clean",
		Trips: []rules.ID{rules.BShut}},
	// Mutation audit 6: accessors that hand out the attempt's own state.
	{Name: "outcome_served_aliased", Breaks: rules.BOutcome, What: "Outcome hands out the attempt's own served slice, not a copy: a caller's write changes the committed outcome",
		Trips: []rules.ID{rules.BOutcome}},
	{Name: "clonerows_keeps_caller_rows", Breaks: rules.BSubmit, What: "rows are kept, not copied: View hands out the attempt's own rows, and a view with masked-out rows keeps the caller's slice, which the caller reuses",
		Trips: []rules.ID{rules.BSubmit}},
	{Name: "cause_unwrap_kind_only", Breaks: rules.BOutcome, What: "a failure reason unwraps to its kind only (ErrSubmit, ErrLookup), not to the driver's error it met: a caller cannot tell back-pressure from an outage",
		Trips: []rules.ID{rules.BFetch, rules.BPublish}},
	// Reached once the liar made access step back (lie-access-flickers) and Cancel panic (lie-cancel-panics):
	{Name: "illegal_access_accepted", Breaks: rules.BAccess, What: "a call's access is taken as the driver reads it, even a step back the contract forbids (UNPROVABLE → PENDING): the slot and the unprovable gauge follow the lie",
		Trips: []rules.ID{rules.BBound, rules.BAccess, rules.BModel}},
	{Name: "cancel_flag_after_call", Breaks: rules.BCancel, What: "a call is marked cancelled only after its Cancel returns, so a Cancel that panics is sent again",
		Trips: []rules.ID{rules.BCancel}},
	// Reached once the liar's Submit could return no call and no error (lie-submit-no-call):
	{Name: "nil_call_unchecked", Breaks: rules.BSubmit, What: "a Submit that returns no call and no error is taken as accepted: the backend then reads a call that is not there",
		Trips: []rules.ID{rules.BSubmit}},
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
	Rule    rules.ID
	Detail  string
	Result  *engine.Result
}

// HuntSwarm runs seeds start, start+1, … (at most limit) in the current build
// and stops at the first that does not pass. A porcupine timeout (Unknown)
// or a harness error is not a find; the hunt goes on.
func HuntSwarm(start, limit uint64, cfg engine.Config) Hunt {
	h := Hunt{Start: start}
	cfg.Lean = true // the find is played again in full for its report
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
