package workload

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/storesim/storesim/sim"
)

// Sched is the op log's schedule section: how the run's scheduler decides
// which event runs next, when each callback is delivered and which
// repeats are coalesced. The zero value — no sched line, as in every log
// written before the section existed — is the random policy drawn from the
// seed.
//
//	sched pct depth=3 steps=800   # PCT from the seed (sim.PCT)
//	sched script                  # the decisions below, nothing drawn from the seed
//	sched pick 17 1               # step 17 runs the event of rank 1 among those due first
//	sched delay 5 1234ns          # callback trigger 5 is delivered 1234ns after it
//	sched coalesce 9              # callback trigger 9 is merged into its queued delivery
//
// A script lists only decisions that differ from the default (the event
// created first, no delay, no coalescing), in increasing step and trigger
// order; `sched script` alone is the default schedule. A script and a
// policy line exclude each other. See sim.Schedule and docs/FORMATS.md.
type Sched struct {
	Policy sim.Policy
	Depth  int    // PCT's d
	Steps  uint64 // PCT's k; 0: the harness's estimate
	Script *sim.Schedule
}

// MaxDepth bounds a PCT depth; MaxSchedLines the decision lines of one log.
const (
	MaxDepth      = 64
	MaxSchedLines = 1_000_000
	maxPCTSteps   = 1 << 30
)

// write prints the section (nothing for the default).
func (s Sched) write(b *strings.Builder) {
	if s.Policy == sim.PCT {
		fmt.Fprintf(b, "sched pct depth=%d steps=%d\n", s.Depth, s.Steps)
	}
	if s.Script == nil {
		return
	}
	b.WriteString("sched script\n")
	for _, p := range s.Script.Picks {
		fmt.Fprintf(b, "sched pick %d %d\n", p.Step, p.Rank)
	}
	for _, d := range s.Script.Delays {
		fmt.Fprintf(b, "sched delay %d %dns\n", d.Wake, int64(d.By))
	}
	for _, w := range s.Script.Coalesce {
		fmt.Fprintf(b, "sched coalesce %d\n", w)
	}
}

// parseSched reads one sched line (without "sched ").
func (p *parser) parseSched(rest string) error {
	f := strings.Fields(rest)
	if len(f) == 0 {
		return p.errf("sched takes random, pct, script, pick, delay or coalesce")
	}
	s := &p.log.Sched
	if p.schedLines++; p.schedLines > MaxSchedLines {
		return p.errf("more than %d sched lines (the limit per log, see %s)", MaxSchedLines, LimitsDoc)
	}
	num := func(v string, least uint64) (uint64, bool) {
		n, err := strconv.ParseUint(v, 10, 64)
		return n, err == nil && n >= least
	}
	switch f[0] {
	case "random", "pct":
		if s.Script != nil || p.policySet {
			return p.errf("sched %s: the log already has a sched policy or script line (a script draws nothing from a policy)", f[0])
		}
		p.policySet = true
		if f[0] == "random" {
			if len(f) != 1 {
				return p.errf("sched random takes no settings")
			}
			return nil
		}
		s.Policy, s.Depth = sim.PCT, 1
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "depth":
				n, ok := num(v, 1)
				if !ok || n > MaxDepth {
					return p.errf("sched pct: depth=%q: want an integer from 1 to %d", v, MaxDepth)
				}
				s.Depth = int(n)
			case "steps":
				n, ok := num(v, 0)
				if !ok || n > maxPCTSteps {
					return p.errf("sched pct: steps=%q: want an integer from 0 (the harness's estimate) to %d", v, maxPCTSteps)
				}
				s.Steps = n
			default:
				return p.errf("sched pct: unknown setting %q (want depth=N steps=K)", kv)
			}
		}
	case "script":
		if len(f) != 1 || s.Script != nil || p.policySet {
			return p.errf("sched script: once, alone on its line, and not with a sched policy line")
		}
		s.Script = &sim.Schedule{}
	case "pick", "delay", "coalesce":
		if s.Script == nil {
			return p.errf("sched %s before the sched script line", f[0])
		}
		sc := s.Script
		switch {
		case f[0] == "pick" && len(f) == 3:
			step, ok1 := num(f[1], 1)
			rank, ok2 := num(f[2], 1)
			if !ok1 || !ok2 || rank > 1<<20 || len(sc.Picks) > 0 && step <= sc.Picks[len(sc.Picks)-1].Step {
				return p.errf("sched pick %s %s: want a step after the previous pick's and a rank from 1", f[1], f[2])
			}
			sc.Picks = append(sc.Picks, sim.Pick{Step: step, Rank: int(rank)})
		case f[0] == "delay" && len(f) == 3:
			w, ok := num(f[1], 1)
			d, err := time.ParseDuration(f[2])
			if !ok || err != nil || d <= 0 || d > time.Hour || len(sc.Delays) > 0 && w <= sc.Delays[len(sc.Delays)-1].Wake {
				return p.errf("sched delay %s %s: want a trigger after the previous delay's and a duration from 1ns to 1h", f[1], f[2])
			}
			sc.Delays = append(sc.Delays, sim.Delay{Wake: w, By: d})
		case f[0] == "coalesce" && len(f) == 2:
			w, ok := num(f[1], 1)
			if !ok || len(sc.Coalesce) > 0 && w <= sc.Coalesce[len(sc.Coalesce)-1] {
				return p.errf("sched coalesce %s: want a trigger after the previous coalesce's", f[1])
			}
			sc.Coalesce = append(sc.Coalesce, w)
		default:
			return p.errf("sched %s: want pick STEP RANK, delay TRIGGER DURATION or coalesce TRIGGER", rest)
		}
	default:
		return p.errf("unknown sched line %q (want random, pct, script, pick, delay or coalesce)", f[0])
	}
	return nil
}
