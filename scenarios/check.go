package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/model"
)

// linTimeout bounds the porcupine check of one `check`; scenario histories
// are a few dozen operations, so running out means something is badly wrong
// and is reported as its own outcome.
const linTimeout = 10 * time.Second

// cmdCheck runs every oracle now, through engine.Check: the contract
// monitor (with its end-of-run checks when nothing is queued), the lender
// (S-RELEASE, S-MARKS, S-HOLD, S-NO-LATE-ACCESS, D-SUB-6 at the arenas), the
// memory oracle (D-ACCESS-END, D-SUB-6, MISS leaves the slot untouched),
// liveness (only when nothing is queued), the backend's boundary checks and
// linearizability of every row result against the store model (S-LIN). It
// prints each violation with its rule id, or "ok".
func cmdCheck(w *scenarioRun, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	idle := w.s.Idle()
	in := engine.CheckInput{
		Finished: idle, Idle: idle, // no callback can still come
		At: w.s.Now(), Seed: w.seed, StoreModel: model.DurableStore, LinTimeout: linTimeout,
	}
	if w.evicting {
		in.StoreModel = model.EvictingStore
	}
	for _, ep := range w.eps {
		in.Endpoints = append(in.Endpoints, ep.Endpoint)
	}
	for _, r := range w.attempts {
		in.Attempts = append(in.Attempts, engine.Attempt{Endpoint: r.ep.Endpoint, Label: r.name, Attempt: r.a})
	}
	res := engine.Check(in)
	var lines []string
	seen := map[string]bool{}
	for _, v := range res.Violations {
		line := fmtViolation(v)
		if v.Endpoint != "" {
			line = v.Endpoint + " " + line
		}
		w.seen[line]++ // printed here: not again as an inline "!!" line
		if !seen[line] {
			seen[line] = true
			lines = append(lines, line)
			w.rules[v.Rule] = true
		}
	}
	if res.Lin.Outcome == porcupine.Unknown {
		lines = append(lines, fmt.Sprintf("unknown S-LIN verdict (porcupine timed out): %v", res.Lin))
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
