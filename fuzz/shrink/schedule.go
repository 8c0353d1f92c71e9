package shrink

import (
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/sim"
)

// ScheduleSizes are a shrink's counts of non-default scheduling decisions
// (sim.Schedule.Decisions).
type ScheduleSizes struct {
	Original int // the original log's run (for a generated log: the seed's)
	Before   int // the minimal op log's run, before the schedule pass
	After    int // the shrunk log's sched script
	// Shrunk: the schedule pass ran and Log carries its sched script.
	Shrunk bool
}

// originalDecisions counts the decisions of the original run; a log that
// already had a script is its own count.
func originalDecisions(l *workload.Log, first *engine.Result, cfg engine.Config) int {
	if l.Sched.Script != nil {
		return l.Sched.Script.Decisions()
	}
	sc, res := engine.ScheduleOf(l, cfg)
	if res.TraceHash != first.TraceHash {
		return -1 // cannot happen: recording changes no decision
	}
	return sc.Decisions()
}

// decision names one entry of a script: which list, which index.
type decision struct {
	kind byte // 'p'ick, 'd'elay, 'c'oalesce
	i    int
}

func decisions(sc *sim.Schedule) []decision {
	var ds []decision
	for i := range sc.Picks {
		ds = append(ds, decision{'p', i})
	}
	for i := range sc.Delays {
		ds = append(ds, decision{'d', i})
	}
	for i := range sc.Coalesce {
		ds = append(ds, decision{'c', i})
	}
	return ds
}

// without is sc less the decisions ds[i:j] (each back to its default).
func without(sc *sim.Schedule, ds []decision, i, j int) *sim.Schedule {
	drop := map[decision]bool{}
	for _, d := range ds[i:j] {
		drop[d] = true
	}
	out := &sim.Schedule{}
	for k, p := range sc.Picks {
		if !drop[decision{'p', k}] {
			out.Picks = append(out.Picks, p)
		}
	}
	for k, d := range sc.Delays {
		if !drop[decision{'d', k}] {
			out.Delays = append(out.Delays, d)
		}
	}
	for k, c := range sc.Coalesce {
		if !drop[decision{'c', k}] {
			out.Coalesce = append(out.Coalesce, c)
		}
	}
	return out
}

// schedule is the schedule pass: the best log's run is recorded into its
// sched script (which replays it exactly), then ddmin drops decisions
// while the same rule still fails.
func (s *shrinker) schedule() {
	sc := s.best.Sched.Script
	if sc == nil {
		rec, res := engine.ScheduleOf(s.best, s.opts.Config)
		if res.Verdict != s.res.Verdict || res.Rule() != s.res.Rule {
			return // cannot happen: recording changes no decision
		}
		sc = rec
		s.res.Schedule.Before = sc.Decisions()
		cand := clone(s.best)
		cand.Sched = workload.Sched{Script: sc}
		if !s.try(cand) {
			return
		}
	} else {
		s.res.Schedule.Before = sc.Decisions()
	}
	s.res.Schedule.Shrunk = true
	s.ddmin(func() int { return s.best.Sched.Script.Decisions() }, func(i, j int) *workload.Log {
		cur := s.best.Sched.Script
		out := clone(s.best)
		out.Sched = workload.Sched{Script: without(cur, decisions(cur), i, j)}
		return out
	})
	s.res.Schedule.After = s.best.Sched.Script.Decisions()
}
