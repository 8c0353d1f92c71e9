package monitor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

var defaultCaps = drivers.Capabilities{MaxRowsPerOp: 4, AbsentIsMiss: true, CanFetch: true, CanPublish: true, CanCancel: true}

// env is one monitored fake driver on a scheduler.
type env struct {
	t      *testing.T
	s      *sim.Scheduler
	f      *fake
	m      *Monitor
	d      drivers.Driver
	truth  map[string]bool
	labels [][]string
}

type envOpt struct {
	caps   drivers.Capabilities
	plain  bool // hide the fake's optional interfaces
	direct bool // the caller's onChange runs inline (no Wake)
}

func newEnv(t *testing.T, seed uint64, b bugs, o envOpt) *env {
	if o.caps == (drivers.Capabilities{}) {
		o.caps = defaultCaps
	}
	s := sim.New(sim.Options{Seed: seed, MaxWakeDelay: time.Millisecond})
	e := &env{t: t, s: s, f: newFake(s, o.caps, b), truth: map[string]bool{}}
	var d drivers.Driver = e.f
	if o.plain {
		d = plain{e.f}
	}
	e.m = Wrap(d, Options{Clock: s, Seed: seed,
		Truth: func(k string) (bool, bool) { p, ok := e.truth[k]; return p, ok }})
	e.d = e.m.Driver()
	return e
}

func (e *env) region(label string, slots int) drivers.Region {
	return arena.New(label, slots, 8, arena.Options{Clock: e.s}).Region()
}

func (e *env) register(r drivers.Region) drivers.Handle {
	h, err := e.d.Register(r)
	if err != nil {
		e.t.Fatalf("register %q: %v", r.Label, err)
	}
	return h
}

// submit sends keys on consecutive slots from slot; the caller's onChange is
// a scheduler Wake that reads the call, as a backend would.
func (e *env) submit(dir drivers.Direction, h drivers.Handle, slot int, keys ...string) drivers.Call {
	b := drivers.RowBatch{Dir: dir}
	for i, k := range keys {
		b.Rows = append(b.Rows, drivers.Row{Key: k, Handle: h, Slot: slot + i, Position: i})
	}
	var c drivers.Call
	wake := e.s.Wake("test/onChange", func() {
		if c != nil {
			c.Results()
			c.Access()
		}
	})
	c, _ = e.d.Submit(b, wake)
	return c
}

func (e *env) run() {
	if err := e.s.RunUntilIdle(10_000); err != nil {
		e.t.Fatalf("run: %v", err)
	}
}

func (e *env) drain() drivers.DrainStatus {
	var st drivers.DrainStatus
	for range 20 {
		if st = e.d.Drain(); st.Done {
			return st
		}
		e.run()
	}
	return st
}

func (e *env) shutdown() { e.labels = append(e.labels, e.d.Shutdown(context.Background())) }

func (e *env) together() drivers.TogetherRegisterer {
	t, ok := e.d.(drivers.TogetherRegisterer)
	if !ok {
		e.t.Fatal("monitored fake lost together-registration")
	}
	return t
}

// Scenarios: small workloads, each conforming on the zero bugs value.

func scenarioBasic(e *env) {
	h := e.register(e.region("r1", 8))
	e.submit(drivers.Publish, h, 0, "k/a", "k/b")
	e.run()
	e.submit(drivers.Fetch, h, 2, "k/a", "k/c")
	e.run()
	if c := e.submit(drivers.Fetch, h, 4, "k/b"); c != nil {
		c.Cancel()
	}
	e.run()
	e.drain()
	e.shutdown()
	e.run()
}

func scenarioPendingAtShutdown(e *env) {
	h := e.register(e.region("r1", 8))
	e.submit(drivers.Fetch, h, 0, "hang/a")
	e.run()
	if st := e.d.Drain(); st.Done {
		_ = st // the monitor judges it
	}
	e.shutdown()
	e.shutdown()
	e.run()
}

func scenarioBusyClose(e *env) {
	h := e.register(e.region("r1", 8))
	e.submit(drivers.Fetch, h, 0, "hang/a")
	e.run()
	_ = e.d.Unregister(h)
	e.shutdown()
	e.run()
}

func scenarioDrainInCallback(e *env) {
	h := e.register(e.region("r1", 8))
	b := drivers.RowBatch{Dir: drivers.Publish, Rows: []drivers.Row{{Key: "k/a", Handle: h}}}
	if _, err := e.d.Submit(b, func() { e.d.Drain() }); err != nil {
		e.t.Fatal(err)
	}
	e.run()
	e.drain()
	e.shutdown()
}

func scenarioDeferredCallbacks(e *env) {
	e.f.deferCallbacks = true
	h := e.register(e.region("r1", 8))
	e.submit(drivers.Publish, h, 0, "k/a")
	e.s.RunUntil(time.Millisecond) // state changed, callback still due
	e.d.Drain()
	e.run()
	e.drain()
	e.shutdown()
}

func scenarioSubmitAfterDrain(e *env) {
	h := e.register(e.region("r1", 8))
	e.drain()
	e.submit(drivers.Fetch, h, 0, "k/a")
	e.run()
	e.shutdown()
}

func scenarioBadBatches(e *env) {
	h := e.register(e.region("r1", 8))
	e.submit(drivers.Fetch, h, 0, "k/a", "k/a")
	e.submit(drivers.Fetch, h, 2, "k/1", "k/2", "k/3", "k/4", "k/5")
	e.run()
	e.drain()
	e.shutdown()
}

func scenarioFullSize(e *env) {
	h := e.register(e.region("r1", 64))
	for i := range 6 {
		e.submit(drivers.Fetch, h, 4*i, fmt.Sprintf("k/%d0", i), fmt.Sprintf("k/%d1", i), fmt.Sprintf("k/%d2", i), fmt.Sprintf("k/%d3", i))
	}
	for i := range 10 {
		e.submit(drivers.Fetch, h, 32+i, fmt.Sprintf("k/small%d", i))
	}
	e.run()
	e.drain()
	e.shutdown()
}

func scenarioRegistration(e *env) {
	r1 := e.region("r1", 4)
	h1 := e.register(r1)
	_, _ = e.d.Register(r1)                                                                                // overlap: must be refused
	_, _ = e.d.Register(drivers.Region{Label: "bad", Slots: 0, SlotBytes: 8, Mem: make(drivers.Bytes, 8)}) // geometry
	e.f.refuseRegister = true
	r2 := e.region("r2", 4)
	if _, err := e.d.Register(r2); err == nil {
		e.t.Fatal("the store was told to refuse r2")
	}
	e.register(r2)
	_ = e.d.Unregister(h1)
	e.shutdown()
	_, _ = e.d.Register(e.region("late", 4))
}

func scenarioStaleClose(e *env) {
	r := e.region("r1", 4)
	h1 := e.register(r)
	if err := e.d.Unregister(h1); err != nil {
		e.t.Fatal(err)
	}
	h2 := e.register(r)
	_ = e.d.Unregister(h1) // stale: a no-op
	e.submit(drivers.Fetch, h2, 0, "k/a")
	e.run()
	e.shutdown()
}

func scenarioFailedClose(e *env) {
	h := e.register(e.region("r1", 4))
	e.f.failUnregister = 1
	_ = e.d.Unregister(h)
	e.submit(drivers.Fetch, h, 0, "k/a")
	e.run()
	_ = e.d.Unregister(h)
	e.shutdown()
}

func scenarioTogether(e *env) {
	t := e.together()
	e.f.refuseRegister = true
	if _, err := t.RegisterTogether([]drivers.Region{e.region("p1", 4), e.region("p2", 4)}); err == nil {
		e.t.Fatal("the store was told to refuse p2")
	}
	hs, err := t.RegisterTogether([]drivers.Region{e.region("r1", 4), e.region("r2", 4)})
	if err != nil {
		e.t.Fatal(err)
	}
	e.submit(drivers.Fetch, hs[0], 0, "hang/a")
	e.run()
	_ = t.UnregisterTogether(hs)
	e.shutdown()
	e.run()
}

func scenarioQuarantine(e *env) {
	t := e.together()
	e.f.refuseRegister, e.f.rollbackFails = true, true
	var ind *drivers.InDoubtError
	if _, err := t.RegisterTogether([]drivers.Region{e.region("p1", 4), e.region("p2", 4)}); !errors.As(err, &ind) {
		e.t.Fatalf("want an in-doubt error, got %v", err)
	}
	_, _ = e.d.Register(e.region("r3", 4))
	e.shutdown()
}

func scenarioTruth(e *env) {
	h := e.register(e.region("r1", 8))
	e.submit(drivers.Publish, h, 0, "k/a", "bad/x")
	e.run()
	e.truth["k/a"], e.truth["bad/x"], e.truth["k/c"] = true, true, false
	e.submit(drivers.Fetch, h, 2, "k/a", "k/c", "bad/x")
	e.run()
	_, _ = e.d.Contains(context.Background(), []string{"k/a", "k/c"})
	_, _ = e.d.Contains(context.Background(), []string{"k/1", "k/2", "k/3", "k/4", "k/5"})
	e.f.outage = true
	_, _ = e.d.Contains(context.Background(), []string{"k/a"})
	e.drain()
	e.shutdown()
}

type scenario struct {
	name string
	run  func(*env)
	opt  envOpt
}

var (
	basic       = scenario{"basic", scenarioBasic, envOpt{}}
	basicNoCan  = scenario{"basic-no-cancel", scenarioBasic, envOpt{caps: drivers.Capabilities{MaxRowsPerOp: 4, CanFetch: true, CanPublish: true}}}
	pendingShut = scenario{"pending-at-shutdown", scenarioPendingAtShutdown, envOpt{}}
	busyClose   = scenario{"busy-close", scenarioBusyClose, envOpt{}}
	drainInCB   = scenario{"drain-in-callback", scenarioDrainInCallback, envOpt{}}
	deferredCB  = scenario{"deferred-callbacks", scenarioDeferredCallbacks, envOpt{}}
	afterDrain  = scenario{"submit-after-drain", scenarioSubmitAfterDrain, envOpt{}}
	badBatches  = scenario{"bad-batches", scenarioBadBatches, envOpt{}}
	fullSize    = scenario{"full-size", scenarioFullSize, envOpt{}}
	registering = scenario{"registration", scenarioRegistration, envOpt{}}
	staleClose  = scenario{"stale-close", scenarioStaleClose, envOpt{}}
	staleBlind  = scenario{"stale-close-blind", scenarioStaleClose, envOpt{plain: true}}
	failedClose = scenario{"failed-close", scenarioFailedClose, envOpt{}}
	failedBlind = scenario{"failed-close-blind", scenarioFailedClose, envOpt{plain: true}}
	together    = scenario{"together", scenarioTogether, envOpt{}}
	quarantine  = scenario{"quarantine", scenarioQuarantine, envOpt{}}
	truth       = scenario{"truth", scenarioTruth, envOpt{}}
	scenarios   = []scenario{basic, basicNoCan, pendingShut, busyClose, drainInCB, deferredCB, afterDrain, badBatches,
		fullSize, registering, staleClose, staleBlind, failedClose, failedBlind, together, quarantine, truth}
)

// ruleCases: each row puts one bug in the fake and names the rule the
// monitor must report for it (SPEC §7 broken drivers by name where one
// exists).
type ruleCase struct {
	name string   // the bug (a SPEC §7 broken driver where one exists)
	rule rules.ID // the rule the monitor must report
	sc   scenario
	bug  func(*bugs)
}

var ruleCases = []ruleCase{
	{"LostWakeup", rules.DCB2, basic, func(b *bugs) { b.LostWakeup = true }},
	{"EarlySignal", rules.DCB1, basic, func(b *bugs) { b.EarlySignal = true }},
	{"SignalUnderLock", rules.DCB4, basic, func(b *bugs) { b.UnderLock = true }},
	{"SignalAfterShutdown", rules.DCB5, basic, func(b *bugs) { b.AfterShutdown = true }},
	{"RegressingResult", rules.DCB3, basic, func(b *bugs) { b.Regress = true }},
	{"AccessBackwards", rules.DAccess, basic, func(b *bugs) { b.AccessBack = true }},
	{"BlockingCancel", rules.DCan1, basic, func(b *bugs) { b.BlockingCancel = true }},
	{"CancelClaimsEnded", rules.DCan2, basic, func(b *bugs) { b.CancelEnds = true }},
	{"AlreadyDoneLie", rules.DCan1, basic, func(b *bugs) { b.AlreadyDoneLie = true }},
	{"RequestedWithoutCanCancel", rules.DCaps, basicNoCan, func(b *bugs) { b.RequestedWithoutCancel = true }},
	{"ShortAnswer", rules.DStatus, basic, func(b *bugs) { b.ShortAnswer = true }},
	{"InvalidStatus", rules.DStatus, basic, func(b *bugs) { b.BadStatus = true }},
	{"DrainLies", rules.DDrain1, pendingShut, func(b *bugs) { b.DrainLies = true }},
	{"DrainIgnoresRunningCallback", rules.DDrain2, drainInCB, func(b *bugs) { b.DrainIgnoresCallbacks = true }},
	{"DrainIgnoresDueCallback", rules.DDrain2, deferredCB, func(b *bugs) { b.DrainIgnoresCallbacks = true }},
	{"AcceptsAfterDrain", rules.DDrain1, afterDrain, func(b *bugs) { b.AcceptsAfterDrain = true }},
	{"CallbackOnRefused", rules.DSub2, afterDrain, func(b *bugs) { b.CallbackOnRefused = true }},
	{"SilentShutdown", rules.DShut1, pendingShut, func(b *bugs) { b.SilentShutdown = true }},
	{"ForgetfulSecondShutdown", rules.DShut2, pendingShut, func(b *bugs) { b.ForgetfulSecondShutdown = true }},
	{"UnregistersBusy", rules.DReg6, busyClose, func(b *bugs) { b.UnregistersBusy = true }},
	{"UnregisterLies", rules.DReg4, failedClose, func(b *bugs) { b.UnregisterLies = true }},
	{"FailedCloseCloses", rules.DReg4, failedClose, func(b *bugs) { b.FailedCloseCloses = true }},
	{"FailedCloseClosesBlind", rules.DReg4, failedBlind, func(b *bugs) { b.FailedCloseCloses = true }},
	{"CloseByAddress", rules.DReg3, staleClose, func(b *bugs) { b.CloseByAddress = true }},
	{"CloseByAddressBlind", rules.DReg3, staleBlind, func(b *bugs) { b.CloseByAddress = true }},
	{"AcceptsOverlap", rules.DReg1, registering, func(b *bugs) { b.AcceptsOverlap = true }},
	{"AcceptsBadGeometry", rules.DReg1, registering, func(b *bugs) { b.AcceptsBadGeometry = true }},
	{"GeometryNotWrapped", rules.DGeom, registering, func(b *bugs) { b.GeometryNotWrapped = true }},
	{"LeakyRegisterFailure", rules.DReg2, registering, func(b *bugs) { b.LeakyRegister = true }},
	{"RegistersAfterShutdown", rules.DReg5, registering, func(b *bugs) { b.RegistersAfterShutdown = true }},
	{"LeakyTogetherFailure", rules.DTog1, together, func(b *bugs) { b.LeakyTogether = true }},
	{"TogetherUnregistersBusy", rules.DTog4, together, func(b *bugs) { b.TogetherBusy = true }},
	{"TogetherLies", rules.DTog3, staleTogether(), func(b *bugs) { b.TogetherLies = true }},
	{"IgnoresQuarantine", rules.DQuar, quarantine, func(b *bugs) { b.IgnoresQuarantine = true }},
	{"AcceptsRepeatedKey", rules.DBatchKeys, badBatches, func(b *bugs) { b.AcceptsRepeatedKey = true }},
	{"AcceptsOversize", rules.DBatchValid, badBatches, func(b *bugs) { b.AcceptsOversize = true }},
	{"RefusesInvalidVaguely", rules.DBatchKeys, badBatches, func(b *bugs) { b.RefusesInvalidVaguely = true }},
	{"NoCallNoError", rules.DSub3, basic, func(b *bugs) { b.NilCall = true }},
	{"MaxRowsOffByOneRefuses", rules.DCaps, fullSize, func(b *bugs) { b.MaxRowsRefuse = true }},
	{"MaxRowsOffByOneFaults", rules.DCaps, fullSize, func(b *bugs) { b.MaxRowsFault = true }},
	{"LookupShortAnswer", rules.DLook1, truth, func(b *bugs) { b.LookupShort = true }},
	{"LookupOversize", rules.DLook1, truth, func(b *bugs) { b.LookupOversize = true }},
	{"LookupOutageAsAbsent", rules.DLook2, truth, func(b *bugs) { b.LookupOutageAbsent = true }},
	{"MissAsFault", rules.DMissHonest, truth, func(b *bugs) { b.MissAsFault = true }},
	{"FaultAsMiss", rules.DMissHonest, truth, func(b *bugs) { b.FaultAsMiss = true }},
}

// staleTogether: a together-registration closed together while nothing is busy.
func staleTogether() scenario {
	return scenario{"together-close", func(e *env) {
		t := e.together()
		hs, err := t.RegisterTogether([]drivers.Region{e.region("r1", 4), e.region("r2", 4)})
		if err != nil {
			e.t.Fatal(err)
		}
		_ = t.UnregisterTogether(hs)
		e.shutdown()
	}, envOpt{}}
}

func runScenario(t *testing.T, sc scenario, seed uint64, b bugs) []rules.Violation {
	e := newEnv(t, seed, b, sc.opt)
	sc.run(e)
	return e.m.Finish()
}

func TestRules(t *testing.T) {
	for _, tc := range ruleCases {
		t.Run(tc.name, func(t *testing.T) {
			repro := fmt.Sprintf("(repro: go test ./drivers/monitor -run 'TestRules/%s')", tc.name)
			var b bugs
			tc.bug(&b)
			vs := runScenario(t, tc.sc, 7, b)
			if !slices.ContainsFunc(vs, func(v rules.Violation) bool { return v.Rule == tc.rule }) {
				t.Fatalf("bug %s in scenario %s: want a %s violation, got %v %s", tc.name, tc.sc.name, tc.rule, vs, repro)
			}
			for _, v := range vs {
				if v.Seed != 7 {
					t.Fatalf("violation %v does not carry the seed %s", v, repro)
				}
			}
		})
	}
}

// TestConforming: every scenario on the conforming fake, under several
// seeds, produces no violation — so each TestRules row fails because of its
// bug, not because of the scenario.
func TestConforming(t *testing.T) {
	scs := append(slices.Clone(scenarios), staleTogether())
	for _, sc := range scs {
		t.Run(sc.name, func(t *testing.T) {
			for seed := range uint64(5) {
				if vs := runScenario(t, sc, seed, bugs{}); len(vs) > 0 {
					t.Fatalf("seed %d: conforming fake flagged: %v (repro: go test ./drivers/monitor -run 'TestConforming/%s')", seed, vs, sc.name)
				}
			}
		})
	}
}

// TestEveryRuleCanFire: each rule the monitor reports has a bug of the fake that fires it.
func TestEveryRuleCanFire(t *testing.T) {
	for _, r := range Rules() {
		if !slices.ContainsFunc(ruleCases, func(c ruleCase) bool { return c.rule == r }) {
			t.Errorf("rule %s has no row in ruleCases (repro: go test ./drivers/monitor -run TestEveryRuleCanFire)", r)
		}
	}
}

// TestArenaRegistration: the monitor marks arenas registered while a
// registration is live, so late touches are S-NO-LATE-ACCESS at the arena.
func TestArenaRegistration(t *testing.T) {
	const repro = "(repro: go test ./drivers/monitor -run TestArenaRegistration)"
	e := newEnv(t, 1, bugs{}, envOpt{})
	a1 := arena.New("a1", 4, 8, arena.Options{})
	a2 := arena.New("a2", 4, 8, arena.Options{})
	h1 := e.register(a1.Region())
	e.register(a2.Region())
	if !a1.Registered() || !a2.Registered() {
		t.Fatalf("arenas not marked registered after Register %s", repro)
	}
	if err := e.d.Unregister(h1); err != nil || a1.Registered() {
		t.Fatalf("a1 still registered after a successful close (err %v) %s", err, repro)
	}
	e.shutdown()
	if a2.Registered() {
		t.Fatalf("a2 still registered after Shutdown released it %s", repro)
	}
	if vs := e.m.Finish(); len(vs) > 0 {
		t.Fatalf("unexpected violations %v %s", vs, repro)
	}
}

// TestObserverOrder: the observers see every event, in order.
func TestObserverOrder(t *testing.T) {
	const repro = "(repro: go test ./drivers/monitor -run TestObserverOrder)"
	s := sim.New(sim.Options{Seed: 3})
	f := newFake(s, defaultCaps, bugs{})
	rec := &logObserver{}
	m := Wrap(f, Options{Clock: s, Seed: 3, Observers: []Observer{rec}})
	d := m.Driver()
	h, _ := d.Register(arena.New("r", 4, 8, arena.Options{}).Region())
	c, _ := d.Submit(drivers.RowBatch{Dir: drivers.Publish, Rows: []drivers.Row{{Key: "k", Handle: h}}}, func() {})
	_ = s.RunUntilIdle(0)
	c.Cancel()
	_, _ = d.Contains(context.Background(), []string{"k"})
	d.Shutdown(context.Background())
	want := []string{
		"0s registered 1 r", "0s starting 1 rows", "0s submitted 1 1 rows <nil>", "1ms callback 1", "1ms row 1/0 OK", "1ms access 1 ENDED",
		"1ms cancel 1 ALREADY_DONE", "1ms lookup [k] [true] <nil>", "1ms unregistered 1 r", "1ms shutdown []",
	}
	if !slices.Equal(rec.log, want) {
		t.Fatalf("observer saw\n%s\nwant\n%s\n%s", strings.Join(rec.log, "\n"), strings.Join(want, "\n"), repro)
	}
}

type logObserver struct{ log []string }

func (l *logObserver) add(at time.Duration, f string, a ...any) {
	l.log = append(l.log, at.String()+" "+fmt.Sprintf(f, a...))
}
func (l *logObserver) Registered(at time.Duration, h drivers.Handle, r drivers.Region) {
	l.add(at, "registered %d %s", h, r.Label)
}
func (l *logObserver) Unregistered(at time.Duration, h drivers.Handle, r drivers.Region) {
	l.add(at, "unregistered %d %s", h, r.Label)
}
func (l *logObserver) Submitted(at time.Duration, id drivers.CallID, b drivers.RowBatch, err error) {
	l.add(at, "submitted %d %d rows %v", id, len(b.Rows), err)
}
func (l *logObserver) RowFinal(at time.Duration, id drivers.CallID, row int, st drivers.Status) {
	l.add(at, "row %d/%d %v", id, row, st)
}
func (l *logObserver) AccessChanged(at time.Duration, id drivers.CallID, acc drivers.Access) {
	l.add(at, "access %d %v", id, acc)
}
func (l *logObserver) Cancelled(at time.Duration, id drivers.CallID, res drivers.CancelResult) {
	l.add(at, "cancel %d %v", id, res)
}
func (l *logObserver) LookedUp(at time.Duration, keys []string, found []bool, err error) {
	l.add(at, "lookup %v %v %v", keys, found, err)
}
func (l *logObserver) SubmitStarting(at time.Duration, b drivers.RowBatch) {
	l.add(at, "starting %d rows", len(b.Rows))
}
func (l *logObserver) Callback(at time.Duration, id drivers.CallID) { l.add(at, "callback %d", id) }
func (l *logObserver) ShutDown(at time.Duration, labels []string)   { l.add(at, "shutdown %v", labels) }

// TestPassThrough: the monitor changes nothing the caller sees — an invalid
// batch reaches the driver, and the driver's refusal reaches the caller.
func TestPassThrough(t *testing.T) {
	const repro = "(repro: go test ./drivers/monitor -run TestPassThrough)"
	e := newEnv(t, 1, bugs{}, envOpt{})
	h := e.register(e.region("r", 4))
	_, err := e.d.Submit(drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{{Key: "k", Handle: h}, {Key: "k", Handle: h, Slot: 1}}}, func() {})
	if !errors.Is(err, drivers.ErrInvalidSubmission) || !strings.Contains(err.Error(), rules.DBatchKeys.String()) {
		t.Fatalf("want the driver's own D-BATCH-KEYS refusal, got %v %s", err, repro)
	}
	if got, ok := Of(e.d); !ok || got != e.m {
		t.Fatalf("Of does not find the monitor %s", repro)
	}
	if _, ok := Wrap(plain{e.f}, Options{}).Driver().(drivers.TogetherRegisterer); ok {
		t.Fatalf("a driver without together-registration gained it through the monitor %s", repro)
	}
}

// TestAbsentMayFault: a FETCH FAULT of a key known absent is D-MISS-HONEST
// only for a driver that declares AbsentIsMiss; without it an absent key may
// honestly FAULT.
func TestAbsentMayFault(t *testing.T) {
	for _, absentIsMiss := range []bool{true, false} {
		caps := drivers.Capabilities{MaxRowsPerOp: 4, CanFetch: true, CanPublish: true, CanCancel: true, AbsentIsMiss: absentIsMiss}
		e := newEnv(t, 1, bugs{MissAsFault: true}, envOpt{caps: caps})
		scenarioTruth(e)
		flagged := false
		for _, v := range e.m.Finish() {
			flagged = flagged || v.Rule == rules.DMissHonest
		}
		if flagged != absentIsMiss {
			t.Fatalf("AbsentIsMiss=%v: D-MISS-HONEST flagged=%v, want %v (repro: go test ./drivers/monitor -run TestAbsentMayFault)", absentIsMiss, flagged, absentIsMiss)
		}
	}
}
