package engine

import (
	"fmt"

	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/sim"
)

// PCTStepsPerOp is the harness's estimate of choice points per op (steps
// at which more than one event may run: what PCT's k counts), when neither
// Config.PCTSteps nor the log's sched line sets k: a 100-op default-profile
// run has about 250 (median) and 660 (90th percentile) of its ~600 steps
// as choice points, so k = 5 × ops covers most runs without spreading the
// change points over choice points that never come.
const PCTStepsPerOp = 5

// PCTSteps is the k a log's PCT run draws its change points over.
func PCTSteps(log *workload.Log) uint64 {
	if log.Sched.Steps > 0 {
		return log.Sched.Steps
	}
	return max(100, PCTStepsPerOp*uint64(len(log.Ops)))
}

// SchedFor is the scheduler's options for a log: the seed's callback
// policy (SchedOptions), then the log's sched section: PCT from the seed,
// or a script that draws nothing from it.
func SchedFor(log *workload.Log) sim.Options {
	o := SchedOptions(log.Seed)
	if log.Sched.Script != nil {
		o.Script = log.Sched.Script
		return o
	}
	if log.Sched.Policy == sim.PCT {
		o.Policy, o.Depth, o.Steps = sim.PCT, max(1, log.Sched.Depth), PCTSteps(log)
	}
	return o
}

// schedSection is the sched section a generated log gets from cfg.
func (c Config) schedSection() workload.Sched {
	if c.Sched != sim.PCT {
		return workload.Sched{}
	}
	return workload.Sched{Policy: sim.PCT, Depth: max(1, c.Depth), Steps: c.PCTSteps}
}

// SchedFlags are the command-line flags of cfg's scheduling policy, each
// after a space ("" for the default random policy): what a repro adds.
func (c Config) SchedFlags() string { return c.schedFlags() }

// schedFlags are the repro command's flags for cfg's scheduling policy.
func (c Config) schedFlags() string {
	if c.Sched != sim.PCT {
		return ""
	}
	s := fmt.Sprintf(" --sched pct --depth %d", max(1, c.Depth))
	if c.PCTSteps > 0 {
		s += fmt.Sprintf(" --pct-steps %d", c.PCTSteps)
	}
	return s
}

// ScheduleOf is the decisions a run of log makes, recorded (Config.RecordSchedule
// on a copy of cfg): sim.Schedule's non-default decisions, whatever policy
// made them. The result is the run's.
func ScheduleOf(log *workload.Log, cfg Config) (*sim.Schedule, *Result) {
	cfg.RecordSchedule = true
	res := Run(log, cfg)
	return res.Schedule, res
}
