package sim

import "time"

// event is one queued function. Ordering: time, then a seeded tie-break,
// then sequence (which makes the order total).
type event struct {
	at    time.Duration
	tie   uint64
	id    uint64
	label string
	fn    func()
	w     *waker        // a wake's delivery (fn is nil): clears w.queued, runs w.fn
	due   time.Duration // PCT: the latest time it may run (at, or a wake's at+MaxWakeDelay)
	src   int32         // PCT: its priority source
}

// call runs the event's work.
func (e *event) call() {
	if w := e.w; w != nil {
		w.queued = false
		w.fn()
		return
	}
	e.fn()
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

func (h *eventHeap) up(i int) {
	es := h.es
	for i > 0 {
		p := (i - 1) / 2
		if !es[i].before(&es[p]) {
			break
		}
		es[i], es[p] = es[p], es[i]
		i = p
	}
}

func (h *eventHeap) down(i int) {
	es, n := h.es, len(h.es)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && es[r].before(&es[l]) {
			m = r
		}
		if !es[m].before(&es[i]) {
			break
		}
		es[i], es[m] = es[m], es[i]
		i = m
	}
}
