package drivertest

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/model"
)

// Attribution: which finding of a run came first, which followed from it,
// and which of them a report shows.
//
// Within one run (a case run or a swarm seed) the findings are put in
// causal order: by virtual time; at one instant, in the order the monitor
// found them, a case's own finding placed where the case took its mark
// (the moment of the answer it judges, which may be before the monitor
// reported what followed); the end-of-run oracles (memory, liveness, S-LIN)
// after everything the monitor found at that instant; and among those, the
// driver's boundary (contract) before what the system made of it (safety),
// then liveness. A harness finding is never a cause. The run's first
// finding is its first cause: its rule group failed "first" in that run,
// every other group that failed in the run failed after it. A group that
// never was a run's first cause failed only as a consequence (of the group
// that most often came first in its runs), and the report says so.

// mark is a moment of a case run as the causal order sees it: the virtual
// time, and how many violations the monitor had found by then.
type mark struct {
	at time.Duration
	k  int
}

// mark is now.
func (w *world) mark() mark { return mark{w.rt.Now(), len(w.ep.Monitor.Detected())} }

// failAt records a finding of the case about what happened at m (a refusal
// judged later, say): in causal order it comes before whatever the monitor
// found after m.
func (w *world) failAt(m mark, rule rules.ID, format string, args ...any) {
	w.finding(m, rules.Violation{Rule: rule, Row: -1, Detail: fmt.Sprintf(format, args...)})
}

// finding records v (its rule, where and detail; class, time and seed are
// filled in) as a finding of the case about what happened at m.
func (w *world) finding(m mark, v rules.Violation) {
	v.Class, v.At, v.Seed = v.Rule.Class(), m.at, w.seed
	w.mu.Lock()
	w.findings = append(w.findings, v)
	w.fmarks = append(w.fmarks, m)
	w.mu.Unlock()
}

// causeKey places one finding of a run in causal order.
type causeKey struct {
	harness bool
	at      time.Duration
	pos     int64 // 2k: a case finding marked when the monitor had found k; 2i+1: the monitor's i-th; endOfRun: an oracle at the end
	tie     int   // at one instant and position: contract, safety, liveness
}

const endOfRun = math.MaxInt64

func tieRank(c rules.Class) int {
	switch c {
	case rules.Contract:
		return 0
	case rules.Safety:
		return 1
	case rules.Liveness:
		return 2
	}
	return 3
}

func (a causeKey) compare(b causeKey) int {
	if a.harness != b.harness {
		if a.harness {
			return 1
		}
		return -1
	}
	return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.pos, b.pos), cmp.Compare(a.tie, b.tie))
}

// causalSort orders vs by key, then by rules.Compare (so a replay gives the
// same order).
func causalSort(vs []rules.Violation, key func(rules.Violation) causeKey) {
	keys := make(map[string]causeKey, len(vs))
	for _, v := range vs {
		keys[v.String()] = key(v)
	}
	slices.SortStableFunc(vs, func(a, b rules.Violation) int {
		return cmp.Or(keys[a.String()].compare(keys[b.String()]), rules.Compare(a, b))
	})
}

// endKey is the key of a finding seen only at the end of a run (a swarm
// run's, or an oracle's): its time, after the monitor's at that instant.
func endKey(v rules.Violation) causeKey {
	return causeKey{harness: v.Class == rules.Harness, at: v.At, pos: endOfRun, tie: tieRank(v.Class)}
}

// inCausalOrder orders a case run's findings (Endpoint already cleared): the
// monitor's by the order it found them, the case's own by their marks, the
// end-of-run oracles' by time.
func (w *world) inCausalOrder(vs []rules.Violation) []rules.Violation {
	found := map[string]int{}
	for i, v := range w.ep.Monitor.Detected() {
		v.Endpoint = ""
		if _, ok := found[v.String()]; !ok {
			found[v.String()] = i
		}
	}
	marks := map[string]mark{}
	w.mu.Lock()
	for i, f := range w.findings {
		if i < len(w.fmarks) {
			marks[f.String()] = w.fmarks[i]
		}
	}
	w.mu.Unlock()
	causalSort(vs, func(v rules.Violation) causeKey {
		k := endKey(v)
		if m, ok := marks[v.String()]; ok {
			k.at, k.pos = m.at, 2*int64(m.k)
		} else if i, ok := found[v.String()]; ok {
			k.pos = 2*int64(i) + 1
		}
		return k
	})
	return vs
}

// linLookupRule is the lookup rule an S-LIN failure is filed under in a
// certification when the first operation the store model cannot place is a
// lookup (RecorderOptions.Lookups, the swarm's runs): D-LOOK-2, the rule
// that a lookup's answer is never one the store contradicts ("absent" for
// what it holds). Which answer lied cannot be told from the history alone:
// in the evicting model any "absent" can be an eviction, so a stale
// "absent" surfaces as a later, honest "present" that cannot be placed.
// Where the suite knows the store (its cases), the monitor tells a
// "present" for a key known absent apart (D-LOOK-1). Zero for any other
// S-LIN failure, which stays a row result the store contradicts (D-STATUS).
func linLookupRule(v rules.Violation) rules.ID {
	_, op, ok := strings.Cut(v.Detail, "the first one it cannot place: ")
	if v.Rule != rules.SLin || !ok || !strings.HasPrefix(op, model.KindLookup.String()+" ") {
		return 0
	}
	return rules.DLook2
}

// target is the rule group a finding is filed under: the group its rule
// names, an S-LIN failure of a lookup under the lookup rule, else by alias,
// else the group whose case found it (caseGroup).
func (c *certifier) target(caseGroup string, v rules.Violation) string {
	switch {
	case c.isGroup(v.Rule):
		return v.Rule.String()
	case linLookupRule(v) != 0:
		return linLookupRule(v).String()
	case aliases[v.Rule] != 0:
		return aliases[v.Rule].String()
	}
	return caseGroup
}

// maxShown is how many findings a rule's row shows: the first causes
// first, then the rest; everything is counted.
const maxShown = 20

// recordRun files the findings of one run, in causal order (vs[0] is the
// run's first cause): each under its group, the first cause's group
// credited with a first cause, every other group with one run after it.
// run is the run that found them (a swarm run's Group is SwarmGroup): each
// group's repro reruns the run its first shown finding came from.
func (c *certifier) recordRun(caseGroup string, vs []rules.Violation, where string, run Rerun) {
	swarm := run.Group == SwarmGroup
	first := ""
	credited := map[string]bool{}
	for i, v := range vs {
		t := c.target(caseGroup, v)
		if i == 0 && v.Class != rules.Harness {
			first = t
		}
		a := c.acc(t)
		a.found++
		if swarm {
			a.swarmFound++
		}
		line := v.String() + " (" + where + ")"
		if c.collect {
			c.found = append(c.found, found{row: t, text: line, run: run})
		}
		switch {
		case first != "" && t == first:
			a.keep(&a.leads, &a.leadRun, line, run)
		default:
			a.keep(&a.rest, &a.restRun, line, run)
		}
		if swarm && a.swarmLine == "" {
			a.swarmLine, a.swarmRun = line, &run
		}
		if credited[t] {
			continue
		}
		credited[t] = true
		switch {
		case t == first:
			a.firstRuns++
		case first != "":
			a.after[first]++
		}
	}
}

// keep adds line, found by run, to list unless it is there or the list is
// full; *firstOf is the run of the list's first line.
func (a *ruleAcc) keep(list *[]string, firstOf **Rerun, line string, run Rerun) {
	if len(*list) < maxShown && !slices.Contains(*list, line) {
		*list = append(*list, line)
		if *firstOf == nil {
			*firstOf = &run
		}
	}
}

// shown is what the rule's row lists: the first causes first, then what
// followed, at most maxShown, one swarm finding always among them when the
// swarm found any; then "… and K more" with what the rest are.
func (a *ruleAcc) shown() []string {
	out := append(slices.Clone(a.leads), a.rest...)
	out = out[:min(len(out), maxShown)]
	if a.swarmLine != "" && !slices.Contains(out, a.swarmLine) {
		if len(out) == maxShown {
			out = out[:maxShown-1]
		}
		out = slices.Insert(out, min(len(a.leads), len(out)), a.swarmLine) // after the first causes
	}
	if more := a.found - len(out); more > 0 {
		out = append(out, fmt.Sprintf("… and %d more (%d found in all: first cause of %d run(s), %d from the swarm)", more, a.found, a.firstRuns, a.swarmFound))
	}
	return out
}

// firstRun is the run that found the first line shown (shown()[0]): the
// first run whose first cause is this group, else the first swarm run that
// found it when no case run's finding is kept before it, else the first run
// that found it at all; nil when nothing was found.
func (a *ruleAcc) firstRun() *Rerun {
	switch {
	case len(a.leads) > 0:
		return a.leadRun
	case a.swarmLine != "" && !slices.Contains(a.rest, a.swarmLine):
		return a.swarmRun // shown() puts it first
	case len(a.rest) > 0:
		return a.restRun
	}
	return a.swarmRun
}

// consequenceOf is the group this one failed after, when it never was a
// run's first cause: the one it followed most often (table order breaks a
// tie); "" when it was a first cause somewhere, or did not fail.
func (c *certifier) consequenceOf(rule string) string {
	a := c.byRule[rule]
	if a == nil || a.found == 0 || a.firstRuns > 0 {
		return ""
	}
	best, n := "", 0
	for _, r := range c.order {
		if a.after[r] > n {
			best, n = r, a.after[r]
		}
	}
	return best
}
