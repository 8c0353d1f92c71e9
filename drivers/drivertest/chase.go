package drivertest

import (
	"fmt"
	"slices"

	"github.com/storesim/storesim/sim"
)

// raceChases is how many more randomized runs of the cases that chase a
// race pair a certification gives a pair still never hit.
const raceChases = 16

// chaseRacePairs: a case gives its race pair a chance, not a certainty. In
// real time the driver's goroutines race the suite's, and on a fast or a
// loaded machine a call can end before the operation meant to race it; on
// the simulator the seed decides every interleaving, but a driver may
// legally refuse most calls (back-pressure) or end most of them at once,
// so a few seeds can all miss. Either way a gap there would be the draw's
// verdict, not the driver's. So each pair still never hit gets up to
// raceChases more randomized runs of the cases built for it
// (caseDef.chases), stopping as soon as it is hit; those runs are judged
// and counted like any other, and on the simulator their seeds derive from
// Options.Seed, so the verdict replays (SPEC §6, "Races").
func (c *certifier) chaseRacePairs() {
	if c.partial() {
		return
	}
	for p := range numPairs {
		for i := 0; i < raceChases && c.pairs[p] == 0 && c.unreachable == ""; i++ {
			ran := false
			for _, g := range c.groups {
				if g.needs(c.probe) != "" {
					continue
				}
				for j := range g.cases {
					cs := &g.cases[j]
					if c.pairs[p] > 0 || !slices.Contains(cs.chases, p) || (cs.needs != nil && cs.needs(c.probe) != "") {
						continue
					}
					ran = true
					c.runCaseSeed(g, cs, sim.SubSeed(c.opts.Seed, fmt.Sprintf("%s/%s/chase-%s/%d", g.rule, cs.name, p, i)), false)
				}
			}
			if !ran {
				break
			}
		}
	}
}
