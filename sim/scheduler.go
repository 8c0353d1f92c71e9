package sim

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Options configures a [Scheduler].
type Options struct {
	// Seed decides every tie-break, callback delay and coalescing.
	Seed uint64
	// MaxWakeDelay bounds the virtual delay added to a driver callback
	// (Wake). Zero delivers callbacks at the current time, still in a
	// seed-chosen order.
	MaxWakeDelay time.Duration
	// CoalesceChance is the probability that a repeated trigger of a Wake
	// whose previous trigger is still queued is merged into it.
	CoalesceChance float64
	_              struct{}
}

// Scheduler is the deterministic [Runtime]: a virtual clock and an event
// queue stepped from outside. It is not safe for concurrent use except for
// Post and Wake triggers, which land in an inbox drained at each Step.
type Scheduler struct {
	opts   Options
	now    time.Duration
	queue  eventHeap
	seq    uint64
	rng    *Rand // tie-breaks, delays, coalescing
	root   uint64
	trace  uint64
	steps  uint64
	stops  map[uint64]bool // stopped timers not yet popped
	queued map[uint64]bool // event ids still in the queue (only for timers)

	mu    sync.Mutex
	inbox []posted

	pending []pendingSource
}

type posted struct {
	label string
	fn    func()
	wake  *waker
}

type waker struct {
	label  string
	fn     func()
	queued bool // an event for it is in the queue and has not run
	run    func()
}

type pendingSource struct {
	name string
	list func() []string
}

// New returns a scheduler at virtual time zero.
func New(opts Options) *Scheduler {
	return &Scheduler{
		opts:   opts,
		rng:    NewRand(SubSeed(opts.Seed, "sim/scheduler")),
		root:   opts.Seed,
		trace:  14695981039346656037,
		stops:  map[uint64]bool{},
		queued: map[uint64]bool{},
	}
}

// Seed is the run's seed.
func (s *Scheduler) Seed() uint64 { return s.root }

// Now implements [Runtime].
func (s *Scheduler) Now() time.Duration { return s.now }

// Rand implements [Runtime].
func (s *Scheduler) Rand(subsystem string) *Rand { return NewRand(SubSeed(s.root, subsystem)) }

// After implements [Runtime].
func (s *Scheduler) After(d time.Duration, label string, fn func()) Timer {
	if d < 0 {
		d = 0
	}
	id := s.push(s.now+d, label, fn)
	s.queued[id] = true
	return NewTimer(s, id)
}

// StopTimer implements [TimerStopper].
func (s *Scheduler) StopTimer(id uint64) bool {
	if !s.queued[id] {
		return false
	}
	delete(s.queued, id)
	s.stops[id] = true
	return true
}

// Post implements [Runtime]; safe from any goroutine.
func (s *Scheduler) Post(label string, fn func()) {
	s.mu.Lock()
	s.inbox = append(s.inbox, posted{label: label, fn: fn})
	s.mu.Unlock()
}

// Wake implements [Runtime]. The trigger is safe from any goroutine; the
// scheduler decides delay, order and coalescing from the seed.
func (s *Scheduler) Wake(label string, fn func()) func() {
	w := &waker{label: label, fn: fn}
	w.run = func() {
		w.queued = false
		w.fn()
	}
	return func() {
		s.mu.Lock()
		s.inbox = append(s.inbox, posted{label: label, wake: w})
		s.mu.Unlock()
	}
}

// AddPending registers a source of pending work for hang reports: when the
// queue is empty but some source lists work, RunUntilIdle reports a hang.
func (s *Scheduler) AddPending(name string, list func() []string) {
	s.pending = append(s.pending, pendingSource{name, list})
}

func (s *Scheduler) push(at time.Duration, label string, fn func()) uint64 {
	s.seq++
	s.queue.push(event{at: at, tie: s.rng.Uint64(), id: s.seq, label: label, fn: fn})
	return s.seq
}

// drainInbox moves posted work into the queue in inbox order, deciding each
// callback's delay and coalescing from the seed.
func (s *Scheduler) drainInbox() {
	s.mu.Lock()
	in := s.inbox
	s.inbox = nil
	s.mu.Unlock()
	for _, p := range in {
		if p.wake == nil {
			s.push(s.now, p.label, p.fn)
			continue
		}
		w := p.wake
		if w.queued && s.opts.CoalesceChance > 0 && s.rng.Chance(s.opts.CoalesceChance) {
			s.fold(0xC0A1E5CE, uint64(s.now), HashString(w.label))
			continue
		}
		var d time.Duration
		if s.opts.MaxWakeDelay > 0 {
			d = time.Duration(s.rng.Intn(int(s.opts.MaxWakeDelay) + 1))
		}
		w.queued = true
		s.push(s.now+d, w.label, w.run)
	}
}

func (s *Scheduler) fold(vals ...uint64) {
	for _, v := range vals {
		s.trace ^= v
		s.trace *= 1099511628211
	}
}

// Step runs the next event, if any, and reports whether it ran one.
func (s *Scheduler) Step() bool {
	s.drainInbox()
	for s.queue.len() > 0 {
		e := s.queue.pop()
		if len(s.stops) > 0 && s.stops[e.id] {
			delete(s.stops, e.id)
			continue
		}
		if len(s.queued) > 0 {
			delete(s.queued, e.id)
		}
		s.now = e.at
		s.steps++
		s.fold(uint64(e.at), e.id, HashString(e.label))
		e.fn()
		return true
	}
	return false
}

// Steps is the number of events run so far.
func (s *Scheduler) Steps() uint64 { return s.steps }

// TraceHash is the running hash over every event run (time, id, label) and
// every coalescing decision. Two runs of one seed must give the same value.
func (s *Scheduler) TraceHash() uint64 { return s.trace }

// Idle reports whether nothing is queued or posted.
func (s *Scheduler) Idle() bool {
	s.mu.Lock()
	n := len(s.inbox)
	s.mu.Unlock()
	return n == 0 && s.queue.len()-len(s.stops) <= 0
}

// ErrStepLimit is returned when RunUntilIdle ran its step budget out: a
// livelock, reported as a liveness failure.
var ErrStepLimit = errors.New("sim: step limit reached")

// HangError is a liveness failure: no event is runnable but work is pending.
type HangError struct {
	At      time.Duration
	Pending []string // "source: item", sorted
}

func (e *HangError) Error() string {
	return fmt.Sprintf("sim: hang at %v: nothing runnable but %d pending: %s",
		e.At, len(e.Pending), strings.Join(e.Pending, "; "))
}

// RunUntilIdle steps until nothing is runnable. It returns a *HangError when
// pending sources still list work, ErrStepLimit after maxSteps events (0 means
// no limit), nil otherwise.
func (s *Scheduler) RunUntilIdle(maxSteps uint64) error {
	start := s.steps
	for s.Step() {
		if maxSteps > 0 && s.steps-start >= maxSteps {
			return fmt.Errorf("%w after %d steps at %v", ErrStepLimit, maxSteps, s.now)
		}
	}
	if p := s.Pending(); len(p) > 0 {
		return &HangError{At: s.now, Pending: p}
	}
	return nil
}

// RunUntil steps every event due at or before t, then sets the clock to t.
func (s *Scheduler) RunUntil(t time.Duration) {
	for {
		s.drainInbox()
		if s.queue.len() == 0 || s.queue.peek().at > t {
			break
		}
		s.Step()
	}
	if t > s.now {
		s.now = t
	}
}

// Pending lists the work that registered sources still report, sorted.
func (s *Scheduler) Pending() []string {
	var out []string
	for _, src := range s.pending {
		for _, item := range src.list() {
			out = append(out, src.name+": "+item)
		}
	}
	sort.Strings(out)
	return out
}
