// Package bareloop is the yardstick the benchmarks measure the simulator
// against: a bare typed event loop over container/heap, where every event
// re-arms itself after a random delay (fanout chains, like calls in
// flight). It does nothing a run needs — no labels, no hash, no inbox — so
// "pipeline/bare-loop" in make bench is the full checked pipeline's event
// rate as a fraction of the fastest loop of the same shape.
package bareloop

import "container/heap"

// Fanout is the number of concurrent timer chains.
const Fanout = 64

type event struct {
	at  int64
	seq uint64
	fn  func()
}

type events []event

func (h events) Len() int { return len(h) }
func (h events) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].seq < h[j].seq)
}
func (h events) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *events) Push(x any)   { *h = append(*h, x.(event)) }
func (h *events) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// Run plays n events (at least Fanout) and returns how many ran.
func Run(n int) int {
	h := &events{}
	var now int64
	var seq uint64
	state := uint64(1)
	delay := func() int64 { // SplitMix64, like sim.Rand, modulo 100
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return int64((z ^ (z >> 31)) % 100)
	}
	fired, steps := 0, 0
	var tick func()
	tick = func() {
		fired++
		if fired < n {
			seq++
			heap.Push(h, event{now + delay(), seq, tick})
		}
	}
	for range Fanout {
		seq++
		heap.Push(h, event{0, seq, tick})
	}
	for h.Len() > 0 {
		e := heap.Pop(h).(event)
		now = e.at
		steps++
		e.fn()
	}
	return steps
}
