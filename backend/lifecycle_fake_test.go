package backend

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/storesim/storesim/backend/backendtest"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
)

// TestNewValidation: D-GEOM and capability errors return no backend and the
// store is never asked.
func TestNewValidation(t *testing.T) {
	good := regionsN(2, 4)
	overlap := regionsN(2, 4)
	overlap[1].Mem = overlap[0].Mem
	cases := []struct {
		name    string
		regions []drivers.Region
		caps    drivers.Capabilities
		cfg     Config
		want    error
	}{
		{"bad-geometry-slots", []drivers.Region{{Label: "A", SlotBytes: 8, Slots: 0, Mem: make(drivers.Bytes, 8)}}, defaultCaps, Config{}, drivers.ErrBadGeometry},
		{"bad-geometry-too-small", []drivers.Region{{Label: "A", SlotBytes: 8, Slots: 2, Mem: make(drivers.Bytes, 8)}}, defaultCaps, Config{}, drivers.ErrBadGeometry},
		{"bad-geometry-overlap", overlap, defaultCaps, Config{}, drivers.ErrBadGeometry},
		{"bad-caps", good, drivers.Capabilities{MaxRowsPerOp: 0, CanFetch: true}, Config{}, drivers.ErrInvalidCapabilities},
		{"bad-config", good, defaultCaps, Config{MaxQueuedCalls: -1}, ErrBadConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := backendtest.New(c.caps)
			b, err := New(sim.New(sim.Options{}), f, c.regions, c.cfg)
			if b != nil || !errors.Is(err, c.want) {
				t.Fatalf("New = %v, %v; want nil, %v (repro: go test ./backend -run 'TestNewValidation/%s')", b, err, c.want, c.name)
			}
			if len(f.Log()) != 0 {
				t.Fatalf("the store was asked: %q (repro: go test ./backend -run 'TestNewValidation/%s')", f.Log(), c.name)
			}
		})
	}
	b, err := New(sim.New(sim.Options{}), backendtest.New(defaultCaps), good, Config{Name: "x"})
	if err != nil || b.Config().MaxCallsInFlight != DefaultMaxCallsInFlight || b.Config().DrainTimeout != DefaultDrainTimeout {
		t.Fatalf("defaults not applied: %+v, %v (repro: go test ./backend -run TestNewValidation)", b.Config(), err)
	}
}

// TestRegistrationFailures covers the failure shapes of registration: the
// backend refuses admission, Shutdown closes exactly what was bound, and
// anything in doubt stays in the labels so the hold is never released.
func TestRegistrationFailures(t *testing.T) {
	refuseAt := func(k string, err error) func(drivers.Region) error {
		return func(r drivers.Region) error {
			if r.Label == k {
				return err
			}
			return nil
		}
	}
	cases := []struct {
		name        string
		together    bool
		registerAt  func(drivers.Region) error
		togetherErr func([]drivers.Region) error
		bound       []string // regions with a live handle after New
		wantLog     []string // after New, up to shutdown
		labels      []string
	}{
		{"one-by-one-refused-at-region-k-keeps-earlier", false, refuseAt("C", drivers.ErrRegistrationRefused), nil,
			[]string{"A", "B"}, []string{"register A", "register B", "register C", "unregister 1", "unregister 2", "shutdown"}, nil},
		{"one-by-one-refused-first", false, refuseAt("A", drivers.ErrRegistrationRefused), nil,
			nil, []string{"register A", "shutdown"}, nil},
		{"one-by-one-unknown-error-is-in-doubt", false, refuseAt("B", errors.New("transport reset")), nil,
			[]string{"A"}, []string{"register A", "register B", "unregister 1", "shutdown"}, []string{"region:B:in-doubt"}},
		{"together-refused-leaves-nothing", true, nil, func([]drivers.Region) error { return drivers.ErrRegistrationRefused },
			nil, []string{"register-together 3", "shutdown"}, nil},
		{"together-failing-at-k-rollback-failing-keeps-hold", true, nil, func([]drivers.Region) error {
			return &drivers.InDoubtError{Op: "register", Labels: []string{"A", "B"}, Err: drivers.ErrUnregisterFailed}
		}, nil, []string{"register-together 3", "shutdown"}, []string{"region:A:in-doubt", "region:B:in-doubt"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repro := fmt.Sprintf("(repro: go test ./backend -run 'TestRegistrationFailures/%s')", c.name)
			f := backendtest.New(defaultCaps)
			f.RegisterErr = c.registerAt
			var d drivers.Driver = f
			if c.together {
				d = &backendtest.Together{Driver: f, TogetherErr: c.togetherErr}
			}
			s := sim.New(sim.Options{Seed: 3})
			b, err := New(s, d, regionsN(3, 4), Config{})
			if b == nil || !errors.Is(err, ErrRegistration) {
				t.Fatalf("New = %v, %v; want a backend and ErrRegistration %s", b, err, repro)
			}
			var bound []string
			for _, l := range []string{"A", "B", "C"} {
				if _, ok := b.Handle(l); ok {
					bound = append(bound, l)
				}
			}
			if !slices.Equal(bound, c.bound) {
				t.Fatalf("bound regions %q, want %q %s", bound, c.bound, repro)
			}
			if _, err := b.Fetch(drivers.View{}); !errors.Is(err, ErrClosed) {
				t.Fatalf("Fetch on a failed backend: %v, want ErrClosed %s", err, repro)
			}
			var labels []string
			b.Shutdown(func(l []string) { labels = l })
			if err := s.RunUntilIdle(1000); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.Log(), c.wantLog) || !slices.Equal(labels, c.labels) {
				t.Fatalf("log %q labels %q; want %q %q %s", f.Log(), labels, c.wantLog, c.labels, repro)
			}
		})
	}
}

// TestShutdown is B-SHUT.
func TestShutdown(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		e := newEnv(t, defaultCaps, Config{})
		a := e.mustAdmit(drivers.Fetch, e.view("a"))
		e.call(0).Finish(ended, ok)
		e.run()
		if l := e.shutdown(); len(l) != 0 {
			t.Fatalf("labels %q, want none %s", l, e.repro)
		}
		e.wantLog("submit FETCH a", "unregister 1", "unregister 2", "shutdown")
		e.wantOutcome(a, Delivered, bools("1"), ended)
		if l, done := e.b.ShutdownLabels(); !done || len(l) != 0 {
			t.Fatalf("ShutdownLabels = %q, %v %s", l, done, e.repro)
		}
	})
	t.Run("in-flight-cancelled-and-drained", func(t *testing.T) {
		e := newEnv(t, defaultCaps, Config{MaxCallsInFlight: 1})
		a := e.mustAdmit(drivers.Fetch, e.view("a", "b", "c"))
		var labels []string
		called := false
		e.b.Shutdown(func(l []string) { labels, called = l, true })
		e.s.RunUntil(time.Second) // before the drain deadline
		if called || e.call(0).Cancels() != 1 {
			t.Fatalf("shutdown finished before drain (labels %q) or cancels %d != 1 %s", labels, e.call(0).Cancels(), e.repro)
		}
		e.wantOutcome(a, Cancelled, nil, pend)
		e.call(0).Finish(ended, na)
		e.run()
		if !called || len(labels) != 0 {
			t.Fatalf("shutdown done %v labels %q, want done with none %s", called, labels, e.repro)
		}
		e.wantLog("submit FETCH a b", "unregister 1", "unregister 2", "shutdown")
		e.wantOutcome(a, Cancelled, nil, ended)
	})
	t.Run("unprovable-call-keeps-memory-retained", func(t *testing.T) {
		e := newEnv(t, defaultCaps, Config{})
		a := e.mustAdmit(drivers.Fetch, e.view("a"))
		e.call(0).Finish(unpr, flt)
		e.run()
		l := e.shutdown()
		want := []string{"call:1:unprovable", "region:A:retained"}
		if !slices.Equal(l, want) {
			t.Fatalf("labels %q, want %q %s", l, want, e.repro)
		}
		e.wantLog("submit FETCH a", "unregister 2", "shutdown") // region A is never unregistered
		e.wantOutcome(a, Failed, nil, unpr)
		if _, ok := e.b.Handle("A"); !ok {
			t.Fatalf("region A binding dropped %s", e.repro)
		}
	})
	t.Run("unprovable-submit-keeps-region", func(t *testing.T) {
		e := newEnv(t, defaultCaps, Config{})
		e.f.SubmitErr = func(drivers.RowBatch) error { return errors.New("reset") }
		e.mustAdmit(drivers.Publish, e.view("a"))
		if l := e.shutdown(); !slices.Equal(l, []string{"region:A:retained"}) {
			t.Fatalf("labels %q, want region:A:retained %s", l, e.repro)
		}
	})
	t.Run("drain-deadline", func(t *testing.T) {
		e := newEnv(t, defaultCaps, Config{DrainTimeout: time.Second})
		e.mustAdmit(drivers.Fetch, e.view("a"))
		l := e.shutdown() // the call never ends
		if e.s.Now() != time.Second {
			t.Fatalf("shutdown finished at %v, want at the 1s deadline %s", e.s.Now(), e.repro)
		}
		want := []string{"call:1:unprovable", "region:A:retained"}
		if !slices.Equal(l, want) {
			t.Fatalf("labels %q, want %q %s", l, want, e.repro)
		}
	})
	t.Run("unregister-failing-once-then-retry", func(t *testing.T) {
		e := newEnv(t, defaultCaps, Config{})
		fails := 1
		e.f.UnregisterErr = func(h drivers.Handle) error {
			if h == 2 && fails > 0 {
				fails--
				return drivers.ErrUnregisterFailed
			}
			return nil
		}
		if l := e.shutdown(); !slices.Equal(l, []string{"region:B:unregister-failed"}) {
			t.Fatalf("first labels %q %s", l, e.repro)
		}
		if l := e.shutdown(); len(l) != 0 {
			t.Fatalf("retry labels %q, want none %s", l, e.repro)
		}
		e.wantLog("unregister 1", "unregister 2", "shutdown", "unregister 2", "shutdown")
	})
	t.Run("second-call-while-draining", func(t *testing.T) {
		e := newEnv(t, defaultCaps, Config{})
		e.mustAdmit(drivers.Fetch, e.view("a"))
		var got [][]string
		e.b.Shutdown(func(l []string) { got = append(got, l) })
		e.b.Shutdown(func(l []string) { got = append(got, l) })
		e.call(0).Finish(ended, ok)
		e.run()
		if len(got) != 2 || len(got[0]) != 0 || len(got[1]) != 0 {
			t.Fatalf("done callbacks %q, want two empty %s", got, e.repro)
		}
		e.wantLog("submit FETCH a", "unregister 1", "unregister 2", "shutdown")
	})
	t.Run("together-unregister-in-doubt", func(t *testing.T) {
		f := backendtest.New(defaultCaps)
		d := &backendtest.Together{Driver: f, UntogetherErr: func([]drivers.Handle) error {
			return &drivers.InDoubtError{Op: "unregister", Labels: []string{"B"}, Err: drivers.ErrUnregisterFailed}
		}}
		s := sim.New(sim.Options{})
		b, err := New(s, d, regionsN(2, 4), Config{})
		if err != nil {
			t.Fatal(err)
		}
		var labels []string
		b.Shutdown(func(l []string) { labels = l })
		_ = s.RunUntilIdle(100)
		if !slices.Equal(labels, []string{"region:B:unregister-failed"}) {
			t.Fatalf("labels %q (repro: go test ./backend -run TestShutdown/together-unregister-in-doubt)", labels)
		}
		if _, ok := b.Handle("A"); ok {
			t.Fatal("region A still bound after a together-unregister that closed it (repro: go test ./backend -run TestShutdown/together-unregister-in-doubt)")
		}
	})
}

// TestPending lists unfinished work for hang reports.
func TestPending(t *testing.T) {
	e := newEnv(t, defaultCaps, Config{Name: "be"})
	e.mustAdmit(drivers.Fetch, e.view("a"))
	want := []string{"attempt 1: no outcome", "call 1: access PENDING"}
	if got := e.b.Pending(); !slices.Equal(got, want) {
		t.Fatalf("Pending = %q, want %q %s", got, want, e.repro)
	}
	e.call(0).Finish(ended, ok)
	e.run()
	if got := e.b.Pending(); len(got) != 0 {
		t.Fatalf("Pending = %q, want none %s", got, e.repro)
	}
}
