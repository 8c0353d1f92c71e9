package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// pickWorld queues a seeded mix of timers, posts, wakes and stopped timers
// and logs what runs.
func pickWorld(seed uint64) (*Scheduler, *[]string) {
	s := New(Options{Seed: seed, MaxWakeDelay: 5 * time.Microsecond})
	r := NewRand(seed)
	var ran []string
	for i := range 40 {
		label := fmt.Sprintf("e%d", i)
		fn := func() { ran = append(ran, label) }
		switch r.Intn(4) {
		case 0:
			s.After(time.Duration(r.Intn(20))*time.Microsecond, label, fn)
		case 1:
			s.Post(label, fn)
		case 2:
			s.Wake(label, fn)()
		case 3:
			s.After(time.Duration(r.Intn(20))*time.Microsecond, label+"-stopped", fn).Stop()
		}
	}
	return s, &ran
}

// TestQueuedIsRunOrder: Queued lists exactly what Step then runs, in order,
// without stopped timers.
func TestQueuedIsRunOrder(t *testing.T) {
	for seed := range uint64(50) {
		s, ran := pickWorld(seed)
		var want []string
		for _, e := range s.Queued() {
			want = append(want, e.Label)
			if strings.HasSuffix(e.Label, "-stopped") {
				t.Fatalf("seed %d: stopped timer %s listed (repro: go test ./sim -run TestQueuedIsRunOrder)", seed, e.Label)
			}
		}
		if next, ok := s.Next(); !ok || next.Label != want[0] {
			t.Fatalf("seed %d: Next = %v %v, want %s (repro: go test ./sim -run TestQueuedIsRunOrder)", seed, next, ok, want[0])
		}
		if err := s.RunUntilIdle(0); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(*ran, want) {
			t.Fatalf("seed %d: ran %v, Queued said %v (repro: go test ./sim -run TestQueuedIsRunOrder)", seed, *ran, want)
		}
	}
}

// TestQueuedDoesNotChangeTheRun: listing the queue (which drains the inbox
// early) leaves the run and its trace hash as they were.
func TestQueuedDoesNotChangeTheRun(t *testing.T) {
	for seed := range uint64(50) {
		a, ranA := pickWorld(seed)
		b, ranB := pickWorld(seed)
		b.Queued()
		for a.Step() {
			b.Queued()
			b.Step()
		}
		if b.Step() || !slices.Equal(*ranA, *ranB) || a.TraceHash() != b.TraceHash() {
			t.Fatalf("seed %d: Queued changed the run: %v vs %v (repro: go test ./sim -run TestQueuedDoesNotChangeTheRun)", seed, *ranA, *ranB)
		}
	}
}

// TestDeliver: a chosen event runs at once, never before its due time and
// never moving the clock backwards; it runs only once; every other event
// still runs exactly once, none before its due time; unknown ids run
// nothing.
func TestDeliver(t *testing.T) {
	for seed := range uint64(50) {
		s := New(Options{Seed: seed})
		r := NewRand(seed)
		due := map[string]time.Duration{}
		var ran []string
		clock := time.Duration(0)
		for i := range 40 {
			label := fmt.Sprintf("e%d", i)
			d := time.Duration(r.Intn(20)) * time.Microsecond
			due[label] = d
			s.After(d, label, func() {
				if s.Now() < due[label] || s.Now() < clock {
					t.Errorf("seed %d: %s ran at %v, due %v, clock was %v (repro: go test ./sim -run TestDeliver)", seed, label, s.Now(), due[label], clock)
				}
				clock = s.Now()
				ran = append(ran, label)
			})
		}
		q := s.Queued()
		picked := map[uint64]bool{}
		for range 8 {
			e := q[r.Intn(len(q))]
			before := len(ran)
			ok := s.Deliver(e.ID)
			switch {
			case picked[e.ID] && ok:
				t.Fatalf("seed %d: event %d delivered twice (repro: go test ./sim -run TestDeliver)", seed, e.ID)
			case !picked[e.ID] && (!ok || len(ran) != before+1 || ran[before] != e.Label):
				t.Fatalf("seed %d: Deliver(%d) did not run %s next (repro: go test ./sim -run TestDeliver)", seed, e.ID, e.Label)
			}
			picked[e.ID] = true
		}
		if s.Deliver(1 << 40) {
			t.Fatalf("seed %d: unknown id delivered (repro: go test ./sim -run TestDeliver)", seed)
		}
		if err := s.RunUntilIdle(0); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, l := range ran {
			seen[l]++
		}
		if len(ran) != len(due) || len(seen) != len(due) {
			t.Fatalf("seed %d: ran %d events (%d distinct), want each of %d once (repro: go test ./sim -run TestDeliver)", seed, len(ran), len(seen), len(due))
		}
	}
}

// TestDeliverStoppedTimer: a stopped timer is neither listed nor delivered.
func TestDeliverStoppedTimer(t *testing.T) {
	s := New(Options{Seed: 1})
	ran := false
	tm := s.After(time.Microsecond, "t", func() { ran = true })
	q := s.Queued()
	if len(q) != 1 {
		t.Fatalf("queue %v (repro: go test ./sim -run TestDeliverStoppedTimer)", q)
	}
	tm.Stop()
	if s.Deliver(q[0].ID) || ran || len(s.Queued()) != 0 {
		t.Fatalf("stopped timer delivered or listed (repro: go test ./sim -run TestDeliverStoppedTimer)")
	}
}

// TestHeapRemove: removing arbitrary entries keeps the heap order.
func TestHeapRemove(t *testing.T) {
	r := NewRand(7)
	for round := range 200 {
		var h eventHeap
		for i := range 1 + r.Intn(60) {
			h.push(event{key: key{at: time.Duration(r.Intn(10)), tie: r.Uint64(), id: uint64(i + 1)}})
		}
		for range r.Intn(h.len()) {
			h.remove(r.Intn(h.len()))
		}
		var prev *event
		for h.len() > 0 {
			e := h.pop()
			if prev != nil && e.before(&prev.key) {
				t.Fatalf("round %d: heap order broken after remove (repro: go test ./sim -run TestHeapRemove)", round)
			}
			prev = &e
		}
	}
}

// TestHeapRuns: a queue sorted into runs pops exactly what a plain heap
// pops, through bulk loads, pushes between pops and the policies' all.
func TestHeapRuns(t *testing.T) {
	r := NewRand(11)
	for round := range 100 {
		var plain, runs eventHeap
		runs.runs = true
		id := uint64(0)
		push := func(at time.Duration) {
			id++
			e := event{key: key{at: at, tie: r.Uint64(), id: id}}
			plain.push(e)
			runs.push(e)
		}
		now := time.Duration(0)
		for range 1 + r.Intn(4) {
			for range r.Intn(3 * runMin) { // a bulk load
				push(now + time.Duration(r.Intn(1000)))
			}
			for range r.Intn(4 * runMin) {
				if plain.len() != runs.len() {
					t.Fatalf("round %d: %d queued, the plain heap %d (repro: go test ./sim -run TestHeapRuns)", round, runs.len(), plain.len())
				}
				if plain.len() == 0 {
					break
				}
				if r.Intn(50) == 0 {
					runs.all()
				}
				if *runs.peek() != *plain.peek() {
					t.Fatalf("round %d: peek %+v, the plain heap %+v (repro: go test ./sim -run TestHeapRuns)", round, *runs.peek(), *plain.peek())
				}
				want, got := plain.pop(), runs.pop()
				if got.id != want.id {
					t.Fatalf("round %d: popped %d, the plain heap %d (repro: go test ./sim -run TestHeapRuns)", round, got.id, want.id)
				}
				now = got.at
				for range r.Intn(3) {
					push(now + time.Duration(r.Intn(20)))
				}
			}
		}
	}
}
