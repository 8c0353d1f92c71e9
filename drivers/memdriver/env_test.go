package memdriver

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

// The real-time test starts the realtime runtime's executor goroutine.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// repro is the command that reruns the current (sub)test.
func repro(t testing.TB) string {
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return fmt.Sprintf("(repro: go test ./drivers/memdriver -run '%s')", strings.Join(parts, "/"))
}

// kind is one of the two reference drivers; every rule test runs on both.
type kind struct {
	name     string
	together bool
}

var kinds = []kind{{"plain", false}, {"together", true}}

// env is one simulated run: scheduler, store, one driver, arenas.
type env struct {
	t      *testing.T
	s      *sim.Scheduler
	store  *Store
	d      *Driver
	td     *TogetherDriver // nil for the plain driver
	arenas []*arena.Arena
	calls  map[drivers.CallID]tracked
	labels map[drivers.Handle]string
	// touchHook, if set, sees every touch after onTouch's checks.
	touchHook func(arena.Touch)
}

type tracked struct {
	c drivers.Call
	b drivers.RowBatch
}

type envOpts struct {
	seed  uint64
	cfg   Config
	store StoreOptions
	_     struct{}
}

func newEnv(t *testing.T, k kind, o envOpts) *env {
	t.Helper()
	e := &env{
		t: t, s: sim.New(sim.Options{Seed: o.seed, MaxWakeDelay: 3 * time.Microsecond, CoalesceChance: 0.3}),
		calls: map[drivers.CallID]tracked{}, labels: map[drivers.Handle]string{},
	}
	if o.store.Evicting && o.store.Rand == nil {
		o.store.Rand = sim.NewRand(o.seed)
	}
	st, err := NewStore(o.store)
	if err != nil {
		t.Fatalf("NewStore: %v %s", err, repro(t))
	}
	e.store = st
	if k.together {
		e.td = NewTogether(e.s, st, o.cfg)
		e.d = e.td.Driver
	} else {
		e.d = New(e.s, st, o.cfg)
	}
	e.s.AddPending("memdriver", e.d.PendingCalls)
	return e
}

// driver is the driver under test as the contract sees it.
func (e *env) driver() drivers.Driver {
	if e.td != nil {
		return e.td
	}
	return e.d
}

// arena makes an arena with every slot lent to attempt 1, a touch log and
// the touch checks of onTouch.
func (e *env) arena(label string, slots, slotBytes int) *arena.Arena {
	a := arena.New(label, slots, slotBytes, arena.Options{Clock: e.s, Log: true, OnTouch: e.onTouch})
	for i := 0; i < slots; i++ {
		a.Lend(i, 1)
	}
	e.arenas = append(e.arenas, a)
	return a
}

// register registers a's region; the test plays the monitor and marks the
// arena registered.
func (e *env) register(a *arena.Arena) drivers.Handle {
	e.t.Helper()
	h, err := e.d.Register(a.Region())
	if err != nil {
		e.t.Fatalf("Register(%s): %v %s", a.Label(), err, repro(e.t))
	}
	a.SetRegistered(true)
	e.labels[h] = a.Label()
	return h
}

// live reports whether h names a live binding of the driver.
func (e *env) live(h drivers.Handle) bool {
	e.d.mu.Lock()
	defer e.d.mu.Unlock()
	_, ok := e.d.liveRegion(h)
	return ok
}

// onTouch checks every touch as it happens: the call's access is not ENDED
// (D-ACCESS-END); the row is not MISS or NOT_ATTEMPTED (D-STATUS: those
// rows are untouched); the touch is in the row's own slot (D-SUB-6); a FETCH
// row only writes and a PUBLISH row only reads.
func (e *env) onTouch(tc arena.Touch) {
	tr, ok := e.calls[tc.By.Call]
	if !ok {
		e.t.Errorf("touch by unknown call: %v %s", tc, repro(e.t))
		return
	}
	if tr.c.Access() == drivers.AccessEnded {
		e.t.Errorf("D-ACCESS-END: touch after access ENDED: %v %s", tc, repro(e.t))
	}
	if st := tr.c.Results()[tc.By.Row]; st == drivers.Miss || st == drivers.NotAttempted {
		e.t.Errorf("D-STATUS: touch of a %v row: %v %s", st, tc, repro(e.t))
	}
	row := tr.b.Rows[tc.By.Row]
	if e.labels[row.Handle] != tc.Region || tc.Slot != row.Slot {
		e.t.Errorf("D-SUB-6: row %d is slot %d of %q, touch was %v %s", tc.By.Row, row.Slot, e.labels[row.Handle], tc, repro(e.t))
	}
	if want := map[drivers.Direction]arena.Op{drivers.Fetch: arena.Write, drivers.Publish: arena.Read}[tr.b.Dir]; tc.Op != want {
		e.t.Errorf("D-STATUS: %v row touched by %v: %v %s", tr.b.Dir, tc.Op, tc, repro(e.t))
	}
	if e.touchHook != nil {
		e.touchHook(tc)
	}
}

// run steps the scheduler until idle and fails on a hang.
func (e *env) run() {
	e.t.Helper()
	if err := e.s.RunUntilIdle(1_000_000); err != nil {
		e.t.Fatalf("run: %v %s", err, repro(e.t))
	}
}

// noViolations asserts that no arena recorded S-NO-LATE-ACCESS or D-SUB-6.
func (e *env) noViolations() {
	e.t.Helper()
	for _, a := range e.arenas {
		for _, v := range a.Violations() {
			e.t.Errorf("%s: %v %s", v.Rule, v, repro(e.t))
		}
	}
}

// touchesBy lists a's touches by call id (and row, when row >= 0).
func touchesBy(a *arena.Arena, id drivers.CallID, row int) []arena.Touch {
	var out []arena.Touch
	for _, t := range a.Touches() {
		if t.By.Call == id && (row < 0 || t.By.Row == row) {
			out = append(out, t)
		}
	}
	return out
}

// content is the deterministic object published under key.
func content(key string, n int) []byte {
	r := sim.NewRand(sim.HashString(key))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint64())
	}
	return b
}

func rows(h drivers.Handle, keys ...string) []drivers.Row {
	rs := make([]drivers.Row, len(keys))
	for i, k := range keys {
		rs[i] = drivers.Row{Key: k, Handle: h, Slot: i, Position: i}
	}
	return rs
}

// watch follows one call through its callbacks and checks, at each one,
// D-CB-4 (the driver's mutex is free), D-CB-3 (results final, access along
// D-ACCESS) and counts callbacks.
type watch struct {
	t        *testing.T
	d        *Driver
	c        drivers.Call
	n        int
	results  []drivers.Status
	access   drivers.Access
	history  []drivers.Access // access states seen, in order, from PENDING
	empty    int              // callbacks that saw no change since the previous one
	shutDone bool             // Shutdown returned: a callback now breaks D-CB-5
	onCall   func()
}

func (w *watch) onChange() {
	w.n++
	if w.shutDone {
		w.t.Errorf("D-CB-5: callback after Shutdown returned %s", repro(w.t))
	}
	if !w.d.mu.TryLock() {
		w.t.Errorf("D-CB-4: callback runs while the driver holds its mutex %s", repro(w.t))
		return // reading the call now would deadlock
	}
	w.d.mu.Unlock()
	if w.onCall != nil {
		w.onCall()
	}
	if w.c == nil {
		return
	}
	w.observe()
}

func (w *watch) observe() {
	res, acc := w.c.Results(), w.c.Access()
	if w.n > 1 && slices.Equal(res, w.results) && acc == w.access {
		w.empty++
	}
	if w.results != nil {
		for i, st := range w.results {
			if st.Final() && res[i] != st {
				w.t.Errorf("D-CB-3: call %d row %d went %v -> %v %s", w.c.ID(), i, st, res[i], repro(w.t))
			}
		}
	}
	if !w.access.CanBecome(acc) {
		w.t.Errorf("D-ACCESS: call %d access went %v -> %v %s", w.c.ID(), w.access, acc, repro(w.t))
	}
	if acc != w.access {
		w.history = append(w.history, acc)
	}
	w.results, w.access = res, acc
}

// submit submits and attaches a watch; it fails the test on an error.
func (e *env) submit(dir drivers.Direction, rs []drivers.Row) (drivers.Call, *watch) {
	e.t.Helper()
	w := &watch{t: e.t, d: e.d}
	b := drivers.RowBatch{Dir: dir, Rows: rs}
	c, err := e.d.Submit(b, w.onChange)
	if err != nil {
		e.t.Fatalf("Submit(%v %d rows): %v %s", dir, len(rs), err, repro(e.t))
	}
	w.c = c
	e.calls[c.ID()] = tracked{c, b}
	return c, w
}

// settled asserts the call's final state as the last callback saw it
// (D-CB-1 state before signal, D-CB-2 no lost wake-up).
func (w *watch) settled() {
	w.t.Helper()
	res, acc := w.c.Results(), w.c.Access()
	if w.n == 0 {
		w.t.Errorf("D-CB-2: call %d never called back %s", w.c.ID(), repro(w.t))
		return
	}
	if !slices.Equal(w.results, res) || w.access != acc {
		w.t.Errorf("D-CB-2: call %d last callback saw %v/%v, final state is %v/%v %s", w.c.ID(), w.results, w.access, res, acc, repro(w.t))
	}
}

func statuses(sts ...drivers.Status) []drivers.Status { return sts }
