package drivertest

import (
	"fmt"
	"slices"
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

// recordRun attributes one finding of a case run of group g.
func (c *certifier) recordRun(g *group, w *world, v rules.Violation, where string) {
	if w.stopped == nil || v.Rule != rules.LiveHang || !strings.Contains(v.Detail, w.stopped.Error()) {
		c.record(g.rule.String(), v, where)
		return
	}
	a := c.acc(g.rule.String())
	if len(a.violations) >= 20 {
		a.extra++
		return
	}
	if line := v.String() + " (" + where + ")"; !slices.Contains(a.violations, line) {
		a.violations = append(a.violations, line)
	}
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

// caseStopped reports whether cs had a run stopped; the first time it
// counts the left seeds as skipped, with the reason.
func (c *certifier) caseStopped(a *ruleAcc, cs *caseDef, left int) bool {
	if c.unreachable != "" {
		return true
	}
	where, ok := c.stopped[cs]
	if !ok {
		return false
	}
	a.skipped[fmt.Sprintf("the other seeds of case %s were not run: %s was stopped as a livelock", cs.name, where)] += left
	return true
}
