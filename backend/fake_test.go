package backend

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/backend/backendtest"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
)

type (
	fakeDriver = backendtest.Driver
	fakeCall   = backendtest.Call
)

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
	e := &env{t: t, s: sim.New(sim.Options{Seed: 1}), f: backendtest.New(caps), regions: regionsN(2, 16)}
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
	if i >= len(e.f.Calls()) {
		e.t.Fatalf("driver saw %d calls, want call #%d; log %q %s", len(e.f.Calls()), i+1, e.f.Log(), e.repro)
	}
	return e.f.Calls()[i]
}

func (e *env) wantLog(want ...string) {
	e.t.Helper()
	var got []string
	for _, l := range e.f.Log() {
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
