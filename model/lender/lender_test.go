package lender

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/backend/backendtest"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

var caps = drivers.Capabilities{MaxRowsPerOp: 2, AbsentIsMiss: true, CanFetch: true, CanPublish: true, CanCancel: true}

type env struct {
	t     *testing.T
	s     *sim.Scheduler
	f     *backendtest.Driver
	l     *Lender
	b     *backend.Backend
	repro string
}

func newEnv(t *testing.T, d func(*backendtest.Driver) drivers.Driver) *env {
	t.Helper()
	e := &env{t: t, s: sim.New(sim.Options{Seed: 7}), f: backendtest.New(caps)}
	e.repro = fmt.Sprintf("(repro: go test ./model/lender -run '^%s$')", strings.ReplaceAll(t.Name(), "/", "$/^"))
	l, err := New(e.s, Spec{Label: "A", Slots: 4, SlotBytes: 8}, Spec{Label: "B", Slots: 4, SlotBytes: 8})
	if err != nil {
		t.Fatalf("lender.New: %v %s", err, e.repro)
	}
	e.l = l
	var drv drivers.Driver = e.f
	if d != nil {
		drv = d(e.f)
	}
	e.b, _ = backend.New(e.s, drv, l.Regions(), backend.Config{OnChange: l.OnChange})
	l.Bound(e.b)
	return e
}

func (e *env) run() {
	e.t.Helper()
	if err := e.s.RunUntilIdle(10000); err != nil {
		e.t.Fatalf("run: %v %s", err, e.repro)
	}
}

func (e *env) call(i int) *backendtest.Call {
	e.t.Helper()
	cs := e.f.Calls()
	if i >= len(cs) {
		e.t.Fatalf("%d calls, want call #%d %s", len(cs), i+1, e.repro)
	}
	return cs[i]
}

func (e *env) want(ln *Loan, st LoanState) {
	e.t.Helper()
	if ln.State() != st {
		e.t.Fatalf("loan %d %v (attempt %v access %v), want %v %s", ln.ID(), ln.State(), ln.Attempt().Outcome(), ln.Attempt().Access(), st, e.repro)
	}
}

func (e *env) noViolations() {
	e.t.Helper()
	if v := e.l.Violations(); len(v) > 0 {
		e.t.Fatalf("violations %v %s", v, e.repro)
	}
}

func (e *env) shutdown() []string {
	var labels []string
	e.b.Shutdown(func(l []string) { labels = l; e.l.ShutdownReturned(l) })
	e.run()
	return labels
}

const (
	ok    = drivers.OK
	miss  = drivers.Miss
	flt   = drivers.Fault
	pend  = drivers.AccessPending
	ended = drivers.AccessEnded
	unpr  = drivers.AccessUnprovable
)

// TestRelease is S-RELEASE: slots go back only on a committed outcome with
// access ENDED; UNPROVABLE keeps them retained forever.
func TestRelease(t *testing.T) {
	type step struct {
		acc  drivers.Access
		sts  []drivers.Status
		want LoanState
	}
	cases := []struct {
		name   string
		cancel bool
		steps  []step
	}{
		{"delivered-ended", false, []step{{ended, []drivers.Status{ok}, Released}}},
		{"results-before-evidence", false, []step{{pend, []drivers.Status{ok}, Lent}, {ended, nil, Released}}},
		{"failed-waits-for-evidence", false, []step{{pend, []drivers.Status{flt}, Lent}, {ended, nil, Released}}},
		{"unprovable-retained-forever", false, []step{{unpr, []drivers.Status{ok}, Retained}, {ended, nil, Retained}}},
		{"cancelled-waits-for-evidence", true, []step{{pend, nil, Lent}, {ended, []drivers.Status{drivers.NotAttempted}, Released}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			ln, a, err := e.l.Fetch(e.b, []string{"k1", "k2"})
			if err != nil {
				t.Fatalf("Fetch: %v %s", err, e.repro)
			}
			if c.cancel {
				a.Cancel()
			}
			e.run()
			e.want(ln, Lent)
			for _, s := range c.steps {
				e.call(0).Finish(s.acc, s.sts...)
				e.run()
				e.want(ln, s.want)
			}
			switch ln.State() {
			case Released:
				if !bytes.Equal(e.l.Peek(ln, 0), bytes.Repeat([]byte{arena.Poison}, 8)) {
					t.Fatalf("released slot not poisoned: %x %s", e.l.Peek(ln, 0), e.repro)
				}
			case Retained:
				if s := e.l.Stats(); s.Retained != 2 || s.RetainedBytes != 16 {
					t.Fatalf("stats %+v, want 2 retained slots, 16 bytes %s", s, e.repro)
				}
			}
			e.noViolations()
		})
	}
}

// TestReturn: a refused admission gives the slots back at once.
func TestReturn(t *testing.T) {
	e := newEnv(t, nil)
	if _, _, err := e.l.Fetch(e.b, []string{"k", ""}); !errors.Is(err, drivers.ErrInvalidSubmission) {
		t.Fatalf("Fetch of an empty key: %v, want ErrInvalidSubmission %s", err, e.repro)
	}
	if s := e.l.Stats(); s.Lent != 0 {
		t.Fatalf("refused loan still lent: %+v %s", s, e.repro)
	}
}

// TestViewInto: a buffer with room is written over, a smaller one is not
// touched, and either view is View's.
func TestViewInto(t *testing.T) {
	e := newEnv(t, nil)
	ln, err := e.l.Lend(2)
	if err != nil {
		t.Fatalf("Lend: %v %s", err, e.repro)
	}
	keys, mask := []string{"k1", "k2"}, []bool{true, false}
	want, err := ln.View(e.b, keys, mask)
	if err != nil {
		t.Fatalf("View: %v %s", err, e.repro)
	}
	big := drivers.View{Rows: make([]drivers.Row, 1, 4), Mask: make([]bool, 0, 4)}
	small := drivers.View{Rows: make([]drivers.Row, 1), Mask: make([]bool, 1)}
	for _, c := range []struct {
		name  string
		buf   drivers.View
		reuse bool
	}{{"room", big, true}, {"no-room", small, false}} {
		v, err := ln.ViewInto(c.buf, e.b, keys, mask)
		if err != nil {
			t.Fatalf("%s: ViewInto: %v %s", c.name, err, e.repro)
		}
		if !slices.Equal(v.Rows, want.Rows) || !slices.Equal(v.Mask, want.Mask) {
			t.Fatalf("%s: ViewInto %+v, View %+v %s", c.name, v, want, e.repro)
		}
		if reused := &v.Rows[0] == &c.buf.Rows[0]; reused != c.reuse {
			t.Fatalf("%s: buffer reused %v, want %v %s", c.name, reused, c.reuse, e.repro)
		}
	}
	if small.Rows[0] != (drivers.Row{}) {
		t.Fatalf("a buffer without room was written: %+v %s", small.Rows[0], e.repro)
	}
}

// TestMarks is S-MARKS: exactly the served rows of a delivered fetch.
func TestMarks(t *testing.T) {
	cases := []struct {
		name string
		dir  drivers.Direction
		sts  []drivers.Status
		want string
	}{
		{"delivered-partly", drivers.Fetch, []drivers.Status{ok, miss}, "10"},
		{"failed-marks-nothing", drivers.Fetch, []drivers.Status{ok, flt}, "00"},
		{"publish-marks-nothing", drivers.Publish, []drivers.Status{ok, ok}, "00"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			var ln *Loan
			var err error
			if c.dir == drivers.Fetch {
				ln, _, err = e.l.Fetch(e.b, []string{"k1", "k2"})
			} else {
				ln, _, err = e.l.Publish(e.b, []string{"k1", "k2"}, [][]byte{[]byte("one"), []byte("two")})
			}
			if err != nil {
				t.Fatalf("submit: %v %s", err, e.repro)
			}
			e.call(0).Finish(ended, c.sts...)
			e.run()
			var got strings.Builder
			for _, m := range ln.Marks() {
				got.WriteString(map[bool]string{true: "1", false: "0"}[m])
			}
			if got.String() != c.want {
				t.Fatalf("marks %s, want %s %s", got.String(), c.want, e.repro)
			}
			e.noViolations()
		})
	}
}

// TestHold is S-HOLD: released only on empty shutdown labels.
func TestHold(t *testing.T) {
	t.Run("clean-shutdown-releases", func(t *testing.T) {
		e := newEnv(t, nil)
		if labels := e.shutdown(); len(labels) != 0 || e.l.Held() || e.l.Arena("A").Registered() {
			t.Fatalf("labels %q held %v registered %v; want none, false, false %s", labels, e.l.Held(), e.l.Arena("A").Registered(), e.repro)
		}
		if _, err := e.l.Lend(1); !errors.Is(err, ErrNotHolder) {
			t.Fatalf("Lend after the hold was released: %v %s", err, e.repro)
		}
	})
	t.Run("unprovable-keeps-hold", func(t *testing.T) {
		e := newEnv(t, nil)
		ln, _, _ := e.l.Fetch(e.b, []string{"k1"})
		e.call(0).Finish(unpr, flt)
		labels := e.shutdown()
		if !slices.Contains(labels, "region:A:retained") || !e.l.Held() || ln.State() != Retained || !e.l.Arena("A").Registered() {
			t.Fatalf("labels %q held %v loan %v; want region:A:retained, held, retained %s", labels, e.l.Held(), ln.State(), e.repro)
		}
		e.noViolations()
	})
	t.Run("registration-in-doubt-keeps-hold", func(t *testing.T) {
		e := newEnv(t, func(f *backendtest.Driver) drivers.Driver {
			return &backendtest.Together{Driver: f, TogetherErr: func([]drivers.Region) error {
				return &drivers.InDoubtError{Op: "register", Labels: []string{"A"}, Err: drivers.ErrUnregisterFailed}
			}}
		})
		if labels := e.shutdown(); !slices.Equal(labels, []string{"region:A:in-doubt"}) || !e.l.Held() {
			t.Fatalf("labels %q held %v; want region:A:in-doubt and the hold kept %s", labels, e.l.Held(), e.repro)
		}
	})
}

// TestLateAccess is S-NO-LATE-ACCESS: a touch after release is caught.
func TestLateAccess(t *testing.T) {
	e := newEnv(t, nil)
	ln, _, _ := e.l.Fetch(e.b, []string{"k1"})
	e.call(0).Finish(ended, ok)
	e.run()
	e.want(ln, Released)
	ref := ln.Slots()[0]
	r := e.l.Arena(ref.Region).Region()
	_ = r.Mem.Write(drivers.Toucher{Call: e.call(0).ID()}, r.SlotOffset(ref.Slot), []byte("late"))
	v := e.l.Violations()
	if len(v) != 1 || v[0].Rule != rules.SNoLateAccess {
		t.Fatalf("violations %v, want one S-NO-LATE-ACCESS %s", v, e.repro)
	}
}

// lying is an attempt whose outcome and access the test sets, to prove each
// lender check fires.
type lying struct {
	dir  drivers.Direction
	view drivers.View
	out  backend.Outcome
	acc  drivers.Access
}

func (a *lying) ID() uint64               { return 99 }
func (a *lying) Dir() drivers.Direction   { return a.dir }
func (a *lying) Rows() int                { return len(a.view.Rows) }
func (a *lying) Asked(i int) bool         { return a.view.Mask[i] }
func (a *lying) Outcome() backend.Outcome { return a.out }
func (a *lying) Access() drivers.Access   { return a.acc }

// TestChecksFire: every lender rule reports a backend that breaks it.
func TestChecksFire(t *testing.T) {
	delivered := func(s ...bool) backend.Outcome { return backend.Outcome{State: backend.Delivered, Served: s} }
	cases := []struct {
		name  string
		start backend.Outcome
		acc   drivers.Access
		mask  []bool
		then  func(a *lying, l *Lender)
		rule  rules.ID
	}{
		{"S-RELEASE/access-withdrawn", delivered(true, false), ended, nil,
			func(a *lying, l *Lender) { a.acc = pend; l.Observe(a) }, rules.SRelease},
		{"S-RELEASE/outcome-changed", delivered(true, false), ended, nil,
			func(a *lying, l *Lender) { a.out = backend.Outcome{State: backend.Failed}; l.Observe(a) }, rules.SRelease},
		{"S-MARKS/served-masked-out", delivered(true, true), pend, []bool{true, false}, func(*lying, *Lender) {}, rules.SMarks},
		{"S-MARKS/served-changed", delivered(true, false), pend, nil,
			func(a *lying, l *Lender) { a.out = delivered(true, true); l.Observe(a) }, rules.SMarks},
		{"S-HOLD/empty-labels-with-access-pending", backend.Outcome{}, pend, nil,
			func(a *lying, l *Lender) { l.ShutdownReturned(nil) }, rules.SHold},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repro := fmt.Sprintf("(repro: go test ./model/lender -run 'TestChecksFire/%s')", c.name)
			l, _ := New(nil, Spec{Label: "A", Slots: 2, SlotBytes: 4})
			ln, err := l.Lend(2)
			if err != nil {
				t.Fatal(err)
			}
			mask := c.mask
			if mask == nil {
				mask = []bool{true, true}
			}
			a := &lying{dir: drivers.Fetch, out: c.start, acc: c.acc, view: drivers.View{
				Rows: []drivers.Row{{Key: "a", Position: 0}, {Key: "b", Slot: 1, Position: 1}}, Mask: mask}}
			if err := l.Attach(ln, a); err != nil {
				t.Fatal(err)
			}
			c.then(a, l)
			v := l.Violations()
			if !slices.ContainsFunc(v, func(v rules.Violation) bool { return v.Rule == c.rule }) {
				t.Fatalf("violations %v, want one naming %s %s", v, c.rule, repro)
			}
		})
	}
}

func TestNewSpecErrors(t *testing.T) {
	for _, specs := range [][]Spec{{{Label: ""}}, {{Label: "A", Slots: 1, SlotBytes: 1}, {Label: "A", Slots: 1, SlotBytes: 1}}, {{Label: "A", Slots: 0, SlotBytes: 1}}} {
		if _, err := New(nil, specs...); !errors.Is(err, ErrBadSpec) {
			t.Fatalf("New(%+v) = %v, want ErrBadSpec (repro: go test ./model/lender -run TestNewSpecErrors)", specs, err)
		}
	}
}

// TestNoSlotsErrorMatchesErrorf: the lazy "not enough slots" reason reads
// and unwraps like the fmt.Errorf it replaces.
func TestNoSlotsErrorMatchesErrorf(t *testing.T) {
	const repro = "go test ./model/lender -run TestNoSlotsErrorMatchesErrorf"
	lazy, want := error(&noSlotsError{want: 4, have: 1}), fmt.Errorf("%w: want %d, have %d", ErrNoSlots, 4, 1)
	if lazy.Error() != want.Error() || !errors.Is(lazy, ErrNoSlots) {
		t.Fatalf("%q (is ErrNoSlots: %v), want %q (repro: %s)", lazy, errors.Is(lazy, ErrNoSlots), want, repro)
	}
}

// TestSpreadEvery: every k-th loan takes one slot of each region in turn;
// the others fill the first region first; k <= 0 never spreads.
func TestSpreadEvery(t *testing.T) {
	const repro = "(repro: go test ./model/lender -run '^TestSpreadEvery$')"
	for _, tc := range []struct {
		k    int
		want [][]SlotRef // the slots of loans 1, 2, 3 of 3 rows each
	}{
		{0, [][]SlotRef{{{"a", 0}, {"a", 1}, {"a", 2}}, {{"a", 3}, {"b", 0}, {"b", 1}}, {{"b", 2}, {"b", 3}, {"c", 0}}}},
		{2, [][]SlotRef{{{"a", 0}, {"a", 1}, {"a", 2}}, {{"a", 3}, {"b", 0}, {"c", 0}}, {{"b", 1}, {"b", 2}, {"b", 3}}}},
	} {
		t.Run(fmt.Sprintf("k=%d", tc.k), func(t *testing.T) {
			l, err := New(nil, Spec{Label: "a", Slots: 4, SlotBytes: 16}, Spec{Label: "b", Slots: 4, SlotBytes: 32}, Spec{Label: "c", Slots: 4, SlotBytes: 64})
			if err != nil {
				t.Fatalf("New: %v %s", err, repro)
			}
			l.SpreadEvery(tc.k)
			for i, want := range tc.want {
				ln, err := l.Lend(3)
				if err != nil {
					t.Fatalf("loan %d: %v %s", i+1, err, repro)
				}
				if got := ln.Slots(); !slices.Equal(got, want) {
					t.Errorf("loan %d took %v, want %v %s", i+1, got, want, repro)
				}
			}
		})
	}
}
