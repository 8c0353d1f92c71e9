package scenarios

import (
	"strconv"
	"strings"
	"time"

	"github.com/storesim/storesim/sim"
)

// The commands that run queued events: deliver, tick and stabilize; and queue,
// which lists them.

func cmdDeliver(w *scenarioRun, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	q := w.s.Queued()
	if len(q) == 0 {
		w.printf("nothing queued")
		return nil
	}
	if len(b.pos) == 0 {
		w.step(q[0], false)
		return nil
	}
	pattern := strings.Join(b.pos, " ")
	if id, err := strconv.ParseUint(pattern, 10, 64); err == nil {
		for _, e := range q {
			if e.ID == id {
				w.step(e, e.ID != q[0].ID)
				return nil
			}
		}
		w.printf("no queued event %d", id)
		return nil
	}
	for _, e := range q {
		if strings.Contains(e.Label, pattern) {
			w.step(e, e.ID != q[0].ID)
			return nil
		}
	}
	w.printf("no queued event matches %q", pattern)
	return nil
}

func cmdQueue(w *scenarioRun, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	q := w.s.Queued()
	if len(q) == 0 {
		w.printf("nothing queued")
	}
	for _, e := range q {
		w.printf("%d @%v %s", e.ID, e.At, e.Label)
	}
	return nil
}

func cmdTick(w *scenarioRun, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	d, err := time.ParseDuration(b.pos[0])
	if err != nil || d < 0 {
		return w.fail(b, "bad argument %q: want a duration like 10us", b.pos[0])
	}
	until := w.s.Now() + d
	for {
		e, ok := w.s.Next()
		if !ok || e.At > until {
			break
		}
		w.step(e, false)
	}
	w.s.RunUntil(until) // nothing is due: this only moves the clock
	w.printf("now @%v", w.s.Now())
	return nil
}

// cmdStabilize runs events until none is queued (or, with only=, until no
// event of those endpoints is), then reports work still pending.
func cmdStabilize(w *scenarioRun, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	only := listArg(b, "only")
	for _, n := range only {
		if _, err := w.endpointArg(b, n); err != nil {
			return err
		}
	}
	max, err := w.intArg(b, "max", 100_000)
	if err != nil {
		return err
	}
	n := 0
	for ; n < max; n++ {
		e, ok := w.pick(only)
		if !ok {
			break
		}
		w.step(e, len(only) > 0)
	}
	switch {
	case n == max:
		w.printf("step limit: %d events run, more queued", max)
	case len(only) > 0:
	case len(w.s.Pending()) > 0:
		w.printf("idle with work pending:")
		for _, p := range w.s.Pending() {
			w.printf("  %s", p)
		}
	}
	return nil
}

// pick is the next event to run: the next queued one, or the first in run
// order that belongs to one of the named endpoints (its driver's events are
// labelled "memdriver/EP …", its backend's "EP/…").
func (w *scenarioRun) pick(only []string) (sim.EventInfo, bool) {
	if len(only) == 0 {
		return w.s.Next()
	}
	for _, e := range w.s.Queued() {
		for _, n := range only {
			if strings.HasPrefix(e.Label, "memdriver/"+n+" ") || strings.HasPrefix(e.Label, n+"/") {
				return e, true
			}
		}
	}
	return sim.EventInfo{}, false
}
