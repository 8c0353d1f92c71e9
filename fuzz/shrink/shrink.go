// Package shrink minimizes a failing op log: it finds a smaller log that
// still fails with the same verdict and the same first rule, so a swarm
// failure becomes a regression case a person can read.
//
// # Method
//
// Delta debugging over the op log (Zeller's ddmin, as rapid and
// Hypothesis shrink their choice sequences), pass after pass until a whole
// round removes nothing or the budget runs out:
//
//   - ops: drop chunks of ops, halving the chunk size down to single ops
//     (shutdowns stay with their endpoint, so a fixed driver passes the
//     shrunk log);
//   - endpoints: drop endpoints no publish or fetch names, then whole
//     endpoints with every op on them;
//   - faults: drop fault lines, in chunks then singly;
//   - keys: drop keys from views (masked-out rows first);
//   - regions: drop regions, then halve slot counts;
//   - schedule, last, once the log is minimal: the run's scheduling
//     decisions are recorded (engine.ScheduleOf) into the log's sched
//     script, which then replays the same run without drawing from the
//     seed, and ddmin drops decisions — each dropped one takes its default:
//     the event created first, no callback delay, no coalescing — while
//     the same rule still fails (schedule.go).
//
// Every candidate stays a valid log: dropping an op drops the cancels that
// target it and renumbers the remaining cancel targets (driver probes are
// self-contained: they go or stay whole); every candidate is
// printed and parsed back (workload.Parse) before it runs, so what is kept
// is exactly what a file will hold. A candidate is kept when
// engine.Run on it gives the same verdict and the same Result.Rule().
//
// # Determinism
//
// Like the rest of sim, this package starts no goroutines and reads no
// clock: the same log and options give the same shrunk log. A wall-clock cap
// is the caller's business, through Options.Stop (the CLI passes a
// deadline); Options.MaxRuns is the deterministic cap.
package shrink

import (
	"errors"
	"fmt"
	"strings"

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/workload"
)

// ErrNotFailing: the log to shrink passes (or its check is inconclusive),
// so there is no failure to keep.
var ErrNotFailing = errors.New("shrink: the log does not fail")

// Options shape a shrink. Zero fields take defaults.
type Options struct {
	// Config runs every candidate (Factory, LinTimeout, MaxSteps; the
	// log's endpoints name their drivers).
	Config engine.Config
	// MaxRuns caps candidate runs (0: no cap).
	MaxRuns int
	// Stop is polled before every run; true ends the shrink with the
	// smallest failing log found so far.
	Stop func() bool
	// Progress is called after every kept reduction.
	Progress func(Progress)
	// KeepSchedule skips the schedule pass: the shrunk log keeps drawing
	// its schedule from the seed.
	KeepSchedule bool
	_            struct{}
}

// Progress reports a kept reduction.
type Progress struct {
	Pass string // which pass found it
	Runs int    // candidate runs so far
	Size Size
}

// Size measures a log; every pass makes one of its fields smaller.
type Size struct {
	Ops, Keys, Faults, Endpoints, Regions, Slots int
	// Decisions counts the non-default decisions of the log's sched
	// script (0 without one: the schedule is drawn from the seed).
	Decisions int
}

func (s Size) String() string {
	t := fmt.Sprintf("%d ops, %d keys, %d fault lines, %d endpoints, %d regions, %d slots",
		s.Ops, s.Keys, s.Faults, s.Endpoints, s.Regions, s.Slots)
	if s.Decisions > 0 {
		t += fmt.Sprintf(", %d schedule decisions", s.Decisions)
	}
	return t
}

// SizeOf measures a log.
func SizeOf(l *workload.Log) Size {
	s := Size{Ops: len(l.Ops), Endpoints: len(l.Endpoints), Decisions: l.Sched.Script.Decisions()}
	for _, op := range l.Ops {
		s.Keys += len(op.Keys)
	}
	for _, e := range l.Endpoints {
		s.Faults += len(e.Faults)
		s.Regions += len(e.Regions)
		for _, r := range e.Regions {
			s.Slots += r.Slots
		}
	}
	return s
}

// Result is the smallest failing log found.
type Result struct {
	Log      *workload.Log
	Run      *engine.Result // the run of Log
	Verdict  engine.Verdict
	Rule     rules.ID
	Original Size
	Runs     int
	// Done: a whole round of every pass removed nothing (a local minimum);
	// false when MaxRuns or Stop ended the shrink first.
	Done bool
	// Schedule counts the non-default scheduling decisions: of the
	// original log's run, of the minimal log's run before the schedule
	// pass, and of Log's sched script after it.
	Schedule ScheduleSizes
}

// Shrink minimizes log, keeping its verdict and first rule. The original
// is run first; ErrNotFailing when it passes, is unknown or cannot be set
// up.
func Shrink(log *workload.Log, opts Options) (*Result, error) {
	start, err := roundTrip(log)
	if err != nil {
		return nil, fmt.Errorf("shrink: the log does not print and parse back: %w", err)
	}
	first := engine.Run(start, opts.Config)
	if first.Verdict != engine.Safety && first.Verdict != engine.Liveness {
		return nil, fmt.Errorf("%w (verdict %s)", ErrNotFailing, first.Verdict)
	}
	s := &shrinker{opts: opts, best: start, run: first, seen: map[string]bool{start.String(): true}}
	s.res = &Result{Verdict: first.Verdict, Rule: first.Rule(), Original: SizeOf(start), Runs: 1}
	passes := []struct {
		name string
		fn   func() bool
	}{
		{"ops", s.ops},
		{"endpoints", s.endpoints},
		{"faults", s.faults},
		{"keys", s.keys},
		{"regions", s.regions},
	}
	for !s.stopped {
		progress := false
		for _, p := range passes {
			s.pass = p.name
			if p.fn() {
				progress = true
			}
			if s.stopped {
				break
			}
		}
		if !progress && !s.stopped {
			s.res.Done = true
			break
		}
	}
	if !opts.KeepSchedule && !s.stopped {
		s.res.Schedule.Original = originalDecisions(start, first, opts.Config)
		s.pass = "schedule"
		s.schedule()
		if s.stopped {
			s.res.Done = false
		}
	}
	s.res.Log, s.res.Run = s.best, s.run
	return s.res, nil
}

type shrinker struct {
	opts    Options
	best    *workload.Log
	run     *engine.Result
	res     *Result
	pass    string
	stopped bool
	seen    map[string]bool // candidate texts already run (lookup only)
}

// try runs a candidate and keeps it when it fails the same way.
func (s *shrinker) try(cand *workload.Log) bool {
	if s.stopped {
		return false
	}
	parsed, err := roundTrip(cand)
	if err != nil {
		return false // not a valid log: not a candidate
	}
	text := parsed.String()
	if s.seen[text] {
		return false
	}
	if (s.opts.MaxRuns > 0 && s.res.Runs >= s.opts.MaxRuns) || (s.opts.Stop != nil && s.opts.Stop()) {
		s.stopped = true
		return false
	}
	s.seen[text] = true
	s.res.Runs++
	r := engine.Run(parsed, s.opts.Config)
	if r.Verdict != s.res.Verdict || r.Rule() != s.res.Rule {
		return false
	}
	s.best, s.run = parsed, r
	if s.opts.Progress != nil {
		s.opts.Progress(Progress{Pass: s.pass, Runs: s.res.Runs, Size: SizeOf(parsed)})
	}
	return true
}

func roundTrip(l *workload.Log) (*workload.Log, error) { return workload.Parse(l.String()) }

// ddmin removes chunks of n items (halving the chunk size down to one);
// drop builds the candidate without items [i, j) of the current best, n
// reads the current count.
func (s *shrinker) ddmin(n func() int, drop func(i, j int) *workload.Log) bool {
	progress := false
	for chunk := n() / 2; chunk >= 1 && !s.stopped; chunk /= 2 {
		for i := 0; i < n() && !s.stopped; {
			j := min(i+chunk, n())
			if cand := drop(i, j); cand != nil && s.try(cand) {
				progress = true
				continue // the items after j moved down to i
			}
			i = j
		}
	}
	if n() == 1 && !s.stopped { // ddmin never tries the last item alone
		if cand := drop(0, 1); cand != nil && s.try(cand) {
			progress = true
		}
	}
	return progress
}

// ops drops chunks of ops, then single ops. An endpoint's first Shutdown
// op stays (it goes with its endpoint): a log without it fails every run
// with B-SHUT, so dropping it would turn any failure into one that no fix
// can pass. A later one (the owner asking again) may go.
func (s *shrinker) ops() bool {
	droppable := func() []int {
		var idx []int
		shut := map[string]bool{}
		for i, op := range s.best.Ops {
			if op.Kind != workload.Shutdown || shut[op.Endpoint] {
				idx = append(idx, i)
			}
			if op.Kind == workload.Shutdown {
				shut[op.Endpoint] = true
			}
		}
		return idx
	}
	return s.ddmin(func() int { return len(droppable()) }, func(i, j int) *workload.Log {
		drop := make([]bool, len(s.best.Ops))
		for _, k := range droppable()[i:j] {
			drop[k] = true
		}
		return DropOps(s.best, drop)
	})
}

// DropOps returns a copy of l without the ops marked in drop, and without
// the cancels whose target is dropped; the remaining cancel targets are
// renumbered to the new op indices (quiesce targets likewise; a quiesce
// left without one goes). A driver probe names no other op and no op
// names it (its keys and memory are its own), so it is kept or dropped
// whole and a kept one stays valid.
func DropOps(l *workload.Log, drop []bool) *workload.Log {
	out := clone(l)
	out.Ops = out.Ops[:0]
	newIndex := make([]int, len(l.Ops))
	for i, op := range l.Ops {
		newIndex[i] = -1
		if i < len(drop) && drop[i] {
			continue
		}
		if op.Kind == workload.Cancel {
			if newIndex[op.Target] < 0 {
				continue // its target is gone
			}
			op.Target = newIndex[op.Target]
		}
		if op.Kind == workload.Quiesce {
			var ts []int
			for _, t := range op.Targets {
				if newIndex[t] >= 0 {
					ts = append(ts, newIndex[t])
				}
			}
			if len(ts) == 0 {
				continue // every attempt it asked about is gone
			}
			op.Targets = ts
		}
		newIndex[i] = len(out.Ops)
		out.Ops = append(out.Ops, cloneOp(op))
	}
	return out
}

// endpoints drops endpoints that no publish or fetch names (with their
// shutdowns), then whole endpoints with every op on them.
func (s *shrinker) endpoints() bool {
	progress := false
	for i := 0; i < len(s.best.Endpoints) && len(s.best.Endpoints) > 1 && !s.stopped; {
		name := s.best.Endpoints[i].Name
		if !usesRows(s.best, name) && s.try(dropEndpoint(s.best, i)) {
			progress = true
			continue
		}
		i++
	}
	for i := 0; i < len(s.best.Endpoints) && len(s.best.Endpoints) > 1 && !s.stopped; {
		if s.try(dropEndpoint(s.best, i)) {
			progress = true
			continue
		}
		i++
	}
	return progress
}

func usesRows(l *workload.Log, name string) bool {
	for _, op := range l.Ops {
		if op.Endpoint == name && (op.Kind == workload.Publish || op.Kind == workload.Fetch) {
			return true
		}
	}
	return false
}

func dropEndpoint(l *workload.Log, i int) *workload.Log {
	name := l.Endpoints[i].Name
	drop := make([]bool, len(l.Ops))
	for k, op := range l.Ops {
		drop[k] = op.Kind != workload.Cancel && op.Endpoint == name
	}
	out := DropOps(l, drop)
	out.Endpoints = append(out.Endpoints[:i:i], out.Endpoints[i+1:]...)
	return out
}

// faults drops fault lines of each endpoint, in chunks then singly.
func (s *shrinker) faults() bool {
	progress := false
	for e := 0; e < len(s.best.Endpoints) && !s.stopped; e++ {
		if s.ddmin(func() int { return len(s.best.Endpoints[e].Faults) }, func(i, j int) *workload.Log {
			out := clone(s.best)
			f := out.Endpoints[e].Faults
			out.Endpoints[e].Faults = append(f[:i:i], f[j:]...)
			return out
		}) {
			progress = true
		}
	}
	return progress
}

// keys drops keys from views: masked-out rows first (they move nothing),
// then any row; a view keeps at least one key.
func (s *shrinker) keys() bool {
	progress := false
	for _, maskedOnly := range []bool{true, false} {
		for o := 0; o < len(s.best.Ops) && !s.stopped; o++ {
			for k := 0; k < len(s.best.Ops[o].Keys) && len(s.best.Ops[o].Keys) > 1 && !s.stopped; {
				if maskedOnly && s.best.Ops[o].Mask[k] {
					k++
					continue
				}
				out := clone(s.best)
				op := &out.Ops[o]
				op.Keys = append(op.Keys[:k:k], op.Keys[k+1:]...)
				op.Mask = append(op.Mask[:k:k], op.Mask[k+1:]...)
				if s.try(out) {
					progress = true
					continue
				}
				k++
			}
		}
	}
	return progress
}

// regions drops regions (an endpoint keeps one), then halves slot counts.
func (s *shrinker) regions() bool {
	progress := false
	for e := 0; e < len(s.best.Endpoints) && !s.stopped; e++ {
		for r := 0; r < len(s.best.Endpoints[e].Regions) && len(s.best.Endpoints[e].Regions) > 1 && !s.stopped; {
			out := clone(s.best)
			regs := out.Endpoints[e].Regions
			out.Endpoints[e].Regions = append(regs[:r:r], regs[r+1:]...)
			if s.try(out) {
				progress = true
				continue
			}
			r++
		}
		for r := 0; r < len(s.best.Endpoints[e].Regions) && !s.stopped; r++ {
			for s.best.Endpoints[e].Regions[r].Slots > 1 && !s.stopped {
				out := clone(s.best)
				out.Endpoints[e].Regions[r].Slots /= 2
				if !s.try(out) {
					break
				}
				progress = true
			}
		}
	}
	return progress
}

func clone(l *workload.Log) *workload.Log {
	out := &workload.Log{Seed: l.Seed, Store: l.Store, Sched: l.Sched}
	for _, e := range l.Endpoints {
		e.Regions = append([]workload.RegionSpec(nil), e.Regions...)
		e.Faults = append([]string(nil), e.Faults...)
		out.Endpoints = append(out.Endpoints, e)
	}
	for _, op := range l.Ops {
		out.Ops = append(out.Ops, cloneOp(op))
	}
	return out
}

func cloneOp(op workload.Op) workload.Op {
	op.Keys = append([]string(nil), op.Keys...)
	op.Mask = append([]bool(nil), op.Mask...)
	op.Targets = append([]int(nil), op.Targets...)
	return op
}

// Text is the shrunk log as a file: a comment header naming the rule, the
// sizes before and after, the trace hash and the commands that replay it
// (replay of this file; origin, how the failure was first found), then the
// op log. workload.Parse skips the header.
func (r *Result) Text(file, origin string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# storesim shrink: %s failure, rule %s\n", r.Verdict, r.Rule)
	fmt.Fprintf(&b, "# shrunk to %s\n", SizeOf(r.Log))
	fmt.Fprintf(&b, "#      from %s in %d runs", r.Original, r.Runs)
	if !r.Done {
		b.WriteString(" (stopped by the budget; may shrink further)")
	}
	b.WriteString("\n")
	if sc := r.Schedule; sc.Shrunk {
		fmt.Fprintf(&b, "# schedule: %d non-default decisions (the original run: %d; the minimal log's before the schedule pass: %d); the sched script replays it without the seed's draws\n",
			sc.After, sc.Original, sc.Before)
	}
	fmt.Fprintf(&b, "# trace %016x\n", r.Run.TraceHash)
	if file == "" {
		file = "FILE"
	}
	fmt.Fprintf(&b, "# replay: %s replay %s\n", r.Run.Command(), file)
	if origin != "" {
		fmt.Fprintf(&b, "# origin: %s\n", origin)
	}
	b.WriteString(r.Log.String())
	return b.String()
}
