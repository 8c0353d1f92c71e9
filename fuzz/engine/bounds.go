package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim"
)

// What one run may cost, whatever the driver or the backend does. Every
// loop that steps a simulation (a run, a replay, every run of a shrink, a
// conformance case, a scenario) stops at a step cap, and every record a
// run keeps is bounded:
//
//   - scheduler events: Config.MaxSteps per run (DefaultMaxSteps), the
//     conformance suite's per-case cap, a scenario's per-command cap;
//   - the scheduler's inbox and queue: sim.DefaultMaxInbox triggers,
//     sim.DefaultMaxQueue events; beyond them the run is flooded;
//   - the recorder: model.MaxNotes notes, model.MaxTouches distinct
//     touches (repeats of a touch are not kept: they judge alike);
//   - the arenas: arena.MaxViolations violations, arena.MaxLog logged
//     touches;
//   - the monitor: monitor.MaxUndecided undecided probes (the rest is
//     bounded by the calls in flight).
//
// A run stopped at its cap or flooded is one liveness violation (rule
// "liveness", a livelock) that names the call to blame: the call whose
// callbacks came without a change the most times in a row (a callback
// storm: "call N called back K times without a change"), else the calls
// still without access evidence.
const (
	// DefaultMaxSteps is the base of the default step cap of a run; each
	// op adds StepsPerOp. The largest seed of 600 generated runs of 100 ops
	// took 1 581 events and a 100 000-op run 106 000, so the cap is some 60
	// times what a run needs; a livelocked run of 100 ops stops after
	// 105 000 events.
	DefaultMaxSteps = 100_000
	// StepsPerOp is what each op of the log adds to DefaultMaxSteps.
	StepsPerOp = 50
	// StormCallbacks is the fewest callbacks in a row without a change that
	// make a call the one to blame for a livelock: a conforming driver's
	// spurious callbacks come a handful at a time.
	StormCallbacks = 1000
)

// defaultMaxSteps is the step cap of a run of ops ops.
func defaultMaxSteps(ops int) uint64 { return DefaultMaxSteps + StepsPerOp*uint64(max(ops, 0)) }

// StepCapError is a run (or a conformance case) that ran its step cap
// out: a livelock. It wraps sim.ErrStepLimit.
type StepCapError struct {
	What  string // "the run", "the case"
	Steps uint64 // the cap
	At    time.Duration
	Last  string // the label of the last event run
}

func (e *StepCapError) Error() string {
	return fmt.Sprintf("%s ran out of its step cap of %d scheduler events at %v (the last event: %q)", e.What, e.Steps, e.At, e.Last)
}

func (e *StepCapError) Unwrap() error { return sim.ErrStepLimit }

// Livelock is the violation of a run stopped by stop — a *StepCapError, a
// *sim.FloodError or the scheduler's step-limit error — on the endpoints
// eps: rule "liveness", naming the call to blame (see the bounds above).
func Livelock(stop error, at time.Duration, eps []*Endpoint) rules.Violation {
	v := rules.Violation{Rule: rules.LiveHang, Class: rules.Liveness, Row: -1, At: at}
	what := "livelock: " + stop.Error()
	var flood *sim.FloodError
	if errors.As(stop, &flood) {
		what = "flood: " + stop.Error()
	}
	var best monitor.Storm
	bestEp := ""
	for _, ep := range eps {
		if ep == nil || ep.Monitor == nil {
			continue
		}
		if s := ep.Monitor.Storm(); s.Idle > best.Idle {
			best, bestEp = s, ep.Name
		}
	}
	if best.Idle >= StormCallbacks {
		v.Endpoint, v.Call = bestEp, uint64(best.Call)
		v.Detail = fmt.Sprintf("call %d called back %d times without a change (%d callbacks in all), a callback storm; %s", best.Call, best.Idle, best.Callbacks, what)
		return v
	}
	var open []string
	for _, ep := range eps {
		if ep == nil || ep.Recorder == nil {
			continue
		}
		for _, c := range ep.Recorder.Calls() {
			if c.Access == drivers.AccessEnded || c.Labelled != "" {
				continue
			}
			if v.Call == 0 {
				v.Endpoint, v.Call = ep.Name, uint64(c.ID)
			}
			if len(open) < 8 {
				open = append(open, fmt.Sprintf("%s call %d (%v)", ep.Name, c.ID, c.Access))
			}
		}
	}
	if len(open) == 0 {
		v.Detail = what + "; every call has access evidence, so the events themselves never end (a driver or the backend rescheduling itself without progress)"
		for _, ep := range eps {
			if ep == nil || ep.Recorder == nil {
				continue
			}
			if t, n, ok := ep.Recorder.LastTouch(); ok && t.By.Call != 0 {
				v.Endpoint, v.Call = ep.Name, uint64(t.By.Call)
				v.Detail += fmt.Sprintf("; the last of %d touches of memory was by call %d: %s", n, t.By.Call, t)
				break
			}
		}
		return v
	}
	slices.Sort(open)
	v.Detail = fmt.Sprintf("%s; calls without access ENDED: %s", what, strings.Join(open, ", "))
	return v
}
