package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/storesim/storesim/broken/zoo"
	"github.com/storesim/storesim/fuzz/engine"
	fshrink "github.com/storesim/storesim/fuzz/shrink"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/scenarios"
	"github.com/storesim/storesim/sim"
)

// pctHunt hunts the planted bug with the random policy and with PCT, side
// by side in this process: the same start seeds and limit for each.
// PCT runs at the bug's depth (zoo.Bug.Depth) and at every -depths value.
func pctHunt(args []string) error {
	fs := flag.NewFlagSet("pct", flag.ExitOnError)
	starts := fs.String("starts", "0,10000,20000,30000,40000", "start seeds, one hunt each per policy")
	limit := fs.Uint64("limit", 3000, "seeds per hunt at most")
	extra := fs.String("depths", "", "PCT depths to hunt with besides the bug's own, comma-separated")
	fs.Parse(args)
	name, err := planted()
	if err != nil {
		return err
	}
	bug, _ := zoo.Lookup(name)
	depths := []int{max(1, bug.Depth)}
	for _, f := range strings.Split(*extra, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		d, err := strconv.Atoi(f)
		if err != nil || d < 1 || d > workload.MaxDepth {
			return fmt.Errorf("-depths: %q: want 1 to %d", f, workload.MaxDepth)
		}
		if !slices.Contains(depths, d) {
			depths = append(depths, d)
		}
	}
	slices.Sort(depths)
	var list []uint64
	for _, f := range strings.Split(*starts, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return fmt.Errorf("-starts: %w", err)
		}
		list = append(list, v)
	}
	rec := zoo.PCTRecord{Kind: "pct", Bug: name, Depth: bug.Depth, Limit: *limit}
	cfgs := []engine.Config{{}}
	for _, d := range depths {
		cfgs = append(cfgs, engine.Config{Sched: sim.PCT, Depth: d})
	}
	zoo.HuntSwarm(1<<40, 3, engine.Config{}) // warm up, as swarm does
	for _, cfg := range cfgs {
		ph := zoo.PolicyHunts{Policy: cfg.Sched.String()}
		if cfg.Sched == sim.PCT {
			ph.Depth = cfg.Depth
		}
		for i, start := range list {
			status("realhunt pct: %s: %s hunt %d/%d from seed %d", name, ph.Label(), i+1, len(list), start)
			t0 := time.Now()
			h := zoo.HuntSwarm(start, *limit, cfg)
			ph.Hunts = append(ph.Hunts, zoo.HuntRecord{Start: start, Tried: h.Tried, Found: h.Found, Seed: h.Seed,
				Verdict: h.Verdict, Rule: h.Rule.String(), Detail: clip(h.Detail, 300), WallMS: ms(time.Since(t0))})
		}
		rec.Policies = append(rec.Policies, ph)
	}
	status("")
	return emit(rec)
}

// schedShrink finds the planted bug's first failing seed (random policy),
// shrinks it in this process — ops, then the schedule — and checks that the
// shrunk log, whose sched script replaces the seed's draws, fails the same
// rule, and what its scenario (scenarios.FromOpLog) reports.
func schedShrink(args []string) error {
	fs := flag.NewFlagSet("schedshrink", flag.ExitOnError)
	limit := fs.Uint64("limit", 2000, "seeds to hunt at most")
	runs := fs.Int("runs", 4000, "candidate runs of the shrink at most")
	budget := fs.Duration("time", 60*time.Second, "wall-clock cap of the shrink")
	fs.Parse(args)
	name, err := planted()
	if err != nil {
		return err
	}
	rec := zoo.SchedShrinkRecord{Kind: "schedshrink", Bug: name}
	status("realhunt schedshrink: %s: hunting", name)
	h := zoo.HuntSwarm(0, *limit, engine.Config{})
	if !h.Found || h.Result == nil {
		status("")
		return emit(rec)
	}
	rec.Found, rec.Seed, rec.Rule = true, h.Seed, h.Rule.String()
	status("realhunt schedshrink: %s: shrinking seed %d", name, h.Seed)
	t0 := time.Now()
	deadline := t0.Add(*budget)
	res, err := fshrink.Shrink(h.Result.Log, fshrink.Options{MaxRuns: *runs, Stop: func() bool { return time.Now().After(deadline) }})
	rec.WallMS = ms(time.Since(t0))
	status("")
	if err != nil {
		rec.Err = err.Error()
		return emit(rec)
	}
	rec.OpsBefore, rec.OpsAfter, rec.Runs, rec.Done = res.Original.Ops, len(res.Log.Ops), res.Runs, res.Done
	rec.Original, rec.Before, rec.After = res.Schedule.Original, res.Schedule.Before, res.Schedule.After
	if !res.Schedule.Shrunk {
		rec.Err = "the schedule pass did not run (budget)"
		return emit(rec)
	}
	// The shrunk file, as written and parsed back, fails the same rule.
	parsed, err := workload.Parse(res.Text("min.txt", ""))
	if err != nil {
		return errors.New("the shrunk file does not parse: " + err.Error())
	}
	again := engine.Run(parsed, engine.Config{})
	rec.Replays = again.Verdict == res.Verdict && again.Rule() == res.Rule && parsed.Sched.Script != nil
	rec.Scenario = scenarioVerdict(parsed, res.Rule.String())
	return emit(rec)
}

// scenarioVerdict converts the log and says whether the scenario's run
// names rule.
func scenarioVerdict(log *workload.Log, rule string) string {
	text, err := scenarios.FromOpLog(log)
	if err != nil {
		return "cannot convert: " + clip(err.Error(), 80)
	}
	run, err := scenarios.Run("min.scenario", text, scenarios.Options{})
	if err != nil {
		return "does not run: " + clip(err.Error(), 80)
	}
	var got []string
	for _, r := range run.Rules {
		got = append(got, r.String())
		if r.String() == rule {
			return "reproduces " + rule
		}
	}
	if len(got) == 0 {
		return "passes (its interleaving differs)"
	}
	return "reports " + strings.Join(got, " ") + " instead"
}

func renderPCT(args []string) error {
	fs := flag.NewFlagSet("render-pct", flag.ExitOnError)
	in := fs.String("in", "", "the JSON Lines scripts/pct.sh collected")
	fs.Parse(args)
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := zoo.ReadPCT(f)
	if err != nil {
		return err
	}
	return zoo.RenderPCT(os.Stdout, res)
}
