package drivertest

import (
	"fmt"
	"strings"

	"github.com/storesim/storesim/drivers/rules"
)

// A driver that keeps a case busy for ever costs one stopped run per case,
// not one per seed: once a run of a case was stopped at its step cap (or
// its scheduler was flooded), the case's remaining randomized seeds are not
// run, and the report says so next to the livelock finding; the
// certification goes on with the next case.
//
// The livelock finding (rule "liveness", engine.Livelock) is attributed to
// the rule group of the case that could not finish: that group's cases did
// not get to judge the driver, so it fails. A hang (nothing runnable while a
// call is pending) stays D-SUB-3's, by alias.

// recordCaseRun files the findings of one case run of group g (in causal
// order, each with the run that found them: recordRun), the livelock
// finding of a run that was stopped under g itself rather than D-SUB-3's.
func (c *certifier) recordCaseRun(g *group, w *world, vs []rules.Violation, where string, run Rerun) {
	target := c.target
	if w.stopped != nil {
		stop := w.stopped.Error()
		target = func(caseGroup string, v rules.Violation) string {
			if v.Rule == rules.LiveHang && strings.Contains(v.Detail, stop) {
				return caseGroup
			}
			return c.target(caseGroup, v)
		}
	}
	c.recordRunAs(g.rule.String(), vs, where, run, target)
}

// ranCase remembers that a run of cs was stopped, and where; a run that
// failed or was skipped may be the store's doing (reach.go).
func (c *certifier) ranCase(cs *caseDef, w *world, where string, failed bool) {
	if c.afterRun != nil {
		c.afterRun(w)
	}
	c.checkReach(failed, where)
	if w.stopped == nil {
		return
	}
	if c.stopped == nil {
		c.stopped = map[*caseDef]string{}
	}
	if _, ok := c.stopped[cs]; !ok {
		c.stopped[cs] = where
	}
}

// caseStopped reports whether the runs of cs stop here: the store stopped
// answering, or cs had a run stopped. The first time, it counts the left
// seeds as skipped in the group's row, and returns the reason.
func (c *certifier) caseStopped(a *ruleAcc, cs *caseDef, left int) (why string, stop bool) {
	if c.unreachable != "" {
		return "", true
	}
	where, ok := c.stopped[cs]
	if !ok {
		return "", false
	}
	why = fmt.Sprintf("the other seeds of case %s were not run: %s was stopped as a livelock", cs.name, where)
	a.skipped[why] += left
	return why, true
}
