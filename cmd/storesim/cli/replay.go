package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/shrink"
	"github.com/storesim/storesim/fuzz/timeline"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/scenarios"
)

// source is what replay and shrink start from: a seed (generated with the
// gen flags) or an op log file / failure folder.
type source struct {
	gen  genFlags
	seed uint64
	file string
	fs   *flag.FlagSet
}

func (s *source) register(fs *flag.FlagSet) {
	s.fs = fs
	s.gen.register(fs)
	fs.Uint64Var(&s.seed, "seed", 0, "the seed to generate (with --driver, --profile, --ops)")
}

// resolve checks that exactly one of --seed and FILE was given and returns
// the log and the run config.
func (s *source) resolve(pos []string) (*workload.Log, engine.Config, error) {
	seedSet := wasSet(s.fs, "seed")
	switch {
	case len(pos) > 1:
		return nil, engine.Config{}, usagef("one FILE at most, got %q", pos)
	case len(pos) == 1 && seedSet:
		return nil, engine.Config{}, usagef("give --seed N or FILE, not both")
	case len(pos) == 0 && !seedSet:
		return nil, engine.Config{}, usagef("give --seed N (with --driver, --profile, --ops) or an op log FILE or failure folder")
	case len(pos) == 1 && (wasSet(s.fs, "profile") || wasSet(s.fs, "ops")):
		return nil, engine.Config{}, usagef("--profile and --ops shape generated logs; a FILE replays as written (--driver may replace its endpoints' driver)")
	case len(pos) == 1 && (wasSet(s.fs, "sched") || wasSet(s.fs, "depth") || wasSet(s.fs, "pct-steps")):
		return nil, engine.Config{}, usagef("--sched, --depth and --pct-steps shape generated runs; a FILE replays with its own sched section (docs/FORMATS.md)")
	}
	if seedSet {
		cfg, err := s.gen.config()
		if err != nil {
			return nil, cfg, err
		}
		return engine.Plan(s.seed, cfg), cfg, nil
	}
	s.file = pos[0]
	log, err := readLog(s.file)
	if err != nil {
		return nil, engine.Config{}, err
	}
	if wasSet(s.fs, "driver") {
		if err := s.gen.app.checkDriver(s.gen.driver); err != nil {
			return nil, engine.Config{}, err
		}
		for i := range log.Endpoints {
			log.Endpoints[i].Driver = s.gen.driver
		}
	}
	if err := s.gen.app.checkLog(log); err != nil {
		return nil, engine.Config{}, err
	}
	if s.gen.linTimeout < 0 {
		return nil, engine.Config{}, usagef("--lin-timeout %v: want a positive duration", s.gen.linTimeout)
	}
	return log, s.gen.runConfig(engine.Config{}), nil
}

// origin is the command that reproduces the source.
func (s *source) origin(r *engine.Result) string {
	if s.file == "" {
		return reproOf(r)
	}
	cmd := s.gen.app.name + " replay " + s.file
	if wasSet(s.fs, "driver") {
		cmd += " --driver " + s.gen.driver
	}
	return cmd
}

// errInput is a file that cannot be read or parsed (exit 2).
var errInput = errors.New("input")

// readLog reads an op log file, or the oplog.txt of a failure folder.
func readLog(path string) (*workload.Log, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "oplog.txt")
	}
	if err := checkInFile(path, workload.MaxFileBytes, workload.LimitsDoc); err != nil {
		return nil, err
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInput, err)
	}
	log, err := workload.Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errInput, path, err)
	}
	return log, nil
}

// inputErr prints one line for a usage or input error and returns 2.
func inputErr(cmd string, err error, stderr io.Writer) int {
	var u *usageError
	if errors.As(err, &u) || errors.Is(err, flag.ErrHelp) {
		return flagErr(cmd, err, stderr)
	}
	fmt.Fprintf(stderr, "storesim %s: %v\n", cmd, err)
	return exitUsage
}

// verdictExit maps one result to the CLI's exit code.
func verdictExit(r *engine.Result) int {
	switch r.Verdict {
	case engine.Pass:
		return exitPass
	case engine.Safety:
		return exitSafety
	case engine.Liveness:
		return exitLiveness
	case engine.Unknown:
		return exitInconclusive
	case engine.HarnessError:
		if errors.Is(r.Err, engine.ErrBadLog) {
			return exitUsage // the op log cannot be run as written
		}
		return exitHarness
	}
	return exitHarness // a verdict this CLI does not know
}

// writeReport writes the harness report with the repro line that fits the
// source: a log from a file replays from the file, not from its seed.
func writeReport(w io.Writer, r *engine.Result, repro string) {
	var b strings.Builder
	r.WriteReport(&b)
	text := strings.Replace(b.String(), "repro: "+r.Repro()+"\n", "repro: "+repro+"\n", 1)
	io.WriteString(w, text)
}

func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var src source
	src.gen.app = appOf(ctx)
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	src.register(fs)
	viz := fs.String("viz", "", "write the failure timeline page (one self-contained HTML file) to this file, and porcupine's view of the history next to it (FILE without .html + .porcupine.html)")
	save := fs.String("save", "", "write the op log that was run to this file (turns a seed into a file that replays on later commits)")
	asJSON := fs.Bool("json", false, "print one JSON record (as run --json) instead of the report")
	pos, err := parseFlags(fs, args, stdout)
	if err == nil {
		err = firstErr(checkOutFile("--viz", *viz), checkOutFile("--viz", porcupinePath(*viz)), checkOutFile("--save", *save))
	}
	if err != nil {
		return flagErr("replay", err, stderr)
	}
	log, cfg, err := src.resolve(pos)
	if err != nil {
		return inputErr("replay", err, stderr)
	}
	cfg.AllNotes = *viz != "" // a page of a passing run shows its attempts too
	res := engine.Run(log, cfg)
	repro := src.origin(res)
	if *asJSON {
		rec := record(res)
		rec.Repro = repro
		if err := json.NewEncoder(stdout).Encode(rec); err != nil {
			return inputErr("replay", err, stderr)
		}
	} else {
		writeReport(stdout, res, repro)
	}
	if res.Verdict == engine.HarnessError {
		fmt.Fprintf(stderr, "storesim replay: the harness could not run it: %v\n", res.Err)
	}
	if *viz != "" {
		if err := writeViz(*viz, res, repro, stderr); err != nil {
			return inputErr("replay", fmt.Errorf("--viz: %w", err), stderr)
		}
	}
	if *save != "" {
		text := fmt.Sprintf("# %s\n# repro: %s\n%s", res.Summary(), repro, res.Log.String())
		if err := os.WriteFile(*save, []byte(text), 0o644); err != nil {
			return inputErr("replay", fmt.Errorf("--save: %w", err), stderr)
		}
	}
	fmt.Fprintf(stderr, "trace %016x %s\n", res.TraceHash, res.Verdict)
	return verdictExit(res)
}

// porcupinePath is where replay --viz FILE writes porcupine's view, next to
// the timeline: out.html → out.porcupine.html.
func porcupinePath(viz string) string {
	if viz == "" {
		return ""
	}
	return strings.TrimSuffix(viz, filepath.Ext(viz)) + ".porcupine.html"
}

// writeViz writes the timeline page to path and porcupine's view of the
// history next to it (linked from the page), when porcupine can draw it.
func writeViz(path string, res *engine.Result, repro string, stderr io.Writer) error {
	opts := timeline.Options{Repro: repro}
	if pp := porcupinePath(path); pp != "" {
		if err := writeFile(pp, res.WriteVisualization); err == nil {
			opts.Porcupine = filepath.Base(pp)
		} else {
			os.Remove(pp)
			fmt.Fprintf(stderr, "storesim replay: no porcupine view: %v\n", err)
		}
	}
	var b strings.Builder
	writeReport(&b, res, repro)
	opts.Report = b.String()
	if err := writeFile(path, func(w io.Writer) error { return timeline.Write(w, res, opts) }); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "storesim replay: timeline written to %s", path)
	if opts.Porcupine != "" {
		fmt.Fprintf(stderr, " (porcupine's view: %s)", porcupinePath(path))
	}
	fmt.Fprintln(stderr)
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(write(f), f.Close())
}

func shrinkCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var src source
	src.gen.app = appOf(ctx)
	fs := flag.NewFlagSet("shrink", flag.ContinueOnError)
	src.register(fs)
	budget := fs.Duration("time", time.Minute, "wall-clock cap; the smallest failing log found so far is written when it runs out")
	maxRuns := fs.Int("max-runs", 0, "cap on candidate runs (0: none)")
	out := fs.String("out", "", "write the shrunk op log here (default stdout)")
	scen := fs.String("scenario", "", "also write the shrunk failure as a scenario file with its expected output, ready to become a regression test")
	quiet := quietFlag(fs)
	pos, err := parseFlags(fs, args, stdout)
	if err == nil && *budget <= 0 {
		err = usagef("--time %v: want a positive duration", *budget)
	}
	if err == nil {
		err = firstErr(checkOutFile("--out", *out), checkOutFile("--scenario", *scen))
	}
	if err != nil {
		return flagErr("shrink", err, stderr)
	}
	log, cfg, err := src.resolve(pos)
	if err != nil {
		return inputErr("shrink", err, stderr)
	}
	start := time.Now()
	deadline := start.Add(*budget)
	from := shrink.SizeOf(log)
	live := newLiveLine(stderr, *quiet)
	res, err := shrink.Shrink(log, shrink.Options{
		Config:  cfg,
		MaxRuns: *maxRuns,
		Stop:    func() bool { return time.Now().After(deadline) },
		Progress: func(p shrink.Progress) {
			live.draw(fmt.Sprintf("shrink: run %d (%s): %s", p.Runs, p.Pass, p.Size), false)
		},
	})
	live.clear()
	if errors.Is(err, shrink.ErrNotFailing) {
		fmt.Fprintf(stderr, "storesim shrink: nothing to shrink: %s; only a safety or liveness failure can be shrunk\n", strings.TrimPrefix(err.Error(), "shrink: "))
		return exitUsage
	}
	if err != nil {
		return inputErr("shrink", err, stderr)
	}
	origin := src.origin(res.Run)
	text := res.Text(*out, origin)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(text), 0o644); err != nil {
			return inputErr("shrink", fmt.Errorf("--out: %w", err), stderr)
		}
	} else {
		io.WriteString(stdout, text)
	}
	if *scen != "" {
		if err := writeScenario(*scen, res, origin, stderr); err != nil {
			return inputErr("shrink", fmt.Errorf("--scenario: %w", err), stderr)
		}
	}
	state := "a local minimum"
	if !res.Done {
		state = "stopped by the budget"
	}
	fmt.Fprintf(stderr, "shrink: %s %s kept: %d ops -> %d ops in %d runs, %v (%s); trace %016x\nshrink: from %s\nshrink:   to %s\n",
		res.Verdict, res.Rule, from.Ops, len(res.Log.Ops), res.Runs, time.Since(start).Round(time.Millisecond), state, res.Run.TraceHash, from, shrink.SizeOf(res.Log))
	return exitPass
}

// writeScenario converts the shrunk log to a scenario file (issue 7: the
// minimized failure as a regression test) and says whether its run, under
// the scenario scheduler's interleaving, still breaks the rule.
func writeScenario(path string, res *shrink.Result, origin string, stderr io.Writer) error {
	body, err := scenarios.FromOpLog(res.Log)
	if err != nil {
		return err
	}
	text := fmt.Sprintf("# storesim shrink: %s failure, rule %s, shrunk to %s\n# origin: %s\n# run: %s scenario %s\n", res.Verdict, res.Rule, shrink.SizeOf(res.Log), origin, res.Run.Command(), path) + body
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return err
	}
	run, err := scenarios.Run(path, text, scenarios.Options{})
	switch {
	case err != nil || !run.Passed():
		return fmt.Errorf("the scenario written to %s does not pass as written (err %v)", path, err)
	case slices.Contains(run.Rules, res.Rule):
		fmt.Fprintf(stderr, "shrink: scenario written to %s; its check reports %s\n", path, res.Rule)
	default:
		fmt.Fprintf(stderr, "shrink: scenario written to %s, but its run reports %v, not %s: its interleaving differs from the harness's; the op log is the regression\n", path, run.Rules, res.Rule)
	}
	return nil
}
