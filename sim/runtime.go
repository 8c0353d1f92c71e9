package sim

import "time"

// Runtime is the boundary through which the backend and simulated drivers
// get time, scheduling and randomness (B-DET). Implementations: [Scheduler]
// (virtual) and sim/realtime (wall clock).
//
// Functions scheduled through a Runtime run one at a time, never
// concurrently with each other.
type Runtime interface {
	// Now is the time since the runtime started.
	Now() time.Duration
	// After runs fn once, d from now. Label names the event in traces and
	// hang reports.
	After(d time.Duration, label string, fn func()) Timer
	// Post runs fn soon. Safe from any goroutine.
	Post(label string, fn func())
	// Wake returns a trigger that a driver may call from any goroutine, as
	// often as it likes; each call asks the runtime to run fn. Repeats may be
	// coalesced while one is still queued (D-CB-2 allows it), so fn must read
	// current state rather than count calls.
	Wake(label string, fn func()) func()
	// Rand returns the stream of the named subsystem. The same name always
	// starts the same stream in one run, so names must be unique per
	// component ("driver/A", "workload").
	Rand(subsystem string) *Rand
}

// Clock is the part of a Runtime that tells time.
type Clock interface{ Now() time.Duration }

// Stamper is a clock that also numbers the findings made on it, run-wide
// and in the order they are made (the scheduler is one): many steps, and
// so causes and their consequences, share one virtual instant.
type Stamper interface{ Stamp() uint64 }

// Stamp is c's next finding number, or 0 when c numbers none (a wall
// clock, or nil).
func Stamp(c Clock) uint64 {
	if s, ok := c.(Stamper); ok {
		return s.Stamp()
	}
	return 0
}

// Timer is a scheduled event that may be stopped before it runs.
type Timer struct {
	owner TimerStopper
	id    uint64
}

// TimerStopper is implemented by runtimes that hand out Timers.
type TimerStopper interface{ StopTimer(id uint64) bool }

// NewTimer is for Runtime implementations outside this package.
func NewTimer(owner TimerStopper, id uint64) Timer { return Timer{owner: owner, id: id} }

// Stop cancels the event; it reports whether the event had not run yet.
func (t Timer) Stop() bool {
	if t.owner == nil {
		return false
	}
	return t.owner.StopTimer(t.id)
}

// WakeRun is rt.Wake for a [Runner], and [AfterRun] rt.After: a runtime
// that schedules Runners itself (the [Scheduler]) does it without a
// closure; any other gets r.Run as the func. A runtime that embeds a
// Scheduler and overrides Wake (or After) must override WakeRun (AfterRun)
// too, or these would reach the Scheduler's past it (fuzz/machine's runtime
// overrides Wake and WakeRun).
func WakeRun(rt Runtime, label string, r Runner) func() {
	if rr, ok := rt.(interface {
		WakeRun(string, Runner) func()
	}); ok {
		return rr.WakeRun(label, r)
	}
	return rt.Wake(label, r.Run)
}

// AfterRun is rt.After for a [Runner] (see [WakeRun]).
func AfterRun(rt Runtime, d time.Duration, label string, r Runner) Timer {
	if rr, ok := rt.(interface {
		AfterRun(time.Duration, string, Runner) Timer
	}); ok {
		return rr.AfterRun(d, label, r)
	}
	return rt.After(d, label, r.Run)
}
