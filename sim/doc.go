// Package sim is storesim's deterministic runtime: a virtual clock, an event
// queue, seeded randomness and controlled delivery of driver callbacks.
//
// # The runtime boundary
//
// [Runtime] is the one interface through which the backend and the simulated
// drivers get time, scheduling and randomness (B-DET). Two implementations
// exist: [Scheduler] here (virtual time, one seed decides every interleaving)
// and sim/realtime (wall clock and one executor goroutine) for real use.
// Code behind the boundary never starts goroutines, reads the wall clock or
// uses global randomness, and never lets map iteration order reach a decision.
//
// # Scheduling
//
// Events are ordered by (virtual time, seeded tie-break, sequence). A driver
// callback handed out through [Scheduler.Wake] is never run inline: each
// trigger lands in a thread-safe inbox and the scheduler decides, from the
// seed, when it runs (a delay), in which order against other callbacks, and
// whether a repeat is coalesced with one still queued (allowed by D-CB-2).
// Every executed event is folded into a running trace hash, so two runs of one
// seed can be compared with one number.
//
// # Randomness
//
// [Rand] is a SplitMix64 generator owned by this package (its first outputs
// are pinned by a test), so a seed replays across Go releases. Each subsystem
// draws from its own stream, [Rand.Fork]ed by name from the run's seed.
package sim
