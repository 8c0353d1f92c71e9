package drivertest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/realtime"
)

// Certify runs the conformance suite on the driver h builds and returns the
// certificate. It never panics on a misbehaving driver: a panic inside a
// case is a violation of the case's rule. It needs no *testing.T, so the CLI
// (`storesim certify`) and [Run] share it.
func Certify(h Harness, opts Options) Report {
	c := newCertifier(h, opts)
	c.run()
	return c.report()
}

// caseDef is one directed case of a rule group. Its run function gets a
// fresh world; the directed run uses the case's fixed seed and fixed
// choices, the randomized runs draw their choices from w.rnd.
type caseDef struct {
	name string
	// faults is the mix the driver is asked to inject (Env.Faults).
	faults memdriver.FaultMix
	// caps adjusts the capabilities asked for (nil: the harness's).
	caps func(drivers.Capabilities) drivers.Capabilities
	// once: the case has no randomized variants (nothing in it varies).
	once bool
	// needs says why the case cannot run on this driver ("" when it can);
	// the group's other cases still run.
	needs func(p probe) string
	// chases lists the race pairs the case is built to exercise: a
	// real-time certification reruns it when timing kept one from
	// happening (chaseRacePairs).
	chases []Pair
	run    func(w *world)
}

// group is one rule's case group.
type group struct {
	rule rules.ID
	// needs says why the group cannot run on this driver ("" when it can).
	needs func(p probe) string
	cases []caseDef
}

// probe is what a fresh driver declares, read once before anything runs.
type probe struct {
	caps     drivers.Capabilities
	together bool
	prober   bool // the driver implements monitor.LockProber
	store    bool // a simulated store backs the driver (ground truth)
	absent   bool // the suite can know a key is absent (store or MakeAbsent)
	err      string
}

// ruleAcc accumulates one rule group's outcome.
type ruleAcc struct {
	cases int
	seeds []uint64
	// Findings filed under the group (cause.go): every one counted, the
	// first maxShown kept of those that were their run's first cause
	// (leads) and of the others (rest), and the swarm's first; with the
	// run each list's first line came from (what the group's repro
	// reruns: firstRun).
	found      int
	swarmFound int
	own        int // of found, the findings of the group's own rule (not by alias, nor a stopped case's livelock)
	leads      []string
	rest       []string
	swarmLine  string
	leadRun    *Rerun
	restRun    *Rerun
	swarmRun   *Rerun
	firstRuns  int            // runs whose first cause is this group
	after      map[string]int // runs in which it failed after another group's first cause, by that group
	pairs      pairHits
	ran        int
	skipped    map[string]int // skip reason → runs
	// notApplicable names the cases the driver's declaration rules out.
	notApplicable []string
}

type certifier struct {
	h      Harness
	opts   Options
	probe  probe
	groups []*group
	byRule map[string]*ruleAcc
	order  []string // rule rows in report order
	pairs  pairHits
	seen   pairChances // over the case runs (the swarm's counters are never told)
	// chaseRan and chaseSkips count, per race pair, the runs of the cases
	// built for it (caseDef.chases) that exercised their case, and why the
	// others did not: a gap names the reasons when none ran.
	chaseRan   pairHits
	chaseSkips [numPairs]map[string]int
	gaps       []string
	swarm      SwarmSummary
	// found collects what the runs found when collect is set: [Run]'s
	// subtests report it.
	collect bool
	found   []found
	// subset, set by [Run] when a -run pattern or -drivertest.seed left
	// part of the suite out, lists the groups that ran.
	subset []string
	// stopped names the cases a run of which was stopped at its step cap
	// or flooded (bounds.go): their other seeds are not run.
	stopped map[*caseDef]string
	// afterRun, when set, sees every case run's world after finish (tests).
	afterRun func(w *world)
	// unreachable is the gap of a store that stopped answering (reach.go);
	// nothing runs after it is set. groupN counts the groups begun.
	unreachable string
	groupN      int
}

// found is one violation as a run found it: the row it counts against,
// its text and the run.
type found struct {
	row, text string
	run       Rerun
}

func newCertifier(h Harness, opts Options) *certifier {
	c := &certifier{h: h, opts: opts.withDefaults(h), byRule: map[string]*ruleAcc{}}
	c.groups = allGroups()
	for _, g := range c.groups {
		c.acc(g.rule.String())
	}
	return c
}

func (c *certifier) acc(rule string) *ruleAcc {
	a := c.byRule[rule]
	if a == nil {
		a = &ruleAcc{skipped: map[string]int{}, after: map[string]int{}}
		c.byRule[rule] = a
		c.order = append(c.order, rule)
	}
	return a
}

func (c *certifier) selected(rule string) bool {
	if c.subset != nil && !slices.Contains(c.subset, rule) {
		return false
	}
	if c.opts.Only.Case != "" {
		return rule == c.opts.Only.Group
	}
	return len(c.opts.Rules) == 0 || slices.Contains(c.opts.Rules, rule)
}

// partial: only some of the suite runs (Options.Rules, Options.Only, or a
// go test -run pattern or seed flag), so the race pairs are not judged.
func (c *certifier) partial() bool {
	return len(c.opts.Rules) > 0 || c.opts.Only.Case != "" || c.subset != nil
}

func (c *certifier) run() {
	if !c.preflight() {
		return
	}
	c.probe = c.probeDriver()
	if c.probe.err != "" {
		return
	}
	if c.opts.Only.Case != "" {
		c.runOnly(c.opts.Only)
		return
	}
	for _, g := range c.groups {
		if !c.selected(g.rule.String()) {
			continue
		}
		if c.unreachable != "" {
			break
		}
		c.progress(g)
		if c.skipGroup(g) != "" {
			continue
		}
		for i := range g.cases {
			if cs := &g.cases[i]; c.skipCase(g, cs) == "" {
				c.runCase(g, cs)
			}
		}
	}
	c.chaseRacePairs()
	if why := c.skipSwarm(); why != "" {
		c.swarm.Note = why
		return
	}
	for _, p := range c.profiles() {
		c.swarmProfile(p, nil)
	}
}

// skipGroup says why g does not run ("" when it does), and counts a skip
// the driver's declaration decided.
func (c *certifier) skipGroup(g *group) string {
	if !c.selected(g.rule.String()) {
		return "not selected"
	}
	if why := g.needs(c.probe); why != "" {
		c.acc(g.rule.String()).skipped[why]++
		return why
	}
	return ""
}

// runOnly runs exactly the run r names (Options.Only).
func (c *certifier) runOnly(r Rerun) {
	if why := knownRun(r); why != "" {
		c.gaps = append(c.gaps, "Options.Only: "+why)
		return
	}
	if r.Group == SwarmGroup {
		if why := c.skipSwarm(); why != "" {
			c.swarm.Note = why
			return
		}
		c.swarmProfile(engine.Profile(r.Case), &r.Seed)
		return
	}
	c.swarm.Note = "not run: only the run " + r.String()
	for _, g := range c.groups {
		if g.rule.String() != r.Group || c.skipGroup(g) != "" {
			continue
		}
		for i := range g.cases {
			if cs := &g.cases[i]; cs.name == r.Case && c.skipCase(g, cs) == "" {
				c.runCaseSeed(g, cs, r.Seed, r.Directed)
			}
		}
	}
}

// probeDriver builds one driver to read its declaration.
func (c *certifier) probeDriver() probe {
	var p probe
	if c.h.New == nil {
		p.err = "the harness has no New function"
		return p
	}
	var rt sim.Runtime
	var closeRT func()
	if c.h.RealTime {
		r := realtime.New(c.opts.Seed)
		rt, closeRT = r, r.Close
	} else {
		rt, closeRT = sim.New(sim.Options{Seed: c.opts.Seed}), func() {}
	}
	defer closeRT()
	store, _ := memdriver.NewStore(memdriver.StoreOptions{})
	if c.h.ExternalStore {
		store = nil
	}
	d, err := safeNew(c.h, Env{RT: rt, Store: store, Name: "probe", Caps: c.requestCaps(nil)})
	if err != nil {
		p.err = "Harness.New failed: " + err.Error()
		return p
	}
	p.caps = d.Capabilities()
	_, p.together = d.(drivers.TogetherRegisterer)
	_, p.prober = d.(monitor.LockProber)
	p.store = store != nil
	p.absent = p.store || c.h.MakeAbsent != nil
	ctx, cancel := c.ctx()
	defer cancel()
	d.Shutdown(ctx)
	return p
}

func safeNew(h Harness, env Env) (d drivers.Driver, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	d, err = h.New(env)
	if err == nil && d == nil {
		err = fmt.Errorf("it returned neither a driver nor an error")
	}
	return d, err
}

func (c *certifier) ctx() (context.Context, context.CancelFunc) {
	if c.h.RealTime {
		return context.WithTimeout(context.Background(), c.opts.Wait)
	}
	return context.WithCancel(context.Background())
}

// requestCaps is what Env.Caps asks for in a case.
func (c *certifier) requestCaps(adjust func(drivers.Capabilities) drivers.Capabilities) drivers.Capabilities {
	caps := c.h.Caps
	if caps == (drivers.Capabilities{}) {
		caps = memdriver.DefaultCaps
	}
	if adjust != nil {
		caps = adjust(caps)
	}
	return caps
}

// skipCase says why cs cannot run on this driver ("" when it can), and
// notes it in the group's row.
func (c *certifier) skipCase(g *group, cs *caseDef) string {
	if cs.needs == nil {
		return ""
	}
	why := cs.needs(c.probe)
	if why != "" {
		a := c.acc(g.rule.String())
		a.notApplicable = append(a.notApplicable, cs.name+": "+why)
	}
	return why
}

// runCase runs a case's directed run and its randomized runs, and
// returns why runs did not exercise the case (reason → runs).
func (c *certifier) runCase(g *group, cs *caseDef) (ran int, skipped map[string]int) {
	skipped = map[string]int{}
	count := func(why string) {
		if why == "" {
			ran++
		} else {
			skipped[why]++
		}
	}
	if c.unreachable != "" {
		return ran, skipped
	}
	count(c.runCaseSeed(g, cs, sim.SubSeed(c.opts.Seed, g.rule.String()+"/"+cs.name), true))
	if cs.once {
		return ran, skipped
	}
	a := c.acc(g.rule.String())
	for i := range c.opts.Seeds {
		if why, stop := c.caseStopped(a, cs, c.opts.Seeds-i); stop {
			if why != "" {
				skipped[why] += c.opts.Seeds - i
			}
			break
		}
		count(c.runCaseSeed(g, cs, sim.SubSeed(c.opts.Seed, fmt.Sprintf("%s/%s/%d", g.rule, cs.name, i)), false))
	}
	return ran, skipped
}

// runCaseSeed runs one run of a case (its directed run, or the randomized
// run of seed), counts it in the group's row and returns why it did not
// exercise the case ("" when it did).
func (c *certifier) runCaseSeed(g *group, cs *caseDef, seed uint64, directed bool) string {
	skipped := c.runOne(g, cs, seed, directed)
	a := c.acc(g.rule.String())
	if directed {
		a.cases++
	} else {
		a.seeds = append(a.seeds, seed)
	}
	return skipped
}

// skipRun unwinds a case run that cannot exercise what it is about.
type skipRun struct{ why string }

// runOne runs one run of a case and returns why it did not exercise the
// case ("" when it did).
func (c *certifier) runOne(g *group, cs *caseDef, seed uint64, directed bool) string {
	a := c.acc(g.rule.String())
	w, err := newWorld(c, g, cs, seed, directed)
	run := Rerun{Group: g.rule.String(), Case: cs.name, Seed: seed, Directed: directed}
	where := "case " + run.String()
	if err != nil {
		c.recordRun(g.rule.String(), []rules.Violation{{Rule: g.rule, Class: rules.Harness, Row: -1, Seed: seed, Detail: fmt.Sprintf("cannot build the driver: %v", err)}}, where, run)
		c.checkReach(true, where)
		return ""
	}
	skipped := ""
	func() {
		defer func() {
			if r := recover(); r != nil {
				if s, ok := r.(skipRun); ok {
					skipped = s.why
					return
				}
				if _, ok := r.(stepCapHit); ok {
					return // finish reports why (w.stopped)
				}
				w.fail(g.rule, "panic while running the case: %v", r)
			}
		}()
		cs.run(w)
	}()
	found := w.finish()
	c.recordCaseRun(g, w, found, where, run)
	c.ranCase(cs, w, where, len(found) > 0 || skipped != "")
	c.gaps = append(c.gaps, w.gaps...)
	hits := w.pc.snapshot()
	a.pairs.add(hits)
	c.pairs.add(hits)
	c.seen.add(w.pc.chances())
	for _, p := range cs.chases {
		if skipped == "" {
			c.chaseRan[p]++
			continue
		}
		if c.chaseSkips[p] == nil {
			c.chaseSkips[p] = map[string]int{}
		}
		c.chaseSkips[p][skipped]++
	}
	if skipped != "" {
		a.skipped[skipped]++
		return skipped
	}
	a.ran++
	return ""
}

// aliases attributes the oracles' rules that are not driver rule groups:
// a touch of released memory is an access the driver claimed had ended; a
// hang is a call the driver never finished; the backend's lender rules
// (swarm runs) follow from the evidence and results the driver gave.
var aliases = map[rules.ID]rules.ID{
	rules.SNoLateAccess: rules.DAccessEnd,
	rules.LiveHang:      rules.DSub3,
	rules.SRelease:      rules.DAccess,
	rules.SMarks:        rules.DStatus,
	rules.SHold:         rules.DShut1,
	rules.BShut:         rules.DDrain1,
	rules.SLin:          rules.DStatus, // a row result the store model contradicts
}

func (c *certifier) isGroup(rule rules.ID) bool {
	for _, g := range c.groups {
		if g.rule == rule {
			return true
		}
	}
	return false
}

// repro is the command that reruns r (Options.Repro, else storesim's).
func (c *certifier) repro(r Rerun) string {
	if c.opts.Repro != nil {
		return c.opts.Repro(r)
	}
	return defaultRepro(c.h.Name, r)
}

func (c *certifier) report() Report {
	r := Report{
		Driver: c.h.Name, Version: c.opts.Version, Caps: c.probe.caps, Together: c.probe.together,
		RealTime: c.h.RealTime, Seed: c.opts.Seed, Swarm: c.swarm, Selected: c.opts.Rules,
	}
	if r.Swarm.Profiles == nil {
		r.Swarm.Profiles, r.Swarm.Seeds = []string{}, []uint64{}
	}
	if c.subset != nil {
		r.Selected = c.subset
	}
	if only := c.opts.Only; only.Case != "" {
		r.Rerun, r.Selected = &only, []string{only.Group}
	}
	if c.probe.err != "" {
		r.Gaps = append(r.Gaps, "the driver could not be built: "+c.probe.err)
	}
	for _, rule := range c.order {
		a := c.byRule[rule]
		rr := RuleResult{Rule: rule, Cases: a.cases, Seeds: a.seeds, Found: a.found, FirstCause: a.firstRuns,
			ConsequenceOf: c.consequenceOf(rule), First: a.firstRun()}
		if rr.First != nil {
			rr.Repro = c.repro(*rr.First)
		} else {
			rr.Repro = c.repro(Rerun{Group: rule})
		}
		if len(a.after) > 0 {
			rr.After = maps.Clone(a.after)
		}
		if a.found > 0 {
			rr.Violations = a.shown()
		}
		if rr.Seeds == nil {
			rr.Seeds = []uint64{}
		}
		if a.pairs != (pairHits{}) {
			for _, p := range a.pairs.list() {
				if p.Hits > 0 {
					rr.Pairs = append(rr.Pairs, p)
				}
			}
		}
		reasons := skipReasons(a.skipped)
		switch {
		case a.found > 0:
			rr.Verdict = Fail
			if a.ran == 0 && reasons != "" {
				rr.Reason = "its own cases did not run (" + reasons + ") but violations were found elsewhere"
			}
		case c.probe.err != "":
			rr.Verdict, rr.Reason = Skip, "the driver could not be built"
		case !c.selected(rule):
			rr.Verdict, rr.Reason = Skip, "not selected"
		case a.ran == 0:
			rr.Verdict, rr.Reason = Skip, reasons
			if reasons == "" {
				rr.Reason = strings.Join(a.notApplicable, "; ")
			}
		default:
			rr.Verdict = Pass
			if reasons != "" {
				rr.Reason = "partly skipped: " + reasons
			}
		}
		r.Rules = append(r.Rules, rr)
	}
	r.RacePairs = c.pairs.list()
	for i := range r.RacePairs {
		if r.RacePairs[i].Hits == 0 && c.probe.err == "" {
			r.RacePairs[i].NotApplicable = notApplicable(Pair(i), c.probe.caps, c.seen)
		}
	}
	if !c.partial() && c.probe.err == "" {
		for i, p := range r.RacePairs {
			if p.Hits == 0 && p.NotApplicable == "" {
				gap := fmt.Sprintf("race pair %s was never exercised", p.Pair)
				if c.chaseRan[i] == 0 && len(c.chaseSkips[i]) > 0 {
					gap += ": no run of the cases built for it got that far (" + skipReasons(c.chaseSkips[i]) + ")"
				}
				r.Gaps = append(r.Gaps, gap)
			}
		}
	}
	if len(c.opts.Rules) > 0 && c.opts.Only.Case == "" {
		known := Rules()
		for _, rule := range c.opts.Rules {
			if !slices.Contains(known, rule) {
				r.Gaps = append(r.Gaps, fmt.Sprintf("unknown rule %q (known: %s)", rule, strings.Join(known, " ")))
			}
		}
	}
	r.Gaps = append(r.Gaps, c.gaps...)
	if r.Gaps == nil {
		r.Gaps = []string{}
	}
	r.Certified = len(r.Failed()) == 0 && len(r.Gaps) == 0
	return r
}

func skipReasons(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k
		if m[k] > 1 {
			parts[i] = fmt.Sprintf("%s (%d runs)", k, m[k])
		}
	}
	return strings.Join(parts, "; ")
}
