package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/timeline"
)

// What run prints and how it exits: the JSON records, the tally of verdicts,
// the failure folders, the progress bar.

// seedRecord is one JSON line per seed.
type seedRecord struct {
	Type string `json:"type"` // "seed"
	// Seed is a JSON string: a 64-bit seed does not survive a reader that
	// parses numbers as float64.
	Seed      uint64 `json:"seed,string"`
	TraceHash string `json:"trace_hash"`
	Verdict   string `json:"verdict"`
	Class     string `json:"class"`
	Rule      string `json:"rule"`
	Repro     string `json:"repro"`
	Steps     uint64 `json:"steps"`
	Failures  int    `json:"failures"`
	// RealTime: a redis:// run; trace_hash and steps are then 0.
	RealTime bool `json:"real_time,omitempty"`
	// With --check-determinism, on a mismatch: the second run's hash.
	SecondTraceHash string `json:"second_trace_hash,omitempty"`
	Error           string `json:"error,omitempty"`
	Out             string `json:"out,omitempty"` // the failure folder
}

// summaryRecord is the last JSON line. It holds no timing, so two runs of
// the same seeds print identical bytes.
type summaryRecord struct {
	Type    string `json:"type"` // "summary"
	Driver  string `json:"driver"`
	Profile string `json:"profile"`
	Ops     int    `json:"ops"`
	// Sched is the scheduling policy's flags ("--sched pct --depth 3"),
	// absent for the default random policy.
	Sched string `json:"sched,omitempty"`
	// Range is the --seeds value of the whole swarm (START:COUNT, or
	// random) and Shard the --shard I/N this run covered of it, so that
	// storesim merge can tell a missing or duplicated shard.
	Range            string `json:"range"`
	Shard            string `json:"shard"`
	CheckDeterminism bool   `json:"check_determinism,omitempty"`
	Seeds            int    `json:"seeds"`
	Passed           int    `json:"passed"`
	Failed           int    `json:"failed"`
	Safety           int    `json:"safety"`
	Liveness         int    `json:"liveness"`
	Unknown          int    `json:"unknown"`
	HarnessError     int    `json:"harness_error"`
	Determinism      int    `json:"determinism_mismatch"`
	// Classes counts the seeds per class (pass, contract, memory, …:
	// the seed records' class field).
	Classes     map[string]int `json:"classes"`
	Interrupted bool           `json:"interrupted,omitempty"` // budget or Ctrl-C ended a range early
	// Shards is set by storesim merge: how many shard files it folded.
	Shards int `json:"shards,omitempty"`
	Exit   int `json:"exit"`
}

// classOf names the check of SPEC §5 that failed first: linearizability,
// memory, contract (driver D-rules), backend (B- and lender S-rules),
// liveness; or the verdict when nothing failed (pass, unknown,
// harness-error).
func classOf(r *engine.Result) string {
	switch r.Verdict {
	case engine.Pass, engine.Unknown, engine.HarnessError:
		return string(r.Verdict)
	}
	if len(r.Failures) == 0 {
		return string(r.Verdict)
	}
	f := r.Failures[0]
	switch {
	case f.Class == rules.Liveness:
		return "liveness"
	case f.Rule == rules.SLin:
		return "linearizability"
	case f.Rule == rules.SNoLateAccess || f.Rule == rules.DAccessEnd || f.Rule == rules.DSub6:
		return "memory"
	case f.Rule.Class() == rules.Contract: // the D- rules and capabilities
		return "contract"
	}
	return "backend"
}

func record(r *engine.Result) seedRecord {
	rec := seedRecord{Type: "seed", Seed: r.Seed, TraceHash: fmt.Sprintf("%016x", r.TraceHash), Verdict: string(r.Verdict),
		Class: classOf(r), Rule: r.Rule().String(), Repro: reproOf(r), Steps: r.Steps, Failures: len(r.Failures), RealTime: r.RealTime}
	if r.Err != nil {
		rec.Error = r.Err.Error()
	}
	return rec
}

// tally counts outcomes and prints them in order.
type tally struct {
	o              *runOpts
	stdout, stderr io.Writer
	enc            *json.Encoder
	sum            summaryRecord
	writeErr       error
	bar            *progress
	start          time.Time
	steps          uint64
	crashes        int // harness errors that are not a bad op log
}

func newTally(o *runOpts, src *seedSource, stdout, stderr io.Writer) *tally {
	t := &tally{o: o, stdout: stdout, stderr: stderr, enc: json.NewEncoder(stdout), start: time.Now()}
	t.sum = summaryRecord{Type: "summary", Driver: o.cfg.Driver, Profile: string(o.cfg.Profile), Ops: o.cfg.Ops, Sched: strings.TrimSpace(o.cfg.SchedFlags()),
		Range: o.seeds.String(), Shard: fmt.Sprintf("%d/%d", o.shard.i, o.shard.n), CheckDeterminism: o.determinism, Classes: map[string]int{}}
	if isTerminal(stderr) && !o.quiet {
		t.bar = &progress{w: stderr, total: int(src.count)} // 0 for random seeds
	}
	return t
}

func (t *tally) add(oc outcome) {
	r := oc.res
	s := &t.sum
	s.Seeds++
	t.steps += r.Steps
	switch r.Verdict {
	case engine.Safety:
		s.Safety++
	case engine.Liveness:
		s.Liveness++
	case engine.Unknown:
		s.Unknown++
	case engine.HarnessError:
		s.HarnessError++
		if !errors.Is(r.Err, engine.ErrBadLog) {
			t.crashes++
		}
	}
	mismatch := oc.mismatch()
	if mismatch {
		s.Determinism++
	}
	failed := r.Verdict != engine.Pass || mismatch
	if failed {
		s.Failed++
	} else {
		s.Passed++
	}
	rec := record(r)
	if s.Classes == nil { // a tally made without newTally (tests)
		s.Classes = map[string]int{}
	}
	s.Classes[rec.Class]++
	if mismatch {
		rec.SecondTraceHash = fmt.Sprintf("%016x", oc.second.TraceHash)
	}
	if failed && t.o.out != "" && r.Verdict != engine.HarnessError {
		dir, err := writeFailure(t.o.out, r)
		if err != nil {
			t.fail(err)
		}
		rec.Out = dir
	}
	switch {
	case t.o.json:
		if err := t.enc.Encode(rec); err != nil {
			t.fail(err)
		}
	case failed || t.o.verbose || t.o.seeds.random:
		t.bar.clear() // stdout may share the terminal
		fmt.Fprintln(t.stdout, r.Summary())
		if mismatch {
			fmt.Fprintf(t.stdout, "  determinism: a second run gave %s trace=%016x rule=%s (repro: %s run --seeds %d:1 --check-determinism --driver %s --profile %s --ops %d)\n",
				oc.second.Verdict, oc.second.TraceHash, oc.second.Rule(), r.Command(), r.Seed, t.o.cfg.Driver, t.o.cfg.Profile, t.o.cfg.Ops)
		}
		if failed && len(r.Failures) > 0 {
			fmt.Fprintf(t.stdout, "  %s\n", r.Failures[0])
		}
		if failed {
			fmt.Fprintf(t.stdout, "  repro: %s\n", reproOf(r))
		}
		if rec.Out != "" {
			fmt.Fprintf(t.stdout, "  saved: %s\n", rec.Out)
		}
	}
	t.bar.draw(s.Seeds, s.Failed)
}

// fail records the first output error (reported at the end, exit 2).
func (t *tally) fail(err error) {
	if t.writeErr == nil {
		t.writeErr = err
	}
}

// exitCode is the run's exit code: the first of safety (1), liveness (3),
// a harness crash (4), inconclusive (5), input and output errors (2).
func (t *tally) exitCode() int {
	s := &t.sum
	switch {
	case t.o.real.lost.Load() != nil:
		return exitUsage // the store stopped answering: no verdict (as certify's "store unreachable")
	case s.Safety > 0 || s.Determinism > 0:
		return exitSafety
	case s.Liveness > 0:
		return exitLiveness
	case t.crashes > 0:
		return exitHarness
	case s.Unknown > 0:
		return exitInconclusive
	case s.HarnessError > 0 || t.writeErr != nil:
		return exitUsage
	}
	return exitPass
}

func (t *tally) finish(ctx context.Context) int {
	t.bar.clear()
	s := &t.sum
	if ctx.Err() != nil && !t.o.seeds.random {
		s.Interrupted = true
	}
	s.Exit = t.exitCode()
	if t.o.json {
		if err := t.enc.Encode(s); err != nil {
			t.fail(err)
		}
	}
	if t.writeErr != nil {
		fmt.Fprintf(t.stderr, "storesim run: output: %v\n", t.writeErr)
	}
	el := time.Since(t.start)
	rate := float64(s.Seeds) / el.Minutes()
	fmt.Fprintf(t.stderr, "failures: %d safety, %d liveness, %d unknown, %d harness-error, %d determinism; %d seeds in %v (%.0f seeds/min",
		s.Safety, s.Liveness, s.Unknown, s.HarnessError, s.Determinism, s.Seeds, el.Round(time.Millisecond), rate)
	if t.o.real.addr == "" {
		fmt.Fprintf(t.stderr, ", %.0f events/seed", float64(t.steps)/float64(max(s.Seeds, 1)))
	}
	fmt.Fprint(t.stderr, ")")
	if s.Interrupted {
		fmt.Fprint(t.stderr, "; stopped early (budget or interrupt)")
	}
	fmt.Fprintln(t.stderr)
	fmt.Fprintf(t.stderr, "seeds: %d passed, %d failed\n", s.Passed, s.Failed)
	if lost := t.o.real.lost.Load(); lost != nil {
		fmt.Fprintf(t.stderr, "storesim run: %s\n", *lost)
	}
	return s.Exit
}

// writeFailure saves a failing seed's folder: the op log (what replays on
// later commits), the report with its timeline, porcupine's HTML and the
// commands that reproduce it.
func writeFailure(root string, r *engine.Result) (string, error) {
	dir := filepath.Join(root, fmt.Sprintf("seed-%d", r.Seed))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var report, viz strings.Builder
	r.WriteReport(&report)
	vizErr := r.WriteVisualization(&viz)
	cmd := r.Command()
	repro := fmt.Sprintf("%s\n%s replay %s\n%s shrink %s --out %s\n", reproOf(r), cmd, dir, cmd, dir, filepath.Join(dir, "shrunk.txt"))
	if r.RealTime {
		// The simulator refuses a real store: rerun the seed in real time
		// (same workload, a new interleaving).
		repro = reproOf(r) + "\n"
	}
	files := []struct{ name, text string }{
		{"oplog.txt", fmt.Sprintf("# %s\n# repro: %s\n%s", r.Summary(), reproOf(r), r.Log.String())},
		{"report.txt", report.String()},
		{"repro.txt", repro},
	}
	topts := timeline.Options{Repro: reproOf(r)}
	if vizErr == nil {
		files = append(files, struct{ name, text string }{"porcupine.html", viz.String()})
		topts.Porcupine = "porcupine.html"
	}
	var page strings.Builder
	if err := timeline.Write(&page, r, topts); err != nil {
		return dir, fmt.Errorf("timeline.html of seed %d: %w", r.Seed, err)
	}
	files = append(files, struct{ name, text string }{"timeline.html", page.String()})
	var errs []error
	for _, f := range files {
		errs = append(errs, os.WriteFile(filepath.Join(dir, f.name), []byte(f.text), 0o644))
	}
	if vizErr != nil {
		errs = append(errs, fmt.Errorf("porcupine.html of seed %d: %w", r.Seed, vizErr))
	}
	return dir, errors.Join(errs...)
}

// isTerminal: the progress bar is drawn only on a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress is a one-line bar on stderr, redrawn at most ten times a second.
type progress struct {
	w     io.Writer
	total int // 0: unbounded (random seeds)
	last  time.Time
	shown bool
}

func (p *progress) draw(done, failed int) {
	if p == nil || (p.shown && time.Since(p.last) < 100*time.Millisecond && done != p.total) {
		return
	}
	p.last, p.shown = time.Now(), true
	if p.total == 0 {
		fmt.Fprintf(p.w, "\r%d seeds, %d failed", done, failed)
		return
	}
	const width = 30
	n := width * done / p.total
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d seeds, %d failed", strings.Repeat("=", n), strings.Repeat(" ", width-n), done, p.total, failed)
}

func (p *progress) clear() {
	if p == nil || !p.shown {
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
	p.shown = false
}
