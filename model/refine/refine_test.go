package refine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim/slab"
)

// The tests play a backend by hand against the model: they call the tap
// as a backend would and set the attempt's outcome and access themselves.
// A conforming script must give no finding; each planted deviation must
// give its rule.

type fakeClock struct{ t time.Duration }

func (c *fakeClock) Now() time.Duration { return c.t }

type fakeDriver struct {
	caps    drivers.Capabilities
	present map[string]bool
	next    drivers.CallID
}

func (d *fakeDriver) Capabilities() drivers.Capabilities { return d.caps }
func (d *fakeDriver) Register(r drivers.Region) (drivers.Handle, error) {
	return drivers.Handle(1), nil
}
func (d *fakeDriver) Unregister(drivers.Handle) error { return nil }
func (d *fakeDriver) Contains(_ context.Context, keys []string) ([]bool, error) {
	out := make([]bool, len(keys))
	for i, k := range keys {
		out[i] = d.present[k]
	}
	return out, nil
}
func (d *fakeDriver) Submit(b drivers.RowBatch, _ func()) (drivers.Call, error) {
	d.next++
	return &fakeCall{id: d.next, res: make([]drivers.Status, len(b.Rows))}, nil
}
func (d *fakeDriver) Drain() drivers.DrainStatus        { return drivers.DrainStatus{Done: true} }
func (d *fakeDriver) Shutdown(context.Context) []string { return nil }

type fakeCall struct {
	id  drivers.CallID
	res []drivers.Status
	acc drivers.Access
}

func (c *fakeCall) ID() drivers.CallID           { return c.id }
func (c *fakeCall) Results() []drivers.Status    { return append([]drivers.Status(nil), c.res...) }
func (c *fakeCall) Access() drivers.Access       { return c.acc }
func (c *fakeCall) Cancel() drivers.CancelResult { return drivers.CancelRequested }

type fakeAttempt struct {
	id  uint64
	out backend.Outcome
	acc drivers.Access
}

func (a *fakeAttempt) State() backend.State     { return a.out.State }
func (a *fakeAttempt) ID() uint64               { return a.id }
func (a *fakeAttempt) Outcome() backend.Outcome { return a.out }
func (a *fakeAttempt) Access() drivers.Access   { return a.acc }

// world is one model, its tap over a fake driver, and the hand-played
// backend's state.
type world struct {
	t     *testing.T
	m     *Model
	d     drivers.Driver
	fd    *fakeDriver
	clock *fakeClock
	h     drivers.Handle
	taps  []drivers.Call // the calls as the backend holds them, in submit order
}

func newWorld(t *testing.T, absentIsMiss bool, inFlight int) *world {
	fd := &fakeDriver{caps: drivers.Capabilities{MaxRowsPerOp: 2, AbsentIsMiss: absentIsMiss, CanFetch: true, CanPublish: true, CanCancel: true}, present: map[string]bool{}}
	w := &world{t: t, fd: fd, clock: &fakeClock{}}
	w.m = New(Config{Endpoint: "A", Clock: w.clock})
	w.d = w.m.Wrap(fd)
	bc := backend.Config{MaxCallsInFlight: inFlight, MaxQueuedCalls: 8, MaxUnprovable: 4, DrainTimeout: time.Millisecond}
	w.m.SetBackend(fd.caps, bc, bc, nil)
	h, err := w.d.Register(drivers.Region{Label: "A0", Slots: 8, SlotBytes: 4, Mem: drivers.Bytes(make([]byte, 32))})
	if err != nil {
		t.Fatal(err)
	}
	w.h = h
	return w
}

func (w *world) view(keys ...string) drivers.View {
	v := drivers.View{}
	for i, k := range keys {
		v.Rows = append(v.Rows, drivers.Row{Key: k, Handle: w.h, Slot: i, Position: i})
		v.Mask = append(v.Mask, true)
	}
	return v
}

// admit plays an admission: the model hears it, the attempt is Pending.
func (w *world) admit(dir drivers.Direction, v drivers.View) *fakeAttempt {
	a := &fakeAttempt{id: uint64(len(w.m.attempts) + 1), acc: drivers.AccessPending}
	w.m.Admitting(dir, v)
	return a
}

func (w *world) admitted(a *fakeAttempt) { w.m.Admitted(a, nil) }

func (w *world) submit(dir drivers.Direction, rows []drivers.Row) *fakeCall {
	c, err := w.d.Submit(drivers.RowBatch{Dir: dir, Rows: rows}, func() {})
	if err != nil {
		w.t.Fatal(err)
	}
	w.taps = append(w.taps, c)
	return c.(*callTap).c.(*fakeCall)
}

func (w *world) read(c drivers.Call) {
	c.Results()
	c.Access()
}

func (w *world) step(quiescent bool) {
	w.clock.t += time.Microsecond
	w.m.AfterStep(quiescent)
}

func (w *world) expect(rule rules.ID) {
	w.t.Helper()
	var got []string
	for _, v := range w.m.Violations() {
		got = append(got, v.Rule.String()+": "+v.Detail)
		if v.Rule == rule {
			return
		}
	}
	w.t.Fatalf("want a %v finding, got %q\nrepro: go test ./model/refine -run '%s'", rule, got, w.t.Name())
}

func (w *world) clean() {
	w.t.Helper()
	if v := w.m.Violations(); len(v) > 0 {
		w.t.Fatalf("a conforming backend got findings: %v\nrepro: go test ./model/refine -run '%s'", v, w.t.Name())
	}
}

// TestModel plays one backend behaviour per case on a driver with
// AbsentIsMiss and MaxRowsPerOp 2 (so ["a" "b" "c"] cuts into [a b] [c]).
func TestModel(t *testing.T) {
	type script func(w *world)
	ok := func(w *world) {
		v := w.view("a", "b", "c")
		a := w.admit(drivers.Fetch, v)
		c1 := w.submit(drivers.Fetch, v.Rows[:2])
		c2 := w.submit(drivers.Fetch, v.Rows[2:])
		w.admitted(a)
		w.step(true)
		c1.res = []drivers.Status{drivers.OK, drivers.Miss}
		c1.acc = drivers.AccessEnded
		c2.res = []drivers.Status{drivers.OK}
		c2.acc = drivers.AccessEnded
		w.read(w.taps[0])
		w.read(w.taps[1])
		a.out = backend.Outcome{State: backend.Delivered, Served: []bool{true, false, true}}
		a.acc = drivers.AccessEnded
		w.m.Notified(a) // the backend's OnChange report
		w.step(true)
	}
	for _, c := range []struct {
		name string
		play script
		want rules.ID // 0: no finding
	}{
		{"conforming", ok, 0},
		{"served set wrong", func(w *world) {
			v := w.view("a", "b")
			a := w.admit(drivers.Fetch, v)
			c := w.submit(drivers.Fetch, v.Rows)
			w.admitted(a)
			c.res, c.acc = []drivers.Status{drivers.OK, drivers.Miss}, drivers.AccessEnded
			w.read(w.taps[0])
			a.out, a.acc = backend.Outcome{State: backend.Delivered, Served: []bool{true, true}}, drivers.AccessEnded
			w.step(true)
		}, rules.BFetch},
		{"fault delivered", func(w *world) {
			v := w.view("a")
			a := w.admit(drivers.Fetch, v)
			c := w.submit(drivers.Fetch, v.Rows)
			w.admitted(a)
			c.res, c.acc = []drivers.Status{drivers.Fault}, drivers.AccessEnded
			w.read(w.taps[0])
			a.out, a.acc = backend.Outcome{State: backend.Delivered, Served: []bool{false}}, drivers.AccessEnded
			w.step(true)
		}, rules.BFetch},
		{"no cut at max rows", func(w *world) {
			v := w.view("a", "b", "c")
			a := w.admit(drivers.Fetch, v)
			w.submit(drivers.Fetch, v.Rows)
			w.admitted(a)
		}, rules.BCut},
		{"too many in flight", func(w *world) {
			v := w.view("a", "b", "c")
			a := w.admit(drivers.Fetch, v)
			w.submit(drivers.Fetch, v.Rows[:2])
			w.submit(drivers.Fetch, v.Rows[2:])
			w.admitted(a)
		}, rules.BBound},
		{"idle with a slot free", func(w *world) {
			v := w.view("a", "b", "c")
			a := w.admit(drivers.Fetch, v)
			c := w.submit(drivers.Fetch, v.Rows[:2])
			w.admitted(a)
			c.res, c.acc = []drivers.Status{drivers.OK, drivers.OK}, drivers.AccessEnded
			w.read(w.taps[0]) // the slot frees, and batch [c] waits
			w.step(true)
		}, rules.BProgress},
		{"delivered never", func(w *world) {
			v := w.view("a")
			a := w.admit(drivers.Fetch, v)
			c := w.submit(drivers.Fetch, v.Rows)
			w.admitted(a)
			c.res, c.acc = []drivers.Status{drivers.OK}, drivers.AccessEnded
			w.read(w.taps[0])
			w.step(true)
		}, rules.BModel},
		{"access ended early", func(w *world) {
			v := w.view("a")
			a := w.admit(drivers.Fetch, v)
			c := w.submit(drivers.Fetch, v.Rows)
			w.admitted(a)
			c.res = []drivers.Status{drivers.OK}
			w.read(w.taps[0])
			a.out, a.acc = backend.Outcome{State: backend.Delivered, Served: []bool{true}}, drivers.AccessEnded
			w.step(true)
		}, rules.BAccess},
		{"cancel not forwarded", func(w *world) {
			v := w.view("a")
			a := w.admit(drivers.Fetch, v)
			w.submit(drivers.Fetch, v.Rows)
			w.admitted(a)
			w.m.Cancelling(a)
			a.out = backend.Outcome{State: backend.Cancelled}
			w.m.Cancelled(a, true)
		}, rules.BCancel},
		{"late success", func(w *world) {
			v := w.view("a")
			a := w.admit(drivers.Fetch, v)
			c := w.submit(drivers.Fetch, v.Rows)
			w.admitted(a)
			w.m.Cancelling(a)
			a.out = backend.Outcome{State: backend.Cancelled}
			w.taps[0].Cancel()
			w.m.Cancelled(a, true)
			c.res, c.acc = []drivers.Status{drivers.OK}, drivers.AccessEnded
			w.read(w.taps[0])
			a.out, a.acc = backend.Outcome{State: backend.Delivered, Served: []bool{true}}, drivers.AccessEnded
			w.step(true)
		}, rules.BOutcome},
		{"publish of a present key", func(w *world) {
			w.fd.present["a"] = true
			v := w.view("a", "b")
			a := w.admit(drivers.Publish, v)
			w.d.Contains(context.Background(), []string{"a", "b"})
			w.submit(drivers.Publish, v.Rows)
			w.admitted(a)
		}, rules.BCut},
		{"labels missing", func(w *world) {
			v := w.view("a")
			a := w.admit(drivers.Fetch, v)
			w.submit(drivers.Fetch, v.Rows)
			w.admitted(a)
			ask := w.m.ShutdownAsked()
			w.taps[0].Cancel()
			a.out = backend.Outcome{State: backend.Cancelled}
			w.step(false)
			w.clock.t += 2 * time.Millisecond
			w.d.Shutdown(context.Background())
			w.m.ShutdownReturned(ask, nil) // the call never ENDED: it must be named
		}, rules.BShut},
		{"failed but serving", func(w *world) {
			v := w.view("a")
			a := w.admit(drivers.Fetch, v)
			c := w.submit(drivers.Fetch, v.Rows)
			w.admitted(a)
			c.res, c.acc = []drivers.Status{drivers.Fault}, drivers.AccessEnded
			w.read(w.taps[0])
			a.out, a.acc = backend.Outcome{State: backend.Failed, Served: []bool{true}}, drivers.AccessEnded
			w.step(true)
		}, rules.BFetch},
		{"change never reported", func(w *world) {
			v := w.view("a")
			a := w.admit(drivers.Fetch, v)
			c := w.submit(drivers.Fetch, v.Rows)
			w.admitted(a)
			c.res, c.acc = []drivers.Status{drivers.OK}, drivers.AccessEnded
			w.read(w.taps[0])
			a.out, a.acc = backend.Outcome{State: backend.Delivered, Served: []bool{true}}, drivers.AccessEnded
			w.step(true) // no OnChange report: the owner never learns
		}, rules.BAccess},
		{"access changed without a fact", func(w *world) {
			v := w.view("a")
			a := w.admit(drivers.Fetch, v)
			w.submit(drivers.Fetch, v.Rows)
			w.admitted(a)
			w.step(true)                // judged: Pending, access PENDING, as the model says
			a.acc = drivers.AccessEnded // the call is still running
			w.m.Notified(a)
			w.step(true) // nothing arrived about a's calls, but it shows another access
		}, rules.BAccess},
		{"committed without a fact", func(w *world) {
			v := w.view("a")
			a := w.admit(drivers.Fetch, v)
			w.submit(drivers.Fetch, v.Rows)
			w.admitted(a)
			w.step(true)
			a.out = backend.Outcome{State: backend.Delivered, Served: []bool{true}} // no results read
			w.m.Notified(a)
			w.step(true)
		}, rules.BModel},
		{"refused with room", func(w *world) {
			w.admit(drivers.Fetch, w.view("a"))
			w.m.Admitted(nil, backend.ErrOverCapacity)
		}, rules.BSubmit},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, true, 1)
			if c.want == 0 {
				w = newWorld(t, true, 2)
			}
			c.play(w)
			if c.want == 0 {
				w.clean()
				return
			}
			w.expect(c.want)
		})
	}
}

// TestCut pins B-CUT's batches: a new one at max rows or at a key the
// current one already names.
func TestCut(t *testing.T) {
	for _, tc := range []struct {
		keys string
		max  int
		want []int // each batch's end
	}{
		{"", 2, nil},
		{"a", 2, []int{1}},
		{"abc", 2, []int{2, 3}},
		{"abcde", 2, []int{2, 4, 5}},
		{"aab", 4, []int{1, 3}},
		{"abab", 4, []int{2, 4}},
		{"abcb", 4, []int{3, 4}},
		{"abcabc", 3, []int{3, 6}},
		{"abcdefghijklmnopqrst", 1, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}},
	} {
		rows := make([]drivers.Row, len(tc.keys))
		for i := range rows {
			rows[i] = drivers.Row{Key: tc.keys[i : i+1], Slot: i, Position: i}
		}
		var s slab.Of[batch]
		a := &attempt{}
		var got []int
		for _, b := range cut(&s, a, rows, tc.max) {
			end := len(got)
			if end > 0 {
				end = got[end-1]
			}
			if b.a != a || cap(b.rows) != len(b.rows) || len(b.rows) == 0 || &b.rows[0] != &rows[end] {
				t.Fatalf("cut(%q, max %d): batch %v is not the next full slice of rows (repro: go test ./model/refine -run TestCut)", tc.keys, tc.max, b.rows)
			}
			got = append(got, end+len(b.rows))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("cut(%q, max %d) ends batches at %v, want %v (repro: go test ./model/refine -run TestCut)", tc.keys, tc.max, got, tc.want)
		}
	}
}
