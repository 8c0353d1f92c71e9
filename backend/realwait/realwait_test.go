package realwait_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/backend/realwait"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/model/lender"
	"github.com/storesim/storesim/sim/realtime"
)

// The realtime runtime starts an executor goroutine.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type node struct {
	rt *realtime.Runtime
	w  *realwait.Waiter
	l  *lender.Lender
	b  *backend.Backend
}

func newNode(t *testing.T, store *memdriver.Store, name string, faults memdriver.FaultMix) *node {
	t.Helper()
	rt := realtime.New(1)
	t.Cleanup(rt.Close)
	n := &node{rt: rt, w: realwait.New(rt)}
	var err error
	rt.Do(func() {
		n.l, _ = lender.New(rt, lender.Spec{Label: name, Slots: 8, SlotBytes: 16})
		d := memdriver.New(rt, store, memdriver.Config{Name: name, Faults: faults, StepDelay: 50 * time.Microsecond})
		n.b, err = backend.New(rt, d, n.l.Regions(), backend.Config{Name: name, DrainTimeout: 100 * time.Millisecond,
			OnChange: func(a *backend.Attempt) { n.l.OnChange(a); n.w.Notify(a) }})
		n.l.Bound(n.b)
	})
	if err != nil {
		t.Fatalf("backend.New: %v (repro: go test -race ./backend/realwait -run %s)", err, t.Name())
	}
	return n
}

func (n *node) submit(t *testing.T, publish bool, keys ...string) (*lender.Loan, *backend.Attempt) {
	t.Helper()
	var ln *lender.Loan
	var a *backend.Attempt
	var err error
	n.rt.Do(func() {
		if publish {
			cs := make([][]byte, len(keys))
			for i, k := range keys {
				cs[i] = bytes.Repeat([]byte(k[:1]), 16)
			}
			ln, a, err = n.l.Publish(n.b, keys, cs)
		} else {
			ln, a, err = n.l.Fetch(n.b, keys)
		}
	})
	if err != nil {
		t.Fatalf("submit %q: %v (repro: go test -race ./backend/realwait -run %s)", keys, err, t.Name())
	}
	return ln, a
}

func ctx(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

// TestRoundTrip: two backends on their own real-time runtimes and one store;
// publish, fetch, wait for outcomes and quiescence, shut down cleanly.
func TestRoundTrip(t *testing.T) {
	store, _ := memdriver.NewStore(memdriver.StoreOptions{})
	a, b := newNode(t, store, "A", memdriver.FaultMix{}), newNode(t, store, "B", memdriver.FaultMix{})
	_, pub := a.submit(t, true, "x1", "y2")
	if o, err := a.w.Outcome(ctx(t, 5*time.Second), pub); err != nil || o.State != backend.Delivered {
		t.Fatalf("publish: %v, %v (repro: go test -race ./backend/realwait -run TestRoundTrip)", o, err)
	}
	ln, f := b.submit(t, false, "x1", "zz", "y2")
	o, err := b.w.Outcome(ctx(t, 5*time.Second), f)
	if err != nil || o.State != backend.Delivered || !o.Served[0] || o.Served[1] || !o.Served[2] {
		t.Fatalf("fetch: %v served %v, %v (repro: go test -race ./backend/realwait -run TestRoundTrip)", o, o.Served, err)
	}
	if err := b.w.Quiesce(ctx(t, 5*time.Second), b.b, f); err != nil {
		t.Fatalf("Quiesce: %v (repro: go test -race ./backend/realwait -run TestRoundTrip)", err)
	}
	var data []byte
	b.rt.Do(func() { data = ln.Data(0) })
	if !bytes.Equal(data, bytes.Repeat([]byte("x"), 16)) {
		t.Fatalf("row 0 holds %q (repro: go test -race ./backend/realwait -run TestRoundTrip)", data)
	}
	for _, n := range []*node{a, b} {
		labels, err := realwait.Shutdown(ctx(t, 5*time.Second), n.rt, n.b)
		if err != nil || len(labels) != 0 {
			t.Fatalf("shutdown: %q, %v (repro: go test -race ./backend/realwait -run TestRoundTrip)", labels, err)
		}
	}
}

// TestWaitsEnd: a call that never ends makes Quiesce wait until the
// context ends; after shutdown the attempt is UNPROVABLE and Quiesce says so
// at once instead of waiting.
func TestWaitsEnd(t *testing.T) {
	store, _ := memdriver.NewStore(memdriver.StoreOptions{})
	n := newNode(t, store, "A", memdriver.FaultMix{NeverEnds: 1})
	_, a := n.submit(t, true, "k")
	if err := n.w.Quiesce(ctx(t, 50*time.Millisecond), n.b, a); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Quiesce on a never-ending call: %v, want DeadlineExceeded (repro: go test -race ./backend/realwait -run TestWaitsEnd)", err)
	}
	labels, err := realwait.Shutdown(ctx(t, 5*time.Second), n.rt, n.b)
	if err != nil || len(labels) == 0 {
		t.Fatalf("shutdown: %q, %v; want labels (repro: go test -race ./backend/realwait -run TestWaitsEnd)", labels, err)
	}
	if err := n.w.Quiesce(ctx(t, 5*time.Second), n.b, a); !errors.Is(err, realwait.ErrUnprovable) {
		t.Fatalf("Quiesce after shutdown: %v, want ErrUnprovable (repro: go test -race ./backend/realwait -run TestWaitsEnd)", err)
	}
	n.rt.Close()
	if _, err := realwait.Fetch(n.rt, n.b, a.View()); !errors.Is(err, realwait.ErrStopped) {
		t.Fatalf("Fetch on a closed runtime: %v, want ErrStopped (repro: go test -race ./backend/realwait -run TestWaitsEnd)", err)
	}
}
