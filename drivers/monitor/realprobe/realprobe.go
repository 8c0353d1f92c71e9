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

import "time"

// DefaultBound is a bound generous enough for a loaded CI machine yet far
// below what a lock held for a whole transfer costs.
const DefaultBound = 100 * time.Millisecond

// LockProbe returns a monitor.Options.LockProbe: it runs read on a new
// goroutine and reports whether it returned within bound. A read that blocks
// (the driver called back while holding the lock the read needs) is left to
// finish on its own when the driver releases the lock; its results are then
// discarded. bound <= 0 means DefaultBound.
func LockProbe(bound time.Duration) func(read func()) bool {
	if bound <= 0 {
		bound = DefaultBound
	}
	return func(read func()) bool {
		done := make(chan struct{})
		go func() {
			defer close(done)
			read()
		}()
		t := time.NewTimer(bound)
		defer t.Stop()
		select {
		case <-done:
			return true
		case <-t.C:
			return false
		}
	}
}

// Stopwatch returns a monitor.Options.CancelBound: it runs op on the calling
// goroutine and reports whether it returned within bound. bound <= 0 means
// DefaultBound.
func Stopwatch(bound time.Duration) func(op func()) bool {
	if bound <= 0 {
		bound = DefaultBound
	}
	return func(op func()) bool {
		start := time.Now()
		op()
		return time.Since(start) <= bound
	}
}
