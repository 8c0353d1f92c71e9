package drivertest

import (
	"fmt"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim/arena"
)

// The evidence groups: access evidence, change callbacks and cancel.

// load submits a mix of calls on a (some keys present, repeated across
// calls), optionally cancelling some, and returns them unsettled.
func (w *world) load(a *arena.Arena, h drivers.Handle, calls int, cancel float64) []*callT {
	var keys []string
	if w.caps.CanPublish && w.caps.CanFetch {
		keys = w.present(a, h, 4)
	}
	var out []*callT
	for i := range calls {
		n := w.batchSize(4)
		ks := w.keys(n)
		for j := range ks {
			if len(keys) > 0 && w.chance(0.5, (i+j)%2 == 0) {
				ks[j] = keys[(i+j)%len(keys)]
			}
		}
		ks = dedupe(ks, w)
		dir := w.dirs()[(i+w.pick(2, 0))%len(w.dirs())]
		ct := w.patient(dir, w.rows(a, h, ks...))
		out = append(out, ct)
		if ct.err == nil && w.chance(cancel, i%4 == 3) {
			w.runFor(time.Duration(w.pick(20, 5)) * time.Microsecond)
			ct.c.Cancel()
		}
	}
	return out
}

// D-ACCESS: under transport errors, timeouts, late proofs and wrong-length
// answers, access moves only PENDING → ENDED | UNPROVABLE → ENDED (the
// monitor judges every read).
func caseAccessTransitions(w *world) {
	a, h := w.region(160, 32)
	w.load(a, h, 12+w.pick(12, 0), 0.2)
	w.settle()
}

// D-ACCESS: a driver that stops waiting after a transport error while a
// transfer may still run must say UNPROVABLE, not ENDED: a call with a FAULT
// row that reported ENDED and then touched memory claimed an end it could
// not prove.
func caseStoppedWaiting(w *world) {
	a, h := w.region(160, 64)
	w.load(a, h, 10+w.pick(10, 0), 0)
	w.settle()
	w.judgeEndedAfterError()
}

func (w *world) judgeEndedAfterError() {
	endedAt := map[drivers.CallID]time.Duration{}
	for _, c := range w.ep.Recorder.Calls() {
		if c.EndedSeq != 0 {
			endedAt[c.ID] = c.EndedAt
		}
	}
	faulted := map[drivers.CallID]bool{}
	w.mu.Lock()
	calls := append([]*callT(nil), w.calls...)
	w.mu.Unlock()
	for _, ct := range calls {
		for _, s := range ct.c.Results() {
			if s == drivers.Fault {
				faulted[ct.c.ID()] = true
			}
		}
	}
	for _, v := range w.ep.Recorder.MemoryViolations(w.arenas...) {
		if v.Rule == rules.DAccessEnd && faulted[drivers.CallID(v.Call)] {
			// The finding is about the ENDED the call reported, before the
			// late touch (D-ACCESS-END) that followed from it.
			w.finding(mark{at: endedAt[drivers.CallID(v.Call)]}, rules.Violation{Rule: rules.DAccess, Call: v.Call, Row: -1,
				Detail: fmt.Sprintf("the call stopped waiting after a transport error (a row is FAULT) and reported ENDED, but its transfer touched memory afterwards: its access was UNPROVABLE (%s)", v.Detail)})
		}
	}
}

// D-ACCESS-END: after ENDED nothing touches the call's rows again. Each
// call's slots are released (poisoned) the moment ENDED is seen, as a lender
// would, so a late touch is caught at the arena and by the oracle.
func caseNoTouchAfterEnded(w *world) {
	a, h := w.region(200, 32)
	w.mu.Lock()
	w.onEnded = func(ct *callT) {
		for _, r := range ct.b.Rows {
			if ar := w.arenaOf(r.Handle); ar != nil && ar.State(r.Slot) == arena.Lent {
				ar.Release(r.Slot)
			}
		}
	}
	w.mu.Unlock()
	w.load(a, h, 12+w.pick(12, 0), 0.15)
	w.settle()
}

// D-CB-1: results and access are set before onChange runs: multi-row calls
// change several times, and every callback's snapshot must show a change.
func caseSignalAfterState(w *world) {
	a, h := w.region(160, 32)
	w.load(a, h, 8+w.pick(10, 0), 0.1)
	w.settle()
}

// D-CB-2: the last change of every call is followed by a callback; the
// scheduler coalesces repeated wake-ups, which is allowed.
func caseNoLostWakeup(w *world) {
	a, h := w.region(160, 32)
	w.load(a, h, 10+w.pick(14, 0), 0.2)
	w.settle()
}

// D-CB-3: facts are monotonic: every call is read after every step (and in
// every callback), so a result or ENDED that changes back is seen.
func caseMonotonic(w *world) {
	a, h := w.region(160, 32)
	calls := w.load(a, h, 8+w.pick(10, 0), 0.2)
	readAll := func() {
		for _, ct := range calls {
			if ct.err == nil {
				ct.c.Results()
				ct.c.Access()
			}
		}
	}
	w.mu.Lock()
	w.onReact = readAll
	w.mu.Unlock()
	for i := 0; i < 20_000 && w.step(); i++ {
		readAll()
		if w.sched == nil && w.allEvidenced() {
			break
		}
	}
	w.settle()
	readAll()
}

// D-CB-4: callbacks never run under a lock the receiver needs; the monitor
// reads the call inside each callback, through a lock probe.
func caseCallbackUnlocked(w *world) {
	a, h := w.region(120, 32)
	w.load(a, h, 6+w.pick(8, 0), 0.2)
	w.settle()
}

// D-CB-5: no callback after Shutdown returned, even with calls in flight.
func caseNoCallbackAfterShutdown(w *world) {
	a, h := w.region(120, 32)
	w.load(a, h, 6+w.pick(8, 0), 0.2)
	w.stepsBeforeShutdown(30, 4)
	w.shutdown()
}

// stepsBeforeShutdown lets some of the load run before a Shutdown that
// must find calls in flight: on the simulator a drawn number of events
// (directed: dflt); in real time none, since a real store answers within a
// millisecond, far below one real-time step.
func (w *world) stepsBeforeShutdown(n, dflt int) {
	if w.sched == nil {
		return
	}
	for range w.pick(n, dflt) {
		w.step()
	}
}

// D-CAN-1: Cancel answers REQUESTED, UNSUPPORTED or ALREADY_DONE, at once,
// at any point of a call, any number of times.
func caseCancelAnswers(w *world) {
	a, h := w.region(160, 32)
	var keys []string
	if w.caps.CanPublish && w.caps.CanFetch {
		keys = w.present(a, h, w.rowsMax(4))
	}
	for i := range 6 + w.pick(6, 0) {
		n := w.batchSize(4)
		ks := w.keys(n)
		dir := w.anyDir()
		if dir == drivers.Fetch && len(keys) > 0 {
			ks = keys[:min(n, len(keys))]
		}
		ct := w.submit(dir, w.rows(a, h, ks...))
		if ct.err != nil {
			continue
		}
		// directed: cancel before the call starts, mid-transfer, late
		steps := []int{0, 3, 8, 40}[w.pick(4, i%4)]
		for range steps {
			w.step()
		}
		// twice (idempotent), and once more when done; the monitor judges
		// each answer and whether a cancel blocked
		ct.c.Cancel()
		ct.c.Cancel()
		w.settle()
		ct.c.Cancel()
	}
}

// D-CAN-2: rows not started become NOT_ATTEMPTED, completion may win, a
// cancel never proves access ended and never rolls back a stored object.
func caseCancelMidCall(w *world) {
	if !w.caps.CanCancel {
		w.skip("the driver declares CanCancel=false")
	}
	a, h := w.region(160, 64)
	var keys []string
	if w.caps.CanPublish && w.caps.CanFetch {
		keys = w.present(a, h, w.rowsMax(4))
	}
	var cancelled []*callT
	for i := range 6 + w.pick(8, 0) {
		dir := w.anyDir()
		ks := w.keys(w.batchSize(4))
		if dir == drivers.Fetch && len(keys) > 0 {
			ks = keys[:min(len(ks), len(keys))]
		}
		ct := w.submit(dir, w.rows(a, h, ks...))
		if ct.err != nil {
			continue
		}
		// cancel once a transfer is under way (a touch happened), or at
		// once for every third call
		if i%3 != 0 || !w.directed {
			before := w.touches.Load()
			w.until(func() bool { return w.touches.Load() > before || ct.c.Access().Evidenced() })
		}
		ct.c.Cancel()
		cancelled = append(cancelled, ct)
	}
	w.settle()
	for _, ct := range cancelled {
		if ct.b.Dir != drivers.Publish {
			continue
		}
		res := ct.c.Results()
		for i, r := range ct.b.Rows {
			if i < len(res) && res[i] == drivers.OK {
				if present, known := w.truth(r.Key); known && !present {
					w.fail(rules.DCan2, "call %d row %d: a cancelled PUBLISH answered OK but key %q is not in the store: a cancel never rolls back a stored object", ct.c.ID(), i, r.Key)
				}
			}
		}
	}
}

// D-CAN-2: a cancel before the call started: every row NOT_ATTEMPTED (or
// completed, if completion won), access evidence still comes.
func caseCancelAtOnce(w *world) {
	if !w.caps.CanCancel {
		w.skip("the driver declares CanCancel=false")
	}
	a, h := w.region(64, 32)
	for range 3 + w.pick(5, 0) {
		ct := w.submit(w.anyDir(), w.rows(a, h, w.keys(w.batchSize(4))...))
		if ct.err == nil {
			ct.c.Cancel()
		}
	}
	w.settle()
}
