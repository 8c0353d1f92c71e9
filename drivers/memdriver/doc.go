// Package memdriver holds storesim's reference drivers: a shared in-process
// byte store ([Store]), a complete conforming driver over it ([Driver]), the
// same driver with together-registration ([TogetherDriver]), and the
// simulator's fault injection ([FaultMix]).
//
// They are the drivers the backend is tested against and the base the broken
// drivers of package broken are cut from, so they are written to be obviously
// conforming: every rule of the project's SPEC.md §2 is kept at one clear
// spot that cites its id.
//
// # Test seam
//
// No broken behaviour lives here. Package broken wraps these drivers (their
// calls, callbacks and region memory) and, where its bug's moment lies
// inside a transfer step or under the driver's lock, sets [Hooks]
// (Config.Hooks): a handful of optional functions called at the decision
// points Submit (Batch), row planning (Row), row completion (Result),
// access evidence (Access) and the registration rules (Waive). Hooks are nil
// in normal use, and a nil hook changes nothing.
//
// # Asynchrony
//
// A driver never completes work inline. Submit validates the batch
// (D-SUB-1), draws the call's fault plan and schedules a begin event on the
// runtime; every row then moves in seeded transfer steps (rt.After), so rows
// of one call and rows of different calls interleave. Memory is touched only
// through drivers.Memory with a drivers.Toucher naming the call and row.
// Change callbacks go through rt.Wake, one waker per call: the simulator
// decides their delay, order and coalescing (D-CB-2 allows it), and each
// callback reads the state current when it runs.
//
// # Concurrency
//
// All driver state sits behind one mutex so the drivers are safe on the
// real-time runtime too; the mutex is never held while a change callback
// runs (D-CB-4) nor while memory is touched. Determinism comes from drawing
// every random decision from the driver's own sim.Rand streams
// (rt.Rand("memdriver/"+Name), forked per subsystem) in event order.
//
// # Faults
//
// [FaultMix] sets one rate per fault kind of SPEC §6. Every injected fault is
// legal behaviour: a driver under any mix still keeps every D-rule, so a
// backend must cope with all of them. [Swarm] derives a different subset of
// faults at different rates from each seed (FoundationDB BUGGIFY style);
// [DescribeSwarm] prints it. Faults that evict keys act only on an evicting
// [Store], so a non-evicting run stays linearizable against the strict store
// model (S-LIN).
//
// # Decisions
//
//   - FETCH of an absent key when Capabilities.AbsentIsMiss is false is FAULT
//     (the driver promises nothing about absent keys), except for keys it saw
//     evicted itself (row-miss and stale-lookup faults), which stay an honest
//     MISS with the slot untouched.
//   - A FETCH of an object whose size is not the slot's is FAULT; the bytes
//     written stay inside the slot.
//   - PUBLISH of a key the store already holds answers OK and keeps the first
//     object (D-SUB-4).
//   - Cancel never runs a callback inline: it marks unstarted rows
//     NOT_ATTEMPTED and schedules a settle event that notifies and, once no
//     transfer is in flight, ends access (D-CAN-2).
//   - Shutdown turns every call without access evidence into UNPROVABLE, then
//     runs every callback still owed (D-CB-2) before it returns (D-CB-5).
//   - Every *drivers.InDoubtError the driver returns quarantines it (D-QUAR):
//     registrations are refused and Submit fails with drivers.ErrClosed.
//   - A TogetherDriver keeps at most one together-batch of registrations live
//     at a time; a second RegisterTogether while any handle of the first is
//     live is refused with drivers.ErrRegistrationRefused.
package memdriver
