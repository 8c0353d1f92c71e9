package drivertest

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/sim"
)

// Hostile drivers: the reference driver with one way of keeping a case
// busy for ever. The suite must stop each case run at its step cap, keep
// what it records bounded, report the run as a livelock of the case's rule
// group naming the call, and go on with the next case.

type hostileDriver struct {
	drivers.Driver
	rt      sim.Runtime
	regions map[drivers.Handle]drivers.Region
	extra   func(h *hostileDriver, c drivers.Call, b drivers.RowBatch, onChange func())
}

func (h *hostileDriver) Register(r drivers.Region) (drivers.Handle, error) {
	hd, err := h.Driver.Register(r)
	if err == nil {
		h.regions[hd] = r
	}
	return hd, err
}

func (h *hostileDriver) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	if h.extra == nil {
		return h.Driver.Submit(b, onChange)
	}
	c, err := h.Driver.Submit(b, onChange)
	if err == nil {
		h.extra(h, c, b, onChange)
	}
	return c, err
}

// stuckCall is a call that never ends: it reschedules a check of itself,
// for ever, and never changes (a livelock without callbacks).
type stuckCall struct {
	id   drivers.CallID
	rows int
}

func (c *stuckCall) ID() drivers.CallID           { return c.id }
func (c *stuckCall) Results() []drivers.Status    { return make([]drivers.Status, c.rows) }
func (c *stuckCall) Access() drivers.Access       { return drivers.AccessPending }
func (c *stuckCall) Cancel() drivers.CancelResult { return drivers.CancelRequested }

// livelockDriver's Submit accepts (after the reference driver's
// validation) and returns a call that polls itself every microsecond for
// ever without progress.
type livelockDriver struct {
	hostileDriver
	next drivers.CallID
}

func (d *livelockDriver) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	if err := b.Validate(d.Capabilities(), func(h drivers.Handle) (drivers.Region, bool) {
		r, ok := d.regions[h]
		return r, ok
	}); err != nil {
		return nil, err
	}
	d.next++
	c := &stuckCall{id: 1_000_000 + d.next, rows: len(b.Rows)}
	var poll func()
	poll = func() { d.rt.After(time.Microsecond, "livelock poll", poll) }
	d.rt.Post("livelock poll", poll)
	return c, nil
}

var hostileDrivers = []struct {
	name string
	new  func(h *hostileDriver) drivers.Driver
	// what the livelock finding must say
	says string
}{
	{"storm", func(h *hostileDriver) drivers.Driver {
		h.extra = func(h *hostileDriver, _ drivers.Call, _ drivers.RowBatch, onChange func()) {
			var tick func()
			tick = func() { onChange(); h.rt.Post("hostile storm", tick) }
			h.rt.Post("hostile storm", tick)
		}
		return h
	}, "times without a change"},
	{"livelock", func(h *hostileDriver) drivers.Driver { return &livelockDriver{hostileDriver: *h} }, "calls without access ENDED: dt call 1000001"},
	{"toucher", func(h *hostileDriver) drivers.Driver {
		h.extra = func(h *hostileDriver, c drivers.Call, b drivers.RowBatch, _ func()) {
			r := h.regions[b.Rows[0].Handle]
			buf := make([]byte, r.SlotBytes)
			by := drivers.Toucher{Call: c.ID(), Row: 0}
			var tick func()
			tick = func() {
				for range 8 {
					_ = r.Mem.Read(by, r.SlotOffset(b.Rows[0].Slot), buf)
				}
				h.rt.After(time.Nanosecond, "hostile touch", tick)
			}
			h.rt.Post("hostile touch", tick)
		}
		return h
	}, "touches of memory was by call"},
}

func hostileHarness(name string, mk func(h *hostileDriver) drivers.Driver) Harness {
	return Harness{Name: "hostile:" + name, New: func(env Env) (drivers.Driver, error) {
		d := memdriver.New(env.RT, env.Store, memdriver.Config{Name: env.Name, Caps: env.Caps})
		return mk(&hostileDriver{Driver: d, rt: env.RT, regions: map[drivers.Handle]drivers.Region{}}), nil
	}}
}

// worldStats is what a case run kept, read after finish.
type worldStats struct {
	caseName         string
	steps            uint64
	notes, touches   int
	undecided        int
	stopped          bool
	storm            monitor.Storm
	dropNotes, dropT int
}

// TestHostileCasesBounded: on a callback storm, a call that reschedules
// itself for ever and a driver that touches memory for ever, every case run
// stays within its step cap (caseSteps + finishSteps), the recorder keeps
// at most its bounds (a repeated touch once), the certification obtains
// less than 500 MB from the OS, the first group fails with a livelock
// finding ("liveness", naming the call), no case is run again after one of
// its runs was stopped, and the second group's cases still run.
func TestHostileCasesBounded(t *testing.T) {
	const mb = 1 << 20
	for _, hd := range hostileDrivers {
		t.Run(hd.name, func(t *testing.T) {
			repro := "(repro: go test ./drivers/drivertest -run 'TestHostileCasesBounded/" + hd.name + "$')"
			c := newCertifier(hostileHarness(hd.name, hd.new), Options{Short: true, Rules: []string{"D-STATUS", "D-REG-3"}})
			var runs []worldStats
			c.afterRun = func(w *world) {
				st := worldStats{caseName: w.g.rule.String() + "/" + w.cs.name, steps: w.sched.Steps(), stopped: w.stopped != nil,
					undecided: len(w.ep.Monitor.Undecided()), storm: w.ep.Monitor.Storm()}
				st.notes, st.touches, st.dropNotes, st.dropT = w.ep.Recorder.Kept()
				runs = append(runs, st)
			}
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			sys0 := ms.Sys
			c.run()
			rep := c.report()
			runtime.ReadMemStats(&ms)
			if grew := ms.Sys - sys0; grew > 500*mb {
				t.Errorf("the certification took %d MB from the OS, want under 500 %s", grew/mb, repro)
			}
			stopped := map[string]bool{}
			nstopped := 0
			for i, r := range runs {
				if r.steps > caseSteps+finishSteps {
					t.Errorf("run %d (%s) took %d steps, over the cap of %d %s", i, r.caseName, r.steps, caseSteps+finishSteps, repro)
				}
				if r.notes > model.MaxNotes || r.touches > model.MaxTouches || r.undecided > monitor.MaxUndecided+1 {
					t.Errorf("run %d (%s) kept %d notes, %d touches, %d undecided probes: over the bounds %s", i, r.caseName, r.notes, r.touches, r.undecided, repro)
				}
				if hd.name == "toucher" && r.touches > 256 {
					t.Errorf("run %d (%s) kept %d touches of a driver that repeats the same read: repeats must count once %s", i, r.caseName, r.touches, repro)
				}
				if stopped[r.caseName] {
					t.Errorf("run %d: case %s ran again after one of its runs was stopped %s", i, r.caseName, repro)
				}
				if r.stopped {
					stopped[r.caseName] = true
					nstopped++
				}
			}
			if nstopped == 0 {
				t.Fatalf("no case run was stopped (%d runs) %s", len(runs), repro)
			}
			first, ok := rep.Rule("D-STATUS")
			if !ok || first.Verdict != Fail {
				t.Fatalf("D-STATUS: %+v, want fail %s", first, repro)
			}
			found := false
			for _, v := range first.Violations {
				if strings.HasPrefix(v, "liveness [liveness] call ") && strings.Contains(v, hd.says) {
					found = true
				}
			}
			if !found {
				t.Errorf("D-STATUS has no livelock finding naming the call and saying %q:\n  %s %s", hd.says, strings.Join(first.Violations, "\n  "), repro)
			}
			// The finding is filed with the run that found it: its repro reruns
			// exactly that run, which is stopped the same way.
			if first.First == nil || first.First.Group != "D-STATUS" || first.First.Case == "" {
				t.Fatalf("D-STATUS names no run of its own for its first finding: %+v %s", first.First, repro)
			}
			again := Certify(hostileHarness(hd.name, hd.new), Options{Only: *first.First})
			rr, _ := again.Rule("D-STATUS")
			if rr.Verdict != Fail || !slices.ContainsFunc(rr.Violations, func(v string) bool {
				return strings.HasPrefix(v, "liveness [liveness] call ") && strings.Contains(v, hd.says)
			}) {
				t.Errorf("rerun of %s (%s): D-STATUS %s %v, want the same livelock finding %s", first.First, first.Repro, rr.Verdict, rr.Violations, repro)
			}
			if first.Cases < 2 {
				t.Errorf("D-STATUS ran %d cases: the run did not go on after the first was stopped %s", first.Cases, repro)
			}
			if next, ok := rep.Rule("D-REG-3"); !ok || next.Cases == 0 || next.Verdict == Skip {
				t.Errorf("D-REG-3, after the stopped group: %+v, want its cases run %s", next, repro)
			}
		})
	}
}

// TestStoreStopsAnswering: with Harness.Ping, a store that does not answer
// before the certification runs nothing and leaves the one gap "store
// unreachable: …"; one that stops answering after some case runs stops the
// certification before the next run; one that keeps answering never stops
// it, however the driver fails.
func TestStoreStopsAnswering(t *testing.T) {
	const repro = "(repro: go test ./drivers/drivertest -run '^TestStoreStopsAnswering$')"
	harness := func(name string, ping func() error) Harness {
		return Harness{Name: name, RealTime: true,
			New: func(env Env) (drivers.Driver, error) {
				return memdriver.New(env.RT, env.Store, memdriver.Config{Name: env.Name, Caps: env.Caps, Faults: env.Faults}), nil
			},
			Ping: func(ctx context.Context) error { return ping() },
		}
	}
	unreachable := func(rep Report) string {
		for _, g := range rep.Gaps {
			if i := strings.Index(g, "store unreachable: "); i >= 0 {
				return g[i:]
			}
		}
		return ""
	}
	opts := Options{Short: true, Rules: []string{"D-STATUS", "D-ACCESS"}, Wait: 200 * time.Millisecond}
	t.Run("dead-from-the-start", func(t *testing.T) {
		c := newCertifier(harness("dead", func() error { return errors.New("127.0.0.1:1 (connection refused)") }), opts)
		runs := 0
		c.afterRun = func(*world) { runs++ }
		c.run()
		rep := c.report()
		if g := unreachable(rep); runs != 0 || !strings.HasPrefix(g, "store unreachable: 127.0.0.1:1") || rep.Certified {
			t.Fatalf("%d runs, gap %q, certified %v: want no run and the unreachable gap %s", runs, g, rep.Certified, repro)
		}
	})
	t.Run("stops-after-3-runs", func(t *testing.T) {
		runs, pings := 0, 0
		c := newCertifier(harness("dies", func() error {
			pings++
			if runs >= 3 {
				return errors.New("127.0.0.1:2 (connection refused)")
			}
			return nil
		}), opts)
		c.afterRun = func(*world) { runs++ }
		c.run()
		rep := c.report()
		if g := unreachable(rep); runs != 3 || !strings.HasPrefix(g, "store unreachable: 127.0.0.1:2") || !strings.Contains(g, "stopped answering by") {
			t.Fatalf("%d runs (%d pings), gap %q: want 3 runs, then the unreachable gap naming where %s", runs, pings, g, repro)
		}
	})
	t.Run("keeps-answering", func(t *testing.T) {
		pings := 0
		h := harness("broken-but-reachable", func() error { pings++; return nil })
		h.New = Registered("broken:LiesAboutAccess").New
		rep := Certify(h, Options{Short: true, Rules: []string{"D-ACCESS-END"}, Wait: 200 * time.Millisecond})
		if g := unreachable(rep); g != "" || pings == 0 || !slices.Contains(rep.Failed(), "D-ACCESS-END") {
			t.Fatalf("gap %q, %d pings, failed %v: want the driver's failure and no unreachable gap %s", g, pings, rep.Failed(), repro)
		}
	})
}

// TestHostileFullCertification is the acceptance run of the storm: a full
// -short certification of a driver whose every call calls back for ever
// (it used to grow past 24 GB) finishes with every case run within its step
// cap, under 500 MB taken from the OS, the backend-driven swarm stopped at
// its own cap on every run, and every group with a stopped run failed,
// most of them on a finding that names the storming call.
func TestHostileFullCertification(t *testing.T) {
	if testing.Short() {
		t.Skip("a full certification (about 20 s)")
	}
	const repro = "(repro: go test ./drivers/drivertest -run '^TestHostileFullCertification$')"
	const mb = 1 << 20
	c := newCertifier(hostileHarness(hostileDrivers[0].name, hostileDrivers[0].new), Options{Short: true})
	runs, over := 0, 0
	stoppedIn := map[string]bool{} // groups with a stopped run
	c.afterRun = func(w *world) {
		runs++
		if w.sched.Steps() > caseSteps+finishSteps {
			over++
		}
		if w.stopped != nil {
			stoppedIn[w.g.rule.String()] = true
		}
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	sys0 := ms.Sys
	c.run()
	rep := c.report()
	runtime.ReadMemStats(&ms)
	if grew := ms.Sys - sys0; grew > 500*mb || over > 0 || runs == 0 {
		t.Fatalf("%d case runs, %d over the step cap, %d MB taken from the OS: want none over and under 500 MB %s", runs, over, grew/mb, repro)
	}
	if rep.Swarm.Runs == 0 || rep.Swarm.Failed != rep.Swarm.Runs {
		t.Errorf("swarm: %d runs, %d failed: want every run stopped as a livelock %s", rep.Swarm.Runs, rep.Swarm.Failed, repro)
	}
	named := 0
	for _, rr := range rep.Rules {
		if stoppedIn[rr.Rule] && rr.Verdict != Fail {
			t.Errorf("%s had a case run stopped as a livelock but is %s %s", rr.Rule, rr.Verdict, repro)
		}
		if slices.ContainsFunc(rr.Violations, func(v string) bool {
			return strings.HasPrefix(v, "liveness [liveness] call ") && strings.Contains(v, "times without a change")
		}) {
			named++
		}
	}
	if len(stoppedIn) < 10 || named < 10 {
		t.Errorf("%d groups had a stopped run, %d name the storming call: want both at least 10 %s", len(stoppedIn), named, repro)
	}
}
