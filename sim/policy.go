package sim

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync/atomic"
	"time"
)

// Policy is how a [Scheduler] chooses the next event among those that may
// run.
//
// # Random (the default)
//
// Events run in virtual-time order; events due at the same time run in a
// seeded random order (a tie-break drawn when each is queued), and every
// callback trigger (Wake) is given a seeded random delay in
// [0, MaxWakeDelay].
//
// # PCT
//
// Probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi and
// Nagarakatte, ASPLOS 2010), adapted to virtual time. Every event has a
// priority source, PCT's thread: a driver callback's source is its Wake
// (one per driver call: the backend makes one per Submit, the memory
// driver one per call); a timer's or a post's is the source of the event
// that queued it (its causal chain: the backend's notify posted from a
// callback belongs to that callback's chain); an event queued from outside
// any event (the workload's ops, queued before the run) starts a source of
// its own. Each source gets a random priority when first seen (a uniform
// random order of the n sources), and d−1 change points are drawn
// uniformly over choice points 1..k (Options.Depth = d, Options.Steps =
// k), a choice point being a step at which more than one event may run (a
// change point anywhere else could change nothing).
//
// The events that may run next are the timers and posts due at the
// earliest deadline D, and every queued callback triggered at or before D:
// a callback may be delivered as late as MaxWakeDelay after its trigger
// (the window the random policy draws its delay from), a timer or a post
// runs exactly when it is due. Of those, the event whose source has the
// highest priority runs, at its due time or now if that is later; ties
// (one source) go to the older event. At the i-th change point the source
// of the event about to run drops to priority d−i, below every initial
// priority, and the choice is made again. Coalescing is still
// drawn from the seed. So time never runs backwards and no event runs
// later than the random policy could have run it.
//
// The guarantee (the paper's main theorem): a bug of depth d — one that
// some d ordering constraints between events the scheduler may order
// either way are enough to trigger — is hit in one run with probability
// at least 1/(n·k^(d−1)), for n sources and k choice points. Depth here counts
// only constraints among events that may run next together as defined
// above: an order that virtual time fixes (a timer due later) is no
// choice of the scheduler's. docs/PCT.md measures it against Random.
type Policy uint8

const (
	// Random is the default policy: seeded tie-breaks and callback delays.
	Random Policy = iota
	// PCT is probabilistic concurrency testing: random source priorities
	// and d−1 priority change points.
	PCT
)

func (p Policy) String() string {
	switch p {
	case Random:
		return "random"
	case PCT:
		return "pct"
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// ErrBadPolicy names an unknown policy.
var ErrBadPolicy = errors.New("unknown scheduling policy")

// ParsePolicy reads a policy name: random or pct.
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "random":
		return Random, nil
	case "pct":
		return PCT, nil
	}
	return 0, fmt.Errorf("%w %q (want random or pct)", ErrBadPolicy, s)
}

// DefaultPCTSteps is k when Options.Steps is zero.
const DefaultPCTSteps = 1000

type pctState struct {
	prio    []uint64     // by source; higher runs first
	cur     atomic.Int32 // the source of the event running, -1 between events
	r       *Rand
	changes []change // sorted by choice point
	next    int      // first change not yet reached
	choices uint64   // choice points so far
}

type change struct {
	step uint64
	prio uint64
}

func newPCT(o Options) *pctState {
	p := &pctState{r: NewRand(SubSeed(o.Seed, "sim/pct"))}
	k := o.Steps
	if k == 0 {
		k = DefaultPCTSteps
	}
	d := max(o.Depth, 1)
	cr := NewRand(SubSeed(o.Seed, "sim/pct/changes"))
	for i := 1; i < d; i++ {
		step := 1 + uint64(cr.Intn(int(min(k, math.MaxInt32))))
		p.changes = append(p.changes, change{step: step, prio: uint64(d - i)})
	}
	p.cur.Store(-1)
	sort.SliceStable(p.changes, func(i, j int) bool { return p.changes[i].step < p.changes[j].step })
	return p
}

// newSource draws a priority above every change point's.
func (p *pctState) newSource() int32 {
	p.prio = append(p.prio, 1<<63|p.r.Uint64()>>1)
	return int32(len(p.prio) - 1)
}

// eventSource is the source of a timer or post: the source of the event
// that queued it (its causal chain, PCT's thread), or a new source for
// one queued from outside any event (the workload's ops).
func (p *pctState) eventSource() int32 {
	if cur := p.cur.Load(); cur >= 0 {
		return cur
	}
	return p.newSource()
}

// stepPCT runs the highest-priority event of those that may run next.
func (s *Scheduler) stepPCT() bool {
	if !s.purgeTop() {
		return false
	}
	es := s.queue.all()
	deadline := time.Duration(math.MaxInt64)
	for i := range es {
		if d := s.queue.due(i); d < deadline && !s.stops.has(es[i].id) {
			deadline = d
		}
	}
	p := s.pct
	best, n := s.pctBest(deadline)
	if n > 1 {
		// A choice point: only steps where more than one event may run
		// count towards k, since a change point elsewhere changes nothing.
		p.choices++
		for ; p.next < len(p.changes) && p.changes[p.next].step <= p.choices; p.next++ {
			p.prio[es[best].src] = p.changes[p.next].prio
			best, _ = s.pctBest(deadline)
		}
	}
	e := s.queue.remove(best)
	s.run(e, max(s.now, e.at))
	return true
}

func (s *Scheduler) pctBest(deadline time.Duration) (best, n int) {
	es, prio := s.queue.all(), s.pct.prio
	best = -1
	for i := range es {
		e := &es[i]
		if e.at > deadline || s.stops.has(e.id) {
			continue
		}
		n++
		if best < 0 {
			best = i
			continue
		}
		b := &es[best]
		if pe, pb := prio[e.src], prio[b.src]; pe != pb {
			if pe > pb {
				best = i
			}
			continue
		}
		if e.at < b.at || e.at == b.at && e.id < b.id {
			best = i
		}
	}
	return best, n
}

// Schedule is a run's scheduling decisions, as [Scheduler.Recorded] writes
// them and Options.Script replays them. Only decisions that differ from
// the default are listed; an empty Schedule is the default schedule: of
// the events due at one time the one created first runs, no callback is
// delayed, no trigger is coalesced.
type Schedule struct {
	// Picks: at step Step (counted from 1) the event of rank Rank (from 0,
	// in creation order) among the events due at the earliest time runs.
	Picks []Pick
	// Delays: the Wake-th callback trigger (counted from 1, in the order
	// the scheduler takes them in) is delivered By after it.
	Delays []Delay
	// Coalesce lists the triggers merged into a delivery still queued.
	Coalesce []uint64
}

// Pick is one ordering decision.
type Pick struct {
	Step uint64
	Rank int
}

// Delay is one callback delay.
type Delay struct {
	Wake uint64
	By   time.Duration
}

// Decisions is the number of non-default decisions.
func (sc *Schedule) Decisions() int {
	if sc == nil {
		return 0
	}
	return len(sc.Picks) + len(sc.Delays) + len(sc.Coalesce)
}

// Check reports a schedule that is not in order (steps and triggers
// strictly increasing) or lists a default decision.
func (sc *Schedule) Check() error {
	for i, p := range sc.Picks {
		if p.Step == 0 || p.Rank <= 0 || i > 0 && p.Step <= sc.Picks[i-1].Step {
			return fmt.Errorf("pick %d (step %d rank %d): steps must increase from 1 and ranks be positive", i, p.Step, p.Rank)
		}
	}
	for i, d := range sc.Delays {
		if d.Wake == 0 || d.By <= 0 || i > 0 && d.Wake <= sc.Delays[i-1].Wake {
			return fmt.Errorf("delay %d (wake %d by %v): wakes must increase from 1 and delays be positive", i, d.Wake, d.By)
		}
	}
	for i, w := range sc.Coalesce {
		if w == 0 || i > 0 && w <= sc.Coalesce[i-1] {
			return fmt.Errorf("coalesce %d (wake %d): wakes must increase from 1", i, w)
		}
	}
	return nil
}

type scriptState struct {
	sc         *Schedule
	pi, di, ci int // cursors into Picks, Delays, Coalesce
}

func (st *scriptState) delay(wake uint64) time.Duration {
	ds := st.sc.Delays
	for st.di < len(ds) && ds[st.di].Wake < wake {
		st.di++
	}
	if st.di < len(ds) && ds[st.di].Wake == wake {
		return ds[st.di].By
	}
	return 0
}

func (st *scriptState) coalesce(wake uint64) bool {
	cs := st.sc.Coalesce
	for st.ci < len(cs) && cs[st.ci] < wake {
		st.ci++
	}
	return st.ci < len(cs) && cs[st.ci] == wake
}

func (st *scriptState) rank(step uint64) int {
	ps := st.sc.Picks
	for st.pi < len(ps) && ps[st.pi].Step < step {
		st.pi++
	}
	if st.pi < len(ps) && ps[st.pi].Step == step {
		return ps[st.pi].Rank
	}
	return 0
}

// stepScripted runs the event the script names among those due first.
func (s *Scheduler) stepScripted() bool {
	if !s.purgeTop() {
		return false
	}
	idx := 0
	if rank := s.script.rank(s.steps + 1); rank > 0 {
		es := s.queue.all()
		at := es[0].at
		var cands []int
		for i := range es {
			if es[i].at == at && !s.stops.has(es[i].id) {
				cands = append(cands, i)
			}
		}
		sort.Slice(cands, func(a, b int) bool { return es[cands[a]].id < es[cands[b]].id })
		if rank < len(cands) {
			idx = cands[rank]
		}
	}
	e := s.queue.remove(idx)
	s.run(e, e.at)
	return true
}

// recorder keeps, per event, what Recorded needs.
type recorder struct {
	evs       []evRec  // by id-1
	runs      []uint64 // the id run at each step
	coalesced []uint64
}

type evRec struct {
	avail uint64        // the first step that could run it
	at    time.Duration // when it was due, or when it ran
	run   uint64        // the step that ran it; 0: never
	stop  uint64        // the step that stopped it; MaxUint64: never
	wake  uint64        // its trigger number, 0 for a timer or post
	t0    time.Duration // the trigger's time
}

func (r *recorder) pushed(id, steps uint64, at time.Duration) {
	for uint64(len(r.evs)) < id {
		r.evs = append(r.evs, evRec{stop: math.MaxUint64})
	}
	e := &r.evs[id-1]
	e.avail, e.at = steps+1, at
}

func (r *recorder) wake(id, n uint64, t0 time.Duration) {
	e := &r.evs[id-1]
	e.wake, e.t0 = n, t0
}

func (r *recorder) stopped(id, steps uint64) {
	if id <= uint64(len(r.evs)) {
		r.evs[id-1].stop = steps
	}
}

func (r *recorder) ran(id, step uint64, at time.Duration) {
	e := &r.evs[id-1]
	e.run, e.at = step, at
	r.runs = append(r.runs, id)
}

// Recorded is the run so far as a Schedule: replayed as Options.Script
// (with the same workload), it runs the same events in the same order at
// the same times, to the same trace hash — whatever policy made the
// decisions. Nil unless Options.Record was set.
func (s *Scheduler) Recorded() *Schedule {
	r := s.rec
	if r == nil {
		return nil
	}
	sc := &Schedule{Coalesce: append([]uint64(nil), r.coalesced...)}
	byAt := map[time.Duration][]uint64{} // ids due (or run) at a time, in id order; lookups only
	for i := range r.evs {
		e := &r.evs[i]
		if e.run == 0 && e.at < s.now {
			// A callback PCT held back when the run stopped (a step limit,
			// a panic): a replay must not run it before what already ran.
			e.at = s.now
		}
		byAt[e.at] = append(byAt[e.at], uint64(i+1))
		if e.wake > 0 && e.at > e.t0 {
			sc.Delays = append(sc.Delays, Delay{Wake: e.wake, By: e.at - e.t0})
		}
	}
	for i, id := range r.runs {
		step := uint64(i + 1)
		rank := 0
		for _, x := range byAt[r.evs[id-1].at] {
			if x >= id {
				break
			}
			o := &r.evs[x-1]
			if o.avail <= step && (o.run == 0 || o.run > step) && o.stop >= step {
				rank++
			}
		}
		if rank > 0 {
			sc.Picks = append(sc.Picks, Pick{Step: step, Rank: rank})
		}
	}
	return sc
}

// ChoicePoints is, under PCT, the number of steps so far at which more
// than one event could run (what Options.Steps counts); 0 under the other
// policies.
func (s *Scheduler) ChoicePoints() uint64 {
	if s.pct == nil {
		return 0
	}
	return s.pct.choices
}
