package engine

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/sim"
)

// Verdict is a run's outcome class. Each has its own exit code in the CLI.
type Verdict string

const (
	Pass     Verdict = "pass"
	Safety   Verdict = "safety"   // linearizability, memory, contract, backend rules
	Liveness Verdict = "liveness" // a hang, a step-limit livelock, an attempt without outcome
	Unknown  Verdict = "unknown"  // the porcupine check timed out
	// HarnessError: the log could not be set up (bad driver name, fault
	// line, region shape). Not a verdict on the code under test.
	HarnessError Verdict = "harness-error"
)

// EndpointNote is a recorder note and the endpoint it was seen on.
type EndpointNote struct {
	Endpoint string
	model.Note
}

// Failure is one violation and the endpoint it was seen on.
type Failure struct {
	Endpoint string
	model.Violation
}

func (f Failure) String() string {
	if f.Endpoint == "" {
		return f.Violation.String()
	}
	return f.Endpoint + ": " + f.Violation.String()
}

// Result is what a run found.
type Result struct {
	Seed      uint64
	TraceHash uint64
	Steps     uint64
	End       time.Duration
	Verdict   Verdict
	Err       error
	Failures  []Failure // safety first, then liveness; sorted within
	Log       *workload.Log
	Lin       model.CheckResult
	// Notes and History of every endpoint, merged in sequence order, for
	// timelines and the porcupine visualization.
	Notes   []EndpointNote
	History model.History
	// Config is what the run was given (for the repro command).
	Config Config
	// Stats: attempts admitted and their outcomes, across endpoints.
	Attempts, Delivered, Failed, Cancelled, Skipped int
	// RealTime: the run played on the wall clock against a real driver
	// (RunReal). Its seed replays the workload, not the interleaving;
	// TraceHash and Steps are 0 (there is no scheduler to hash). Stretch is
	// then the RealDriver.Stretch it ran with.
	RealTime bool
	Stretch  float64
}

// Rule is the first failing rule ("" on a pass).
func (r *Result) Rule() string {
	if len(r.Failures) == 0 {
		return ""
	}
	return r.Failures[0].Rule
}

func (r *Result) add(ep string, v model.Violation) {
	r.Failures = append(r.Failures, Failure{Endpoint: ep, Violation: v})
}

// check runs every oracle after the scheduler went idle (or gave up).
func (r *run) check(runErr error) {
	res, at, seed := r.res, r.clock.Now(), r.log.Seed
	var hang *sim.HangError
	var crash *panicError
	switch {
	case errors.As(runErr, &crash):
		// B-SUBMIT: after admission nothing panics; every problem goes
		// through the attempt. The run stopped here, so only what was seen
		// online is judged.
		res.add("", model.Violation{Rule: "B-SUBMIT", Class: model.Safety, Row: -1, At: at, Seed: seed, Detail: crash.Error()})
	case errors.As(runErr, &hang):
		res.add("", model.Violation{Rule: "liveness", Class: model.Liveness, Row: -1, At: at, Seed: seed,
			Detail: fmt.Sprintf("nothing runnable but pending: %v", hang.Pending)})
	case runErr != nil:
		res.add("", model.Violation{Rule: "liveness", Class: model.Liveness, Row: -1, At: at, Seed: seed, Detail: runErr.Error()})
	}
	var history model.History
	for _, ep := range r.eps {
		name := ep.spec.Name
		// The monitor's end-of-run checks (lost wake-ups, drain and shutdown
		// honesty) judge a finished run; a run cut off by a hang or the step
		// limit is a liveness failure, and only what the monitor saw online
		// counts against the driver.
		monViolations := ep.mon.Violations()
		if runErr == nil {
			monViolations = ep.mon.Finish()
		}
		// The reference model (B-MODEL, B-PROGRESS) judges a backend fed
		// conforming answers; once the driver broke the contract, only
		// safety is owed, and the other oracles judge it.
		if ep.ref != nil && len(monViolations) == 0 {
			for _, v := range ep.ref.Violations() {
				res.add(name, v)
			}
		}
		for _, v := range monViolations {
			res.add(name, model.Violation{Rule: v.Rule, Class: model.Safety, Call: v.Call, Row: v.Row, Key: v.Key, At: v.At, Seed: seed, Detail: v.Detail})
		}
		for _, v := range ep.lender.Violations() {
			res.add(name, model.Violation{Rule: v.Rule, Class: model.Safety, Row: -1, At: v.At, Seed: seed,
				Detail: fmt.Sprintf("loan %d: %s", v.Loan, v.Detail)})
		}
		for _, v := range ep.rec.MemoryViolations(arenasOf(ep)...) {
			res.add(name, v)
		}
		if runErr == nil {
			for _, v := range ep.rec.LivenessViolations(at) {
				res.add(name, v)
			}
		}
		history = append(history, ep.rec.History()...)
		for _, n := range ep.rec.Notes() {
			res.Notes = append(res.Notes, EndpointNote{Endpoint: name, Note: n})
		}
		if !ep.down && runErr == nil {
			res.add(name, model.Violation{Rule: "B-SHUT", Class: model.Liveness, Row: -1, At: at, Seed: seed, Detail: "backend shutdown never returned"})
		}
	}
	r.checkAttempts(runErr == nil)
	for _, ep := range r.eps {
		if ep.check != nil {
			ep.check.finish(at)
		}
	}
	sort.SliceStable(res.Notes, func(i, j int) bool { return res.Notes[i].Seq < res.Notes[j].Seq })
	profile := model.Durable
	if r.log.Store == "evicting" {
		profile = model.Evicting
	}
	res.History = history
	res.Lin = model.Check(history, profile, r.cfg.LinTimeout)
	for _, v := range res.Lin.Violations(seed) {
		res.add("", v)
	}
	r.verdict()
}

// checkAttempts is attempt-level liveness (SPEC §5.5): at quiescence every
// admitted attempt has an outcome and access evidence.
func (r *run) checkAttempts(idle bool) {
	res := r.res
	for i, st := range r.ops {
		if st.skipped != "" {
			res.Skipped++
		}
		a := st.attempt
		if a == nil {
			continue
		}
		res.Attempts++
		switch a.State() {
		case backend.Delivered:
			res.Delivered++
		case backend.Failed:
			res.Failed++
		case backend.Cancelled:
			res.Cancelled++
		}
		if !idle {
			continue
		}
		if !a.Committed() || a.Access() == drivers.AccessPending {
			res.add(st.ep.spec.Name, model.Violation{Rule: "liveness", Class: model.Liveness, Row: -1, At: r.clock.Now(), Seed: r.log.Seed,
				Detail: fmt.Sprintf("op %d (%s): attempt %d ended the run with outcome %v, access %v", i, st.op.Kind, a.ID(), a.Outcome(), a.Access())})
		}
	}
}

func (r *run) verdict() {
	res := r.res
	sort.SliceStable(res.Failures, func(i, j int) bool {
		a, b := res.Failures[i], res.Failures[j]
		if a.Class != b.Class {
			return a.Class < b.Class // Safety before Liveness
		}
		if a.At != b.At {
			return a.At < b.At
		}
		return a.Rule < b.Rule
	})
	switch {
	case len(res.Failures) > 0 && res.Failures[0].Class == model.Safety:
		res.Verdict = Safety
	case len(res.Failures) > 0:
		res.Verdict = Liveness
	case res.Lin.Outcome == porcupine.Unknown:
		res.Verdict = Unknown
	default:
		res.Verdict = Pass
	}
}
