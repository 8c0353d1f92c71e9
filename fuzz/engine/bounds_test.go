package engine

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/sim"
)

// Hostile drivers: each is the reference driver with one way of keeping a
// run busy for ever. The run must stop at its bounds and say which call
// was to blame, and the next seed must still run.

// hostile wraps the reference driver; after every accepted Submit, extra
// (if set) is started for the call.
type hostile struct {
	drivers.Driver
	rt      sim.Runtime
	extra   func(h *hostile, c drivers.Call, b drivers.RowBatch, onChange func())
	regions map[drivers.Handle]drivers.Region // what it registered (touchForever reads them)
}

func (h *hostile) Register(r drivers.Region) (drivers.Handle, error) {
	hd, err := h.Driver.Register(r)
	if err == nil {
		if h.regions == nil {
			h.regions = map[drivers.Handle]drivers.Region{}
		}
		h.regions[hd] = r
	}
	return hd, err
}

func (h *hostile) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	c, err := h.Driver.Submit(b, onChange)
	if err == nil && h.extra != nil {
		h.extra(h, c, b, onChange)
	}
	return c, err
}

// stormForever: every call keeps calling back, one callback per event, at
// the same virtual instant, for ever (also after Shutdown).
func stormForever(h *hostile, _ drivers.Call, _ drivers.RowBatch, onChange func()) {
	var tick func()
	tick = func() {
		onChange()
		h.rt.Post("hostile storm", tick)
	}
	h.rt.Post("hostile storm", tick)
}

// floodAtOnce: Submit's callback is triggered a million times in one
// event, faster than any run consumes them (the backend's onChange is a
// Wake trigger: each lands in the scheduler's inbox).
func floodAtOnce(h *hostile, _ drivers.Call, _ drivers.RowBatch, onChange func()) {
	h.rt.Post("hostile flood", func() {
		for range 1_000_000 {
			onChange()
		}
	})
}

// touchForever: every call keeps reading its first row's slot, 64 times
// per event, for ever, without calling back.
func touchForever(h *hostile, c drivers.Call, b drivers.RowBatch, _ func()) {
	if h.regions == nil {
		return
	}
	r, ok := h.regions[b.Rows[0].Handle]
	if !ok {
		return
	}
	buf := make([]byte, r.SlotBytes)
	by := drivers.Toucher{Call: c.ID(), Row: 0}
	var tick func()
	tick = func() {
		for range 64 {
			_ = r.Mem.Read(by, r.SlotOffset(b.Rows[0].Slot), buf)
		}
		h.rt.After(time.Nanosecond, "hostile touch", tick)
	}
	h.rt.Post("hostile touch", tick)
}

func hostileFactory(extra func(*hostile, drivers.Call, drivers.RowBatch, func())) Factory {
	return func(name string, env registry.Env) (drivers.Driver, error) {
		d := memdriver.New(env.RT, env.Store, memdriver.Config{Name: env.Name, Caps: env.Caps, Faults: env.Faults})
		return &hostile{Driver: d, rt: env.RT, extra: extra}, nil
	}
}

// runKept is Run, keeping the endpoints for the test to inspect.
func runKept(log *workload.Log, cfg Config) (*Result, []*Endpoint) {
	cfg = cfg.withDefaults()
	r := &run{log: log, cfg: cfg, res: &Result{Seed: log.Seed, Log: log, Config: cfg}, maxSteps: cfg.MaxSteps}
	if r.maxSteps == 0 {
		r.maxSteps = defaultMaxSteps(len(log.Ops))
	}
	if err := r.setup(); err != nil {
		r.res.Verdict, r.res.Err = HarnessError, err
		return r.res, nil
	}
	r.schedule()
	err := r.runToIdle()
	r.res.TraceHash, r.res.Steps, r.res.End = r.s.TraceHash(), r.s.Steps(), r.s.Now()
	r.judge(err)
	return r.res, r.eps
}

// heap is the live heap after a collection, and the memory obtained from
// the OS so far (it only grows: its growth over a run bounds the run's
// peak).
func heap() (live, sys uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.Sys
}

// TestHostileDriversBounded: a callback storm, a flood of callbacks in one
// event and a driver that touches memory for ever each stop the run at its
// bounds — steps at most the cap, the recorder's notes and touches at most
// theirs, less than 500 MB obtained from the OS and 100 MB kept — as one
// liveness finding that names the call; the next seed runs and passes.
func TestHostileDriversBounded(t *testing.T) {
	const mb = 1 << 20
	cases := []struct {
		name   string
		extra  func(*hostile, drivers.Call, drivers.RowBatch, func())
		detail string // in the liveness finding
		storm  bool   // the finding names the call called back without a change
	}{
		{"storm", stormForever, "times without a change", true},
		{"flood", floodAtOnce, "flood: sim: flood", true},
		{"touch", touchForever, "livelock: the run ran out of its step cap", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repro := "(repro: go test ./fuzz/engine -run 'TestHostileDriversBounded/" + tc.name + "$')"
			live0, sys0 := heap()
			cfg := Config{Driver: "memory", Profile: Calm, Factory: hostileFactory(tc.extra)}
			res, eps := runKept(Plan(1, cfg), cfg)
			live1, sys1 := heap()
			t.Logf("%s: %d steps, %d notes, finding %v, %d MB from the OS, %d MB kept", tc.name, res.Steps, len(res.Notes), res.Failures[0], (sys1-sys0)/mb, (live1-live0)/mb)
			if cap := defaultMaxSteps(len(res.Log.Ops)); res.Steps > cap {
				t.Errorf("%d steps, over the cap of %d %s", res.Steps, cap, repro)
			}
			if res.Verdict != Liveness && !hasRule(res, rules.LiveHang) {
				t.Fatalf("verdict %s, want a liveness finding: %s %s", res.Verdict, res.Summary(), repro)
			}
			var found *rules.Violation
			for i, f := range res.Failures {
				if f.Rule == rules.LiveHang && strings.Contains(f.Detail, tc.detail) {
					found = &res.Failures[i]
				}
			}
			if found == nil {
				t.Fatalf("no liveness finding saying %q among %v %s", tc.detail, res.Failures, repro)
			}
			if found.Call == 0 || found.Endpoint == "" {
				t.Errorf("the finding does not name the call and endpoint: %v %s", found, repro)
			}
			if tc.storm && !strings.Contains(found.Detail, "called back") {
				t.Errorf("the finding does not say the call kept calling back: %v %s", found, repro)
			}
			// The recorders' notes (one more per endpoint says how many were
			// dropped) and, apart, the run function's notes of each attempt.
			recNotes, attNotes := 0, 0
			for _, n := range res.Notes {
				if n.Tag == TagAttempt || n.Tag == TagLender {
					attNotes++
				} else {
					recNotes++
				}
			}
			if recNotes > model.MaxNotes+len(res.Log.Endpoints) || attNotes > model.MaxNotes+1 {
				t.Errorf("%d recorder notes and %d attempt notes kept, over the bound of %d per endpoint and %d per run %s", recNotes, attNotes, model.MaxNotes, model.MaxNotes, repro)
			}
			for _, ep := range eps {
				if _, touches, _, _ := ep.Recorder.Kept(); touches > model.MaxTouches || (tc.name == "touch" && touches > 64) {
					t.Errorf("endpoint %s kept %d touches (repeats of one touch count once) %s", ep.Name, touches, repro)
				}
			}
			if sys1-sys0 > 500*mb || live1 > live0+100*mb {
				t.Errorf("the run took %d MB from the OS and keeps %d MB live, want under 500 and 100 %s", (sys1-sys0)/mb, (live1-live0)/mb, repro)
			}
			if next := RunSeed(2, Config{Driver: "memory", Profile: Calm}); next.Verdict != Pass {
				t.Errorf("the next seed did not pass after the hostile one: %s %s", next.Summary(), repro)
			}
		})
	}
}

func hasRule(r *Result, id rules.ID) bool {
	for _, f := range r.Failures {
		if f.Rule == id {
			return true
		}
	}
	return false
}
