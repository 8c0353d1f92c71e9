package backend_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/model/lender"
	"github.com/storesim/storesim/sim"
)

// A world is one simulated run: a scheduler and one shared memdriver.Store,
// with any number of endpoints (driver + lender + backend) on it.
type world struct {
	t     *testing.T
	s     *sim.Scheduler
	store *memdriver.Store
	eps   []*endpoint
	repro string
}

// driverKind is one of the two reference drivers.
type driverKind struct {
	name     string
	together bool
}

var driverKinds = []driverKind{{"mem", false}, {"together", true}}

// flavour is one cell of the rule table: a reference driver and an
// AbsentIsMiss setting.
type flavour struct {
	kind   driverKind
	absent bool
}

func (f flavour) String() string { return fmt.Sprintf("%s/absent-is-miss=%v", f.kind.name, f.absent) }

func flavours() []flavour {
	var out []flavour
	for _, k := range driverKinds {
		for _, a := range []bool{true, false} {
			out = append(out, flavour{k, a})
		}
	}
	return out
}

func reproOf(t *testing.T) string {
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return fmt.Sprintf("(repro: go test ./backend -run '%s')", strings.Join(parts, "/"))
}

func newWorld(t *testing.T, seed uint64, opts memdriver.StoreOptions) *world {
	t.Helper()
	if opts.Evicting && opts.Rand == nil {
		opts.Rand = sim.NewRand(seed)
	}
	st, err := memdriver.NewStore(opts)
	if err != nil {
		t.Fatalf("NewStore: %v %s", err, reproOf(t))
	}
	s := sim.New(sim.Options{Seed: seed, MaxWakeDelay: 3 * time.Microsecond, CoalesceChance: 0.3})
	return &world{t: t, s: s, store: st, repro: reproOf(t)}
}

// endpoint is one user of the store: its own memory, lender and backend.
type endpoint struct {
	w    *world
	name string
	spy  *spy
	l    *lender.Lender
	b    *backend.Backend
	err  error // from backend.New
}

type epOpts struct {
	fl      flavour
	maxRows int // 0: memdriver's default (4)
	faults  memdriver.FaultMix
	cfg     backend.Config
	slots   int // per region, 2 regions; 0: 16
}

func (w *world) endpoint(name string, o epOpts) *endpoint {
	w.t.Helper()
	caps := memdriver.DefaultCaps
	caps.AbsentIsMiss = o.fl.absent
	if o.maxRows > 0 {
		caps.MaxRowsPerOp = o.maxRows
	}
	mcfg := memdriver.Config{Name: name, Caps: caps, Faults: o.faults}
	var d drivers.Driver
	if o.fl.kind.together {
		d = memdriver.NewTogether(w.s, w.store, mcfg)
	} else {
		d = memdriver.New(w.s, w.store, mcfg)
	}
	slots := o.slots
	if slots == 0 {
		slots = 16
	}
	l, err := lender.New(w.s, lender.Spec{Label: name + "0", Slots: slots, SlotBytes: 16}, lender.Spec{Label: name + "1", Slots: slots, SlotBytes: 16})
	if err != nil {
		w.t.Fatalf("lender.New: %v %s", err, w.repro)
	}
	ep := &endpoint{w: w, name: name, spy: wrap(d), l: l}
	cfg := o.cfg
	cfg.Name, cfg.OnChange = name, l.OnChange
	ep.b, ep.err = backend.New(w.s, ep.spy.driver(), l.Regions(), cfg)
	if ep.b != nil {
		l.Bound(ep.b)
		w.s.AddPending(name, ep.b.Pending) // liveness: run() fails on a hang
	}
	w.eps = append(w.eps, ep)
	return ep
}

func content(key string) []byte { return []byte(fmt.Sprintf("%-16.16s", "obj:"+key)) }

func (ep *endpoint) publish(keys ...string) (*lender.Loan, *backend.Attempt) {
	ep.w.t.Helper()
	cs := make([][]byte, len(keys))
	for i, k := range keys {
		cs[i] = content(k)
	}
	ln, a, err := ep.l.Publish(ep.b, keys, cs)
	if err != nil {
		ep.w.t.Fatalf("%s: Publish %q: %v %s", ep.name, keys, err, ep.w.repro)
	}
	return ln, a
}

func (ep *endpoint) fetch(keys ...string) (*lender.Loan, *backend.Attempt) {
	ep.w.t.Helper()
	ln, a, err := ep.l.Fetch(ep.b, keys)
	if err != nil {
		ep.w.t.Fatalf("%s: Fetch %q: %v %s", ep.name, keys, err, ep.w.repro)
	}
	return ln, a
}

// shutdown shuts the backend down, hands the labels to the lender and
// returns them.
func (ep *endpoint) shutdown() []string {
	ep.w.t.Helper()
	var labels []string
	done := false
	ep.b.Shutdown(func(l []string) { labels, done = l, true; ep.l.ShutdownReturned(l) })
	ep.w.run()
	if !done {
		ep.w.t.Fatalf("%s: shutdown never finished %s", ep.name, ep.w.repro)
	}
	return labels
}

func (w *world) run() {
	w.t.Helper()
	if err := w.s.RunUntilIdle(1_000_000); err != nil {
		w.t.Fatalf("run: %v %s", err, w.repro)
	}
}

// check is the oracle every world test ends with: no lender or arena
// violation on any endpoint (S-RELEASE, S-MARKS, S-HOLD, S-NO-LATE-ACCESS,
// D-SUB-6).
func (w *world) check() {
	w.t.Helper()
	for _, ep := range w.eps {
		if v := ep.l.Violations(); len(v) > 0 {
			w.t.Fatalf("%s: %d violations, first %v %s", ep.name, len(v), v[0], w.repro)
		}
	}
}

func servedString(o backend.Outcome) string {
	var b strings.Builder
	for _, s := range o.Served {
		b.WriteByte("01"[btoi(s)])
	}
	return b.String()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// spy wraps a driver and records what the backend asks of it: every Submit
// and Contains batch, and the most calls without access evidence at any
// Submit (the driver's truth, which the backend can only lag behind).
type spy struct {
	d        drivers.Driver
	submits  [][]string
	lookups  [][]string
	calls    []drivers.Call
	maxLive  int
	cancels  int
	together drivers.TogetherRegisterer
}

func wrap(d drivers.Driver) *spy {
	s := &spy{d: d}
	s.together, _ = d.(drivers.TogetherRegisterer)
	return s
}

// driver returns the spy as a driver, keeping together-registration only
// when the wrapped driver has it.
func (s *spy) driver() drivers.Driver {
	if s.together != nil {
		return &spyTogether{s}
	}
	return s
}

func (s *spy) Capabilities() drivers.Capabilities                { return s.d.Capabilities() }
func (s *spy) Register(r drivers.Region) (drivers.Handle, error) { return s.d.Register(r) }
func (s *spy) Unregister(h drivers.Handle) error                 { return s.d.Unregister(h) }
func (s *spy) Drain() drivers.DrainStatus                        { return s.d.Drain() }
func (s *spy) Shutdown(ctx context.Context) []string             { return s.d.Shutdown(ctx) }

func (s *spy) Contains(ctx context.Context, keys []string) ([]bool, error) {
	s.lookups = append(s.lookups, append([]string(nil), keys...))
	return s.d.Contains(ctx, keys)
}

func (s *spy) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	live := 0
	for _, c := range s.calls {
		if !c.Access().Evidenced() {
			live++
		}
	}
	c, err := s.d.Submit(b, onChange)
	if err == nil {
		s.submits = append(s.submits, b.Keys())
		s.calls = append(s.calls, c)
		s.maxLive = max(s.maxLive, live+1)
	}
	return c, err
}

type spyTogether struct{ *spy }

func (s *spyTogether) RegisterTogether(rs []drivers.Region) ([]drivers.Handle, error) {
	return s.together.RegisterTogether(rs)
}

func (s *spyTogether) UnregisterTogether(hs []drivers.Handle) error {
	return s.together.UnregisterTogether(hs)
}
