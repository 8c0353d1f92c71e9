package scenarios

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/sim"
)

// ErrUnconvertible is wrapped by FromOpLog's errors about an op log the
// scenario language cannot state (a name it cannot parse, a fault line that
// is not one line of a memdriver fault mix).
var ErrUnconvertible = errors.New("op log cannot become a scenario")

// FromOpLog turns an op log (sim/workload) into a scenario file that plays
// the same workload, with its expected output filled in by running it once
// (as Options.Rewrite would), so the file passes as written and `check`
// prints whatever rule the run breaks. It is how `storesim shrink
// --scenario` turns a minimized failure into a regression test.
//
// The mapping: `store` with the log's seed and the harness's delivery
// policy for that seed (wake delay, coalescing, eviction chance); one
// `endpoint` per endpoint with its driver, rows, absent-is-miss, inflight,
// queued, unprovable, regions and its fault lines as faults=KIND:RATE;
// then, per op, a `tick` to the op's virtual time and the op itself —
// publish/fetch named as=opN (N is the op's index in the log), `cancel
// opN`, `shutdown EP` — and finally `stabilize` and `check`. What the
// language cannot state becomes a comment line: Quiesce questions, views
// made wrong on purpose, and driver probes (workload.Probe), whose
// handles the driver picks at run time.
//
// The interleaving is the scenario scheduler's, not the harness's: an op
// runs after every event due at its time (in the harness it is one more
// event at that time), the schedulers' random streams are drawn in another
// order, and publishes write "<op>/<key>|" objects instead of the harness's
// seeded bytes. A converted failure usually still breaks its rule, but not
// always; the file's header says which rules its run reported.
//
// A log whose schedule is a sched script (a shrunk failure) gets
// `store … order=fifo`: the scheduler draws nothing from the seed. The
// language cannot state the script's non-default decisions (a pick names
// a step of the harness's run; the scenario's run has other steps), so
// the header lists them as comments and says so; a script with none left
// is stated exactly. A PCT log's policy cannot be stated either (the
// header says the scenario runs the random policy).
func FromOpLog(log *workload.Log) (string, error) {
	if log == nil {
		return "", fmt.Errorf("%w: nil log", ErrUnconvertible)
	}
	body, err := oplogBody(log)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("oplog-seed-%d", log.Seed)
	res, err := Run(name, body, Options{Rewrite: true})
	if err != nil {
		return "", fmt.Errorf("running the converted scenario: %w", err)
	}
	var names []string
	for _, r := range res.Rules {
		names = append(names, r.String())
	}
	rules := "none"
	if len(names) > 0 {
		rules = strings.Join(names, " ")
	}
	header := fmt.Sprintf(`# Converted from a storesim op log (seed %d, %d ops) by scenarios.FromOpLog.
# The workload is the log's; the interleaving is the scenario scheduler's:
# store seed, wake-delay, coalesce and evict-chance mirror the harness's
# policy for the seed, but each op runs after every event due at its time
# and the random streams are drawn in another order, so the run may differ
# from 'storesim replay' of the log. Ops are named opN after their index.
%s# Rules this run reports: %s
`, log.Seed, len(log.Ops), schedNote(log), rules)
	return header + "\n" + res.Output, nil
}

// oplogBody is the scenario text with empty expected outputs.
func oplogBody(log *workload.Log) (string, error) {
	var b strings.Builder
	block := func(format string, args ...any) {
		fmt.Fprintf(&b, format+"\n----\n\n", args...)
	}
	store := log.Store
	if store == "" {
		store = "durable"
	}
	if store != "durable" && store != "evicting" {
		return "", fmt.Errorf("%w: store %q (want durable or evicting)", ErrUnconvertible, log.Store)
	}
	policy := engine.SchedOptions(log.Seed)
	line := fmt.Sprintf("store %s seed=%d wake-delay=%s coalesce=%s", store, log.Seed, durText(policy.MaxWakeDelay), strconv.FormatFloat(policy.CoalesceChance, 'g', -1, 64))
	if log.Sched.Script != nil {
		// A scripted log's schedule draws nothing from the seed; the
		// language states its defaults (order=fifo) and no decision.
		line = fmt.Sprintf("store %s seed=%d order=fifo", store, log.Seed)
	}
	if store == "evicting" {
		line += " evict-chance=" + strconv.FormatFloat(engine.EvictChance(store), 'g', -1, 64)
	}
	block("%s", line)
	eps := map[string]bool{}
	for _, e := range log.Endpoints {
		l, err := endpointLine(e)
		if err != nil {
			return "", err
		}
		eps[e.Name] = true
		block("%s", l)
	}
	var now time.Duration
	down := map[string]bool{}
	for i, op := range log.Ops {
		if op.At < now {
			return "", fmt.Errorf("%w: op %d at %v goes back before %v", ErrUnconvertible, i, op.At, now)
		}
		if op.At > now {
			block("tick %s", durText(op.At-now))
			now = op.At
		}
		switch op.Kind {
		case workload.Probe:
			// A driver probe runs on memory and keys of its own and names handles
			// the driver picks at run time; driver-register/-submit state fixed ones.
			fmt.Fprintf(&b, "# op %d is a driver probe (%s on %s): not in the scenario language\n\n", i, op.Probe, op.Endpoint)
			continue
		case workload.Quiesce:
			// Quiesce asks and changes nothing; the language has no question for it.
			fmt.Fprintf(&b, "# op %d asks Quiesce about ops %v: not in the scenario language\n\n", i, op.Targets)
			continue
		case workload.Publish, workload.Fetch:
			if op.Bad != "" {
				// The language states only well-formed views over the lender's slots.
				fmt.Fprintf(&b, "# op %d is a view made wrong on purpose (bad=%s): not in the scenario language\n\n", i, op.Bad)
				continue
			}
			if !eps[op.Endpoint] {
				return "", fmt.Errorf("%w: op %d names undeclared endpoint %q", ErrUnconvertible, i, op.Endpoint)
			}
			if len(op.Keys) == 0 || len(op.Mask) != len(op.Keys) {
				return "", fmt.Errorf("%w: op %d has %d keys and %d mask bits", ErrUnconvertible, i, len(op.Keys), len(op.Mask))
			}
			for _, k := range op.Keys {
				if k == "" || strings.ContainsAny(k, ", \t\n") {
					return "", fmt.Errorf("%w: op %d: key %q is empty or holds a comma or space", ErrUnconvertible, i, k)
				}
			}
			mask := make([]byte, len(op.Mask))
			for j, m := range op.Mask {
				mask[j] = '0'
				if m {
					mask[j] = '1'
				}
			}
			block("%s %s keys=%s mask=%s as=op%d", op.Kind, op.Endpoint, strings.Join(op.Keys, ","), mask, i)
		case workload.Cancel:
			if op.Target < 0 || op.Target >= i {
				return "", fmt.Errorf("%w: op %d cancels op %d, which is not an earlier op", ErrUnconvertible, i, op.Target)
			}
			if t := log.Ops[op.Target]; t.Bad != "" {
				fmt.Fprintf(&b, "# op %d cancels op %d, a view left out above: nothing to cancel\n\n", i, op.Target)
				continue
			}
			if k := log.Ops[op.Target].Kind; k != workload.Publish && k != workload.Fetch {
				// The harness cancels nothing here; the language has no name to cancel.
				fmt.Fprintf(&b, "# op %d cancels op %d, a %v: nothing to cancel\n\n", i, op.Target, k)
				continue
			}
			block("cancel op%d", op.Target)
		case workload.Shutdown:
			if !eps[op.Endpoint] {
				return "", fmt.Errorf("%w: op %d shuts down undeclared endpoint %q", ErrUnconvertible, i, op.Endpoint)
			}
			if down[op.Endpoint] {
				// The harness asks for a shutdown once and ignores repeats.
				fmt.Fprintf(&b, "# op %d shuts %s down again: the harness ignores it\n\n", i, op.Endpoint)
				continue
			}
			down[op.Endpoint] = true
			block("shutdown %s", op.Endpoint)
		default:
			return "", fmt.Errorf("%w: op %d has unknown kind %d", ErrUnconvertible, i, op.Kind)
		}
	}
	block("stabilize")
	block("check")
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// schedNote is what the header says of the log's sched section: what the
// scenario states of it and what the language cannot.
func schedNote(log *workload.Log) string {
	sc := log.Sched.Script
	switch {
	case sc != nil && sc.Decisions() == 0:
		return "# The log's schedule is its sched script, with no non-default decision:\n" +
			"# order=fifo states it (no tie-break, callback delay or coalescing is drawn\n" +
			"# from the seed; the seed still drives the store's and drivers' own draws).\n"
	case sc != nil:
		var b strings.Builder
		fmt.Fprintf(&b, "# The log's sched script has %d non-default decisions, which the scenario\n", sc.Decisions())
		b.WriteString("# language cannot state: a pick or a delay names a step or a callback trigger\n" +
			"# of the harness's run, and a scenario's run has other steps (deliver states an\n" +
			"# interleaving by event instead). The scenario runs the default schedule\n" +
			"# (order=fifo) without them; the op log is the exact regression. They were:\n")
		for _, p := range sc.Picks {
			fmt.Fprintf(&b, "#   sched pick %d %d\n", p.Step, p.Rank)
		}
		for _, d := range sc.Delays {
			fmt.Fprintf(&b, "#   sched delay %d %dns\n", d.Wake, int64(d.By))
		}
		for _, c := range sc.Coalesce {
			fmt.Fprintf(&b, "#   sched coalesce %d\n", c)
		}
		return b.String()
	case log.Sched.Policy == sim.PCT:
		return fmt.Sprintf("# The log ran under PCT (sched pct depth=%d), which the scenario language cannot\n"+
			"# state: the scenario runs the seed's random policy.\n", log.Sched.Depth)
	}
	return ""
}

// endpointLine states one endpoint as the harness builds it (cancel=true,
// drain-timeout=1ms are the language's defaults as well as the harness's).
func endpointLine(e workload.Endpoint) (string, error) {
	if e.Name == "" || strings.ContainsAny(e.Name, "/@=# \t\n") {
		return "", fmt.Errorf("%w: endpoint name %q (want a word without / @ = #)", ErrUnconvertible, e.Name)
	}
	driver := e.Driver
	if driver == "" {
		driver = "memory"
	}
	if len(e.Regions) == 0 {
		return "", fmt.Errorf("%w: endpoint %s has no regions", ErrUnconvertible, e.Name)
	}
	regs := make([]string, len(e.Regions))
	for i, r := range e.Regions {
		if r.Label == "" || strings.ContainsAny(r.Label, ",:@/ \t\n") {
			return "", fmt.Errorf("%w: endpoint %s: region label %q", ErrUnconvertible, e.Name, r.Label)
		}
		regs[i] = fmt.Sprintf("%s:%dx%d", r.Label, r.Slots, r.SlotBytes)
	}
	line := fmt.Sprintf("endpoint %s driver=%s rows=%d absent-is-miss=%t inflight=%d queued=%d unprovable=%d regions=%s",
		e.Name, driver, e.MaxRows, e.AbsentIsMiss, e.InFlight, e.Queued, e.Unprovable, strings.Join(regs, ","))
	var faults []string
	for _, f := range e.Faults {
		if strings.HasPrefix(strings.TrimSpace(f), "fault lie-") {
			continue // a lie to the backend (fuzz/engine lies.go): not in the scenario language
		}
		// A fault line is one line of a memdriver fault mix: "fault KIND rate=R".
		fs := strings.Fields(f)
		if len(fs) != 3 || fs[0] != "fault" || !strings.HasPrefix(fs[2], "rate=") || strings.ContainsAny(fs[1], ",:") {
			return "", fmt.Errorf("%w: endpoint %s: fault line %q (want \"fault KIND rate=R\")", ErrUnconvertible, e.Name, f)
		}
		faults = append(faults, fs[1]+":"+strings.TrimPrefix(fs[2], "rate="))
	}
	if len(faults) > 0 {
		line += " faults=" + strings.Join(faults, ",")
	}
	return line, nil
}

// durText writes a duration time.ParseDuration reads back, in ASCII.
func durText(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Microsecond == 0:
		return fmt.Sprintf("%dus", d/time.Microsecond)
	}
	return fmt.Sprintf("%dns", int64(d))
}
