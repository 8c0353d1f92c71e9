// Package backend is the code storesim exists to test: it turns "fetch or
// publish these rows" into store-driver calls (SPEC §3). It cuts views into
// batches, bounds what is in flight, looks keys up, forwards cancellation,
// folds per-row results into one outcome per attempt, tracks access evidence
// so the memory's owner knows when a slot may be reused, and shuts down with
// an honest list of what it could not release.
//
// # A state machine stepped by its runtime
//
// The backend never starts goroutines, sleeps or reads the wall clock
// (B-DET). It changes state only when its owner calls it (New, Fetch,
// Publish, Attempt.Cancel, Shutdown) or when an event it scheduled on the
// [sim.Runtime] runs: a driver's change callback (every Submit is given
// rt.Wake(…) as onChange, so the driver's callback only schedules an event
// and never re-enters the backend on the driver's stack, D-CB-4), a
// notification flush, a drain poll or the drain deadline. The runtime runs
// those events one at a time, so the backend needs no mutex; in exchange it
// is not safe for concurrent use: with sim/realtime, callers enter it through
// realtime.Runtime.Do (package backend/realwait does that and adds blocking
// waits).
//
// # Attempts
//
// Fetch and Publish admit a whole view or nothing (B-SUBMIT, B-BOUND): a
// closed backend, a malformed view, an unsupported direction, too little room
// for all of the view's batches or too many UNPROVABLE calls are refused with
// an error and nothing reaches the driver. Admitted rows are cut into batches
// (B-CUT, [Cut]) and queued. A queued batch is dispatched while fewer than
// MaxCallsInFlight calls lack access evidence: a look-up first when the
// direction needs one (Publish always; Fetch when the driver's AbsentIsMiss
// is false), then one Submit with the rows that still need the store. Each
// batch is queued → calling → done, or dropped (cancel, failure, shutdown:
// its rows were never sent).
//
// An attempt's outcome (B-OUTCOME) starts Pending and is committed exactly
// once: Delivered(served) when every batch is done and no row failed;
// Failed(reason) at the first FAULT, NOT_ATTEMPTED, wrong-length answer,
// look-up error or refused submit (B-FETCH, B-PUBLISH: no partial delivery);
// Cancelled by Attempt.Cancel or Shutdown. The first commit wins; a failure
// or cancel also drops the attempt's queued batches and cancels its calls.
//
// Separately, an attempt's access (B-ACCESS) is derived from its batches:
// UNPROVABLE as soon as one call is, else PENDING while a batch is queued or
// a call lacks evidence, else ENDED. A synchronous Submit error other than
// ErrInvalidSubmission, ErrClosed or ErrRejected, and a wrong number of
// results, make the call UNPROVABLE for good (D-SUB-2, D-STATUS). A call's
// in-flight slot frees at evidence, whatever the outcome; an UNPROVABLE call
// stays in the unprovable gauge (and keeps its region bound) until the driver
// proves ENDED. Config.OnChange sees every change of outcome or access, from
// a runtime event, so the memory's owner can release exactly when the outcome
// is committed and access is ENDED (S-RELEASE).
//
// # Registration and shutdown
//
// New checks geometry and capabilities before asking the store, then
// registers all regions in one together-call when the driver offers it, else
// one by one. A failed registration leaves a backend that refuses admission
// but still owns whatever was bound; an in-doubt registration's regions are
// reported by every Shutdown so the lender never lets go of them (S-HOLD).
//
// Shutdown (B-SHUT) closes admission, cancels every attempt, polls
// Driver.Drain from each change callback until it is done or DrainTimeout
// (an rt.After deadline) passes, closes every binding no unfinished call
// names, shuts the driver down and reports the sorted union of its own labels
// and the driver's. It is idempotent: a later call retries what remains.
//
// # Decisions
//
//   - A failure (or cancel) stops the rest of the attempt: queued batches are
//     dropped and running calls get one Cancel each. Shutdown cancels every
//     attempt without an outcome, so they end Cancelled (reason ErrShutdown).
//   - NOT_ATTEMPTED in an attempt nobody cancelled fails it: it is never a
//     miss. A view row on a handle that is not live, or on a slot outside its
//     region, fails the attempt before any store call; two masked-in rows on
//     one slot or an empty key are refused as malformed.
//   - Look-ups use context.Background (the backend has no wall clock);
//     drivers answer them at once (Contains is synchronous). A panicking
//     Contains is a look-up failure; a panicking Submit is an UNPROVABLE
//     submit error (D-SUB-2).
//   - A registration error that is neither a refusal nor an *InDoubtError
//     cannot prove nothing was registered, so its regions are treated as in
//     doubt. In-doubt regions have no handle and are reported by every
//     Shutdown (region:<label>:in-doubt): leaking memory is acceptable,
//     corrupting it is not.
//   - A wrong number of results makes the call UNPROVABLE for good, whatever
//     the driver reports later.
//   - Outcome and access are separate: a fetch may be Delivered while its
//     access is still PENDING (a late RDMA write) or UNPROVABLE.
//
// # Decision points
//
// Every decision the spec names lives in one small function (cutHere,
// foldRow, attemptAccess, commit, hasEvidence, closable), so each rule can be
// read, tested and changed in one place without touching the rest.
package backend
