package drivertest

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/anishathalye/porcupine"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/sim"
)

// maxSwarmFailures stops a profile's runs once the driver has failed this
// often: more failing seeds add little, and a failing history is the
// expensive kind for porcupine.
const maxSwarmFailures = 3

// swarmProfiles are the store profiles of the backend-driven runs: the
// swarm fault mix on a durable store, and on an evicting one.
var swarmProfiles = []engine.Profile{engine.Default, engine.Evicting}

// profiles are the swarm profiles this harness runs: on a store that may
// evict (Harness.Evicting) only the evicting one, whose histories are
// judged against the evicting store model — the default profile puts most
// seeds on a durable store, where an eviction the driver itself makes
// would read as a lost key.
func (c *certifier) profiles() []engine.Profile {
	if c.h.Evicting {
		return []engine.Profile{engine.Evicting}
	}
	return swarmProfiles
}

// skipSwarm says why the backend-driven swarm does not run ("" when it
// does).
func (c *certifier) skipSwarm() string {
	switch {
	case c.h.RealTime:
		return "not run: the backend-driven swarm needs a simulated driver (the real-time cases ran instead)"
	case c.h.ExternalStore:
		return "not run: the driver uses a store of its own (Harness.ExternalStore), and the backend-driven runs take their simulated store for the truth"
	case len(c.opts.Rules) > 0:
		return "not run: only selected rules"
	case c.unreachable != "":
		return "not run: " + c.unreachable
	}
	// Only a D-CB-4 finding of its own counts (not a livelock finding filed
	// under the group because one of its cases could not finish).
	if a := c.byRule["D-CB-4"]; a != nil && a.own > 0 && !c.probe.prober {
		// The swarm's monitor reads each call from inside its callback
		// directly: on a driver that calls back under its own lock and
		// offers no LockProber, that read would deadlock the run.
		return "not run: D-CB-4 failed, and the backend-driven runs read calls from inside callbacks without a lock probe (a callback under the driver's lock would deadlock them)"
	}
	return ""
}

// swarmProfile plays generated workloads of profile p through the
// reference backend on drivers built by the harness (fuzz/engine with
// Config.Factory): every check of SPEC §5 — S-LIN, memory, the monitor,
// the lender's rules, liveness — on the driver as a backend really uses
// it. It runs Options.Swarm seeds, or only *only. Each failure is
// attributed to the rule group its rule belongs to; a run that timed out
// (porcupine Unknown) or could not be set up is a gap.
func (c *certifier) swarmProfile(p engine.Profile, only *uint64) {
	if c.skipSwarm() != "" || !slices.Contains(c.profiles(), p) {
		return
	}
	if c.swarm.Profiles == nil {
		c.swarm.Profiles, c.swarm.Seeds = []string{}, []uint64{}
	}
	c.swarm.Profiles = append(c.swarm.Profiles, string(p))
	factory := func(_ string, env registry.Env) (drivers.Driver, error) { return safeNew(c.h, env) }
	failed := 0
	runs := c.opts.Swarm * len(swarmProfiles) / len(c.profiles()) // as many runs in all when a profile is left out
	if only != nil {
		runs = 1
	}
	seedOf := func(i int) uint64 {
		if only != nil {
			return *only
		}
		return sim.SubSeed(c.opts.Seed, fmt.Sprintf("swarm/%s/%d", p, i))
	}
	play := func(seed uint64) swarmPlay {
		// One counter per endpoint; a failing lean run is played again in
		// full (engine.Config.Lean), whose endpoints then replace the first
		// run's, so the pairs of a run are counted once.
		counters := map[string]*PairCounter{}
		var mu sync.Mutex
		res := engine.RunSeed(seed, engine.Config{
			Driver: c.h.Name, Profile: p, Factory: factory, LinTimeout: linTimeout, Lean: true,
			Observers: func(endpoint string) []monitor.Observer {
				pc := NewPairCounter()
				mu.Lock()
				counters[endpoint] = pc
				mu.Unlock()
				return []monitor.Observer{pc}
			},
		})
		return swarmPlay{res, counters}
	}
	// Runs are played Workers at a time (an Independent harness) and judged
	// one by one in seed order, so the report does not depend on Workers.
	var batch []swarmPlay
	for i := range runs {
		if failed == maxSwarmFailures {
			c.swarm.Note = fmt.Sprintf("each profile stops after %d failing runs", maxSwarmFailures)
			break
		}
		if len(batch) == 0 {
			batch = playBatch(i, min(runs-i, 8*c.opts.Workers), c.opts.Workers, seedOf, play)
		}
		pl := batch[0]
		batch = batch[1:]
		seed, res := seedOf(i), pl.res
		c.swarm.Runs++
		c.swarm.Seeds = append(c.swarm.Seeds, seed)
		for _, name := range slices.Sorted(maps.Keys(pl.counters)) {
			c.pairs.add(pl.counters[name].snapshot())
		}
		run := Rerun{Group: SwarmGroup, Case: string(p), Seed: seed}
		switch res.Verdict {
		case engine.Pass:
			continue
		case engine.HarnessError:
			c.gaps = append(c.gaps, fmt.Sprintf("swarm %s seed %d could not be set up: %v (repro: %s)", p, seed, res.Err, c.repro(run)))
			continue
		case engine.Unknown:
			c.gaps = append(c.gaps, fmt.Sprintf("swarm %s seed %d: the S-LIN check timed out (%s) (repro: %s)", p, seed, res.Lin, c.repro(run)))
			continue
		}
		c.swarm.Failed++
		failed++
		where := fmt.Sprintf("swarm %s seed %d", p, seed)
		fs := slices.Clone(res.Failures)
		causalSort(fs, endKey) // the first cause first
		lied := lookupsLied(res)
		c.recordRunAs("other", fs, where, run, func(caseGroup string, v rules.Violation) string {
			if v.Rule == rules.SLin && lied[v.Key] {
				return rules.DLook2.String()
			}
			return c.target(caseGroup, v)
		})
		if res.Lin.Outcome == porcupine.Unknown && len(res.Failures) > 0 {
			c.gaps = append(c.gaps, fmt.Sprintf("swarm %s seed %d: the S-LIN check timed out (repro: %s)", p, seed, c.repro(run)))
		}
	}
}

// swarmPlay is one played swarm run and its race-pair counters.
type swarmPlay struct {
	res      *engine.Result
	counters map[string]*PairCounter
}

// playBatch plays runs from … from+n-1 on workers goroutines and returns them
// in run order (one worker: in this goroutine).
func playBatch(from, n, workers int, seedOf func(int) uint64, play func(uint64) swarmPlay) []swarmPlay {
	out := make([]swarmPlay, n)
	if workers <= 1 || n == 1 {
		for k := range n {
			out[k] = play(seedOf(from + k))
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for k := int(next.Add(1) - 1); k < n; k = int(next.Add(1) - 1) {
				out[k] = play(seedOf(from + k))
			}
		})
	}
	wg.Wait()
	return out
}

// lookupsLied names the keys of a swarm run's S-LIN failures that only a
// lookup can have caused: the key's row results alone are linearizable
// (the lookups recorded in the swarm's histories are what the store model
// cannot place), and they stay unplaceable with every MISS row left out (so
// no MISS, a row that may have lied about absence, explains them). The
// failure is then the lookups' (D-LOOK-2), even when the first operation
// the model cannot place is a row's — in the evicting model a false
// "absent" passes as an eviction, and the honest FETCH after it is what
// fails. When a MISS explains it as well the history cannot tell, and the
// failure is filed as before (target).
func lookupsLied(res *engine.Result) map[string]bool {
	var out map[string]bool
	for _, v := range res.Failures {
		if v.Rule != rules.SLin || v.Key == "" || out[v.Key] {
			continue
		}
		var rows, noMiss model.History
		lookups := false
		for _, op := range res.History {
			if op.Key != v.Key {
				continue
			}
			if op.Kind == model.KindLookup {
				lookups = true
			} else {
				rows = append(rows, op)
			}
			if op.Kind == model.KindLookup || op.Status != drivers.Miss {
				noMiss = append(noMiss, op)
			}
		}
		if !lookups || model.Check(rows, res.Lin.StoreModel, linTimeout).Outcome != porcupine.Ok ||
			model.Check(noMiss, res.Lin.StoreModel, linTimeout).Outcome != porcupine.Illegal {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[v.Key] = true
	}
	return out
}
