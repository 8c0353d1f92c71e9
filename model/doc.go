// Package model holds storesim's checkers that judge a run from the outside:
// the reference store model for the linearizability check (S-LIN), the
// history recorder at the driver boundary, the memory oracle and the
// call-level liveness check. Every check reports [rules.Violation] (drivers/rules).
//
// # Store model
//
// [Check] hands a [History] (one [Op] per row result) to porcupine,
// partitioned by key, against one of two [StoreModel]s of SPEC §5.1:
// [DurableStore] (a FETCH MISS requires the key absent) and [EvictingStore]
// (a key may be dropped at any moment; an evicted value never comes back
// unless published again). A publish of a present key keeps the first value in both. FAULT,
// NOT_ATTEMPTED and unanswered publishes are ambiguous: porcupine sees them
// as operations that never return — unless the run knows better ([Effect]:
// the store's own log says the put ran, or that it never did). FAULT
// fetches constrain nothing. A pre-pass drops every operation that cannot
// change the verdict, which keeps porcupine in milliseconds (PERF-NOTES). A
// check that times out is Unknown: its own outcome, never a pass.
// [WriteVisualization] writes porcupine's HTML view with the recorder's
// notes (callbacks, faults, access, cancels, regions) as annotations.
//
// # Recording
//
// [Recorder] implements drivers/monitor.Observer. Operations are ordered by
// an event sequence, not by virtual time (many events share an instant);
// values are [Digest]s of slot bytes, read without recording a touch.
//
// # Memory and liveness
//
// [Recorder.MemoryViolations] (or [CheckMemory] over a touch log) enforces
// S-NO-LATE-ACCESS (found by the arena at the touch), D-SUB-6,
// D-ACCESS-END and "a MISS leaves the slot untouched" (D-STATUS).
// [CheckLiveness] names every call still without results or access
// evidence at quiescence (D-SUB-3).
//
// Nothing here starts goroutines or reads the clock; porcupine itself runs
// partitions on goroutines and times its check, which only bounds how long
// a verdict may take.
package model
