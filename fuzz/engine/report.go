package engine

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/model"
)

// Repro is the exact command that replays a generated run: the seed with the
// flags that generated it, after Config.Command. A run from a saved log
// replays with `storesim replay FILE` instead (the log, not the seed,
// survives generator changes).
func (r *Result) Repro() string {
	c := r.Config.withDefaults()
	if r.RealTime {
		// A real run cannot be replayed in the simulator: rerun its seed
		// (same workload, a new interleaving).
		cmd := fmt.Sprintf("%s run --driver %s --seeds %d:1 --profile %s --ops %d", c.Command, c.Driver, r.Seed, c.Profile, c.Ops)
		if r.Stretch != 0 && r.Stretch != DefaultStretch {
			cmd += fmt.Sprintf(" --stretch %g", r.Stretch)
		}
		return cmd
	}
	return fmt.Sprintf("%s replay --seed %d --driver %s --profile %s --ops %d%s", c.Command, r.Seed, c.Driver, c.Profile, c.Ops, c.schedFlags())
}

// Command is the program that replays the run (Config.Command, default
// "storesim").
func (r *Result) Command() string { return r.Config.withDefaults().Command }

// Summary is one line: verdict, rule, seed and trace hash.
func (r *Result) Summary() string {
	s := fmt.Sprintf("seed %d: %s trace=%016x steps=%d", r.Seed, r.Verdict, r.TraceHash, r.Steps)
	if r.RealTime {
		s = fmt.Sprintf("seed %d: %s real-time elapsed=%v", r.Seed, r.Verdict, r.End.Round(time.Microsecond))
	}
	if rule := r.Rule(); rule.Valid() {
		s += " rule=" + rule.String()
	}
	if r.Err != nil {
		s += " error=" + r.Err.Error()
	}
	return s
}

// WriteReport writes the failure report: verdict, every violation (rule
// first), a short timeline of the first failure's key and call, the
// porcupine verdict, and the command that replays it.
func (r *Result) WriteReport(w io.Writer) {
	fmt.Fprintln(w, r.Summary())
	if r.RealTime {
		fmt.Fprintln(w, "real time: the seed replays the workload, not the interleaving (timing is real, no trace hash); fault lines are ignored")
	}
	if r.Err != nil {
		fmt.Fprintf(w, "harness error: %v\n", r.Err)
	}
	for i, f := range r.Failures {
		if i == 20 {
			fmt.Fprintf(w, "  … and %d more\n", len(r.Failures)-i)
			break
		}
		fmt.Fprintf(w, "  %s\n", f)
	}
	fmt.Fprintf(w, "linearizability (S-LIN): %s\n", r.Lin)
	if len(r.Failures) > 0 {
		f := r.Failures[0]
		fmt.Fprintf(w, "timeline of %s:\n", focus(f))
		for _, line := range r.Timeline(f.Endpoint, drivers.CallID(f.Call), f.Key, 40) {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	fmt.Fprintf(w, "attempts %d: delivered %d, failed %d, cancelled %d; ops skipped %d\n",
		r.Attempts, r.Delivered, r.Failed, r.Cancelled, r.Skipped)
	fmt.Fprintf(w, "repro: %s\n", r.Repro())
}

func focus(f rules.Violation) string {
	var parts []string
	if f.Endpoint != "" {
		parts = append(parts, "endpoint "+f.Endpoint)
	}
	if f.Call != 0 {
		parts = append(parts, fmt.Sprintf("call %d", f.Call))
	}
	if f.Key != "" {
		parts = append(parts, fmt.Sprintf("key %q", f.Key))
	}
	if len(parts) == 0 {
		return "the run's last events"
	}
	return strings.Join(parts, ", ")
}

// Timeline lists, in event order, the notes and row operations about one
// key or one call of one endpoint (callbacks, faults, access changes,
// cancels, region lifecycle, row results): the last max of them.
func (r *Result) Timeline(endpoint string, call drivers.CallID, key string, max int) []string {
	type line struct {
		seq  int64
		text string
	}
	var lines []line
	for _, n := range r.Notes {
		if matches(n.Endpoint, n.Call, n.Key, endpoint, call, key) {
			lines = append(lines, line{n.Seq, n.Endpoint + " " + n.String()})
		}
	}
	for _, op := range r.History {
		if (key != "" && op.Key == key) || (key == "" && call != 0 && op.CallID == call) {
			lines = append(lines, line{op.Call, fmt.Sprintf("#%d %v op call %d row %d: %s", op.Call, op.CallAt, op.CallID, op.Row, op)})
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].seq < lines[j].seq })
	if len(lines) > max {
		lines = lines[len(lines)-max:]
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}

func matches(ep string, call drivers.CallID, key, wantEp string, wantCall drivers.CallID, wantKey string) bool {
	if wantKey != "" && key == wantKey {
		return true
	}
	if wantCall != 0 && call == wantCall && (wantEp == "" || ep == wantEp) {
		return true
	}
	return wantKey == "" && wantCall == 0
}

// WriteVisualization writes porcupine's HTML view of the run's history with
// callbacks, faults and region events as annotations.
func (r *Result) WriteVisualization(w io.Writer) error {
	notes := make([]model.Note, len(r.Notes))
	for i, n := range r.Notes {
		notes[i] = n.Note
	}
	return model.WriteVisualization(w, r.Lin, notes)
}
