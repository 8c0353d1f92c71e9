package sim

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
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
	// MaxInbox bounds the posted work and callback triggers waiting in the
	// inbox between two steps (0: [DefaultMaxInbox]). A trigger beyond it
	// is dropped and counted: the run is flooded (see [Scheduler.Flood]).
	MaxInbox int
	// MaxQueue bounds the events in the queue (0: [DefaultMaxQueue]); an
	// event scheduled beyond it is dropped and counted like a trigger.
	MaxQueue int
	// Policy chooses among the events that may run next: [Random] (the
	// zero value) or [PCT]. See policy.go.
	Policy Policy
	// Depth is PCT's d (at least 1): the bug depth the run aims at; the
	// scheduler draws d−1 priority change points.
	Depth int
	// Steps is PCT's k: the change points are drawn uniformly over choice
	// points 1..Steps (steps at which more than one event may run; default
	// 1000). It should bound the run's choice points.
	Steps uint64
	// Script, when set, makes every decision (which event of those due
	// runs, each callback's delay, each coalescing) come from it, a
	// decision it does not list taking the default (the event created
	// first, no delay, no coalescing): nothing is drawn from the seed, and
	// Policy, MaxWakeDelay and CoalesceChance are ignored.
	Script *Schedule
	// Record keeps what [Scheduler.Recorded] needs to write the run's
	// decisions as a Schedule.
	Record bool
	_      struct{}
}

// The default bounds of what a scheduler holds. Normal runs stay far below
// them (a 100 000-op log queues its ops up front, and drivers post a few
// events per call); a driver that triggers callbacks or schedules events
// faster than the run can consume them reaches one, and the run then stops
// as flooded instead of growing without bound. At the bound the inbox holds
// about 2 MB and the queue about 50 MB.
const (
	DefaultMaxInbox = 1 << 16
	DefaultMaxQueue = 1 << 20
)

// Scheduler is the deterministic [Runtime]: a virtual clock and an event
// queue stepped from outside. It is not safe for concurrent use except for
// Post and Wake triggers, which land in an inbox drained at each Step.
type Scheduler struct {
	opts   Options
	now    time.Duration
	stamps atomic.Uint64 // Stamp's count: findings numbered in the order made
	queue  eventHeap
	seq    uint64
	rng    Rand // tie-breaks, delays, coalescing
	root   uint64
	trace  uint64
	steps  uint64
	stops  idSet // stopped timers not yet popped
	queued idSet // event ids still in the queue (only for timers)

	mu    sync.Mutex
	inbox []posted
	// posts counts what the inbox holds (written under mu): a Step with
	// nothing posted skips the lock.
	posts atomic.Int64
	// spareInbox is the drained inbox's storage, reused by the next drain
	// (only drainInbox, on the stepping goroutine, touches it).
	spareInbox []posted
	// spareWakers is the rest of the chunk WakeRun carves wakers from
	// (under mu).
	spareWakers []waker

	pending []pendingSource

	last     string // label of the last event run
	maxInbox int
	maxQueue int
	// dropped counts triggers and events refused at a bound; floodLabel
	// and floodWhere describe the first (under mu); floodAt is when the
	// stepping goroutine first saw it (Flood).
	dropped    atomic.Uint64
	floodLabel string
	floodWhere string
	floodAt    time.Duration
	floodSeen  bool
	wakes      uint64 // wake triggers drained so far (numbered from 1)
	script     *scriptState
	pct        *pctState
	rec        *recorder
}

type posted struct {
	label string
	fn    func()
	wake  *waker
	src   int32 // PCT: the source of the event that posted it (-1: none)
}

type waker struct {
	s      *Scheduler
	label  string
	r      Runner
	queued bool  // an event for it is in the queue and has not run
	src    int32 // PCT: its priority source, -1 until its first trigger
}

type pendingSource struct {
	name string
	list func() []string
}

// New returns a scheduler at virtual time zero.
func New(opts Options) *Scheduler {
	s := &Scheduler{
		opts:  opts,
		rng:   *NewRand(SubSeed(opts.Seed, "sim/scheduler")),
		root:  opts.Seed,
		trace: 14695981039346656037,

		maxInbox: opts.MaxInbox,
		maxQueue: opts.MaxQueue,
	}
	if s.maxInbox <= 0 {
		s.maxInbox = DefaultMaxInbox
	}
	if s.maxQueue <= 0 {
		s.maxQueue = DefaultMaxQueue
	}
	switch {
	case opts.Script != nil:
		s.script = &scriptState{sc: opts.Script}
	case opts.Policy == PCT:
		s.pct = newPCT(opts)
	}
	if opts.Record {
		s.rec = &recorder{}
	}
	s.queue.runs = s.script == nil && s.pct == nil // the policies scan the queue: one heap
	return s
}

// Reserve makes room for n queued events, so a run that knows its size
// (a log's ops are queued up front) grows the queue once.
func (s *Scheduler) Reserve(n int) {
	s.queue.ks = slices.Grow(s.queue.ks, n)
	s.queue.bodies = slices.Grow(s.queue.bodies, n)
}

// Seed is the run's seed.
func (s *Scheduler) Seed() uint64 { return s.root }

// Now implements [Runtime].
func (s *Scheduler) Now() time.Duration { return s.now }

// Stamp implements [Stamper]: every oracle on this scheduler numbers its
// findings from one count, so findings of one virtual instant keep the
// order they were made in. It decides nothing and is in no trace.
func (s *Scheduler) Stamp() uint64 { return s.stamps.Add(1) }

// Rand implements [Runtime].
func (s *Scheduler) Rand(subsystem string) *Rand { return NewRand(SubSeed(s.root, subsystem)) }

// After implements [Runtime].
func (s *Scheduler) After(d time.Duration, label string, fn func()) Timer {
	return s.AfterRun(d, label, funcRunner(fn))
}

// AfterRun is After for a Runner: r.Run runs once, d from now. The event is
// the same as After's (same id, order and trace); only the closure is saved.
func (s *Scheduler) AfterRun(d time.Duration, label string, r Runner) Timer {
	if d < 0 {
		d = 0
	}
	id := s.push(s.now+d, label, r)
	s.queued.add(id)
	return NewTimer(s, id)
}

// StopTimer implements [TimerStopper].
func (s *Scheduler) StopTimer(id uint64) bool {
	if !s.queued.del(id) {
		return false
	}
	s.stops.add(id)
	if s.rec != nil {
		s.rec.stopped(id, s.steps)
	}
	return true
}

// Post implements [Runtime]; safe from any goroutine.
func (s *Scheduler) Post(label string, fn func()) {
	src := int32(-1)
	if s.pct != nil {
		src = s.pct.cur.Load()
	}
	s.mu.Lock()
	s.postLocked(posted{label: label, fn: fn, src: src})
	s.mu.Unlock()
}

// postLocked appends p to the inbox, or drops it when the inbox is full.
func (s *Scheduler) postLocked(p posted) {
	if len(s.inbox) >= s.maxInbox {
		s.dropLocked(p.label, "inbox", s.maxInbox)
		return
	}
	if s.inbox == nil {
		s.inbox = make([]posted, 0, 8) // a few per step: not through append's 1, 2, 4
	}
	s.inbox = append(s.inbox, p)
	s.posts.Store(int64(len(s.inbox)))
}

// dropLocked counts one trigger or event refused at a bound.
func (s *Scheduler) dropLocked(label, where string, bound int) {
	if s.dropped.Add(1) == 1 {
		s.floodLabel, s.floodWhere = label, fmt.Sprintf("%s bound of %d", where, bound)
	}
}

// Wake implements [Runtime]. The trigger is safe from any goroutine; the
// scheduler decides delay, order and coalescing from the seed.
func (s *Scheduler) Wake(label string, fn func()) func() {
	return s.WakeRun(label, funcRunner(fn))
}

// WakeRun is Wake for a Runner: each delivery runs r.Run; the trigger and
// its events are the same as Wake's, without a closure for the work.
func (s *Scheduler) WakeRun(label string, r Runner) func() {
	s.mu.Lock() // a driver may make its wakes on its own goroutines
	if len(s.spareWakers) == 0 {
		s.spareWakers = make([]waker, 32) // wakers in chunks: one allocation per 32
	}
	w := &s.spareWakers[0]
	s.spareWakers = s.spareWakers[1:]
	s.mu.Unlock()
	*w = waker{s: s, label: label, r: r, src: -1}
	return w.trigger
}

// trigger posts the waker's delivery: the func WakeRun returns.
func (w *waker) trigger() {
	w.s.mu.Lock()
	w.s.postLocked(posted{label: w.label, wake: w})
	w.s.mu.Unlock()
}

// AddPending registers a source of pending work for hang reports: when the
// queue is empty but some source lists work, RunUntilIdle reports a hang.
func (s *Scheduler) AddPending(name string, list func() []string) {
	s.pending = append(s.pending, pendingSource{name, list})
}

// push queues r: a func, a wake's delivery or a caller's Runner.
func (s *Scheduler) push(at time.Duration, label string, r Runner) uint64 {
	s.seq++
	if s.queue.len() >= s.maxQueue {
		// The id is spent (a Timer may name it), the event never runs.
		s.mu.Lock()
		s.dropLocked(label, "queue", s.maxQueue)
		s.mu.Unlock()
		return s.seq
	}
	if s.script != nil || s.pct != nil {
		// No seeded tie-break: the heap orders by (time, creation).
		e := event{key: key{at: at, id: s.seq}, due: at, label: label, r: r}
		if s.pct != nil {
			e.src = s.pct.eventSource()
		}
		s.queue.push(e)
	} else {
		s.queue.push(event{key: key{at: at, tie: s.rng.Uint64(), id: s.seq}, label: label, r: r})
	}
	if s.rec != nil {
		s.rec.pushed(s.seq, s.steps, at)
	}
	return s.seq
}

// drainInbox moves posted work into the queue in inbox order, deciding each
// callback's delay and coalescing from the seed (or the script). The check
// for an empty inbox is inlined: most calls find nothing posted.
func (s *Scheduler) drainInbox() {
	if s.posts.Load() != 0 {
		s.moveInbox()
	}
}

// moveInbox is drainInbox's work, once something was posted.
func (s *Scheduler) moveInbox() {
	s.mu.Lock()
	in := s.inbox
	s.inbox = s.spareInbox[:0] // two buffers, swapped: no allocation per step
	s.posts.Store(0)
	s.mu.Unlock()
	// The next drain swaps in back in. Its stale entries are left for later
	// posts to overwrite, not cleared: a few wakers and funcs kept a while.
	s.spareInbox = in[:0]
	for _, p := range in {
		if p.wake == nil {
			if s.pct != nil {
				s.pct.cur.Store(p.src) // a post belongs to the chain that posted it
			}
			s.push(s.now, p.label, funcRunner(p.fn))
			if s.pct != nil {
				s.pct.cur.Store(-1)
			}
			continue
		}
		w := p.wake
		s.wakes++
		if w.queued && s.coalesce() {
			s.fold(0xC0A1E5CE, uint64(s.now), HashString(w.label))
			if s.rec != nil {
				s.rec.coalesced = append(s.rec.coalesced, s.wakes)
			}
			continue
		}
		w.queued = true
		switch {
		case s.script != nil:
			s.pushWake(s.now+s.script.delay(s.wakes), w)
		case s.pct != nil:
			s.pushWake(s.now, w)
		default:
			var d time.Duration
			if s.opts.MaxWakeDelay > 0 {
				d = time.Duration(s.rng.Intn(int(s.opts.MaxWakeDelay) + 1))
			}
			s.push(s.now+d, w.label, w)
			if s.rec != nil {
				s.rec.wake(s.seq, s.wakes, s.now)
			}
		}
	}
}

// coalesce decides whether a repeated trigger of a queued wake is merged.
func (s *Scheduler) coalesce() bool {
	if s.script != nil {
		return s.script.coalesce(s.wakes)
	}
	return s.opts.CoalesceChance > 0 && s.rng.Chance(s.opts.CoalesceChance)
}

// pushWake queues a wake's delivery under a script or PCT: due at at; PCT
// may deliver it as late as MaxWakeDelay after the trigger.
func (s *Scheduler) pushWake(at time.Duration, w *waker) {
	s.seq++
	e := event{key: key{at: at, id: s.seq}, due: at, label: w.label, r: w}
	if s.pct != nil {
		if w.src < 0 {
			w.src = s.pct.newSource()
		}
		e.src, e.due = w.src, at+s.opts.MaxWakeDelay
	}
	s.queue.push(e)
	if s.rec != nil {
		s.rec.pushed(s.seq, s.steps, at)
		s.rec.wake(s.seq, s.wakes, s.now)
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
	switch {
	case s.script != nil:
		return s.stepScripted()
	case s.pct != nil:
		return s.stepPCT()
	}
	for s.queue.len() > 0 {
		e := s.queue.pop()
		if s.stops.n > 0 && s.stops.del(e.id) {
			continue
		}
		if s.queued.n > 0 {
			s.queued.del(e.id)
		}
		s.now = e.at
		s.steps++
		s.last = e.label
		s.fold(uint64(e.at), e.id, HashString(e.label))
		if s.rec != nil {
			s.rec.ran(e.id, s.steps, e.at)
		}
		e.call()
		return true
	}
	return false
}

// run runs e, taken out of the queue, at virtual time at (the policies'
// common tail of Step).
func (s *Scheduler) run(e event, at time.Duration) {
	if s.queued.n > 0 {
		s.queued.del(e.id)
	}
	s.now = at
	s.steps++
	s.fold(uint64(at), e.id, HashString(e.label))
	if s.rec != nil {
		s.rec.ran(e.id, s.steps, at)
	}
	if s.pct != nil {
		s.pct.cur.Store(e.src)
		defer s.pct.cur.Store(-1)
	}
	e.call()
}

// purgeTop pops stopped timers off the top of the queue and reports
// whether an event is left.
func (s *Scheduler) purgeTop() bool {
	for s.queue.len() > 0 {
		id := s.queue.peek().id
		if s.stops.n == 0 || !s.stops.del(id) {
			return true
		}
		s.queue.pop()
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
	n := s.posts.Load()
	return n == 0 && s.queue.len()-s.stops.n <= 0
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
// no limit), a *FloodError once a trigger or event was dropped at a bound,
// nil otherwise.
func (s *Scheduler) RunUntilIdle(maxSteps uint64) error {
	start := s.steps
	for s.Step() {
		if err := s.Flood(); err != nil {
			return err
		}
		if maxSteps > 0 && s.steps-start >= maxSteps {
			return s.limitError(maxSteps)
		}
	}
	if err := s.Flood(); err != nil {
		return err
	}
	if p := s.Pending(); len(p) > 0 {
		return &HangError{At: s.now, Pending: p}
	}
	return nil
}

func (s *Scheduler) limitError(maxSteps uint64) error {
	return fmt.Errorf("%w after %d steps at %v (the last event: %q)", ErrStepLimit, maxSteps, s.now, s.last)
}

// RunUntil steps every event due at or before t, then sets the clock to t.
// It has no step limit: RunUntilLimit is the bounded form, for any run a
// driver under test can keep busy.
func (s *Scheduler) RunUntil(t time.Duration) { _ = s.RunUntilLimit(t, 0) }

// RunUntilLimit steps every event due at or before t, then sets the clock
// to t. After maxSteps events (0: no limit) it stops with ErrStepLimit, and
// once a trigger or event was dropped at a bound with a *FloodError; the
// clock then stays where the last event left it.
func (s *Scheduler) RunUntilLimit(t time.Duration, maxSteps uint64) error {
	start := s.steps
	for {
		s.drainInbox()
		if s.queue.len() == 0 || s.queue.peek().at > t {
			break
		}
		s.Step()
		if err := s.Flood(); err != nil {
			return err
		}
		if maxSteps > 0 && s.steps-start >= maxSteps {
			return s.limitError(maxSteps)
		}
	}
	if t > s.now {
		s.now = t
	}
	return nil
}

// LastLabel is the label of the last event run ("" before the first).
func (s *Scheduler) LastLabel() string { return s.last }

// ErrFlood is wrapped by every *FloodError.
var ErrFlood = errors.New("sim: flood")

// FloodError says that triggers or events were dropped at a bound
// (Options.MaxInbox, Options.MaxQueue): something posts, wakes or schedules
// faster than the run consumes it. The run's state no longer follows its
// code (work was dropped), so the run must stop and report it.
type FloodError struct {
	At      time.Duration // when the stepping loop first saw a drop
	Label   string        // the first dropped trigger's or event's label
	Where   string        // "inbox bound of 65536", "queue bound of 1048576"
	Dropped uint64        // how many were dropped so far
}

func (e *FloodError) Error() string {
	return fmt.Sprintf("sim: flood at %v: %d triggers or events dropped at the %s (the first: %q)", e.At, e.Dropped, e.Where, e.Label)
}

func (e *FloodError) Unwrap() error { return ErrFlood }

// Flood is nil until a trigger or event was dropped at a bound, then a
// *FloodError describing it. It is for the goroutine that steps (like
// Step), cheap enough to call after every step: the check for no drop is
// inlined.
func (s *Scheduler) Flood() error {
	if s.dropped.Load() == 0 {
		return nil
	}
	return s.floodError()
}

// floodError is Flood's answer once something was dropped.
func (s *Scheduler) floodError() error {
	if !s.floodSeen {
		s.floodSeen, s.floodAt = true, s.now
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &FloodError{At: s.floodAt, Label: s.floodLabel, Where: s.floodWhere, Dropped: s.dropped.Load()}
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
