// Package cli is storesim's command line as a library: it runs seed
// swarms, replays and shrinks failing seeds, runs scenario files and
// certifies drivers. cmd/storesim is a thin main around [Main]; a driver
// author's own main hands [Main] their drivers ([Options].Drivers) and gets
// the whole CLI for them, every repro line naming their binary:
//
//	package main
//
//	func main() {
//		os.Exit(cli.Main(os.Args[1:], cli.Options{Drivers: map[string]cli.Factory{
//			"mine": func(env cli.Env) (drivers.Driver, error) { return mine.New(env.RT, env.Store, env.Name), nil },
//		}}))
//	}
//
// Below, storesim stands for the command's name ([Options].Name).
//
// # Commands
//
//	storesim run      [--driver NAME] [--seeds START:COUNT|random] [--budget D] [--shard I/N]
//	                  [--profile calm|default|evicting] [--ops N] [--workers N] [--json]
//	                  [--out DIR] [--check-determinism] [-v] [--quiet]
//	storesim run      --driver redis://HOST:PORT|memcached://HOST:PORT [--seeds …] [--stretch N] [--wait D]
//	                  (real time: a seed replays the workload, not the interleaving)
//	storesim merge    [--json] [-v] FILE…   (the run --json output of shards)
//	storesim replay   --seed N [--driver NAME] [--profile P] [--ops N] | FILE|DIR
//	                  [--viz FILE] [--save FILE] [--json]
//	storesim shrink   --seed N [--driver NAME] [--profile P] [--ops N] | FILE|DIR
//	                  [--time 60s] [--max-runs N] [--out FILE] [--scenario FILE] [--quiet]
//	storesim drivers
//	storesim certify  --driver NAME [--json] [--rule GROUP…] [--seed N] [--seeds N] [--short] [--quiet]
//	storesim certify  --driver NAME --rule GROUP --case CASE --seed N [--directed]
//	                  (exactly one run, as a failure's repro names it)
//	storesim diff     --driver A --driver B [--seeds START:COUNT] [--profile P] [--ops N] | --log FILE
//	                  [--wait D] [--evicting] [-v]
//	                  (one op log against two drivers, row by row; SPEC §5, differential runs)
//	storesim scenario [FILE|DIR…] [--rewrite] [--quiet]
//	storesim version  (or storesim --version)
//
// Every command's -h (or --help) shows its forms, its flags and the exit
// codes, and exits 0. replay --viz FILE writes the failure timeline page
// (package fuzz/timeline) and porcupine's view next to it; every failure
// folder of run --out holds both. Output paths are checked before any work
// starts (outpaths.go), and bad input is one line and exit 2
// (docs/FORMATS.md states the formats and their limits).
//
// # Exit codes
//
// The outcome classes are kept apart (TigerBeetle's VOPR does the same);
// every command's -h lists them:
//
//	0  pass: every seed passed (certified; every scenario passed)
//	1  a safety or contract failure (linearizability, memory, a D-/B-/S-
//	   rule), or a determinism mismatch
//	2  a usage or input error: a bad flag, a bad seed spec, an unknown driver
//	   or profile, a malformed op log or scenario file, an op log that cannot
//	   be run as written; one error line says what is wrong
//	3  a liveness failure (a hang, an attempt without outcome)
//	4  the harness itself failed: it could not set up or finish a run (a
//	   crash of storesim, not a verdict on the code under test)
//	5  inconclusive: a linearizability check timed out (verdict "unknown": a
//	   porcupine timeout is never a pass) and nothing failed
//
// When a run has several classes, the first of 1, 3, 4, 5, 2 wins.
//
// # Output
//
// Results go to stdout (JSON Lines with --json, seeds as strings), in seed
// order whatever --workers is, so two runs of the same seeds print the same
// bytes. Progress, configuration and the closing line `seeds: N passed, N
// failed` go to stderr; the progress line of run, certify, shrink and
// scenario only when stderr is a terminal and --quiet is not given.
//
// The version is [Options].Version; cmd/storesim's is stamped at build
// time, or read from the build information (version.go):
//
//	go build -ldflags "-X main.version=v0.3.0 -X main.commit=$(git rev-parse HEAD)" ./cmd/storesim
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// version is the version an app states unless Options.Version says
// otherwise: stamped with -ldflags "-X github.com/storesim/storesim/cmd/storesim/cli.version=…",
// else the module version of go install …@version, else "dev" (version.go).
var version = defaultVersion

// Exit codes (see the package doc).
const (
	exitPass         = 0
	exitSafety       = 1 // safety or contract failure, determinism mismatch
	exitUsage        = 2 // usage or input error
	exitLiveness     = 3
	exitHarness      = 4 // the harness itself failed
	exitInconclusive = 5 // porcupine Unknown, nothing failed
)

// exitCodes is the table every command's -h prints (and the README).
const exitCodes = `exit codes:
  0  pass
  1  safety or contract failure (linearizability, memory, a D-/B-/S- rule), or a determinism mismatch
  2  usage or input error (bad flag, seed spec, driver, profile, op log or scenario file)
  3  liveness failure (a hang, an attempt without outcome)
  4  the harness itself failed (it could not set up or finish a run)
  5  inconclusive (a linearizability check timed out) and nothing failed
  several: the first of 1, 3, 4, 5, 2
`

// run is the whole CLI with its streams given, so tests call it directly.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

type command struct {
	name, summary string
	fn            func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"run", "run a seed swarm (the main job)", runCmd},
		{"merge", "fold the run --json output of shards (--shard I/N) into one verdict", mergeCmd},
		{"replay", "replay a seed or a saved op log bit-identically, with its failure report", replayCmd},
		{"shrink", "minimize a failing seed or op log to a small op log that fails the same way", shrinkCmd},
		{"drivers", "list every driver name", driversCmd},
		{"certify", "certify a driver against the conformance suite", certifyCmd},
		{"diff", "play one op log against two drivers and report the first answer the contract forbids", diffCmd},
		{"scenario", "run scenario files", scenarioCmd},
		{"version", "print the storesim version", versionCmd},
	}
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr, appOf(ctx).name)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "--help", "-help":
		usage(stdout, appOf(ctx).name)
		return exitPass
	case "--version", "-version":
		return versionCmd(ctx, args[1:], stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.fn(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "storesim: unknown command %q (want one of %s; see storesim help)\n", args[0], commandNames())
	return exitUsage
}

func commandNames() string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

func usage(w io.Writer, name string) {
	fmt.Fprintf(w, "usage: %s COMMAND [flags]   (%s COMMAND -h for its forms and flags; %s --version)\n", name, name, name)
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, exitCodes)
}

func versionCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if isHelp(args) {
		return noFlagsHelp("version", stdout)
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "storesim version: takes no arguments, got %q\n", args)
		return exitUsage
	}
	b := readBuild(debug.ReadBuildInfo)
	if a := appOf(ctx); a.version != "" && a.version != defaultVersion {
		b.Version = a.version
	}
	b.write(stdout, appOf(ctx).name)
	return exitPass
}

// usageError is a bad flag or argument: exit 2 with one line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// parseFlags parses flags that may come before, between and after
// positional arguments (`replay FILE --viz x.html`), and returns the
// positional ones. -h prints the flags to stdout and returns flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				writeSynopsis(stdout, fs.Name())
				fmt.Fprintln(stdout, "flags:")
				fs.SetOutput(stdout)
				fs.PrintDefaults()
				fmt.Fprint(stdout, exitCodes)
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// isHelp: a command without flags was asked for its help.
func isHelp(args []string) bool {
	return len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help")
}

// noFlagsHelp is the -h of a command without flags.
func noFlagsHelp(cmd string, stdout io.Writer) int {
	writeSynopsis(stdout, cmd)
	fmt.Fprint(stdout, exitCodes)
	return exitPass
}

// flagErr turns a parse error into the exit code, printing one line.
func flagErr(cmd string, err error, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitPass
	}
	fmt.Fprintf(stderr, "storesim %s: %v (see storesim %s -h)\n", cmd, err, cmd)
	return exitUsage
}

func wasSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}
