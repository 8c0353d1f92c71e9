package broken_test

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/storesim/storesim/broken"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

// repro is the command that reruns the current (sub)test.
func repro(t testing.TB) string {
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return fmt.Sprintf("(repro: go test ./broken -run '%s')", strings.Join(parts, "/"))
}

const (
	slotBytes = 32
	slots     = 64
)

// setup is what a directed scenario needs of its world.
type setup struct {
	seed      uint64
	faults    memdriver.FaultMix
	wakeDelay time.Duration // sim.Options.MaxWakeDelay
	coalesce  float64       // sim.Options.CoalesceChance
	_         struct{}
}

// world is one directed run: a scheduler and a store, the driver under test
// ("dut": broken, or the reference with the same configuration) wrapped in
// the contract monitor with a history recorder, and a calm reference
// "seed" endpoint that published the keys the scenario starts from, so the
// merged history explains them to the store model. Keys "pre/0".."pre/3"
// are present (slotBytes bytes), "short/0" is present with half as many
// bytes, "none/…" are never published; the monitor's Truth knows these.
type world struct {
	t       *testing.T
	spec    broken.Spec
	planted bool
	s       *sim.Scheduler
	store   *memdriver.Store
	seq     atomic.Int64

	rec  *model.Recorder
	mon  *monitor.Monitor
	d    drivers.Driver // the monitored driver under test
	raw  drivers.Driver
	main *arena.Arena
	h    drivers.Handle // main's handle

	seedRec *model.Recorder
	seedMon *monitor.Monitor

	arenas, seedArenas []*arena.Arena
	nextSlot           int
	fresh              int
	touches            int                      // touches of the driver under test
	touched            map[drivers.Toucher]bool // who touched
	down               bool
	seed               uint64
}

func truth(key string) (present, known bool) {
	switch {
	case strings.HasPrefix(key, "pre/"), strings.HasPrefix(key, "short/"):
		return true, true
	case strings.HasPrefix(key, "none/"):
		return false, true
	}
	return false, false
}

// content is the object a publish of key from slot writes.
func content(key string, slot, n int) []byte {
	r := sim.NewRand(sim.HashString(fmt.Sprintf("%s@%d", key, slot)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint64())
	}
	return b
}

func newWorld(t *testing.T, spec broken.Spec, planted bool, su setup) *world {
	t.Helper()
	w := &world{t: t, spec: spec, planted: planted, touched: map[drivers.Toucher]bool{}, seed: su.seed}
	w.s = sim.New(sim.Options{Seed: su.seed, MaxWakeDelay: su.wakeDelay, CoalesceChance: su.coalesce})
	recs := map[string]*model.Recorder{}
	store, err := memdriver.NewStore(memdriver.StoreOptions{OnEvent: func(e memdriver.StoreEvent) {
		if r := recs[e.By.Driver]; r != nil && e.Kind == memdriver.EventPut && e.Stored {
			r.Put(w.s.Now(), e.By.Call, e.By.Row, e.Key)
		}
	}})
	if err != nil {
		t.Fatalf("NewStore: %v %s", err, repro(t))
	}
	w.store = store
	ropts := model.RecorderOptions{Seed: su.seed, Sequence: &w.seq, StoreLogComplete: true, Lookups: true}
	w.seedRec, w.rec = model.NewRecorder(ropts), model.NewRecorder(ropts)
	recs["seed"], recs["dut"] = w.seedRec, w.rec
	w.seedKeys()

	cfg := memdriver.Config{Name: "dut", Faults: su.faults}
	if planted {
		w.raw, err = broken.New(spec.Name, w.s, store, cfg)
		if err != nil {
			t.Fatalf("broken.New(%s): %v %s", spec.Name, err, repro(t))
		}
	} else if cfg = spec.Reference(cfg); spec.Together {
		w.raw = memdriver.NewTogether(w.s, store, cfg)
	} else {
		w.raw = memdriver.New(w.s, store, cfg)
	}
	w.mon = monitor.Wrap(w.raw, monitor.Options{Clock: w.s, Seed: su.seed, Observers: []monitor.Observer{w.rec}, Truth: truth})
	w.d = w.mon.Driver()
	return w
}

// seedKeys publishes pre/0..3 and short/0 through a calm, monitored
// reference driver of its own.
func (w *world) seedKeys() {
	d := memdriver.New(w.s, w.store, memdriver.Config{Name: "seed"})
	w.seedMon = monitor.Wrap(d, monitor.Options{Clock: w.s, Observers: []monitor.Observer{w.seedRec}})
	md := w.seedMon.Driver()
	for _, sb := range []int{slotBytes, slotBytes / 2} {
		a := arena.New(fmt.Sprintf("seed%d", sb), 8, sb, arena.Options{Clock: w.s, OnTouch: w.seedRec.OnTouch})
		for i := range 8 {
			a.Lend(i, 1)
		}
		w.seedArenas = append(w.seedArenas, a)
		h, err := md.Register(a.Region())
		if err != nil {
			w.t.Fatalf("seed Register: %v %s", err, repro(w.t))
		}
		keys := []string{"pre/0", "pre/1", "pre/2", "pre/3"}
		if sb != slotBytes {
			keys = []string{"short/0"}
		}
		b := drivers.RowBatch{Dir: drivers.Publish}
		for i, k := range keys {
			a.Fill(i, content(k, i, sb))
			b.Rows = append(b.Rows, drivers.Row{Key: k, Handle: h, Slot: i, Position: i})
		}
		if _, err := md.Submit(b, nil); err != nil {
			w.t.Fatalf("seed Submit: %v %s", err, repro(w.t))
		}
	}
	w.run()
	for _, k := range []string{"pre/0", "pre/1", "pre/2", "pre/3", "short/0"} {
		if !w.store.Has(k) {
			w.t.Fatalf("seeding did not store %q %s", k, repro(w.t))
		}
	}
}

// arena makes a fresh arena of the driver under test, every slot lent.
func (w *world) arena() *arena.Arena {
	w.fresh++
	a := arena.New(fmt.Sprintf("dut%d", w.fresh), slots, slotBytes, arena.Options{Clock: w.s, OnTouch: func(t arena.Touch) {
		w.touches++
		w.touched[t.By] = true
		w.rec.OnTouch(t)
	}})
	for i := range slots {
		a.Lend(i, 1)
	}
	w.arenas = append(w.arenas, a)
	return a
}

// register registers the main region, retrying on fresh memory when a
// fault refuses it.
func (w *world) register() {
	w.t.Helper()
	for range 20 {
		a := w.arena()
		h, err := w.d.Register(a.Region())
		if err == nil {
			w.main, w.h = a, h
			return
		}
	}
	w.t.Fatalf("no registration of the main region succeeded %s", repro(w.t))
}

// submit submits a batch on the main region's next free slots; onChange is
// a scheduler wake-up that reads the call back, as a backend does.
func (w *world) submit(dir drivers.Direction, keys ...string) (drivers.Call, error) {
	b := drivers.RowBatch{Dir: dir}
	for i, k := range keys {
		slot := w.nextSlot % slots
		w.nextSlot++
		if dir == drivers.Publish {
			w.main.Fill(slot, content(k, slot, slotBytes))
		}
		b.Rows = append(b.Rows, drivers.Row{Key: k, Handle: w.h, Slot: slot, Position: i})
	}
	return w.submitBatch(b)
}

func (w *world) submitBatch(b drivers.RowBatch) (drivers.Call, error) {
	var c drivers.Call
	wake := w.s.Wake("test/onChange", func() {
		if c != nil {
			c.Results()
			c.Access()
		}
	})
	c, err := w.d.Submit(b, wake)
	return c, err
}

// must fails the test on a refused submit: the scenario's situation needs
// the call.
func (w *world) must(c drivers.Call, err error) drivers.Call {
	w.t.Helper()
	if err != nil {
		w.t.Fatalf("Submit: %v %s", err, repro(w.t))
	}
	return c
}

func (w *world) fetch(keys ...string) drivers.Call {
	w.t.Helper()
	return w.must(w.submit(drivers.Fetch, keys...))
}

func (w *world) publish(keys ...string) drivers.Call {
	w.t.Helper()
	return w.must(w.submit(drivers.Publish, keys...))
}

// run steps the scheduler until nothing is runnable.
func (w *world) run() {
	w.t.Helper()
	if err := w.s.RunUntilIdle(1_000_000); err != nil {
		w.t.Fatalf("run: %v %s", err, repro(w.t))
	}
}

// stepUntil steps the scheduler until cond holds; it fails the test when
// the scheduler runs dry first.
func (w *world) stepUntil(what string, cond func() bool) {
	w.t.Helper()
	for !cond() {
		if !w.s.Step() {
			w.t.Fatalf("seed %d (planted %v): the scheduler went idle before %s %s", w.seed, w.planted, what, repro(w.t))
		}
	}
}

// moving reports whether some row of c has touched its slot and has no
// result yet: a transfer in flight.
func (w *world) moving(c drivers.Call) bool {
	for i, st := range c.Results() {
		if !st.Final() && w.touched[drivers.Toucher{Call: c.ID(), Row: i}] {
			return true
		}
	}
	return false
}

// shutdown shuts the driver under test down and runs what it left.
func (w *world) shutdown() []string {
	w.down = true
	labels := w.d.Shutdown(context.Background())
	w.run()
	return labels
}

// violations runs every oracle: the contract monitors (Finish), the memory
// oracle over both endpoints' arenas (S-NO-LATE-ACCESS, D-ACCESS-END,
// D-SUB-6, D-STATUS) and the store model over the merged history (S-LIN).
func (w *world) violations() []rules.Violation {
	w.t.Helper()
	if !w.down {
		w.shutdown()
	}
	w.seedMon.Shutdown(context.Background())
	w.run()
	out := append(w.mon.Finish(), w.seedMon.Finish()...)
	out = append(out, w.rec.MemoryViolations(w.arenas...)...)
	out = append(out, w.seedRec.MemoryViolations(w.seedArenas...)...)
	h := append(w.seedRec.History(), w.rec.History()...)
	sort.SliceStable(h, func(i, j int) bool { return h[i].Call < h[j].Call })
	res := model.Check(h, model.DurableStore, 10*time.Second)
	if res.Err != nil || res.Outcome == porcupine.Unknown {
		w.t.Fatalf("S-LIN check did not decide: %v %s", res, repro(w.t))
	}
	out = append(out, res.Violations(0)...)
	rules.Sort(out)
	return out
}
