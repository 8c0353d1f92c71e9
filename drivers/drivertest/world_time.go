package drivertest

import (
	"time"
)

// step runs one scheduler event (simulated) or waits a little (real time).
func (w *world) step() bool {
	if w.sched != nil {
		return w.sched.Step()
	}
	w.pause(time.Millisecond)
	return true
}

// until steps (or waits, bounded) until cond holds.
func (w *world) until(cond func() bool) bool {
	if w.sched != nil {
		for range maxSimSteps {
			if cond() {
				return true
			}
			if !w.sched.Step() {
				return cond()
			}
		}
		return cond()
	}
	deadline := w.rt.Now() + w.c.opts.Wait
	for !cond() {
		if w.rt.Now() > deadline {
			return false
		}
		w.pause(time.Millisecond)
	}
	return true
}

func (w *world) pause(d time.Duration) {
	ch := make(chan struct{})
	t := w.rt.After(d, "drivertest poll", func() { close(ch) })
	select {
	case <-ch:
	case <-w.kick:
		t.Stop()
	}
}

// runFor lets d of (virtual or real) time pass.
func (w *world) runFor(d time.Duration) {
	if w.sched != nil {
		w.sched.RunUntil(w.sched.Now() + d)
		return
	}
	end := w.rt.Now() + d
	for w.rt.Now() < end {
		w.pause(end - w.rt.Now())
	}
}

// settle runs until every accepted call has access evidence (and, on the
// simulator, nothing is runnable). It reports whether they all have.
func (w *world) settle() bool {
	if w.sched != nil {
		_ = w.sched.RunUntilIdle(maxSimSteps)
		return w.allEvidenced()
	}
	// Real time has no "nothing runnable": a driver that has not called back
	// for quietFor is taken as quiet (a call that never ends stays pending).
	w.lastKick.Store(int64(w.rt.Now()))
	w.until(func() bool {
		return (w.allEvidenced() && !w.reactQueued.Load()) || w.rt.Now()-time.Duration(w.lastKick.Load()) > quietFor
	})
	return w.allEvidenced()
}

// quietFor is how long a real-time driver may stay silent before a settle
// takes it as quiet.
const quietFor = 200 * time.Millisecond

func (w *world) allEvidenced() bool {
	w.mu.Lock()
	calls := append([]*callT(nil), w.calls...)
	w.mu.Unlock()
	for _, ct := range calls {
		if !ct.c.Access().Evidenced() {
			return false
		}
	}
	return true
}
