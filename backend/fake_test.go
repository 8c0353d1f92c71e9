package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
)

// fakeDriver is a scripted driver: every call stays pending until the test
// completes it by hand with fakeCall.finish, so each B-rule can be driven to
// the exact interleaving it is about. It logs every method the backend calls.
type fakeDriver struct {
	caps    drivers.Capabilities
	log     []string
	calls   []*fakeCall
	nextH   drivers.Handle
	live    map[drivers.Handle]drivers.Region
	present map[string]bool
	closed  bool

	// Scripted failures; nil means success.
	registerErr   func(r drivers.Region) error
	submitErr     func(b drivers.RowBatch) error
	containsErr   func(keys []string) error
	containsShort bool
	unregisterErr func(h drivers.Handle) error
	driverLabels  []string
}

type fakeCall struct {
	id       drivers.CallID
	batch    drivers.RowBatch
	res      []drivers.Status
	acc      drivers.Access
	onChange func()
	cancels  int
	short    bool // answer one result fewer
}

func newFake(caps drivers.Capabilities) *fakeDriver {
	return &fakeDriver{caps: caps, live: map[drivers.Handle]drivers.Region{}, present: map[string]bool{}}
}

func (f *fakeDriver) logf(format string, args ...any) {
	f.log = append(f.log, fmt.Sprintf(format, args...))
}

func (f *fakeDriver) Capabilities() drivers.Capabilities { return f.caps }

func (f *fakeDriver) Register(r drivers.Region) (drivers.Handle, error) {
	f.logf("register %s", r.Label)
	if f.registerErr != nil {
		if err := f.registerErr(r); err != nil {
			return 0, err
		}
	}
	f.nextH++
	f.live[f.nextH] = r
	return f.nextH, nil
}

func (f *fakeDriver) Unregister(h drivers.Handle) error {
	f.logf("unregister %d", h)
	if f.unregisterErr != nil {
		if err := f.unregisterErr(h); err != nil {
			return err
		}
	}
	delete(f.live, h)
	return nil
}

func (f *fakeDriver) Contains(_ context.Context, keys []string) ([]bool, error) {
	f.logf("contains %s", strings.Join(keys, " "))
	if f.containsErr != nil {
		if err := f.containsErr(keys); err != nil {
			return nil, err
		}
	}
	out := make([]bool, len(keys))
	for i, k := range keys {
		out[i] = f.present[k]
	}
	if f.containsShort {
		out = out[1:]
	}
	return out, nil
}

func (f *fakeDriver) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	f.logf("submit %v %s", b.Dir, strings.Join(b.Keys(), " "))
	if f.closed {
		return nil, drivers.ErrClosed
	}
	if err := b.Validate(f.caps, func(h drivers.Handle) (drivers.Region, bool) { r, ok := f.live[h]; return r, ok }); err != nil {
		return nil, err
	}
	if f.submitErr != nil {
		if err := f.submitErr(b); err != nil {
			return nil, err
		}
	}
	c := &fakeCall{id: drivers.CallID(len(f.calls) + 1), batch: b, res: make([]drivers.Status, len(b.Rows)), onChange: onChange}
	f.calls = append(f.calls, c)
	return c, nil
}

func (f *fakeDriver) Drain() drivers.DrainStatus {
	f.closed = true
	st := drivers.DrainStatus{Done: true}
	for _, c := range f.calls {
		if !c.acc.Evidenced() {
			st.Done = false
			st.Pending = append(st.Pending, c.id)
		}
	}
	return st
}

func (f *fakeDriver) Shutdown(context.Context) []string {
	f.logf("shutdown")
	f.closed = true
	labels := slices.Clone(f.driverLabels)
	for _, c := range f.calls {
		if c.acc != drivers.AccessEnded {
			c.acc = drivers.AccessUnprovable // the driver stops waiting
			labels = append(labels, drivers.CallLabel(c.id, drivers.WhyUnprovable))
		}
	}
	return labels
}

func (c *fakeCall) ID() drivers.CallID { return c.id }
func (c *fakeCall) Results() []drivers.Status {
	if c.short {
		return slices.Clone(c.res[1:])
	}
	return slices.Clone(c.res)
}
func (c *fakeCall) Access() drivers.Access { return c.acc }
func (c *fakeCall) Cancel() drivers.CancelResult {
	c.cancels++
	return drivers.CancelRequested
}

// finish sets every row's status (one status repeats for all rows) and the
// access, then signals (state before signal, D-CB-1).
func (c *fakeCall) finish(acc drivers.Access, sts ...drivers.Status) {
	for i := range c.res {
		if len(sts) > 0 {
			c.res[i] = sts[min(i, len(sts)-1)]
		}
	}
	c.acc = acc
	c.onChange()
}

// fakeTogether adds together-registration.
type fakeTogether struct {
	*fakeDriver
	togetherErr   func(rs []drivers.Region) error
	untogetherErr func(hs []drivers.Handle) error
}

func (f *fakeTogether) RegisterTogether(rs []drivers.Region) ([]drivers.Handle, error) {
	f.logf("register-together %d", len(rs))
	if f.togetherErr != nil {
		if err := f.togetherErr(rs); err != nil {
			return nil, err
		}
	}
	hs := make([]drivers.Handle, len(rs))
	for i, r := range rs {
		f.nextH++
		f.live[f.nextH] = r
		hs[i] = f.nextH
	}
	return hs, nil
}

func (f *fakeTogether) UnregisterTogether(hs []drivers.Handle) error {
	f.logf("unregister-together %v", hs)
	if f.untogetherErr != nil {
		if err := f.untogetherErr(hs); err != nil {
			return err
		}
	}
	for _, h := range hs {
		delete(f.live, h)
	}
	return nil
}

// env is one backend on a fake driver on a deterministic scheduler.
type env struct {
	t       *testing.T
	s       *sim.Scheduler
	f       *fakeDriver
	b       *Backend
	regions []drivers.Region
	changes []string // OnChange log: "a<id> <outcome> <access>"
	repro   string
}

var defaultCaps = drivers.Capabilities{MaxRowsPerOp: 2, AbsentIsMiss: true, CanFetch: true, CanPublish: true, CanCancel: true}

func regionsN(n, slots int) []drivers.Region {
	rs := make([]drivers.Region, n)
	for i := range rs {
		rs[i] = drivers.Region{Label: string(rune('A' + i)), SlotBytes: 8, Slots: slots, Mem: make(drivers.Bytes, 8*slots)}
	}
	return rs
}

// newEnv builds a backend over a fake with caps and cfg; test names the
// -run pattern for repro lines.
func newEnv(t *testing.T, caps drivers.Capabilities, cfg Config) *env {
	t.Helper()
	e := &env{t: t, s: sim.New(sim.Options{Seed: 1}), f: newFake(caps), regions: regionsN(2, 16)}
	e.repro = fmt.Sprintf("(repro: go test ./backend -run '^%s$')", t.Name())
	cfg.OnChange = func(a *Attempt) {
		e.changes = append(e.changes, fmt.Sprintf("a%d %v %v", a.ID(), a.State(), a.Access()))
	}
	b, err := New(e.s, e.f, e.regions, cfg)
	if err != nil {
		t.Fatalf("New: %v %s", err, e.repro)
	}
	e.b = b
	return e
}

func (e *env) run() {
	e.t.Helper()
	if err := e.s.RunUntilIdle(10000); err != nil {
		e.t.Fatalf("run: %v %s", err, e.repro)
	}
}

// view builds a fully masked-in view over region A, one slot per key.
func (e *env) view(keys ...string) drivers.View {
	h, _ := e.b.Handle("A")
	v := drivers.View{}
	for i, k := range keys {
		v.Rows = append(v.Rows, drivers.Row{Key: k, Handle: h, Slot: i, Position: i})
		v.Mask = append(v.Mask, true)
	}
	return v
}

func (e *env) mustAdmit(dir drivers.Direction, v drivers.View) *Attempt {
	e.t.Helper()
	var a *Attempt
	var err error
	if dir == drivers.Fetch {
		a, err = e.b.Fetch(v)
	} else {
		a, err = e.b.Publish(v)
	}
	if err != nil {
		e.t.Fatalf("%v admission: %v %s", dir, err, e.repro)
	}
	return a
}

func (e *env) call(i int) *fakeCall {
	e.t.Helper()
	if i >= len(e.f.calls) {
		e.t.Fatalf("driver saw %d calls, want call #%d; log %q %s", len(e.f.calls), i+1, e.f.log, e.repro)
	}
	return e.f.calls[i]
}

func (e *env) wantLog(want ...string) {
	e.t.Helper()
	var got []string
	for _, l := range e.f.log {
		if !strings.HasPrefix(l, "register") {
			got = append(got, l)
		}
	}
	if !slices.Equal(got, want) {
		e.t.Fatalf("driver log:\n got %q\nwant %q %s", got, want, e.repro)
	}
}

func (e *env) wantOutcome(a *Attempt, st State, served []bool, acc drivers.Access) {
	e.t.Helper()
	o := a.Outcome()
	if o.State != st || (st == Delivered && !slices.Equal(o.Served, served)) || a.Access() != acc {
		e.t.Fatalf("attempt %d: %v served %v access %v; want %v served %v access %v %s",
			a.ID(), o, o.Served, a.Access(), st, served, acc, e.repro)
	}
}

func (e *env) shutdown() []string {
	e.t.Helper()
	var got []string
	called := 0
	e.b.Shutdown(func(l []string) { got = l; called++ })
	e.run()
	if called != 1 {
		e.t.Fatalf("Shutdown done ran %d times, want 1 %s", called, e.repro)
	}
	return got
}

func bools(s string) []bool {
	out := make([]bool, len(s))
	for i := range s {
		out[i] = s[i] == '1'
	}
	return out
}

var _ = errors.Is
var _ = time.Second
