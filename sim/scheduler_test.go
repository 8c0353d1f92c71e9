package sim

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// workload drives a scheduler with a randomized mix of timers, posts, wakes
// (callbacks triggered repeatedly, some coalesced) and stopped timers, all
// drawn from the run's seed, and returns the trace hash and a log of what ran.
func workload(seed uint64) (uint64, string) {
	h, l, _ := workloadOn(Options{Seed: seed, MaxWakeDelay: 50 * time.Microsecond, CoalesceChance: 0.3})
	return h, l
}

// workloadOn is workload on a scheduler built with o; it also returns the
// scheduler, run to idle.
func workloadOn(o Options) (uint64, string, *Scheduler) {
	s := New(o)
	r := s.Rand("workload")
	var log strings.Builder
	counter := 0
	wakes := make([]func(), 4)
	for i := range wakes {
		name := fmt.Sprintf("cb%d", i)
		wakes[i] = s.Wake(name, func() { fmt.Fprintf(&log, "%v %s %d\n", s.Now(), name, counter) })
	}
	var spawn func(depth int)
	spawn = func(depth int) {
		counter++
		if depth > 3 {
			return
		}
		for range 1 + r.Intn(3) {
			switch r.Intn(4) {
			case 0:
				d := time.Duration(r.Intn(100)) * time.Microsecond
				s.After(d, "timer", func() { spawn(depth + 1) })
			case 1:
				s.Post("post", func() { spawn(depth + 1) })
			case 2:
				wakes[r.Intn(len(wakes))]()
			case 3:
				t := s.After(time.Duration(r.Intn(100))*time.Microsecond, "stopped", func() { log.WriteString("stopped timer ran\n") })
				t.Stop()
			}
		}
	}
	for range 3 {
		s.After(time.Duration(r.Intn(10))*time.Microsecond, "start", func() { spawn(0) })
	}
	if err := s.RunUntilIdle(0); err != nil {
		panic(err)
	}
	return s.TraceHash(), log.String(), s
}

// TestDeterminism: 1000 seeds, each run twice, must give identical trace
// hashes and logs; different seeds must differ.
func TestDeterminism(t *testing.T) {
	n := uint64(1000)
	if testing.Short() {
		n = 100
	}
	hashes := map[uint64]uint64{}
	for seed := range n {
		h1, l1 := workload(seed)
		h2, l2 := workload(seed)
		if h1 != h2 || l1 != l2 {
			t.Fatalf("seed %d: trace hash %#x vs %#x on a replay (repro: go test ./sim -run TestDeterminism)", seed, h1, h2)
		}
		if strings.Contains(l1, "stopped timer ran") {
			t.Fatalf("seed %d: a stopped timer ran (repro: go test ./sim -run TestDeterminism)", seed)
		}
		if prev, dup := hashes[h1]; dup {
			t.Fatalf("seeds %d and %d share trace hash %#x (repro: go test ./sim -run TestDeterminism)", prev, seed, h1)
		}
		hashes[h1] = seed
	}
}

// TestWakeCoalescesAndReorders: the scheduler, not the caller, decides when
// a callback runs: repeats of one wake may merge; wakes of different
// callbacks run in seed-dependent orders.
func TestWakeCoalescesAndReorders(t *testing.T) {
	orders := map[string]bool{}
	coalesced := false
	for seed := range uint64(200) {
		s := New(Options{Seed: seed, CoalesceChance: 0.5})
		var got []string
		a := s.Wake("a", func() { got = append(got, "a") })
		b := s.Wake("b", func() { got = append(got, "b") })
		a()
		a()
		b()
		if err := s.RunUntilIdle(0); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(strings.Join(got, ""), "a"); n == 0 || n > 2 {
			t.Fatalf("seed %d: wake a ran %d times (repro: go test ./sim -run TestWakeCoalescesAndReorders)", seed, n)
		} else if n == 1 {
			coalesced = true
		}
		orders[strings.Join(got, "")] = true
	}
	if !coalesced || len(orders) < 3 {
		t.Fatalf("seeds never coalesced (%v) or gave only orders %v (repro: go test ./sim -run TestWakeCoalescesAndReorders)", coalesced, orders)
	}
}

func TestVirtualTime(t *testing.T) {
	s := New(Options{Seed: 1})
	var at []time.Duration
	for _, d := range []time.Duration{30, 10, 20} {
		s.After(d, "t", func() { at = append(at, s.Now()) })
	}
	s.RunUntil(15)
	if len(at) != 1 || at[0] != 10 || s.Now() != 15 {
		t.Fatalf("RunUntil(15): ran at %v, now %v (repro: go test ./sim -run TestVirtualTime)", at, s.Now())
	}
	if err := s.RunUntilIdle(0); err != nil || len(at) != 3 || at[2] != 30 {
		t.Fatalf("RunUntilIdle: %v, ran at %v (repro: go test ./sim -run TestVirtualTime)", err, at)
	}
}

func TestHangReported(t *testing.T) {
	s := New(Options{Seed: 1})
	s.AddPending("driver/A", func() []string { return []string{"call 7 (FETCH, access PENDING)"} })
	err := s.RunUntilIdle(0)
	var hang *HangError
	if !errors.As(err, &hang) || len(hang.Pending) != 1 || !strings.Contains(err.Error(), "call 7") {
		t.Fatalf("got %v, want a hang naming call 7 (repro: go test ./sim -run TestHangReported)", err)
	}
	s2 := New(Options{Seed: 1})
	var loop func()
	loop = func() { s2.Post("loop", loop) }
	loop()
	if err := s2.RunUntilIdle(100); !errors.Is(err, ErrStepLimit) {
		t.Fatalf("livelock: got %v, want ErrStepLimit (repro: go test ./sim -run TestHangReported)", err)
	}
}
