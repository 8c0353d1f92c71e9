package cli

import (
	"fmt"
	"io"
)

// synopses are the forms of each command, positional arguments included, as
// its -h prints them above the flags (a command without an entry prints
// "storesim NAME [flags]").
var synopses = map[string][]string{
	"run": {
		"storesim run [--driver NAME] [--seeds START:COUNT|random] [--profile P] [--ops N] [--out DIR] [flags]",
		"storesim run --driver redis://HOST:PORT [--seeds …] [--stretch N] [--wait D]   (real time)",
		"storesim run --driver 'exec:COMMAND [ARGS…]' [--seeds …] [--stretch N] [--wait D]   (a driver process, docs/PROTOCOL.md; real time)",
	},
	"replay": {
		"storesim replay --seed N [--driver NAME] [--profile P] [--ops N] [flags]",
		"storesim replay FILE|DIR [--driver NAME] [flags]   (an op log, or a failure folder from run --out)",
	},
	"shrink": {
		"storesim shrink --seed N [--driver NAME] [--profile P] [--ops N] [flags]",
		"storesim shrink FILE|DIR [--driver NAME] [flags]   (an op log, or a failure folder from run --out)",
	},
	"drivers": {"storesim drivers   (no flags, no arguments)"},
	"certify": {"storesim certify --driver NAME|redis://HOST:PORT|'exec:COMMAND [ARGS…]' [flags]"},
	"diff": {
		"storesim diff --driver A --driver B [--seeds START:COUNT] [--profile P] [--ops N] [flags]",
		"storesim diff --driver A --driver B --log FILE|DIR [flags]   (an op log, or a failure folder from run --out)",
	},
	"scenario": {"storesim scenario [FILE|DIR…] [flags]   (default: scenarios/testdata, from the repository root)"},
	"version":  {"storesim version   (also storesim --version; no flags, no arguments)"},
}

// writeSynopsis prints a command's usage lines.
func writeSynopsis(w io.Writer, cmd string) {
	lines, ok := synopses[cmd]
	if !ok {
		lines = []string{"storesim " + cmd + " [flags]"}
	}
	for i, l := range lines {
		lead := "usage: "
		if i > 0 {
			lead = "   or: "
		}
		fmt.Fprintln(w, lead+l)
	}
}
