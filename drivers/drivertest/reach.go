package drivertest

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A real store that does not answer is reported once, as "store
// unreachable: <address>", not as rule failures: every case run against a
// dead store fails (a driver that cannot connect answers FAULT, or cannot
// be built), and against a stalled one each wait runs to its bound, so a
// full certification would sit silent for the better part of an hour and
// then blame the driver. Two checks, both through Harness.Ping:
//
//   - pre-flight: one ping, bounded by Options.Wait, before the driver is
//     even built;
//   - bail-out: before every real-time case run (a driver built on a
//     stalled store waits for its own dial timeout), after every case run
//     that failed or was skipped (or whose driver could not be built), and
//     whenever a real-time wait of a case runs out, one ping; reachPings failed pings in a row, reachPause
//     apart and each bounded by reachWait, stop the certification there
//     (a wait that ran out stops its case at once).
//
// Either way the report has the gap "store unreachable: …" (and no
// certificate); `storesim certify` prints that one line and exits 2. A
// harness without Ping (every simulated driver) is never pinged.
const (
	reachPings = 2
	reachPause = 100 * time.Millisecond
	reachWait  = time.Second // at most; Options.Wait if shorter
)

// preflight pings the store before anything else; false means it did not
// answer (the report then says so, and nothing runs).
func (c *certifier) preflight() bool {
	if c.h.Ping == nil {
		return true
	}
	if err := c.ping(c.opts.Wait); err != nil {
		c.unreachable = "store unreachable: " + err.Error()
		c.probe.err = c.unreachable
		return false
	}
	return true
}

// ping is one Harness.Ping, bounded by d.
func (c *certifier) ping(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.h.Ping(ctx)
}

// checkReach is the bail-out: after a case run that failed (where names
// it), the store must still answer.
func (c *certifier) checkReach(failed bool, where string) {
	if !failed || c.h.Ping == nil || c.unreachable != "" {
		return
	}
	var err error
	for i := range reachPings {
		if i > 0 {
			time.Sleep(reachPause) // real stores only: Ping is a real store's
		}
		if err = c.ping(min(c.opts.Wait, reachWait)); err == nil {
			return
		}
	}
	c.unreachable = fmt.Sprintf("store unreachable: %v (it stopped answering by %s; the certification stopped there, and the failures before it may be the store's)", err, where)
	c.gaps = append(c.gaps, c.unreachable)
}

// beforeRun is the bail-out before a real-time case run builds its driver.
func (c *certifier) beforeRun(g *group, cs *caseDef, seed uint64) error {
	if !c.h.RealTime {
		return nil
	}
	c.checkReach(true, fmt.Sprintf("the start of case %s/%s, seed %d", g.rule, cs.name, seed))
	if c.unreachable != "" {
		return errors.New(c.unreachable)
	}
	return nil
}

// stillAnswering is the bail-out inside a case: a real-time wait ran out,
// so the store must still answer, or the case stops here.
func (c *certifier) stillAnswering(w *world) {
	kind := "random"
	if w.directed {
		kind = "directed"
	}
	c.checkReach(true, fmt.Sprintf("case %s/%s, %s seed %d (a wait of %v ran out)", w.g.rule, w.cs.name, kind, w.seed, c.opts.Wait))
	if c.unreachable != "" {
		panic(stepCapHit{})
	}
}

// progress tells Options.Progress that group g begins.
func (c *certifier) progress(g *group) {
	c.groupN++
	if c.opts.Progress == nil {
		return
	}
	total := 0
	for _, gg := range c.groups {
		if c.selected(gg.rule.String()) {
			total++
		}
	}
	c.opts.Progress(c.groupN, total, g.rule.String())
}
