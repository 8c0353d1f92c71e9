package drivertest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/sim"
)

// maxSwarmFailures stops a profile's runs once the driver has failed this
// often: more failing seeds add little, and a failing history is the
// expensive kind for porcupine.
const maxSwarmFailures = 3

// swarmProfiles are the store profiles of the backend-driven runs: the
// swarm fault mix on a durable store, and on an evicting one.
var swarmProfiles = []engine.Profile{engine.Default, engine.Evicting}

// runSwarm plays generated workloads through the reference backend on
// drivers built by the harness (fuzz/engine with Config.Factory): every
// check of SPEC §5 — S-LIN, memory, the monitor, the lender's rules,
// liveness — on the driver as a backend really uses it. Each failure is
// attributed to the rule group its rule belongs to; a run that timed out
// (porcupine Unknown) or could not be set up is a gap.
func (c *certifier) runSwarm() {
	c.swarm.Profiles = []string{}
	c.swarm.Seeds = []uint64{}
	if c.h.RealTime {
		c.swarm.Note = "not run: the backend-driven swarm needs a simulated driver (the real-time cases ran instead)"
		return
	}
	if len(c.opts.Rules) > 0 {
		c.swarm.Note = "not run: only selected rules"
		return
	}
	if a := c.byRule["D-CB-4"]; a != nil && slices.ContainsFunc(a.violations, isRule(rules.DCB4)) && !c.probe.prober {
		// The swarm's monitor reads each call from inside its callback
		// directly: on a driver that calls back under its own lock and
		// offers no LockProber, that read would deadlock the run.
		c.swarm.Note = "not run: D-CB-4 failed, and the backend-driven runs read calls from inside callbacks without a lock probe (a callback under the driver's lock would deadlock them)"
		return
	}
	factory := func(_ string, env registry.Env) (drivers.Driver, error) { return safeNew(c.h, env) }
	for _, p := range swarmProfiles {
		c.swarm.Profiles = append(c.swarm.Profiles, string(p))
		failed := 0
		for i := range c.opts.Swarm {
			if failed == maxSwarmFailures {
				c.swarm.Note = fmt.Sprintf("each profile stops after %d failing runs", maxSwarmFailures)
				break
			}
			seed := sim.SubSeed(c.opts.Seed, fmt.Sprintf("swarm/%s/%d", p, i))
			var counters []*PairCounter
			res := engine.RunSeed(seed, engine.Config{
				Driver: c.h.Name, Profile: p, Factory: factory, LinTimeout: linTimeout,
				Observers: func(string) []monitor.Observer {
					pc := NewPairCounter()
					counters = append(counters, pc)
					return []monitor.Observer{pc}
				},
			})
			c.swarm.Runs++
			c.swarm.Seeds = append(c.swarm.Seeds, seed)
			for _, pc := range counters {
				c.pairs.add(pc.snapshot())
			}
			where := fmt.Sprintf("swarm %s seed %d; repro: %s", p, seed, res.Repro())
			switch res.Verdict {
			case engine.Pass:
				continue
			case engine.HarnessError:
				c.gaps = append(c.gaps, fmt.Sprintf("swarm %s seed %d could not be set up: %v", p, seed, res.Err))
				continue
			case engine.Unknown:
				c.gaps = append(c.gaps, fmt.Sprintf("swarm %s seed %d: the S-LIN check timed out (%s)", p, seed, res.Lin))
				continue
			}
			c.swarm.Failed++
			failed++
			for _, f := range res.Failures {
				group := rules.DStatus.String() // S-LIN: a row result the store contradicts
				if !c.isGroup(f.Rule) && aliases[f.Rule] == 0 {
					group = "other"
				}
				c.record(group, f, where)
			}
			if res.Lin.Outcome == porcupine.Unknown && len(res.Failures) > 0 {
				c.gaps = append(c.gaps, fmt.Sprintf("swarm %s seed %d: the S-LIN check timed out", p, seed))
			}
		}
	}
}

// isRule matches a recorded violation line of rule id (not a livelock
// finding recorded under id's group, see recordRun).
func isRule(id rules.ID) func(line string) bool {
	return func(line string) bool { return strings.HasPrefix(line, id.String()+" [") }
}
