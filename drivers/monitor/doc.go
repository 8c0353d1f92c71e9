// Package monitor is storesim's contract monitor: a wrapper that sits around
// any store driver — simulated or real, single-threaded or concurrent — and
// checks online every D-rule of SPEC §2 that is observable at the driver
// boundary (SPEC §5.3). Each broken rule is recorded as a [rules.Violation]
// of class Contract carrying the rule id, the call, row, key or region, the
// virtual time and the run's seed; nothing panics and nothing is refused: the monitor passes every
// request through unchanged, so a test can see what the driver itself does.
//
// # Use
//
//	m := monitor.Wrap(drv, monitor.Options{Clock: sched, Seed: seed})
//	b := backend.New(m.Driver(), regions, cfg) // m.Driver() adds TogetherRegisterer when drv has it
//	… run …
//	for _, v := range m.Finish() { … }         // end-of-run checks, sorted violations
//
// Every event the monitor sees is forwarded, in order, to Options.Observers
// (the history recorder and race-pair counters of package model); observers
// that also implement [SubmitObserver] or [CallbackObserver] see each
// Submit's invocation and each callback too.
//
// # What is checked, and how
//
// Batch validity (D-SUB-1, D-BATCH-VALID, D-BATCH-KEYS): the monitor keeps its
// own table of live handles and validates each batch with RowBatch.Validate
// against the driver's declared capabilities. A driver that accepts an
// invalid batch is flagged (D-BATCH-KEYS for a repeated key, else
// D-BATCH-VALID). A driver that refuses a valid batch with
// ErrInvalidSubmission is flagged "capabilities" (it refuses what its
// declaration allows), or D-REG-3 / D-REG-4 when it calls a handle stale that
// a stale close or a failed close should have left live. Full-size batches
// (exactly MaxRowsPerOp rows) are counted apart ([Monitor.SizeStats]): when
// every one of them failed (refused or every row FAULT) while smaller ones
// succeeded, and there are too many of them for chance — n failures with
// q^n < 1e-6, q the smaller batches' failure rate, n at least
// Options.FullSizeMinCalls — Finish flags "capabilities" (MaxRowsOffByOne).
//
// Results and access (D-STATUS, D-ACCESS, D-CB-3): every read of a call's
// state — the caller's own Results/Access calls, the monitor's snapshot in
// each callback, around each Cancel, at Drain, Shutdown and Finish — is
// compared with the facts seen so far: one entry per row once anything is
// final, valid status values, a final status never changes, access moves only
// as Access.CanBecome allows. A regression of a final fact is D-CB-3; any
// other illegal access move is D-ACCESS. At Finish a call with access evidence
// but a row still PENDING is D-STATUS.
//
// State before signal and lost wake-ups (D-CB-1, D-CB-2): the monitor wraps
// onChange. Inside the wrapper — before the caller's onChange runs, which in
// the simulator is a scheduler Wake that runs later and would hide the order —
// it snapshots Results and Access and joins the snapshot into the call's
// "signalled state" (final statuses and the most advanced access ever seen by
// a callback; a join, so concurrent callbacks that read out of order cannot
// make it go back). A callback whose snapshot adds nothing to the signalled
// state is an "empty" callback. At Finish (called at quiescence or after
// Shutdown returned, when no further callback may come) the call's current
// state is read once more; any fact not in the signalled state is a change
// that no callback followed. If the call had an empty callback, the driver
// signalled and then changed state: D-CB-1 (signal before state). Otherwise
// the last change simply had no callback: D-CB-2 (lost wake-up). The
// classification is a heuristic (a driver that both sends redundant callbacks
// and loses the last one is reported as D-CB-1); the detection is exact.
// A callback that fired before Submit returned cannot be snapshotted (the
// wrapper does not have the Call yet); the monitor then snapshots right after
// Submit returns and credits that to the early callback — lenient on purpose,
// a real driver may legally call back that early (D-CB-4).
//
// Callback under the driver's lock (D-CB-4): before reading the driver from
// inside the callback the monitor probes whether that read would block.
// With Options.LockProbe set the read runs through the probe, which answers
// returned, blocked (D-CB-4, with what it observed) or undecided (listed by
// [Monitor.Undecided], not a violation). Package
// drivers/monitor/realprobe's probe is for concurrent drivers: a wall-clock
// bound, and a read that misses it is re-checked for much longer before it
// counts as blocked (a read blocked by what the callback holds cannot return
// while the callback waits for it; one that returns late was only slow).
// Package drivers/monitor/simprobe's is for simulated drivers: it waits until
// the read has returned or parked on a lock or channel, which on the
// simulator's single goroutine can only be what the callback holds — a
// verdict that needs no clock. Otherwise, when the driver or the call
// implements [LockProber] (a TryLock on its mutex — exact for the
// single-threaded simulated drivers), a held lock is D-CB-4 and the read is
// skipped, so the monitor does not deadlock on a non-reentrant mutex. With
// none of these, the monitor reads directly and cannot see D-CB-4.
//
// No callback after Shutdown returned (D-CB-5): any wrapped callback that
// starts after the first Shutdown returned. A callback for a refused Submit
// is D-SUB-2 (nothing escaped, so nothing may be signalled).
//
// Cancel (D-CAN-1, D-CAN-2): Cancel's answer must be one of the three values;
// ALREADY_DONE only when every row is final; REQUESTED only when CanCancel is
// declared ("capabilities"). Blocking is a wall-time property: with
// Options.CancelBound set (realprobe.Stopwatch) a cancel that overruns the
// bound, and returns with the transfer done (a row went PENDING → OK, MISS
// or FAULT during it, every row final after it; NOT_ATTEMPTED rows never
// started), is D-CAN-1: a cancel that waits for the transfer. An
// overrun alone is not — a loaded machine makes any cancel late — and the
// stopwatch itself does not count the time the process was not running (a
// ticking goroutine measures the stall). Without it (simulated drivers, which cannot block on a
// goroutine) a cancel that completed the transfer before returning — a row
// went PENDING → OK/MISS inside Cancel while access went PENDING → evidenced
// and every row became final — is D-CAN-1. A cancel that makes access ENDED
// while a row is still PENDING, or while a row it moved PENDING → FAULT was
// evidently started, claims an end of access that a cancel can never prove:
// D-CAN-2. (PENDING → NOT_ATTEMPTED with ENDED is allowed: those rows never
// started.) This inline heuristic is off when CancelBound is set, because a
// concurrent completion may legally race the cancel.
//
// Drain (D-DRAIN-1, D-DRAIN-2): after any Drain returned, a Submit of a valid
// batch must fail with ErrClosed. When Drain answers Done, every call
// submitted before it must have access evidence (read after Drain returned;
// access is monotonic, so PENDING then means PENDING during Drain), and no
// wrapped callback that was running when Drain was called may still be
// running; when it answers not Done, every such call still PENDING must be
// listed. After a Done drain, a callback that brings anything but the
// UNPROVABLE → ENDED step is a callback Drain claimed had already run
// (D-DRAIN-2). A "not done" is judged too, where only the caller can say it
// must be done: [Monitor.AtRest] is the caller's word that nothing is
// runnable and no callback can start; if a Drain was asked and every call
// has access evidence and a result on every row, Drain must then answer
// done (D-DRAIN-1). UNPROVABLE is evidence — the driver stopped waiting —
// so a drain that waits for a proof that may never come, or for a call that
// ended long ago, is never done and reports dishonestly.
//
// Shutdown (D-SHUT-1, D-SHUT-2): after Shutdown returned, every call whose
// access is not ENDED must be labelled call:<id>:…, and every region a
// not-ENDED call names must be labelled region:<label>:…; with a
// [LiveReporter] or [BoundReporter] every region the driver still holds must
// be labelled too. Regions not labelled are taken as released: the monitor
// marks them closed (and their arenas unregistered). The labels are held
// against the registrations the other way round as well: with a reporter, a
// region labelled anything but in-doubt (retained, unregister-failed, …)
// must still be held by the driver — a label for a released region is
// dishonest (the caller keeps memory retained that nothing protects any
// more). The first Shutdown is checked as D-SHUT-1, every later one as
// D-SHUT-2.
//
// Registration (D-GEOM, D-REG-*, D-TOG-*, D-QUAR): a Register that the
// monitor knows must be refused — bad geometry, overlap with a live region,
// after Shutdown returned, after an in-doubt together-registration — and
// succeeds is D-REG-1 / D-REG-5 / D-QUAR (one that succeeded while Shutdown
// ran must be undone: with a reporter, a region the driver still holds and
// does not label is D-REG-5); a geometry refusal must wrap
// ErrBadGeometry (D-GEOM). A together-registration must return one handle per
// region, and none with an error (D-TOG-1). Unregister of a handle that a
// not-ENDED call names must not succeed (D-REG-6, D-TOG-4), and one refused
// as busy must leave the binding live: Live gone, or a later Submit on the
// handle refused as invalid, is D-REG-6 (D-REG-4 after ErrUnregisterFailed).
// D-REG-2, D-REG-3,
// D-REG-4 and D-TOG-3 concern what the driver still holds, which the boundary
// shows only partly: with a [LiveReporter] (Live(h)) and a [BoundReporter]
// (Bound(mem)) the monitor asks after each refusal and close; without them it
// flags D-REG-3 / D-REG-4 when a later Submit on a handle that must be live
// is refused as stale. Arena memory (sim/arena) is marked registered after a
// successful registration and unregistered after a successful close, so late
// touches are S-NO-LATE-ACCESS at the arena.
//
// Lookups (D-LOOK-1, D-LOOK-2, D-MISS-HONEST): an answer must have one bool
// per key. Honesty needs ground truth the boundary lacks: Options.Truth
// (the harness's knowledge of the store) turns "absent" for a key known
// present into D-LOOK-2, "present" for a key known absent into D-LOOK-1
// (the bool is not that key's), a FETCH MISS for a key known present into
// D-MISS-HONEST, and a FETCH FAULT for a key known absent into D-MISS-HONEST
// unless Options.Injected says the harness injected a fault into that row.
//
// Order: [Monitor.Violations] is sorted; [Monitor.Detected] keeps the order
// the violations were found in, so a caller can place a finding of its own
// among them (which came first, which followed from it).
//
// # Concurrency and cost
//
// A call is "settled" once a callback saw every row final and access ENDED;
// nothing may change after that, so its outcome goes into the size counts
// and the monitor forgets it: memory stays bounded by the calls in flight.
// (A change after that point is still caught if the driver signals it or
// the caller reads the call again, but Finish no longer re-reads it.)
//
// The monitor is safe for concurrent use. Under concurrency a read of the
// driver may be overtaken by another read that learns a newer fact first; a
// read that shows less than the facts known is called a regression only if
// no fact was learned while it was under way (always so on the simulator),
// and every other judgement compares a read taken after the event it judges
// (access is monotonic, so PENDING after Drain returned means PENDING
// during it). It never holds its own lock while
// calling into the driver (so a driver calling back under its lock cannot
// deadlock against it); observers, Truth and Injected run under the monitor's
// lock and must not call into the driver or the monitor.
package monitor
