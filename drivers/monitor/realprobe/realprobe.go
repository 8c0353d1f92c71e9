// Package realprobe holds the contract monitor's wall-clock probes for real
// (concurrent) drivers: a bounded read from another goroutine that detects a
// callback running under the driver's lock (D-CB-4), and a stopwatch that
// detects a blocking cancel (D-CAN-1).
//
// They live apart from package monitor because they need goroutines and the
// wall clock, which the deterministic packages must never touch; plug them in
// through monitor.Options.LockProbe and monitor.Options.CancelBound. Never use
// them in a simulated run: wall time would make its verdicts unrepeatable.
package realprobe

import (
	"fmt"
	"time"

	"github.com/storesim/storesim/drivers/monitor"
)

// DefaultBound is a bound generous enough for a loaded CI machine yet far
// below what a lock held for a whole transfer costs.
const DefaultBound = 100 * time.Millisecond

// DefaultRecheck is how much longer LockProbe waits for a read that missed
// its bound before it calls the read blocked.
const DefaultRecheck = 5 * time.Second

// LockProbe returns a monitor.Options.LockProbe for concurrent drivers: it
// runs read on a new goroutine and waits for it for bound (<= 0:
// DefaultBound), then, if it has not returned, re-checks for DefaultRecheck
// more. A read blocked on a lock that the callback's goroutine holds cannot
// return while the probe waits (the callback is the one waiting), so a read
// that returns at any point was not blocked — only late, on a loaded
// machine — and is not a violation; only a read still out after the re-check
// is reported blocked, and the report says it is a wall-clock timeout. A
// blocked read is left to finish on its own when the driver releases the
// lock; its results are then discarded.
func LockProbe(bound time.Duration) func(read func()) monitor.ProbeResult {
	return LockProbeRecheck(bound, DefaultRecheck)
}

// LockProbeRecheck is LockProbe with the re-check's length (<= 0:
// DefaultRecheck).
func LockProbeRecheck(bound, recheck time.Duration) func(read func()) monitor.ProbeResult {
	if bound <= 0 {
		bound = DefaultBound
	}
	if recheck <= 0 {
		recheck = DefaultRecheck
	}
	return func(read func()) monitor.ProbeResult {
		done := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(done)
			read()
		}()
		t := time.NewTimer(bound)
		defer t.Stop()
		select {
		case <-done:
			return monitor.ProbeResult{}
		case <-t.C:
		}
		t.Reset(recheck)
		select {
		case <-done:
			return monitor.ProbeResult{Observed: fmt.Sprintf("returned after %v, past the %v bound but within the re-check: late, not blocked", time.Since(start).Round(time.Millisecond), bound)}
		case <-t.C:
			return monitor.ProbeResult{Verdict: monitor.ReadBlocked,
				Observed: fmt.Sprintf("did not return within %v, nor within %v more on re-check (a wall-clock timeout: a read blocked by what the callback holds never returns while the callback waits for it)", bound, recheck)}
		}
	}
}

// Stopwatch returns a monitor.Options.CancelBound: it runs op on the calling
// goroutine and reports whether it returned within bound. bound <= 0 means
// DefaultBound.
//
// A loaded machine can deschedule the whole process for longer than the
// bound, and a cancel that never waited for anything then overruns it. So
// while op runs, a second goroutine ticks every millisecond and keeps the
// longest gap it saw between two ticks: the stall. Time the process did not
// run is nobody's blocking, and an overrun that the stall covers
// (elapsed - stall <= bound) counts as returned. A cancel that blocks parks
// its goroutine, and the ticker goes on ticking: its overrun stands.
func Stopwatch(bound time.Duration) func(op func()) bool {
	if bound <= 0 {
		bound = DefaultBound
	}
	return func(op func()) bool {
		m := startMeter()
		start := time.Now()
		op()
		elapsed := time.Since(start)
		stall := m.stop()
		return elapsed <= bound || elapsed-stall <= bound
	}
}

// tick is the stall meter's period.
const tick = time.Millisecond

// meter measures how long the process went without running a goroutine that
// wants to run every tick (a hiccup meter).
type meter struct {
	quit chan struct{}
	done chan time.Duration
	_    struct{}
}

func startMeter() *meter {
	m := &meter{quit: make(chan struct{}), done: make(chan time.Duration, 1)}
	go func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		last, worst := time.Now(), time.Duration(0)
		for {
			select {
			case <-m.quit:
				// The gap still open when op returned counts too.
				m.done <- max(worst, time.Since(last)-tick)
				return
			case <-t.C:
				now := time.Now() // not the tick's time: a tick that waited in the channel hides the stall
				worst = max(worst, now.Sub(last)-tick)
				last = now
			}
		}
	}()
	return m
}

// stop ends the meter and returns the longest stall it saw.
func (m *meter) stop() time.Duration {
	close(m.quit)
	return <-m.done
}
