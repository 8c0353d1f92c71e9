package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/sim/arena"
)

// linTimeout bounds the porcupine check of one `check`; scenario histories
// are a few dozen operations, so running out means something is badly wrong
// and is reported as its own outcome.
const linTimeout = 10 * time.Second

// cmdCheck runs every oracle now: the contract monitor (with its end-of-run
// checks when nothing is queued), the lender (S-RELEASE, S-MARKS, S-HOLD,
// S-NO-LATE-ACCESS, D-SUB-6 at the arenas), the memory oracle (D-ACCESS-END,
// D-SUB-6, MISS leaves the slot untouched), liveness (only when nothing is
// queued) and linearizability of every row result against the store model
// (S-LIN). It prints each violation with its rule id, or "ok".
func cmdCheck(w *world, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	idle := w.s.Idle()
	var lines []string
	seen := map[string]bool{}
	add := func(ep, line string) {
		if ep != "" {
			line = ep + " " + line
		}
		w.seen[line]++ // printed here: not again as an inline "!!" line
		if !seen[line] {
			seen[line] = true
			lines = append(lines, line)
			w.rule(strings.TrimPrefix(line, ep+" "))
		}
	}
	var history model.History
	for _, ep := range w.eps {
		if ep.mon != nil {
			vs := ep.mon.Violations()
			if idle {
				vs = ep.mon.Finish() // no callback can still come
			}
			for _, v := range vs {
				add(ep.name, fmtMonitor(v))
			}
		}
		for _, v := range ep.lender.Violations() {
			add(ep.name, fmtLender(v))
		}
		arenas := append([]*arena.Arena(nil), ep.raw...)
		for _, r := range ep.specs {
			if a := ep.lender.Arena(r.label); a != nil {
				arenas = append(arenas, a)
			}
		}
		for _, v := range ep.rec.MemoryViolations(arenas...) {
			add(ep.name, fmtModel(v))
		}
		if idle {
			for _, v := range ep.rec.LivenessViolations(w.s.Now()) {
				add(ep.name, fmtModel(v))
			}
		}
		history = append(history, ep.rec.History()...)
	}
	if idle {
		for _, r := range w.attempts {
			if !r.a.Committed() || r.a.Access() == drivers.AccessPending {
				add(r.ep.name, fmt.Sprintf("liveness %s: nothing queued, but outcome %v and access %v", r.name, r.a.State(), r.a.Access()))
			}
		}
	}
	profile := model.Durable
	if w.evicting {
		profile = model.Evicting
	}
	lin := model.Check(history, profile, linTimeout)
	for _, v := range lin.Violations(w.seed) {
		add("", fmtModel(v))
	}
	if lin.Outcome == porcupine.Unknown {
		add("", fmt.Sprintf("unknown S-LIN verdict (porcupine timed out): %v", lin))
	}
	if !idle {
		w.printf("(%d events queued: end-of-run and liveness checks wait for quiescence)", len(w.s.Queued()))
	}
	if len(lines) == 0 {
		w.printf("ok")
	}
	for _, l := range lines {
		w.printf("%s", l)
	}
	return nil
}

// cancelled is the context of a driver shutdown that must not wait.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
