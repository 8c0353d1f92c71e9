package drivertest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/storesim/storesim/drivers"
)

// Verdict is a rule group's outcome.
type Verdict string

const (
	Pass Verdict = "pass"
	Fail Verdict = "fail"
	// Skip: not run (a capability the driver does not declare, an optional
	// interface it does not offer, a fault it cannot be made to show); the
	// Reason says which. A skip is not a failure, and not a pass either.
	Skip Verdict = "skip"
)

// Report is the certificate: per rule group a verdict, what ran and what
// broke, the race pairs exercised and what was never exercised. Its JSON
// field names are stable (the CLI prints it with --json).
type Report struct {
	Driver string `json:"driver"`
	// Version is the storesim version that certified.
	Version string `json:"version"`
	// Caps is what the driver declared; Together says whether it offers
	// together-registration (drivers.TogetherRegisterer).
	Caps     drivers.Capabilities `json:"capabilities"`
	Together bool                 `json:"together"`
	RealTime bool                 `json:"real_time"`
	// Seed is the base seed every run derived its seed from.
	Seed uint64 `json:"seed"`
	// Selected lists the rule groups a partial run was limited to
	// (Options.Rules): Certified then speaks for those only. Empty for a
	// full certification.
	Selected []string `json:"selected,omitempty"`
	// Rerun is the one run a rerun was limited to (Options.Only).
	Rerun *Rerun       `json:"rerun,omitempty"`
	Rules []RuleResult `json:"rules"`
	// RacePairs counts how often each dangerous pair was exercised, in a
	// fixed order; a pair never hit is a gap, unless it is not applicable
	// to the driver (PairCount.NotApplicable says why).
	RacePairs []PairCount `json:"race_pairs"`
	// Swarm sums up the backend-driven randomized runs (fuzz/engine).
	Swarm SwarmSummary `json:"swarm"`
	// Gaps name what the certification could not show: a race pair never
	// exercised, a randomized run whose check timed out or could not be set
	// up. A report with a gap is not certified.
	Gaps []string `json:"gaps"`
	// Certified: no rule failed and there is no gap.
	Certified bool `json:"certified"`
}

// RuleResult is one rule group's outcome.
type RuleResult struct {
	Rule    string  `json:"rule"`
	Verdict Verdict `json:"verdict"`
	// Reason: why it was skipped, or what part of it could not run.
	Reason string `json:"reason,omitempty"`
	// Cases counts the directed case runs; Seeds are the seeds of the
	// randomized runs of the group's cases.
	Cases int      `json:"cases"`
	Seeds []uint64 `json:"seeds"`
	// Violations found anywhere in the certification that are filed under
	// this rule, each with the case or swarm seed that found it: at most 20,
	// those that were their run's first cause first (a swarm finding always
	// among them when the swarm found any), then "… and K more"; Found
	// counts them all.
	Violations []string `json:"violations,omitempty"`
	Found      int      `json:"found"`
	// FirstCause counts the runs (case runs and swarm seeds) whose first
	// finding — in causal order: virtual time, then the order the monitor
	// found them — is filed under this rule. ConsequenceOf names the rule
	// it failed after, when it never was a run's first cause: it failed
	// only as a consequence.
	FirstCause    int    `json:"first_cause"`
	ConsequenceOf string `json:"consequence_of,omitempty"`
	// After counts the runs in which this rule failed after another rule's
	// first cause, by that rule.
	After map[string]int `json:"after,omitempty"`
	// Pairs are the race pairs the group's cases exercised.
	Pairs []PairCount `json:"race_pairs,omitempty"`
	// First is the run that found the group's first violation shown (in
	// Violations: the first run whose first cause the group was, when there
	// is one); Repro reruns exactly that run when the group failed, else
	// the whole group.
	First *Rerun `json:"first,omitempty"`
	Repro string `json:"repro"`
}

// PairCount is how often one race pair was exercised. NotApplicable, set
// only for a pair never hit, says why the driver cannot give it a chance
// (what it declares, or that no call of it was ever in flight); such a pair
// is not a gap.
type PairCount struct {
	Pair          string `json:"pair"`
	Hits          int    `json:"hits"`
	NotApplicable string `json:"not_applicable,omitempty"`
}

// SwarmSummary describes the backend-driven randomized runs.
type SwarmSummary struct {
	Runs     int      `json:"runs"`
	Profiles []string `json:"profiles"`
	Seeds    []uint64 `json:"seeds"`
	Failed   int      `json:"failed"`
	Note     string   `json:"note,omitempty"`
}

// Rule returns the result of one rule group.
func (r *Report) Rule(rule string) (RuleResult, bool) {
	for _, rr := range r.Rules {
		if rr.Rule == rule {
			return rr, true
		}
	}
	return RuleResult{}, false
}

// Failed lists the rule groups that failed, first causes first, then those
// that failed only as a consequence (in table order). Among the first
// causes, a rule that others failed after (in the same run) comes before
// them unless they also came first before it as often; otherwise the rule
// that was more runs' first cause comes first (table order breaks a tie).
// Its first entry is the rule a broken driver is named for.
func (r *Report) Failed() []string {
	var causes, after []RuleResult
	for _, rr := range r.Rules {
		switch {
		case rr.Verdict != Fail:
		case rr.FirstCause > 0 || rr.ConsequenceOf == "":
			causes = append(causes, rr)
		default:
			after = append(after, rr)
		}
	}
	// p precedes q: q followed p's first cause in more runs than the other
	// way round.
	precedes := func(p, q RuleResult) bool { return q.After[p.Rule] > p.After[q.Rule] }
	var out []string
	for len(causes) > 0 {
		best := -1
		for i, q := range causes {
			free := !slices.ContainsFunc(causes, func(p RuleResult) bool { return p.Rule != q.Rule && precedes(p, q) })
			if free && (best < 0 || q.FirstCause > causes[best].FirstCause) {
				best = i
			}
		}
		if best < 0 { // a cycle: the most runs' first cause
			best = 0
			for i, q := range causes {
				if q.FirstCause > causes[best].FirstCause {
					best = i
				}
			}
		}
		out = append(out, causes[best].Rule)
		causes = slices.Delete(causes, best, best+1)
	}
	for _, rr := range after {
		out = append(out, rr.Rule)
	}
	return out
}

// Table prints one line per rule group — rule, verdict, directed cases,
// randomized seeds, race pairs exercised — then the race-pair totals, the
// gaps and the verdict.
func (r *Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "driver %s (storesim %s, seed %d)\n", r.Driver, r.Version, r.Seed)
	fmt.Fprintf(&b, "capabilities: MaxRowsPerOp=%d AbsentIsMiss=%v CanFetch=%v CanPublish=%v CanCancel=%v together=%v real-time=%v\n",
		r.Caps.MaxRowsPerOp, r.Caps.AbsentIsMiss, r.Caps.CanFetch, r.Caps.CanPublish, r.Caps.CanCancel, r.Together, r.RealTime)
	fmt.Fprintf(&b, "%-15s %-7s %5s %5s  %s\n", "RULE", "VERDICT", "CASES", "SEEDS", "RACE PAIRS / REASON")
	for _, rr := range r.Rules {
		extra := pairsText(rr.Pairs)
		if rr.Verdict == Skip || (rr.Reason != "" && extra == "-") {
			extra = rr.Reason
		}
		fmt.Fprintf(&b, "%-15s %-7s %5d %5d  %s\n", rr.Rule, rr.Verdict, rr.Cases, len(rr.Seeds), extra)
		if rr.ConsequenceOf != "" {
			fmt.Fprintf(&b, "    failed only as a consequence of %s (never a run's first cause)\n", rr.ConsequenceOf)
		}
		for i, v := range rr.Violations {
			if i == 3 {
				fmt.Fprintf(&b, "    … %d more (see --json)\n", len(rr.Violations)-i)
				break
			}
			fmt.Fprintf(&b, "    %s\n", v)
		}
		if rr.Verdict == Fail {
			fmt.Fprintf(&b, "    repro: %s\n", rr.Repro)
		}
	}
	fmt.Fprintf(&b, "swarm: %d backend-driven runs (%s), %d failed", r.Swarm.Runs, strings.Join(r.Swarm.Profiles, ", "), r.Swarm.Failed)
	if r.Swarm.Note != "" {
		fmt.Fprintf(&b, " — %s", r.Swarm.Note)
	}
	b.WriteString("\nrace pairs:")
	for _, p := range r.RacePairs {
		if p.NotApplicable != "" {
			fmt.Fprintf(&b, " %s=n/a", p.Pair)
			continue
		}
		fmt.Fprintf(&b, " %s=%d", p.Pair, p.Hits)
	}
	b.WriteString("\n")
	for _, p := range r.RacePairs {
		if p.NotApplicable != "" {
			fmt.Fprintf(&b, "not applicable: %s: %s\n", p.Pair, p.NotApplicable)
		}
	}
	for _, g := range r.Gaps {
		fmt.Fprintf(&b, "gap: %s\n", g)
	}
	switch {
	case r.Rerun != nil:
		fmt.Fprintf(&b, "rerun of one run only: %s (race pairs not judged)\n", r.Rerun)
	case len(r.Selected) > 0:
		fmt.Fprintf(&b, "partial run: only %s (race pairs and swarm not judged)\n", strings.Join(r.Selected, " "))
	}
	fmt.Fprintf(&b, "certified: %v", r.Certified)
	if !r.Certified {
		var why []string
		if f := r.Failed(); len(f) > 0 {
			why = append(why, "failed "+strings.Join(f, " "))
			for _, rule := range f {
				if rr, _ := r.Rule(rule); rr.ConsequenceOf != "" {
					why = append(why, rule+" only as a consequence of "+rr.ConsequenceOf)
				}
			}
		}
		if len(r.Gaps) > 0 {
			why = append(why, fmt.Sprintf("%d gap(s)", len(r.Gaps)))
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(why, "; "))
	}
	b.WriteString("\n")
	return b.String()
}

func pairsText(ps []PairCount) string {
	var parts []string
	for _, p := range ps {
		if p.Hits > 0 {
			parts = append(parts, fmt.Sprintf("%s×%d", p.Pair, p.Hits))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
