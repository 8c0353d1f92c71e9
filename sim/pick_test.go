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

// TestDeliver: a chosen event runs at once, at the current time, and only
// once; the rest still run in their order; unknown and stopped ids run
// nothing.
func TestDeliver(t *testing.T) {
	for seed := range uint64(50) {
		s, ran := pickWorld(seed)
		q := s.Queued()
		r := NewRand(seed + 1000)
		picked := map[uint64]bool{}
		var want []string
		for range 5 {
			e := q[r.Intn(len(q))]
			if picked[e.ID] {
				if s.Deliver(e.ID) {
					t.Fatalf("seed %d: event %d delivered twice (repro: go test ./sim -run TestDeliver)", seed, e.ID)
				}
				continue
			}
			picked[e.ID] = true
			before := s.Now()
			if !s.Deliver(e.ID) {
				t.Fatalf("seed %d: Deliver(%d) refused a queued event (repro: go test ./sim -run TestDeliver)", seed, e.ID)
			}
			if s.Now() != before {
				t.Fatalf("seed %d: Deliver moved the clock %v → %v (repro: go test ./sim -run TestDeliver)", seed, before, s.Now())
			}
			want = append(want, e.Label)
		}
		for _, e := range q {
			if !picked[e.ID] {
				want = append(want, e.Label)
			}
		}
		if s.Deliver(1 << 40) {
			t.Fatalf("seed %d: unknown id delivered (repro: go test ./sim -run TestDeliver)", seed)
		}
		if err := s.RunUntilIdle(0); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(*ran, want) {
			t.Fatalf("seed %d: ran %v, want %v (repro: go test ./sim -run TestDeliver)", seed, *ran, want)
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
			h.push(event{at: time.Duration(r.Intn(10)), tie: r.Uint64(), id: uint64(i + 1)})
		}
		for range r.Intn(h.len()) {
			h.remove(r.Intn(h.len()))
		}
		var prev *event
		for h.len() > 0 {
			e := h.pop()
			if prev != nil && e.before(prev) {
				t.Fatalf("round %d: heap order broken after remove (repro: go test ./sim -run TestHeapRemove)", round)
			}
			prev = &e
		}
	}
}
