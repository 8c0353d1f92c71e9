package sim

import "time"

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
type eventHeap struct {
	ks     []key
	bodies []body
	free   int32 // 1 + the slot of the first free body (0: none)
}

func (h *eventHeap) len() int   { return len(h.ks) }
func (h *eventHeap) peek() *key { return &h.ks[0] }

// label is the label of the event at index i.
func (h *eventHeap) label(i int) string { return h.bodies[h.ks[i].slot].label }

// due is PCT's due time of the event at index i.
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
	h.ks = append(h.ks, k)
	h.up(len(h.ks) - 1)
}

// take returns the event of k, which left the heap, and frees its slot.
func (h *eventHeap) take(k key) event {
	b := &h.bodies[k.slot]
	e := event{key: k, label: b.label, r: b.r, due: b.due}
	*b = body{next: h.free}
	h.free = k.slot + 1
	return e
}

func (h *eventHeap) pop() event {
	ks := h.ks
	top := ks[0]
	n := len(ks) - 1
	ks[0] = ks[n]
	h.ks = ks[:n]
	h.down(0)
	return h.take(top)
}

// up and down move a hole instead of swapping: a key is copied once per
// level, not twice.
func (h *eventHeap) up(i int) {
	ks := h.ks
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

func (h *eventHeap) down(i int) {
	ks, n := h.ks, len(h.ks)
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
