package diff

// The real-time waits of a side whose driver runs its own goroutines
// against a real store: the one file of this package with channels and
// wall-clock timers (the simulated side waits by stepping its scheduler).

import (
	"context"
	"time"

	"github.com/storesim/storesim/drivers"
)

// wait is the side's bound on one wait (Side.Wait, default 10 s).
func (p *player) wait() time.Duration {
	if p.side.Wait > 0 {
		return p.side.Wait
	}
	return 10 * time.Second
}

// ctx is the context of a lookup or a shutdown: unbounded on the
// simulator (its drivers answer at once), bounded by the wait in real time.
func (p *player) ctx() (context.Context, context.CancelFunc) {
	if p.rtr == nil {
		return context.Background(), func() {}
	}
	return context.WithTimeout(context.Background(), p.wait())
}

// onChange is the change callback a call gets: it only wakes the waiter
// (D-CB-4: the receiver never re-enters the driver from the callback).
func (p *player) onChange() func() {
	if p.kick == nil {
		return func() {}
	}
	kick := p.kick
	return func() {
		select {
		case kick <- nil:
		default:
		}
	}
}

// await waits for c's final answer: on the simulator until nothing is
// runnable; in real time until every row is final and access is
// evidenced, or the wait runs out (the rows still without a result are
// then recorded as unanswered).
func (p *player) await(c drivers.Call) {
	if p.sched != nil {
		p.settle(false)
		return
	}
	deadline := time.NewTimer(p.wait())
	defer deadline.Stop()
	poll := time.NewTicker(5 * time.Millisecond) // a lost wake-up (D-CB-2) must not stall the diff
	defer poll.Stop()
	for !over(c) {
		select {
		case <-p.kick:
		case <-poll.C:
		case <-deadline.C:
			return
		}
	}
}

// over: every row of c is final and its access is evidenced.
func over(c drivers.Call) bool {
	if !c.Access().Evidenced() {
		return false
	}
	for _, s := range c.Results() {
		if !s.Final() {
			return false
		}
	}
	return true
}
