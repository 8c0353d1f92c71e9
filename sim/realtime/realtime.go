// Package realtime is the production [sim.Runtime]: wall clock, real timers
// and one executor goroutine that runs every scheduled function in turn, so
// code written for the simulator (the backend, simulated drivers) keeps its
// one-at-a-time guarantee under real concurrency.
//
// It is the only place in sim/ where goroutines and the wall clock appear.
package realtime

import (
	"fmt"
	"sync"
	"time"

	"github.com/storesim/storesim/sim"
)

// MaxQueue bounds the functions waiting for the executor. A driver that
// triggers callbacks faster than they run fills it; what is posted beyond
// it is dropped and counted, and [Runtime.Flood] reports it, so the run
// stops as flooded instead of growing without bound (sim.DefaultMaxInbox
// is the simulator's bound).
const MaxQueue = sim.DefaultMaxInbox

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

	dropped    uint64 // posts beyond MaxQueue
	floodLabel string
	floodAt    time.Duration
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

// Post implements sim.Runtime. After Close it is a no-op; beyond MaxQueue
// waiting functions, fn is dropped and counted (see Flood).
func (r *Runtime) Post(label string, fn func()) {
	r.post(label, fn, true)
}

func (r *Runtime) post(label string, fn func(), bounded bool) {
	r.mu.Lock()
	switch {
	case r.closed:
	case bounded && len(r.queue) >= MaxQueue:
		if r.dropped == 0 {
			r.floodLabel, r.floodAt = label, time.Since(r.start)
		}
		r.dropped++
	default:
		r.queue = append(r.queue, fn)
		r.cond.Signal()
	}
	r.mu.Unlock()
}

// Flood is nil until a Post was dropped at MaxQueue, then a
// *sim.FloodError describing it. Safe from any goroutine.
func (r *Runtime) Flood() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dropped == 0 {
		return nil
	}
	return &sim.FloodError{At: r.floodAt, Label: r.floodLabel, Where: fmt.Sprintf("executor queue bound of %d", MaxQueue), Dropped: r.dropped}
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
	r.post("do", func() { fn(); close(ch) }, false) // never dropped: Do waits for it
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
