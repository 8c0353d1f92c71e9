package sim

import (
	"sort"
	"time"
)

// EventInfo describes one queued event for a caller that picks what runs
// next (the scenario language's `deliver`): its id, when it is due and its
// label.
type EventInfo struct {
	ID    uint64
	At    time.Duration
	Label string
}

// Queued lists the queued events in the order Step would run them. It first
// moves posted work and callback triggers into the queue (as Step does), so
// every pending callback has an id; the seed's decisions for them are drawn
// exactly as Step would draw them. Stopped timers are left out.
func (s *Scheduler) Queued() []EventInfo {
	s.drainInbox()
	ks := make([]*key, 0, s.queue.len())
	all := s.queue.all()
	for i := range all {
		k := &all[i]
		if s.stops.has(k.id) {
			continue
		}
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].before(ks[j]) })
	out := make([]EventInfo, len(ks))
	for i, k := range ks {
		out[i] = EventInfo{ID: k.id, At: k.at, Label: s.queue.label(k)}
	}
	return out
}

// Next reports the event Step would run next, if any.
func (s *Scheduler) Next() (EventInfo, bool) {
	s.drainInbox()
	for s.queue.len() > 0 {
		e := s.queue.peek()
		if s.stops.n > 0 && s.stops.del(e.id) {
			s.queue.pop()
			continue
		}
		return EventInfo{ID: e.id, At: e.at, Label: s.queue.label(e)}, true
	}
	return EventInfo{}, false
}

// Deliver takes the queued event id out of the queue and runs it next, even
// when other events were due first: this is how a scenario states an
// interleaving the seed did not pick. Time never runs backwards: the event
// runs at its due time (or now, if that is later), and every event due
// before then is postponed to that instant — it runs later than asked, as
// on a slow machine, and those postponed events keep a seeded order among
// themselves. It reports false, running nothing, when id is not queued
// (already run, never scheduled, or a stopped timer). Like Step it counts
// the event and folds it into the trace hash.
func (s *Scheduler) Deliver(id uint64) bool {
	s.drainInbox()
	if s.stops.has(id) {
		return false
	}
	i := s.queue.find(id)
	if i < 0 {
		return false
	}
	e := s.queue.remove(i)
	at := max(s.now, e.at)
	s.queue.postpone(at)
	if s.queued.n > 0 {
		s.queued.del(e.id)
	}
	s.now = at
	s.steps++
	s.last = e.label
	s.fold(uint64(at), e.id, HashString(e.label))
	e.call()
	return true
}

// postpone moves every event due before at to at and restores the heap
// order.
func (h *eventHeap) postpone(at time.Duration) {
	moved := false
	for i := range h.all() {
		if h.ks[i].at < at {
			h.ks[i].at = at
			moved = true
		}
	}
	if moved {
		h.heapify()
	}
}

// find returns the index in all of the event with id, or -1.
func (h *eventHeap) find(id uint64) int {
	for i := range h.all() {
		if h.ks[i].id == id {
			return i
		}
	}
	return -1
}

// remove takes the event at index i of all out of the heap and restores
// the heap order: the last event takes its place and sifts down or up.
func (h *eventHeap) remove(i int) event {
	ks := h.all()
	n := len(ks) - 1
	out := ks[i]
	ks[i] = ks[n]
	h.ks = ks[:n]
	if i < n {
		down(h.ks, i)
		up(h.ks, i)
	}
	return h.take(out)
}
