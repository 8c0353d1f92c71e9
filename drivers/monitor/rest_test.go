package monitor

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// answers wraps the fake with one dishonest answer the monitor must judge:
// each field is one bug, the zero value is the conforming fake.
type answers struct {
	*fake
	drainHolds    bool // Drain never says done: every call ever submitted stays pending
	labelReleased bool // Shutdown releases the regions it labels retained
	lookupPresent bool // Contains answers present for every key
	busyDrops     bool // a busy refusal still drops the handle (Live false, Submit refused)
}

func (a *answers) Drain() drivers.DrainStatus {
	st := a.fake.Drain()
	if a.drainHolds {
		a.mu.Lock()
		st.Pending = st.Pending[:0]
		for _, c := range a.calls {
			st.Pending = append(st.Pending, c.id)
		}
		a.mu.Unlock()
		st.Done = false
	}
	return st
}

func (a *answers) Shutdown(ctx context.Context) []string {
	labels := a.fake.Shutdown(ctx)
	if a.labelReleased {
		a.mu.Lock()
		for _, h := range a.liveHandlesLocked() {
			r := a.live[h]
			if slices.Contains(labels, drivers.RegionLabel(r.Label, drivers.WhyRetained)) {
				delete(a.live, h)
				a.unbindLocked(r)
			}
		}
		a.mu.Unlock()
	}
	return labels
}

func (a *answers) Contains(ctx context.Context, keys []string) ([]bool, error) {
	found, err := a.fake.Contains(ctx, keys)
	if a.lookupPresent && err == nil {
		for i := range found {
			found[i] = true
		}
	}
	return found, err
}

func (a *answers) Unregister(h drivers.Handle) error {
	err := a.fake.Unregister(h)
	if a.busyDrops && err != nil {
		a.mu.Lock()
		delete(a.live, h)
		a.mu.Unlock()
	}
	return err
}

// answerEnv is newEnv around an answers wrapper; plain hides the probes.
func answerEnv(t *testing.T, a answers, plainDriver bool) *env {
	e := newEnv(t, 3, bugs{}, envOpt{})
	a.fake = e.f
	var d drivers.Driver = &a
	if plainDriver {
		d = plain{&a}
	}
	e.m = Wrap(d, Options{Clock: e.s, Seed: 3, Truth: func(k string) (bool, bool) { p, ok := e.truth[k]; return p, ok }})
	e.d = e.m.Driver()
	return e
}

// TestAnswersJudged: each dishonest answer is caught on its rule, and the
// conforming fake (zero answers) passes the very same scenario.
func TestAnswersJudged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bug   answers
		plain bool
		rule  rules.ID
		run   func(e *env)
	}{
		// D-DRAIN-1: at rest, every call ENDED, a drain must be done.
		{"drain-never-done", answers{drainHolds: true}, false, rules.DDrain1, func(e *env) {
			h := e.register(e.region("r1", 8))
			e.submit(drivers.Fetch, h, 0, "k/a", "k/b")
			e.run()
			e.d.Drain()
			e.run()
			if _, judged := e.m.AtRest(); !judged {
				e.t.Fatalf("AtRest did not judge a drain with every call ENDED")
			}
			e.shutdown()
		}},
		// D-SHUT-1 both ways: a region labelled retained must still be held.
		{"label-for-released", answers{labelReleased: true}, false, rules.DShut1, func(e *env) {
			h := e.register(e.region("r1", 8))
			e.submit(drivers.Fetch, h, 0, "hang/a")
			e.run()
			e.shutdown()
			e.run()
		}},
		// D-LOOK-1: present for a key known absent is not that key's answer.
		{"lookup-present-for-absent", answers{lookupPresent: true}, false, rules.DLook1, func(e *env) {
			e.truth["k/x"] = false
			_, _ = e.d.Contains(context.Background(), []string{"k/x"})
			e.shutdown()
		}},
		// D-REG-6: a busy refusal that dropped the binding (Live says so).
		{"busy-refusal-drops-live", answers{busyDrops: true}, false, rules.DReg6, func(e *env) {
			h := e.register(e.region("r1", 8))
			e.submit(drivers.Fetch, h, 0, "hang/a")
			_ = e.d.Unregister(h)
			e.shutdown()
		}},
		// D-REG-6, not "capabilities": without probes the dropped binding
		// shows as a later Submit refused as invalid.
		{"busy-refusal-drops-blind", answers{busyDrops: true}, true, rules.DReg6, func(e *env) {
			h := e.register(e.region("r1", 8))
			e.submit(drivers.Fetch, h, 0, "hang/a")
			_ = e.d.Unregister(h)
			e.submit(drivers.Fetch, h, 1, "k/b")
			e.shutdown()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repro := fmt.Sprintf("(repro: go test ./drivers/monitor -run 'TestAnswersJudged/%s')", tc.name)
			e := answerEnv(t, tc.bug, tc.plain)
			tc.run(e)
			vs := e.m.Finish()
			if len(vs) == 0 || vs[0].Rule != tc.rule {
				t.Fatalf("want %s first, got %v %s", tc.rule, vs, repro)
			}
			if slices.ContainsFunc(vs, func(v rules.Violation) bool { return v.Rule == rules.DCaps }) {
				t.Fatalf("a dishonest answer was blamed on capabilities: %v %s", vs, repro)
			}
			e = answerEnv(t, answers{}, tc.plain)
			tc.run(e)
			if vs := e.m.Finish(); len(vs) > 0 {
				t.Fatalf("the conforming fake was flagged in the same scenario: %v %s", vs, repro)
			}
		})
	}
}

// TestAtRestNotJudged: a drain with a call still PENDING, or before any
// Drain, or after Shutdown, is not judged at rest (it may honestly say not
// done).
func TestAtRestNotJudged(t *testing.T) {
	e := answerEnv(t, answers{drainHolds: true}, false)
	h := e.register(e.region("r1", 8))
	if _, judged := e.m.AtRest(); judged {
		t.Fatalf("AtRest judged before any Drain (repro: go test ./drivers/monitor -run TestAtRestNotJudged)")
	}
	e.submit(drivers.Fetch, h, 0, "hang/a")
	e.run()
	e.d.Drain()
	if _, judged := e.m.AtRest(); judged {
		t.Fatalf("AtRest judged a drain while a call is PENDING (repro: go test ./drivers/monitor -run TestAtRestNotJudged)")
	}
	e.shutdown()
	if _, judged := e.m.AtRest(); judged {
		t.Fatalf("AtRest judged after Shutdown (repro: go test ./drivers/monitor -run TestAtRestNotJudged)")
	}
	if vs := e.m.Finish(); len(vs) > 0 {
		t.Fatalf("violations %v (repro: go test ./drivers/monitor -run TestAtRestNotJudged)", vs)
	}
}

// TestDetectedOrder: Detected keeps the order the monitor found
// violations in; Violations sorts them, and within one instant the order
// found (the scheduler numbers findings) comes before the key's name.
func TestDetectedOrder(t *testing.T) {
	e := answerEnv(t, answers{lookupPresent: true}, false)
	e.truth["k/x"], e.truth["k/y"] = false, false
	_, _ = e.d.Contains(context.Background(), []string{"k/y"})
	_, _ = e.d.Contains(context.Background(), []string{"k/x"})
	det := e.m.Detected()
	if len(det) != 2 || det[0].Key != "k/y" || det[1].Key != "k/x" {
		t.Fatalf("Detected() = %v, want k/y then k/x (repro: go test ./drivers/monitor -run TestDetectedOrder)", det)
	}
	if vs := e.m.Violations(); vs[0].Key != "k/y" || vs[0].Seq == 0 || vs[1].Seq <= vs[0].Seq {
		t.Fatalf("Violations() = %v, want sorted (repro: go test ./drivers/monitor -run TestDetectedOrder)", vs)
	}
}
