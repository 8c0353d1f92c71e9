package engine

import (
	"errors"
	"sort"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/sim"
)

// Verdict is a run's outcome class. Each has its own exit code in the CLI.
type Verdict string

const (
	Pass     Verdict = "pass"
	Safety   Verdict = "safety"   // linearizability, memory, contract (rules.Contract), backend rules
	Liveness Verdict = "liveness" // a hang, a step-limit livelock, an attempt without outcome
	Unknown  Verdict = "unknown"  // the porcupine check timed out: inconclusive, never a pass
	// HarnessError: the harness could not set the run up or finish it (a
	// log it cannot run — Err wraps ErrBadLog —, a cleanup that failed, a
	// rules.Harness violation). Not a verdict on the code under test.
	HarnessError Verdict = "harness-error"
)

// ErrBadLog is wrapped by the Err of a run whose op log cannot be run as
// written: an unknown driver, a bad fault line or region shape, a backend
// config the backend refuses. It is an input error, not a crash of the
// harness.
var ErrBadLog = errors.New("bad op log")

// EndpointNote is a recorder note and the endpoint it was seen on.
type EndpointNote struct {
	Endpoint string
	model.Note
}

// EndpointCall is a recorder's facts about one driver call and the
// endpoint it was submitted on.
type EndpointCall struct {
	Endpoint string
	model.CallInfo
}

// OpRecord is what became of one op of the log: the attempt it was admitted
// as (0 when none), that attempt's outcome and access at the end of the
// run, or why it was skipped (refused, no slots to lend).
type OpRecord struct {
	Index    int
	Op       workload.Op
	Attempt  uint64
	Outcome  string
	Access   string
	Skipped  string
	Endpoint string
}

// Result is what a run found.
type Result struct {
	Seed      uint64
	TraceHash uint64
	Steps     uint64
	End       time.Duration
	Verdict   Verdict
	Err       error
	Failures  []rules.Violation // sorted (rules.Sort): harness, then safety and contract, then liveness
	Log       *workload.Log
	Lin       model.CheckResult
	// Notes and History of every endpoint, merged in sequence order, for
	// timelines and the porcupine visualization (Lin points into History:
	// read it, do not change it).
	Notes   []EndpointNote
	History model.History
	// Calls are every endpoint's driver calls (submission order per
	// endpoint, endpoints in log order); Ops what became of each op. With
	// Notes, History and Failures they are what the timeline page shows.
	Calls []EndpointCall
	Ops   []OpRecord
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
	// Schedule is the run's scheduling decisions when Config.RecordSchedule
	// was set (nil otherwise): the log with it as its sched script replays
	// this run without drawing from the seed.
	Schedule *sim.Schedule
}

// Rule is the first failing rule (0 on a pass).
func (r *Result) Rule() rules.ID {
	if len(r.Failures) == 0 {
		return 0
	}
	return r.Failures[0].Rule
}

// judge runs Check over the run once the scheduler went idle (or gave up)
// and fills the result.
func (r *run) judge(runErr error) {
	res := r.res
	attempts := make([]Attempt, 0, len(r.ops))
	for i, st := range r.ops {
		if st.skip != nil {
			res.Skipped++
		}
		a := st.attempt
		if a == nil {
			continue
		}
		attempts = append(attempts, Attempt{Endpoint: st.ep, Attempt: a, opIndex: i, opKind: st.op.Kind})
		res.Attempts++
		switch a.State() {
		case backend.Delivered:
			res.Delivered++
		case backend.Failed:
			res.Failed++
		case backend.Cancelled:
			res.Cancelled++
		}
	}
	storeModel := model.DurableStore
	if r.log.Store == "evicting" {
		storeModel = model.EvictingStore
	}
	// The monitor's end-of-run checks (lost wake-ups, drain and shutdown
	// honesty) and liveness judge a finished run; a run cut off by a hang or
	// the step limit is a liveness failure, and only what was seen online
	// counts against the driver.
	done := runErr == nil
	cr := Check(CheckInput{
		Endpoints: r.eps, Attempts: attempts, Found: r.found, Stopped: runErr,
		Finished: done, Idle: done, ExpectShutdown: true,
		At: r.rt.Now(), Seed: r.log.Seed, StoreModel: storeModel, LinTimeout: r.cfg.LinTimeout,
	})
	res.Failures, res.Lin, res.History, res.Verdict = cr.Violations, cr.Lin, cr.History, cr.Verdict()
	if res.Verdict == Pass && !r.cfg.AllNotes {
		return // the records below serve reports and timelines only
	}
	res.Ops = make([]OpRecord, 0, len(r.ops))
	for i, st := range r.ops {
		rec := OpRecord{Index: i, Op: *st.op, Endpoint: st.op.Endpoint}
		if st.skip != nil {
			rec.Skipped = st.skip.Error()
		}
		if a := st.attempt; a != nil {
			rec.Attempt, rec.Outcome, rec.Access = a.ID(), a.Outcome().String(), a.Access().String()
		}
		res.Ops = append(res.Ops, rec)
	}
	for _, ep := range r.eps {
		for _, n := range ep.Recorder.Notes() {
			res.Notes = append(res.Notes, EndpointNote{Endpoint: ep.Name, Note: n})
		}
		for _, c := range ep.Recorder.Calls() {
			res.Calls = append(res.Calls, EndpointCall{Endpoint: ep.Name, CallInfo: c})
		}
	}
	res.Notes = append(res.Notes, r.attemptNotesOut()...)
	sort.SliceStable(res.Notes, func(i, j int) bool { return res.Notes[i].Seq < res.Notes[j].Seq })
}
