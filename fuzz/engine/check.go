package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/sim"
)

// Attempt is one admitted attempt, as the checks see it.
type Attempt struct {
	Endpoint *Endpoint
	// Label names it in reports: a scenario's "p1"; empty for a generated
	// op, which is named "op 12 (publish)" from opIndex and opKind only when
	// a report needs it (name).
	Label   string
	Attempt *backend.Attempt

	opIndex int
	opKind  workload.Kind
}

// name is the attempt's name in a report.
func (at Attempt) name() string {
	if at.Label != "" {
		return at.Label
	}
	return fmt.Sprintf("op %d (%s)", at.opIndex, at.opKind)
}

// LinPolicy says when Check runs the linearizability check (S-LIN).
type LinPolicy uint8

const (
	// LinAlways: always.
	LinAlways LinPolicy = iota
	// LinIfClean: only when nothing else failed — a violating history with
	// many operations on one key is what makes porcupine slow, and the run
	// has failed already (the conformance suite).
	LinIfClean
	// LinSkip: never (the history lacks writes made behind the recorder's
	// back).
	LinSkip
)

// CheckInput is a finished run, as Check judges it.
type CheckInput struct {
	Endpoints []*Endpoint
	// Attempts are the admitted attempts, in admission order.
	Attempts []Attempt
	// Found is what the caller found itself (a conformance case's own
	// checks, a harness error); Check reports it with the rest.
	Found []rules.Violation
	// Stopped is what cut the run short — a hang (*sim.HangError), the step
	// limit, a panic inside the run — or nil. It is a violation itself
	// (B-SUBMIT for a panic: after admission nothing panics; liveness
	// otherwise), and only what the oracles saw online is judged then.
	Stopped error
	// Finished: no callback can come any more (the run is quiescent, or
	// every driver's Shutdown returned): the monitor's end-of-run checks
	// apply (lost wake-ups, drain and shutdown honesty).
	Finished bool
	// Idle: nothing is runnable (quiescence): liveness applies — every call
	// has results and evidence (D-SUB-3), every admitted attempt an outcome
	// and evidence.
	Idle bool
	// ExpectShutdown: the run shuts every endpoint down, so at quiescence
	// one whose backend shutdown has not returned is B-SHUT (liveness).
	ExpectShutdown bool
	At             time.Duration
	Seed           uint64
	StoreModel     model.StoreModel
	LinTimeout     time.Duration // default 10 s
	Lin            LinPolicy
}

// CheckResult is Check's judgement.
type CheckResult struct {
	// Violations, sorted (rules.Sort): the first decides the verdict.
	Violations []rules.Violation
	// Lin is porcupine's verdict (Outcome "" when it did not run); Unknown
	// (a timeout) is a verdict of its own, never a pass.
	Lin model.CheckResult
	// History is every endpoint's, in endpoint order (what S-LIN checked);
	// Lin points into it, so it is read, never changed.
	History model.History
}

// Verdict classes the judgement: the first violation's class (harness,
// then safety and contract, then liveness), else Unknown when porcupine
// timed out, else Pass.
func (c CheckResult) Verdict() Verdict {
	if len(c.Violations) > 0 {
		switch c.Violations[0].Class {
		case rules.Harness:
			return HarnessError
		case rules.Liveness:
			return Liveness
		}
		return Safety
	}
	if c.Lin.Outcome == porcupine.Unknown {
		return Unknown
	}
	return Pass
}

// Check judges a finished run with every oracle, in one place: the
// contract monitor (Violations, and Finish when Finished), the lender
// (S-RELEASE, S-MARKS, S-HOLD, the arenas' S-NO-LATE-ACCESS and D-SUB-6),
// the memory oracle (D-ACCESS-END, D-SUB-6, a MISS leaves the slot
// untouched), call liveness (D-SUB-3), shutdown-returned (B-SHUT), attempt
// liveness, every endpoint's oracles (endpointOracles: the backend's
// boundary checks B-CUT, B-FETCH, B-PUBLISH) and linearizability of the
// merged history (S-LIN). Every violation names its endpoint and the seed.
func Check(in CheckInput) CheckResult {
	var res CheckResult
	var out []rules.Violation
	add := func(ep string, vs ...rules.Violation) {
		for _, v := range vs {
			if v.Endpoint == "" {
				v.Endpoint = ep
			}
			if v.Seed == 0 {
				v.Seed = in.Seed
			}
			out = append(out, v)
		}
	}
	add("", in.Found...)
	if in.Stopped != nil {
		add("", stopped(in.Stopped, in.At, in.Endpoints))
	}
	// Every endpoint's history, end to end in one allocation: Check's own
	// copy, so S-LIN may point into it.
	n := 0
	for _, ep := range in.Endpoints {
		n += ep.Recorder.HistoryLen()
	}
	if n > 0 {
		res.History = make(model.History, 0, n)
	}
	for _, ep := range in.Endpoints {
		if in.Finished {
			add(ep.Name, ep.Monitor.Finish()...)
		} else {
			add(ep.Name, ep.Monitor.Violations()...)
		}
		if ep.Lender != nil {
			add(ep.Name, ep.Lender.Violations()...)
		}
		add(ep.Name, ep.Recorder.MemoryViolations(ep.Arenas()...)...)
		if in.Idle {
			add(ep.Name, ep.Recorder.LivenessViolations(in.At)...)
		}
		res.History = ep.Recorder.AppendHistory(res.History)
		if in.Idle && in.ExpectShutdown && ep.Backend != nil && !ep.Down {
			add(ep.Name, rules.Violation{Rule: rules.BShut, Class: rules.Liveness, Row: -1, At: in.At, Detail: "backend shutdown never returned"})
		}
	}
	if in.Idle {
		for _, at := range in.Attempts {
			if a := at.Attempt; !a.Committed() || a.Access() == drivers.AccessPending {
				add(at.Endpoint.Name, rules.Violation{Rule: rules.LiveHang, Class: rules.Liveness, Row: -1, At: in.At,
					Detail: fmt.Sprintf("%s: attempt %d ended the run with outcome %v, access %v", at.name(), a.ID(), a.Outcome(), a.Access())})
			}
		}
	}
	for _, ep := range in.Endpoints {
		for _, o := range ep.oracles {
			add(ep.Name, o.Judge(ep, &in)...)
		}
	}
	if in.Lin == LinAlways || (in.Lin == LinIfClean && len(out) == 0) {
		timeout := in.LinTimeout
		if timeout <= 0 {
			timeout = 10 * time.Second
		}
		res.Lin = model.CheckOwned(res.History, in.StoreModel, timeout) // res.History is Check's own copy
		add("", res.Lin.Violations(in.Seed)...)
		if res.Lin.Err != nil {
			add("", rules.Violation{Rule: rules.HarnessErr, Class: rules.Harness, Row: -1, At: in.At,
				Detail: "the recorded history could not be checked (S-LIN): " + res.Lin.Err.Error()})
		}
	}
	rules.Sort(out)
	res.Violations = out
	return res
}

// stopped is the violation of a run cut short.
func stopped(err error, at time.Duration, eps []*Endpoint) rules.Violation {
	var hang *sim.HangError
	var crash *panicError
	switch {
	case errors.Is(err, sim.ErrStepLimit) || errors.Is(err, sim.ErrFlood):
		return Livelock(err, at, eps)
	case errors.As(err, &crash):
		// B-SUBMIT: after admission nothing panics; every problem goes
		// through the attempt.
		return rules.Violation{Rule: rules.BSubmit, Class: rules.Safety, Row: -1, At: at, Detail: crash.Error()}
	case errors.As(err, &hang):
		return rules.Violation{Rule: rules.LiveHang, Class: rules.Liveness, Row: -1, At: at,
			Detail: fmt.Sprintf("nothing runnable but pending: %v", hang.Pending)}
	}
	return rules.Violation{Rule: rules.LiveHang, Class: rules.Liveness, Row: -1, At: at, Detail: err.Error()}
}
