package sim

import (
	"errors"
	"testing"
	"time"
)

// TestSchedulerBounds: the inbox and the queue hold at most their bounds;
// what is posted, woken or scheduled beyond them is dropped, counted and
// reported as a flood by Flood and by the bounded run loops; RunUntilLimit
// stops a loop that never lets time pass at its step cap.
func TestSchedulerBounds(t *testing.T) {
	const repro = "(repro: go test ./sim -run TestSchedulerBounds)"
	t.Run("inbox", func(t *testing.T) {
		s := New(Options{Seed: 1, MaxInbox: 10})
		wake := s.Wake("cb", func() {})
		for range 8 {
			s.Post("post", func() {})
		}
		for range 7 {
			wake()
		}
		if len(s.inbox) != 10 {
			t.Fatalf("inbox holds %d, want the bound 10 %s", len(s.inbox), repro)
		}
		var fe *FloodError
		if err := s.Flood(); !errors.As(err, &fe) || fe.Dropped != 5 || fe.Label != "cb" || !errors.Is(err, ErrFlood) {
			t.Fatalf("Flood() = %v, want 5 dropped, the first of them \"cb\" %s", err, repro)
		}
		if err := s.RunUntilIdle(0); !errors.Is(err, ErrFlood) || s.Steps() != 1 {
			t.Fatalf("RunUntilIdle after a flood: %v after %d steps, want the flood after 1 %s", err, s.Steps(), repro)
		}
	})
	t.Run("queue", func(t *testing.T) {
		s := New(Options{Seed: 1, MaxQueue: 5})
		ran := 0
		for i := range 8 {
			s.After(time.Duration(i), "timer", func() { ran++ })
		}
		if s.queue.len() != 5 {
			t.Fatalf("queue holds %d, want the bound 5 %s", s.queue.len(), repro)
		}
		if err := s.RunUntilLimit(time.Second, 0); !errors.Is(err, ErrFlood) {
			t.Fatalf("RunUntilLimit after a flood: %v, want the flood %s", err, repro)
		}
		if fe := (*FloodError)(nil); !errors.As(s.Flood(), &fe) || fe.Dropped != 3 {
			t.Fatalf("Flood() = %v, want 3 dropped %s", s.Flood(), repro)
		}
	})
	t.Run("step-cap", func(t *testing.T) {
		s := New(Options{Seed: 1})
		var again func()
		again = func() { s.Post("again", again) } // never lets time pass
		s.Post("again", again)
		err := s.RunUntilLimit(time.Millisecond, 100)
		if !errors.Is(err, ErrStepLimit) || s.Steps() != 100 || s.LastLabel() != "again" {
			t.Fatalf("RunUntilLimit: %v after %d steps (last %q), want the step limit after 100, last \"again\" %s", err, s.Steps(), s.LastLabel(), repro)
		}
		if err := s.RunUntilIdle(50); !errors.Is(err, ErrStepLimit) || s.Steps() != 150 {
			t.Fatalf("RunUntilIdle: %v after %d steps, want the step limit after 150 %s", err, s.Steps(), repro)
		}
		if s.Flood() != nil {
			t.Fatalf("a loop within the bounds is reported as a flood: %v %s", s.Flood(), repro)
		}
	})
}
