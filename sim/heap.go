package sim

import (
	"sort"
	"time"
)

// event is one queued function. Ordering: time, then a seeded tie-break,
// then sequence (which makes the order total).
type event struct {
	key
	label string
	r     Runner        // the work: a func, a wake's delivery (*waker) or a caller's Runner
	due   time.Duration // PCT: the latest time it may run (at, or a wake's at+MaxWakeDelay)
}

// key is what orders an event, and what the heap moves: no pointers, so a
// move up or down the heap costs no GC write barrier, and 32 bytes, not an
// event's 72. The rest of the event stays put in its slot.
type key struct {
	at   time.Duration
	tie  uint64
	id   uint64
	slot int32 // where the event's body is (eventHeap.bodies)
	src  int32 // PCT: its priority source
}

// body is the part of a queued event the heap does not order by.
type body struct {
	label string
	r     Runner
	due   time.Duration
	next  int32 // a free body: 1 + the slot of the next free one (0: none)
}

// call runs the event's work.
func (e *event) call() { e.r.Run() }

// Runner is work an event runs. [Scheduler.AfterRun] takes one, so a caller
// holding a pointer to its state schedules it without a closure per event.
type Runner interface{ Run() }

// funcRunner is a func as a Runner: a func is pointer-shaped, so the
// conversion allocates nothing.
type funcRunner func()

func (f funcRunner) Run() { f() }

// Run delivers a wake: clears queued (a later trigger queues it again), runs fn.
func (w *waker) Run() {
	w.queued = false
	w.r.Run()
}

func (a *key) before(b *key) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.tie != b.tie {
		return a.tie < b.tie
	}
	return a.id < b.id
}

// eventHeap is a hand-written binary min-heap of event keys by value (no
// interface conversions, no per-event allocation beyond the two slices);
// each key names the slot of its event's body, and freed slots are reused.
//
// A queue loaded in bulk (a log's ops, queued up front) is sorted once into
// a run, when a pop finds no run left and runMin keys or more were pushed
// since the last pop (with runs set: the default policy): pops then take
// the least of the run's next key and the heap's top, and the heap holds
// only what was pushed since, a few levels deep instead of all the ops'. A
// queue that stays long without a bulk load (timer chains re-arming
// themselves) stays a heap. Every layout pops the same order, since (at,
// tie, id) is total.
type eventHeap struct {
	// ks[:rn] is the run, sorted down to its least key, last; ks[base:] is
	// the heap; ks[rn:base] is room the run gave up (compact closes it: when
	// the run is used up, or before the heap would grow ks).
	ks       []key
	rn, base int
	runs     bool
	pushed   int // pushes since the last pop
	bodies   []body
	free     int32 // 1 + the slot of the first free body (0: none)
}

// runMin is the bulk load a pop sorts into a run.
const runMin = 64

func (h *eventHeap) len() int { return h.rn + len(h.ks) - h.base }

// peek is the least key (the queue is not empty).
func (h *eventHeap) peek() *key {
	if h.rn > 0 && (h.base == len(h.ks) || h.ks[h.rn-1].before(&h.ks[h.base])) {
		return &h.ks[h.rn-1]
	}
	return &h.ks[h.base]
}

// all makes the queue one heap again, ks, and returns it: for the code that
// scans the queue or takes events out of its middle (policies, Deliver);
// due, find and remove index into it.
func (h *eventHeap) all() []key {
	if h.rn > 0 || h.base > 0 {
		h.compact()
		h.rn, h.base = 0, 0
		h.heapify()
	}
	return h.ks
}

func (h *eventHeap) heapify() {
	for i := len(h.ks)/2 - 1; i >= 0; i-- {
		down(h.ks, i)
	}
}

// label is the label of k, a key of the queue.
func (h *eventHeap) label(k *key) string { return h.bodies[k.slot].label }

// due is PCT's due time of the event at index i of all.
func (h *eventHeap) due(i int) time.Duration { return h.bodies[h.ks[i].slot].due }

func (h *eventHeap) push(e event) {
	k := e.key
	b := body{label: e.label, r: e.r, due: e.due}
	if h.free > 0 {
		k.slot = h.free - 1
		h.free = h.bodies[k.slot].next
		h.bodies[k.slot] = b
	} else {
		k.slot = int32(len(h.bodies))
		h.bodies = append(h.bodies, b)
	}
	if len(h.ks) == cap(h.ks) && h.base > h.rn {
		h.compact() // the room the run gave up, before growing
	}
	h.ks = append(h.ks, k)
	h.pushed++
	hp := h.ks[h.base:]
	up(hp, len(hp)-1)
}

// take returns the event of k, which left the queue, and frees its slot.
func (h *eventHeap) take(k key) event {
	b := &h.bodies[k.slot]
	e := event{key: k, label: b.label, r: b.r, due: b.due}
	*b = body{next: h.free}
	h.free = k.slot + 1
	return e
}

// pop takes the least event out (the queue is not empty).
func (h *eventHeap) pop() event {
	if h.rn == 0 && (h.base > 0 || h.pushed >= runMin) {
		h.settle()
	}
	h.pushed = 0
	if h.rn > 0 && (h.base == len(h.ks) || h.ks[h.rn-1].before(&h.ks[h.base])) {
		h.rn--
		return h.take(h.ks[h.rn])
	}
	hp := h.ks[h.base:]
	top := hp[0]
	n := len(hp) - 1
	hp[0] = hp[n]
	h.ks = h.ks[:h.base+n]
	down(hp[:n], 0)
	return h.take(top)
}

// compact moves the heap down against the run.
func (h *eventHeap) compact() {
	if h.base > h.rn {
		h.ks = h.ks[:h.rn+copy(h.ks[h.rn:], h.ks[h.base:])]
		h.base = h.rn
	}
}

// settle runs when no run is left: the heap moves back to the front of ks
// and, after a bulk load, is sorted into a run.
func (h *eventHeap) settle() {
	h.compact()
	if h.runs && h.pushed >= runMin {
		sort.Sort((*leastLast)(&h.ks)) // a pointer: no allocation for the interface
		h.rn, h.base = len(h.ks), len(h.ks)
	}
}

// leastLast sorts keys down to the least, last (sort.Interface: keys are
// compared in place, not copied into a comparator).
type leastLast []key

func (ks *leastLast) Len() int           { return len(*ks) }
func (ks *leastLast) Less(i, j int) bool { return (*ks)[j].before(&(*ks)[i]) }
func (ks *leastLast) Swap(i, j int)      { (*ks)[i], (*ks)[j] = (*ks)[j], (*ks)[i] }

// up and down move a hole instead of swapping: a key is copied once per
// level, not twice.
func up(ks []key, i int) {
	k := ks[i]
	for i > 0 {
		p := (i - 1) / 2
		if !k.before(&ks[p]) {
			break
		}
		ks[i] = ks[p]
		i = p
	}
	ks[i] = k
}

func down(ks []key, i int) {
	n := len(ks)
	if i >= n {
		return
	}
	k := ks[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && ks[r].before(&ks[l]) {
			m = r
		}
		if !ks[m].before(&k) {
			break
		}
		ks[i] = ks[m]
		i = m
	}
	ks[i] = k
}
