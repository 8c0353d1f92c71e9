// Command realhunt takes the wall-clock measurements of the bug zoo for
// scripts/zoo.sh (it lives under a /real path because it reads the clock and
// runs child processes):
//
//	realhunt overlay [-dir DIR] NAME                           # plants bug NAME: prints the overlay file's path
//	realhunt swarm -starts 0,10000,… -limit N [-storesim BIN]  # in a build with -overlay
//	realhunt naive -budget 20s -runs 3                         # in a -race build with -overlay
//	realhunt render -in results.jsonl                          # writes docs/ZOO.md to stdout
//	realhunt pct -starts 0,10000,… -limit N [-depths 1,3]      # in a build with -overlay: random vs PCT
//	realhunt schedshrink -limit N -runs R                      # in a build with -overlay: shrink ops, then the schedule
//	realhunt render-pct -in pct.jsonl                          # writes docs/PCT.md to stdout
//	realhunt list                                              # every bug: name caught|escape [depth]
//
// For example, `go build -overlay "$(realhunt overlay nocut_key)" -o
// realhunt-nocut_key ./broken/zoo/realhunt` builds a realhunt that hunts
// nocut_key. swarm and naive print one JSON line (zoo.SwarmRecord,
// zoo.NaiveRecord) for the bug planted in the build (zoo.Planted). naive runs the stress test in
// a child process of itself, so a panic on the runtime's executor or a -race
// report (GORACE=halt_on_error=1, exit status 66) is timed and classified
// instead of killing the measurement.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/storesim/storesim/broken/zoo"
	"github.com/storesim/storesim/broken/zoo/realstress"
	"github.com/storesim/storesim/fuzz/engine"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "overlay":
		err = overlay(args)
	case "swarm":
		err = swarm(args)
	case "naive":
		err = naive(args)
	case "naive-child":
		err = naiveChild(args)
	case "render":
		err = render(args)
	case "pct":
		err = pctHunt(args)
	case "schedshrink":
		err = schedShrink(args)
	case "render-pct":
		err = renderPCT(args)
	case "list":
		for _, b := range zoo.Bugs {
			kind := "escape"
			if b.Caught() {
				kind = "caught"
			}
			if b.Depth > 0 {
				fmt.Println(b.Name, kind, b.Depth)
				continue
			}
			fmt.Println(b.Name, kind)
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "realhunt:", err)
		os.Exit(2)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: realhunt overlay|swarm|naive|render|pct|schedshrink|render-pct|list [flags] (see the package doc)")
	os.Exit(2)
}

func emit(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Println(string(b))
	return err
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func planted() (string, error) {
	if zoo.Planted() == "" {
		return "", errors.New(`no planted bug in this build: build with -overlay "$(realhunt overlay <name>)"`)
	}
	return zoo.Planted(), nil
}

// overlay plants a bug: it writes the patched backend files and the overlay
// file (zoo.Overlay) and prints the overlay file's path.
func overlay(args []string) error {
	fs := flag.NewFlagSet("overlay", flag.ExitOnError)
	dir := fs.String("dir", "", "where to write the overlay (default: storesim-zoo/NAME in the temporary directory)")
	root := fs.String("root", ".", "the repository root")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return errors.New("usage: realhunt overlay [-dir DIR] [-root ROOT] NAME")
	}
	name := fs.Arg(0)
	if *dir == "" {
		*dir = filepath.Join(os.TempDir(), "storesim-zoo", name)
	}
	path, err := zoo.Overlay(*root, *dir, name)
	if err != nil {
		return err
	}
	_, err = fmt.Println(path)
	return err
}

func swarm(args []string) error {
	fs := flag.NewFlagSet("swarm", flag.ExitOnError)
	starts := fs.String("starts", "0,10000,20000,30000,40000", "start seeds, one hunt each")
	limit := fs.Uint64("limit", 2000, "seeds per hunt at most")
	ss := fs.String("storesim", "", "a storesim binary of the same build: shrink the first hunt's failing seed with it")
	shrinkTime := fs.Duration("shrink-time", 20*time.Second, "storesim shrink --time")
	fs.Parse(args)
	bug, err := planted()
	if err != nil {
		return err
	}
	rec := zoo.SwarmRecord{Kind: "swarm", Bug: bug, Limit: *limit}
	// Warm the process up (allocator, first porcupine check) on a seed far
	// from every hunt, so the first hunt is not charged for it.
	zoo.HuntSwarm(1<<40, 3, engine.Config{})
	list := strings.Split(*starts, ",")
	for i, f := range list {
		start, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return fmt.Errorf("-starts: %w", err)
		}
		status("realhunt swarm: %s: hunt %d/%d from seed %d (at most %d seeds)", bug, i+1, len(list), start, *limit)
		t0 := time.Now()
		h := zoo.HuntSwarm(start, *limit, engine.Config{})
		rec.Hunts = append(rec.Hunts, zoo.HuntRecord{Start: start, Tried: h.Tried, Found: h.Found, Seed: h.Seed,
			Verdict: h.Verdict, Rule: h.Rule.String(), Detail: clip(h.Detail, 300), WallMS: ms(time.Since(t0))})
	}
	if *ss != "" && len(rec.Hunts) > 0 && rec.Hunts[0].Found {
		status("realhunt swarm: %s: shrinking seed %d (at most %v)", bug, rec.Hunts[0].Seed, *shrinkTime)
		rec.Shrink = shrink(*ss, rec.Hunts[0].Seed, *shrinkTime)
	}
	status("")
	return emit(rec)
}

var (
	reFrom = regexp.MustCompile(`(?m)^shrink: from (\d+) ops`)
	reTo   = regexp.MustCompile(`(?m)^shrink:\s+to (\d+) ops`)
	reRule = regexp.MustCompile(`(?m)^# storesim shrink: \S+ failure, rule (\S+)`)
)

// shrink runs `storesim shrink` on seed and reads the sizes it prints.
func shrink(bin string, seed uint64, limit time.Duration) *zoo.ShrinkRecord {
	rec := &zoo.ShrinkRecord{Seed: seed}
	out, err := os.CreateTemp("", "zoo-shrink-*.oplog")
	if err != nil {
		rec.Err = err.Error()
		return rec
	}
	out.Close()
	defer os.Remove(out.Name())
	ctx, cancel := context.WithTimeout(context.Background(), limit+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "shrink", "--seed", strconv.FormatUint(seed, 10), "--time", limit.String(), "--out", out.Name())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	err = cmd.Run()
	rec.WallMS = ms(time.Since(t0))
	log, _ := os.ReadFile(out.Name())
	from, to, rule := reFrom.FindSubmatch(stderr.Bytes()), reTo.FindSubmatch(stderr.Bytes()), reRule.FindSubmatch(log)
	switch {
	case strings.Contains(stderr.String(), "panic:"):
		rec.Err = "storesim crashed: the backend panicked and the harness does not recover panics"
	case from == nil || to == nil || rule == nil:
		rec.Err = fmt.Sprintf("storesim shrink: %v: %s", err, clip(stderr.String(), 200))
	default:
		rec.OpsBefore, _ = strconv.Atoi(string(from[1]))
		rec.OpsAfter, _ = strconv.Atoi(string(to[1]))
		rec.Rule = string(rule[1])
	}
	return rec
}

func naive(args []string) error {
	fs := flag.NewFlagSet("naive", flag.ExitOnError)
	budget := fs.Duration("budget", 20*time.Second, "stress time per run at most")
	seed := fs.Uint64("seed", 1, "worker random streams of the first run; run i uses seed+i")
	runs := fs.Int("runs", 1, "runs, one after the other")
	fs.Parse(args)
	bug, err := planted()
	if err != nil {
		return err
	}
	rec := zoo.NaiveRecord{Kind: "naive", Bug: bug, BudgetMS: ms(*budget)}
	for i := range *runs {
		status("realhunt naive: %s: run %d/%d (at most %v)", bug, i+1, *runs, *budget)
		r, err := naiveRun(*budget, *seed+uint64(i))
		if err != nil {
			return err
		}
		rec.Runs = append(rec.Runs, r)
	}
	status("")
	return emit(rec)
}

// stderrIsTerminal: the status line is drawn only on a terminal (scripts/zoo.sh
// run by hand), never into a log.
var stderrIsTerminal = func() bool {
	st, err := os.Stderr.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}()

// status redraws the one status line on stderr ("" clears it).
func status(format string, args ...any) {
	if !stderrIsTerminal {
		return
	}
	fmt.Fprintf(os.Stderr, "\r\033[K"+format, args...)
}

// naiveRun runs the stress test in a child process and times it.
func naiveRun(budget time.Duration, seed uint64) (zoo.NaiveRun, error) {
	self, err := os.Executable()
	if err != nil {
		return zoo.NaiveRun{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "naive-child", "-budget", budget.String(), "-seed", strconv.FormatUint(seed, 10))
	cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	runErr := cmd.Run()
	wall := ms(time.Since(t0))
	run := zoo.NaiveRun{Seed: seed}
	if runErr == nil {
		if err := json.Unmarshal(stdout.Bytes(), &run); err != nil {
			return run, fmt.Errorf("child output %q: %w", stdout.String(), err)
		}
		run.Seed = seed
		return run, nil
	}
	// The child died: a -race report, a panic on the executor, or a hang
	// past every timeout. Its wall time is the time to detect.
	var exit *exec.ExitError
	code := -1
	if errors.As(runErr, &exit) {
		code = exit.ExitCode()
	}
	se := stderr.String()
	switch {
	case code == 66 || strings.Contains(se, "WARNING: DATA RACE"):
		run.Check, run.Detail = "race", clip(firstLines(se[max(0, strings.Index(se, "WARNING: DATA RACE")):], 6), 400)
	case strings.Contains(se, "panic:"):
		run.Check, run.Detail = "panic", clip(se[strings.Index(se, "panic:"):], 300)
	case ctx.Err() != nil:
		run.Check, run.Detail = "timeout", "the stress process did not finish"
	default:
		return run, fmt.Errorf("naive child: %v: %s", runErr, clip(se, 500))
	}
	run.AtMS = wall
	return run, nil
}

func naiveChild(args []string) error {
	fs := flag.NewFlagSet("naive-child", flag.ExitOnError)
	budget := fs.Duration("budget", 20*time.Second, "")
	seed := fs.Uint64("seed", 1, "")
	fs.Parse(args)
	rep := realstress.Run(realstress.Options{Duration: *budget, Seed: *seed})
	run := zoo.NaiveRun{Seed: *seed, Ops: rep.Ops, Rounds: rep.Rounds}
	if f := rep.Naive; f != nil {
		run.Check, run.AtMS, run.Detail = f.Check, ms(f.At), clip(f.Detail, 300)
	}
	if f := rep.Arena; f != nil {
		run.ArenaCheck, run.ArenaMS = f.Check, ms(f.At)
	}
	return emit(run)
}

func render(args []string) error {
	fs := flag.NewFlagSet("render", flag.ExitOnError)
	in := fs.String("in", "", "the JSON Lines scripts/zoo.sh collected")
	fs.Parse(args)
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := zoo.ReadResults(f)
	if err != nil {
		return err
	}
	return zoo.Render(os.Stdout, res)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}
