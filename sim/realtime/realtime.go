// Package realtime is the production [sim.Runtime]: wall clock, real timers
// and one executor goroutine that runs every scheduled function in turn, so
// code written for the simulator (the backend, simulated drivers) keeps its
// one-at-a-time guarantee under real concurrency.
//
// It is the only place in sim/ where goroutines and the wall clock appear.
package realtime

import (
	"sync"
	"time"

	"github.com/storesim/storesim/sim"
)

// Runtime is the wall-clock runtime. Close it to stop its executor.
type Runtime struct {
	start time.Time
	seed  uint64

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []func()
	closed bool
	timers map[uint64]*time.Timer
	nextID uint64
	done   chan struct{}
}

var _ sim.Runtime = (*Runtime)(nil)

// New starts a runtime whose Rand streams derive from seed.
func New(seed uint64) *Runtime {
	r := &Runtime{start: time.Now(), seed: seed, timers: map[uint64]*time.Timer{}, done: make(chan struct{})}
	r.cond = sync.NewCond(&r.mu)
	go r.loop()
	return r
}

func (r *Runtime) loop() {
	defer close(r.done)
	for {
		r.mu.Lock()
		for len(r.queue) == 0 && !r.closed {
			r.cond.Wait()
		}
		if len(r.queue) == 0 {
			r.mu.Unlock()
			return
		}
		fn := r.queue[0]
		r.queue[0] = nil
		r.queue = r.queue[1:]
		r.mu.Unlock()
		fn()
	}
}

// Now implements sim.Runtime.
func (r *Runtime) Now() time.Duration { return time.Since(r.start) }

// Rand implements sim.Runtime.
func (r *Runtime) Rand(subsystem string) *sim.Rand {
	return sim.NewRand(sim.SubSeed(r.seed, subsystem))
}

// Post implements sim.Runtime. After Close it is a no-op.
func (r *Runtime) Post(_ string, fn func()) {
	r.mu.Lock()
	if !r.closed {
		r.queue = append(r.queue, fn)
		r.cond.Signal()
	}
	r.mu.Unlock()
}

// Wake implements sim.Runtime: every trigger posts fn.
func (r *Runtime) Wake(label string, fn func()) func() { return func() { r.Post(label, fn) } }

// After implements sim.Runtime.
func (r *Runtime) After(d time.Duration, label string, fn func()) sim.Timer {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	id := r.nextID
	r.timers[id] = time.AfterFunc(d, func() {
		r.mu.Lock()
		_, live := r.timers[id]
		delete(r.timers, id)
		r.mu.Unlock()
		if live {
			r.Post(label, fn)
		}
	})
	return sim.NewTimer(r, id)
}

// StopTimer implements sim.TimerStopper.
func (r *Runtime) StopTimer(id uint64) bool {
	r.mu.Lock()
	t, ok := r.timers[id]
	delete(r.timers, id)
	r.mu.Unlock()
	return ok && t.Stop()
}

// Do runs fn on the executor and waits for it: the way real callers enter
// code that expects the runtime's one-at-a-time guarantee.
func (r *Runtime) Do(fn func()) {
	ch := make(chan struct{})
	r.Post("do", func() { fn(); close(ch) })
	select {
	case <-ch:
	case <-r.done:
	}
}

// Close stops timers, runs what is already queued and stops the executor.
func (r *Runtime) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		<-r.done
		return
	}
	r.closed = true
	for id, t := range r.timers {
		t.Stop()
		delete(r.timers, id)
	}
	r.cond.Signal()
	r.mu.Unlock()
	<-r.done
}
