package sim

import (
	"testing"
	"time"

	"github.com/storesim/storesim/sim/bareloop"
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

// BenchmarkBareLoop is the yardstick (package bareloop) alone.
func BenchmarkBareLoop(b *testing.B) {
	steps := bareloop.Run(b.N)
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "events/s")
}
