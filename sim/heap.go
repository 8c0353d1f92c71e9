package sim

import "time"

// event is one queued function. Ordering: time, then a seeded tie-break,
// then sequence (which makes the order total).
type event struct {
	at    time.Duration
	tie   uint64
	id    uint64
	label string
	r     Runner        // the work: a func, a wake's delivery (*waker) or a caller's Runner
	due   time.Duration // PCT: the latest time it may run (at, or a wake's at+MaxWakeDelay)
	src   int32         // PCT: its priority source
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

func (a *event) before(b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.tie != b.tie {
		return a.tie < b.tie
	}
	return a.id < b.id
}

// eventHeap is a hand-written binary min-heap of events by value: no
// interface conversions and no per-event allocation beyond the slice.
type eventHeap struct{ es []event }

func (h *eventHeap) len() int     { return len(h.es) }
func (h *eventHeap) peek() *event { return &h.es[0] }

func (h *eventHeap) push(e event) {
	h.es = append(h.es, e)
	h.up(len(h.es) - 1)
}

func (h *eventHeap) pop() event {
	es := h.es
	top := es[0]
	n := len(es) - 1
	es[0] = es[n]
	es[n] = event{}
	h.es = es[:n]
	h.down(0)
	return top
}

// up and down move a hole instead of swapping: an event is copied once per
// level, not twice (events are 72 bytes).
func (h *eventHeap) up(i int) {
	es := h.es
	e := es[i]
	for i > 0 {
		p := (i - 1) / 2
		if !e.before(&es[p]) {
			break
		}
		es[i] = es[p]
		i = p
	}
	es[i] = e
}

func (h *eventHeap) down(i int) {
	es, n := h.es, len(h.es)
	if i >= n {
		return
	}
	e := es[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && es[r].before(&es[l]) {
			m = r
		}
		if !es[m].before(&e) {
			break
		}
		es[i] = es[m]
		i = m
	}
	es[i] = e
}
