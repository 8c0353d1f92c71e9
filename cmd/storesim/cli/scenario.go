package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/storesim/storesim/scenarios"
)

// defaultScenarios is what `storesim scenario` runs without arguments, from
// the repository root.
const defaultScenarios = "scenarios/testdata"

// scenarioCmd runs scenario files and directories of them, one report line
// per file (with the diff of every block that differs). Exit 0 when every
// file passed, 1 when a block differs, 2 when a file is malformed or
// missing (one error line each: file, line, what is wrong).
func scenarioCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := appOf(ctx)
	fs := flag.NewFlagSet("scenario", flag.ContinueOnError)
	rewrite := fs.Bool("rewrite", false, "replace every expected output with what the run prints and write the files back (read the diff before committing)")
	driver := fs.String("driver", "", "replace every endpoint's driver (e.g. broken:LiesAboutAccess: a scenario that exercises its rule must then fail)")
	quiet := quietFlag(fs)
	pos, err := parseFlags(fs, args, stdout)
	if err == nil && *driver != "" {
		err = a.checkDriver(*driver)
	}
	if err != nil {
		return flagErr("scenario", err, stderr)
	}
	if len(pos) == 0 {
		if _, err := os.Stat(defaultScenarios); err != nil {
			return flagErr("scenario", usagef("give scenario files or directories (the default %s is not here: run from the repository root)", defaultScenarios), stderr)
		}
		pos = []string{defaultScenarios}
	}
	opts := scenarios.Options{Rewrite: *rewrite, Driver: *driver, Factory: a.factory(), Log: stderr}
	var files []string
	bad := 0
	for _, p := range pos {
		st, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(stderr, "storesim scenario: %v\n", err)
			bad++
			continue
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		fs, err := scenarios.Files(p)
		if err == nil && len(fs) == 0 {
			err = fmt.Errorf("%s: no scenario files (*%s)", p, scenarios.Ext)
		}
		if err != nil {
			fmt.Fprintf(stderr, "storesim scenario: %v\n", err)
			bad++
		}
		files = append(files, fs...)
	}
	passed, failed := 0, 0
	live := newLiveLine(stderr, *quiet)
	for i, f := range files {
		live.draw(fmt.Sprintf("scenario: %d/%d %s", i+1, len(files), f), false)
		res, err := scenarios.RunFile(f, opts)
		live.clear()
		var se *scenarios.Error
		switch {
		case errors.As(err, &se):
			fmt.Fprintf(stderr, "storesim scenario: %v\n", err)
			bad++
		case err != nil:
			fmt.Fprintf(stderr, "storesim scenario: %s: %v\n", f, err)
			bad++
		case res.Passed() || res.Rewritten:
			passed++
			note := ""
			if res.Rewritten {
				note = ", rewritten"
			}
			fmt.Fprintf(stdout, "ok    %s (%d blocks%s)\n", f, res.Blocks, note)
		default:
			failed++
			fmt.Fprintf(stdout, "FAIL  %s: %d of %d blocks differ (repro: %s scenario %s)\n", f, len(res.Failures), res.Blocks, a.name, f)
			for _, m := range res.Failures {
				fmt.Fprintf(stdout, "  %s\n", strings.ReplaceAll(strings.TrimRight(m.String(), "\n"), "\n", "\n  "))
			}
		}
	}
	fmt.Fprintf(stderr, "scenarios: %d passed, %d failed, %d malformed\n", passed, failed, bad)
	switch {
	case failed > 0:
		return exitSafety
	case bad > 0:
		return exitUsage
	}
	return exitPass
}
