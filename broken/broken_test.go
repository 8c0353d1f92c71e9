package broken_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storesim/storesim/broken"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/sim"
)

// scenario is the directed case of one broken driver: a setup and a run
// that puts the driver in the situation its plant is about.
type scenario struct {
	setup setup
	// via is the rule id the existing oracles report for this fault when
	// none of them names the spec's own rule (see the package's report):
	// then the case asserts via instead.
	via rules.ID
	run func(w *world)
}

var scenarios = map[broken.Name]scenario{
	broken.LiesAboutAccess: {run: func(w *world) {
		w.fetch("pre/0", "pre/1")
		w.run()
	}},
	// Every call hits a client error mid-transfer; callbacks come at once,
	// so the monitor sees the false ENDED before the rows still in flight
	// touch their slots.
	broken.ForgetsUnprovable: {setup: setup{faults: memdriver.FaultMix{ErrorAfter: 1}}, run: func(w *world) {
		for range 8 {
			w.fetch("pre/0", "pre/1", "pre/2", "pre/3")
		}
		w.run()
	}},
	broken.CancelClaimsEnded: {run: func(w *world) {
		var cs []drivers.Call
		for range 4 {
			cs = append(cs, w.fetch("pre/0", "pre/1", "pre/2", "pre/3"))
		}
		var moving drivers.Call
		w.stepUntil("a row is moving", func() bool {
			for _, c := range cs {
				if w.moving(c) {
					moving = c
					return true
				}
			}
			return false
		})
		moving.Cancel()
		w.run()
	}},
	broken.MissAsFault: {run: func(w *world) {
		w.fetch("pre/0", "none/0")
		w.run()
	}},
	broken.FaultAsMiss: {setup: setup{faults: memdriver.FaultMix{RowFault: 1}}, run: func(w *world) {
		w.fetch("pre/0", "pre/1")
		w.run()
	}},
	broken.LookupOutageAsAbsent: {setup: setup{faults: memdriver.FaultMix{LookupError: 1}}, run: func(w *world) {
		_, _ = w.d.Contains(context.Background(), []string{"pre/0", "pre/1"})
	}},
	broken.TouchesOnMiss: {run: func(w *world) {
		w.fetch("none/0", "pre/0")
		w.run()
	}},
	// short/0 holds half a slot: a size mismatch.
	broken.ShortReadOK: {via: rules.SLin, run: func(w *world) {
		w.fetch("short/0")
		w.run()
	}},
	broken.ShortAnswer: {run: func(w *world) {
		w.fetch("pre/0", "pre/1")
		w.run()
	}},
	broken.ReorderedAnswer: {run: func(w *world) {
		w.fetch("pre/0", "none/0")
		w.run()
	}},
	// Two publishes of one key with different objects, then a fetch.
	broken.OverwritesOnPublish: {via: rules.SLin, run: func(w *world) {
		w.publish("k/0")
		w.run()
		w.publish("k/0")
		w.run()
		w.fetch("k/0")
		w.run()
	}},
	// The same: the store keeps the first object, the driver serves the
	// second one it sent.
	broken.ServesLastWriter: {via: rules.SLin, run: func(w *world) {
		w.publish("k/0")
		w.run()
		w.publish("k/0")
		w.run()
		w.fetch("k/0")
		w.run()
	}},
	// A fetch of the key as soon as it is visible.
	broken.TornPublish: {via: rules.SLin, run: func(w *world) {
		w.publish("k/0")
		w.stepUntil("k/0 is visible", func() bool { return w.store.Has("k/0") })
		w.fetch("k/0")
		w.run()
	}},
	broken.AcceptsRepeatedKey: {run: func(w *world) {
		_, _ = w.submitBatch(drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{
			{Key: "pre/0", Handle: w.h, Slot: 0, Position: 0},
			{Key: "pre/0", Handle: w.h, Slot: 1, Position: 1},
		}})
		w.run()
	}},
	// memdriver.DefaultCaps declares MaxRowsPerOp 4.
	broken.MaxRowsOffByOne: {run: func(w *world) {
		_, _ = w.submit(drivers.Fetch, "pre/0", "pre/1", "pre/2", "pre/3")
		w.run()
	}},
	broken.OutsideSlot: {run: func(w *world) {
		w.fetch("pre/0")
		w.run()
	}},
	broken.AcceptsOverlap: {run: func(w *world) {
		alias := w.main.Region()
		alias.Label = "alias"
		_, _ = w.d.Register(alias)
	}},
	// Plain registrations and together-registrations on fresh memory until
	// each kind was refused at least once.
	broken.LeakyRegisterFailure: {setup: setup{faults: memdriver.FaultMix{RegisterRefused: 0.5}}, run: func(w *world) {
		for range 10 {
			if _, err := w.d.Register(w.arena().Region()); err != nil {
				break
			}
		}
		tr := w.d.(drivers.TogetherRegisterer)
		for range 10 {
			hs, err := tr.RegisterTogether([]drivers.Region{w.arena().Region(), w.arena().Region(), w.arena().Region()})
			if err == nil {
				_ = tr.UnregisterTogether(hs)
			}
		}
	}},
	// Register, close, register the same memory again, close the old handle.
	broken.CloseByAddress: {run: func(w *world) {
		a := w.arena()
		old, err := w.d.Register(a.Region())
		if err != nil {
			w.t.Fatalf("Register: %v %s", err, repro(w.t))
		}
		if err := w.d.Unregister(old); err != nil {
			w.t.Fatalf("Unregister: %v %s", err, repro(w.t))
		}
		if _, err := w.d.Register(a.Region()); err != nil {
			w.t.Fatalf("Register again: %v %s", err, repro(w.t))
		}
		_ = w.d.Unregister(old)
	}},
	broken.UnregisterLies: {setup: setup{faults: memdriver.FaultMix{UnregisterFail: 1}}, run: func(w *world) {
		h, err := w.d.Register(w.arena().Region())
		if err != nil {
			w.t.Fatalf("Register: %v %s", err, repro(w.t))
		}
		_ = w.d.Unregister(h)
	}},
	broken.RegistersAfterShutdown: {run: func(w *world) {
		w.shutdown()
		_, _ = w.d.Register(w.arena().Region())
	}},
	broken.UnregistersBusy: {run: func(w *world) {
		w.fetch("pre/0", "pre/1")
		_ = w.d.Unregister(w.h)
		w.run()
	}},
	broken.LostWakeup: {run: func(w *world) {
		w.fetch("pre/0", "pre/1")
		w.run()
	}},
	broken.EarlySignal: {run: func(w *world) {
		w.fetch("pre/0", "pre/1")
		w.run()
	}},
	broken.SignalUnderLock: {run: func(w *world) {
		w.fetch("pre/0", "pre/1")
		w.run()
	}},
	broken.SignalAfterShutdown: {run: func(w *world) {
		w.fetch("pre/0")
		w.run()
		w.shutdown()
	}},
	// Shutdown as soon as the caller saw a row final, while others are
	// still in flight (or, when the provoked error-after struck first, while
	// the abandoned transfers still complete their rows).
	broken.RegressingResult: {run: func(w *world) {
		c := w.fetch("pre/0", "pre/1", "pre/2", "pre/3")
		w.stepUntil("a row is final", func() bool {
			return slices.ContainsFunc(c.Results(), drivers.Status.Final)
		})
		if c.Access().Evidenced() {
			w.run()
		}
		w.shutdown()
	}},
	broken.BlockingCancel: {run: func(w *world) {
		w.fetch("pre/0", "pre/1").Cancel()
		w.run()
	}},
	broken.DrainLies: {run: func(w *world) {
		w.fetch("pre/0", "pre/1")
		w.d.Drain()
		w.run()
	}},
	// A wrong-length answer leaves the call UNPROVABLE for ever.
	broken.SilentShutdown: {setup: setup{faults: memdriver.FaultMix{WrongLength: 1}}, run: func(w *world) {
		w.fetch("pre/0")
		w.run()
	}},
	broken.BatchKeyedByKey: {run: func(w *world) {
		_, _ = w.submitBatch(drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{
			{Key: "pre/0", Handle: w.h, Slot: 0, Position: 0},
			{Key: "pre/0", Handle: w.h, Slot: 1, Position: 1},
		}})
		w.run()
	}},
	// Two publishes of one key in flight together, then a fetch of it.
	broken.ConcurrentPutTruncates: {via: rules.SLin, run: func(w *world) {
		w.publish("k/0")
		w.publish("k/0")
		w.run()
		w.fetch("k/0")
		w.run()
	}},
	broken.NotFoundAsError: {run: func(w *world) {
		w.fetch("pre/0", "none/0")
		w.run()
	}},
	// The key is evicted once its row has started (its object read) and
	// before its first chunk lands.
	broken.LeaseExpiredRead: {via: rules.SLin, run: func(w *world) {
		w.fetch("pre/0")
		w.stepUntil("the row's first chunk is queued", func() bool {
			return slices.ContainsFunc(w.s.Queued(), func(e sim.EventInfo) bool { return strings.Contains(e.Label, "memdriver/dut chunk") })
		})
		w.store.Evict("pre/0")
		w.run()
	}},
	broken.EmptyGetOK: {via: rules.SLin, run: func(w *world) {
		w.fetch("none/0")
		w.run()
	}},
	// Together-registrations of fresh memory, each failing at some region.
	broken.NoTogetherRollback: {setup: setup{faults: memdriver.FaultMix{TogetherFail: 1}}, run: func(w *world) {
		tr := w.d.(drivers.TogetherRegisterer)
		for range 10 {
			_, _ = tr.RegisterTogether([]drivers.Region{w.arena().Region(), w.arena().Region(), w.arena().Region()})
		}
	}},
	// A batch whose second row names no registration: the first row's slot
	// is read before the refusal.
	broken.ValidatesLate: {run: func(w *world) {
		_, _ = w.submitBatch(drivers.RowBatch{Dir: drivers.Publish, Rows: []drivers.Row{
			{Key: "late/0", Handle: w.h, Slot: 0, Position: 0},
			{Key: "late/1", Handle: w.h + 777, Slot: 1, Position: 1},
		}})
		w.run()
	}},
	// The main region registered again under another label.
	broken.DoubleRegistration: {run: func(w *world) {
		alias := w.main.Region()
		alias.Label = "alias"
		if h, err := w.d.Register(alias); err == nil {
			_ = w.d.Unregister(h)
		}
	}},
}

// matches reports whether rule is the spec's rule, its second id, a rule of
// its family (D-ACCESS-END is a D-ACCESS rule), or the scenario's via.
func matches(spec broken.Spec, via, rule rules.ID) bool {
	switch rule {
	case spec.Rule, spec.Alt, via:
		return rule != 0
	}
	return strings.HasPrefix(rule.String(), spec.Rule.String()+"-")
}

// lines prints violations one a line.
func lines(vs []rules.Violation) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return strings.Join(out, "\n")
}

// directedSeeds: every scenario runs on each seed, with callbacks delivered
// at once (even seeds) or up to 20µs late and coalesced (odd seeds), so a
// plant that fires only on a lucky interleaving fails the test.
const directedSeeds = 64

// TestDirected runs every broken driver's directed scenario: the broken
// driver must be caught on its rule by the monitor or the oracles, and the
// reference driver (same capabilities and faults, no plant) must pass the
// very same scenario with no violation at all.
func TestDirected(t *testing.T) {
	for _, spec := range broken.All() {
		sc, ok := scenarios[spec.Name]
		t.Run(string(spec.Name), func(t *testing.T) {
			if !ok {
				t.Fatalf("no directed scenario for %s %s", spec.Name, repro(t))
			}
			for seed := range uint64(directedSeeds) {
				su := sc.setup
				su.seed = seed
				if seed%2 == 1 {
					su.wakeDelay, su.coalesce = 20*time.Microsecond, 0.5
				}
				w := newWorld(t, spec, true, su)
				w.register()
				sc.run(w)
				vs := w.violations()
				if seed == 0 {
					t.Logf("%s caught as:\n%s", spec.Name, lines(vs))
				}
				if !slices.ContainsFunc(vs, func(v rules.Violation) bool { return matches(spec, sc.via, v.Rule) }) {
					t.Errorf("seed %d: %s (%s) was not caught on %s (via %q); violations:\n%s\n%s",
						seed, spec.Name, spec.Fault, spec.Rule, sc.via, lines(vs), repro(t))
				}
				w = newWorld(t, spec, false, su)
				w.register()
				sc.run(w)
				if vs := w.violations(); len(vs) > 0 {
					t.Errorf("seed %d: the reference driver was flagged in %s's scenario:\n%s\n%s", seed, spec.Name, lines(vs), repro(t))
				}
			}
		})
	}
}

// TestSpecs checks the table itself: 45 rows, every name unique and
// findable with and without the registry prefix, a rule on every row, no
// scenario without a spec.
func TestSpecs(t *testing.T) {
	all := broken.All()
	if len(all) != 45 {
		t.Errorf("All() has %d specs, SPEC §7 has 45 rows %s", len(all), repro(t))
	}
	seen := map[broken.Name]bool{}
	for _, s := range all {
		if seen[s.Name] {
			t.Errorf("%s listed twice %s", s.Name, repro(t))
		}
		seen[s.Name] = true
		if !s.Rule.Valid() || s.Fault == "" {
			t.Errorf("%s has no rule or fault %s", s.Name, repro(t))
		}
		for _, n := range []string{string(s.Name), s.RegistryName()} {
			if got, ok := broken.Lookup(n); !ok || got.Name != s.Name {
				t.Errorf("Lookup(%q) = %v, %v %s", n, got.Name, ok, repro(t))
			}
		}
		if got := s.Reference(memdriver.Config{Hooks: &memdriver.Hooks{}}).Hooks; got != nil {
			t.Errorf("%s: Reference keeps hooks %+v %s", s.Name, got, repro(t))
		}
	}
	for n := range scenarios {
		if !seen[n] {
			t.Errorf("scenario for %s, which is not a broken driver %s", n, repro(t))
		}
	}
	if !slices.IsSorted(broken.Names()) || len(broken.Names()) != len(all) {
		t.Errorf("Names() = %v: want every name, sorted %s", broken.Names(), repro(t))
	}
	if _, ok := broken.Lookup("Nope"); ok {
		t.Errorf("Lookup(\"Nope\") found a driver %s", repro(t))
	}
	if _, err := broken.New("Nope", sim.New(sim.Options{}), nil, memdriver.Config{}); !errors.Is(err, broken.ErrUnknown) {
		t.Errorf("New(\"Nope\") = %v, want ErrUnknown %s", err, repro(t))
	}
}

// TestConfig: the spec's tweaks reach the driver — AbsentIsMiss forced on,
// fault rates raised to the Provoke floor and never lowered.
func TestConfig(t *testing.T) {
	s, _ := broken.Lookup(string(broken.MissAsFault))
	caps := memdriver.DefaultCaps
	caps.AbsentIsMiss = false
	if got := s.Reference(memdriver.Config{Caps: caps}).Caps; !got.AbsentIsMiss || got.MaxRowsPerOp != caps.MaxRowsPerOp {
		t.Errorf("MissAsFault caps = %+v, want %+v with AbsentIsMiss %s", got, caps, repro(t))
	}
	s, _ = broken.Lookup(string(broken.UnregisterLies))
	got := s.Reference(memdriver.Config{Faults: memdriver.FaultMix{UnregisterFail: 0.9, RowFault: 0.1}}).Faults
	if want := (memdriver.FaultMix{UnregisterFail: 0.9, RowFault: 0.1}); got != want {
		t.Errorf("raised mix = %v, want %v %s", got, want, repro(t))
	}
	got = s.Reference(memdriver.Config{Faults: memdriver.FaultMix{RowFault: 0.1}}).Faults
	if want := (memdriver.FaultMix{UnregisterFail: s.Provoke.UnregisterFail, RowFault: 0.1}); got != want {
		t.Errorf("raised mix = %v, want %v %s", got, want, repro(t))
	}
}

// TestRegistry: the registry builds every broken driver by its name (with
// together-registration exactly when the spec says so) and lists them after
// the reference drivers, sorted.
func TestRegistry(t *testing.T) {
	names := registry.Names()
	want := []string{"memory", "together"}
	for _, n := range broken.Names() {
		want = append(want, broken.Prefix+string(n))
	}
	if !slices.Equal(names, want) {
		t.Errorf("registry.Names() = %v, want %v %s", names, want, repro(t))
	}
	s := sim.New(sim.Options{})
	store, _ := memdriver.NewStore(memdriver.StoreOptions{})
	for _, spec := range broken.All() {
		d, err := registry.New(spec.RegistryName(), registry.Env{RT: s, Store: store, Name: string(spec.Name)})
		if err != nil {
			t.Errorf("registry.New(%q): %v %s", spec.RegistryName(), err, repro(t))
			continue
		}
		if _, tog := d.(drivers.TogetherRegisterer); tog != spec.Together {
			t.Errorf("%s: together-registration %v, want %v %s", spec.Name, tog, spec.Together, repro(t))
		}
	}
	for _, bad := range []string{"broken:Nope", "LiesAboutAccess", "broken:"} {
		if _, err := registry.New(bad, registry.Env{RT: s, Store: store}); !errors.Is(err, registry.ErrUnknownDriver) {
			t.Errorf("registry.New(%q) = %v, want ErrUnknownDriver %s", bad, err, repro(t))
		}
	}
}
