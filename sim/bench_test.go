package sim

import (
	"container/heap"
	"testing"
	"time"
)

// The scheduler is measured next to a bare loop over a container/heap of
// closures doing the same work (one timer re-arming itself per event), in the
// same run: `go test -bench Loop -run ^$ ./sim`. Goal: the scheduler keeps at
// least half of the bare loop's events/s.

const fanout = 64 // concurrent timer chains, like calls in flight

func BenchmarkSchedulerLoop(b *testing.B) {
	s := New(Options{Seed: 1})
	r := s.Rand("bench")
	n := 0
	var tick func()
	tick = func() {
		n++
		if n < b.N {
			s.After(time.Duration(r.Intn(100)), "tick", tick)
		}
	}
	for range fanout {
		s.After(0, "tick", tick)
	}
	b.ResetTimer()
	for s.Step() {
	}
	b.ReportMetric(float64(s.Steps())/b.Elapsed().Seconds(), "events/s")
}

type bareEvent struct {
	at  int64
	seq uint64
	fn  func()
}
type bareHeap []bareEvent

func (h bareHeap) Len() int { return len(h) }
func (h bareHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].seq < h[j].seq)
}
func (h bareHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *bareHeap) Push(x any)   { *h = append(*h, x.(bareEvent)) }
func (h *bareHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func BenchmarkBareLoop(b *testing.B) {
	h := &bareHeap{}
	var now int64
	var seq uint64
	r := NewRand(1)
	n, steps := 0, 0
	var tick func()
	tick = func() {
		n++
		if n < b.N {
			seq++
			heap.Push(h, bareEvent{now + int64(r.Intn(100)), seq, tick})
		}
	}
	for range fanout {
		seq++
		heap.Push(h, bareEvent{0, seq, tick})
	}
	b.ResetTimer()
	for h.Len() > 0 {
		e := heap.Pop(h).(bareEvent)
		now = e.at
		steps++
		e.fn()
	}
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "events/s")
}
