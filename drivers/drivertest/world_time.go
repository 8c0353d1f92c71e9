package drivertest

import (
	"slices"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/engine"
)

// The step bounds of a case run on the simulator. The busiest case run of
// the reference, broken and conforming drivers takes about 1 100 scheduler
// events, so a case gets some 90 times that; a driver that keeps it busy
// for ever (a callback storm, a call rescheduling itself without progress)
// stops there, and the run is one livelock finding (engine.Livelock: rule
// "liveness", naming the call) instead of growing without bound.
const (
	// caseSteps caps the scheduler events of one case run, across every
	// step, until, settle and runFor of the case.
	caseSteps = 100_000
	// finishSteps is what finish may run on top, to shut the driver down and
	// let its late events run.
	finishSteps = 10_000
	// maxSimSteps caps one settle or until.
	maxSimSteps = caseSteps
)

// stepCapHit unwinds a case run that cannot go on: its step cap ran out or
// its scheduler was flooded (w.stopped says which), or its store stopped
// answering (certifier.unreachable); finish then judges what was seen.
type stepCapHit struct{}

// left is how many events the case may still run; when none, it stops the
// case (panics with stepCapHit).
func (w *world) left() uint64 {
	if n := w.sched.Steps(); n < w.stepCap {
		return w.stepCap - n
	}
	w.capped()
	return 0 // not reached
}

// bounded stops the case if it ran its cap out or the scheduler was
// flooded. Call it after every stepping of a case.
func (w *world) bounded() {
	if w.sched.Flood() != nil || w.sched.Steps() >= w.stepCap {
		w.capped()
	}
}

// capped records why the case stopped and unwinds it.
func (w *world) capped() {
	w.noteStop()
	panic(stepCapHit{})
}

// noteStop records (once) why the run was stopped, if it was: a flood or
// the step cap.
func (w *world) noteStop() {
	if w.stopped != nil {
		return
	}
	if err := w.sched.Flood(); err != nil {
		w.stopped = err
		return
	}
	if w.sched.Steps() >= w.stepCap {
		what := "the case"
		if w.finishing {
			what = "the case's shutdown"
		}
		w.stopped = &engine.StepCapError{What: what, Steps: w.stepCap, At: w.sched.Now(), Last: w.sched.LastLabel()}
	}
}

// step runs one scheduler event (simulated) or waits a little (real time).
func (w *world) step() bool {
	if w.sched != nil {
		w.left()
		ran := w.sched.Step()
		w.bounded()
		return ran
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
			if !w.step() {
				return cond()
			}
		}
		return cond()
	}
	deadline := w.rt.Now() + w.c.opts.Wait
	for !cond() {
		if w.rt.Now() > deadline {
			w.c.stillAnswering(w) // a stalled store: stop the case now
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
		_ = w.sched.RunUntilLimit(w.sched.Now()+d, w.left())
		w.bounded()
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
		w.runIdle()
		return w.allEvidenced()
	}
	// Real time has no "nothing runnable": a driver that has not called back
	// for quietFor is taken as quiet (a call that never ends stays pending).
	// Evidence alone is not enough: a driver may prove ENDED before its row
	// results are final (a PUBLISH whose bytes are copied, the store's
	// answer still to come), so the wait is for both.
	w.lastKick.Store(int64(w.rt.Now()))
	w.until(func() bool {
		return (w.allEvidenced() && w.allFinal() && w.allSeen() && !w.reactQueued.Load() && w.reacting.Load() == 0) || w.rt.Now()-time.Duration(w.lastKick.Load()) > quietFor
	})
	return w.allEvidenced()
}

// allSeen: every call the driver shows ENDED with every row final was seen
// so by react too (what the suite knows of the store: publish truth), not
// only by a direct read. A driver may call back well after its state
// changed (D-CB-2 lets it delay and coalesce callbacks); until then the
// world still counts the call's keys in flight, and a case that asks for a
// key put in place would skip. A driver that never calls back ends the
// wait at quietFor.
func (w *world) allSeen() bool {
	w.mu.Lock()
	calls := append([]*callT(nil), w.calls...)
	w.mu.Unlock()
	for _, ct := range calls {
		if ct.closed.Load() || ct.c.Access() != drivers.AccessEnded {
			continue
		}
		if over(ct, ct.c.Results()) {
			return false
		}
	}
	return true
}

// over: with access ENDED, results res make the call over for the store —
// every row final, or a wrong number of results (final as it is: every row
// counts as FAULT).
func over(ct *callT, res []drivers.Status) bool {
	return len(res) != len(ct.b.Rows) || !slices.ContainsFunc(res, func(s drivers.Status) bool { return !s.Final() })
}

// allFinal: every accepted call's every row result is final.
func (w *world) allFinal() bool {
	w.mu.Lock()
	calls := append([]*callT(nil), w.calls...)
	w.mu.Unlock()
	for _, ct := range calls {
		for _, st := range ct.c.Results() {
			if !st.Final() {
				return false
			}
		}
	}
	return true
}

// runIdle runs the simulator until nothing is runnable, within the case's
// step cap (it stops the case when the cap runs out), and reports whether
// it got there.
func (w *world) runIdle() bool {
	err := w.sched.RunUntilIdle(min(maxSimSteps, w.left()))
	w.bounded()
	return err == nil
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

// The driver's callbacks and the world's reaction to them, which settle
// waits for.

// onChange is what the driver calls back: record and wake, never re-enter
// the driver (D-CB-4); the reaction runs later on the runtime.
func (ct *callT) onChange() {
	ct.changes.Add(1)
	ct.w.poke()
}

func (w *world) poke() {
	w.lastKick.Store(int64(w.rt.Now()))
	select {
	case w.kick <- struct{}{}:
	default:
	}
	if w.reactQueued.CompareAndSwap(false, true) {
		w.rt.Post("drivertest react", w.react)
	}
}

// react runs on the runtime after callbacks: it notices calls whose access
// became ENDED (publish truth, the case's onEnded hook) and re-polls a
// drain in progress, as a backend would.
func (w *world) react() {
	w.reacting.Add(1) // before the queued flag drops: never both clear while it runs
	defer w.reacting.Add(-1)
	w.reactQueued.Store(false)
	w.mu.Lock()
	calls := append([]*callT(nil), w.calls...)
	onEnded, onReact, draining := w.onEnded, w.onReact, w.draining && !w.drainDone
	w.mu.Unlock()
	for _, ct := range calls {
		if ct.closed.Load() {
			continue
		}
		// Results first: the monitor then reports rows final (and the
		// recorder reads FETCH slots) before anything reacts to ENDED.
		res := ct.c.Results()
		if !ct.ended {
			if ct.c.Access() != drivers.AccessEnded {
				continue
			}
			ct.ended = true
			if onEnded != nil {
				onEnded(ct)
			}
		}
		// A call is over for the store only once every row is final too: a
		// driver may end access before its rows are (a PUBLISH that staged
		// its slots and stores them later), and until then its keys are in
		// flight. A wrong number of results is final as it is (every row
		// counts as FAULT).
		if over(ct, res) {
			ct.closed.Store(true)
			w.ended(ct, res)
		}
	}
	if draining {
		if st := w.drain(); st.Done {
			w.mu.Lock()
			w.drainDone = true
			w.mu.Unlock()
		}
	}
	if onReact != nil {
		onReact()
	}
}
