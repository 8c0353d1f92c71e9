package main

import (
	"context"
	"fmt"
	"io"

	"github.com/storesim/storesim/fuzz/registry"
)

const redisScheme = "redis://"

func driversCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if isHelp(args) {
		return noFlagsHelp("drivers", stdout)
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "storesim drivers: takes no arguments, got %q\n", args)
		return exitUsage
	}
	for _, n := range registry.Names() {
		fmt.Fprintln(stdout, n)
	}
	fmt.Fprintln(stdout, "# also redis://HOST:PORT (a real Redis or Valkey server) and memcached://HOST:PORT (a real memcached): accepted by certify and run (real time: a seed replays the workload, not the interleaving); replay, shrink and scenario simulate their drivers and refuse them")
	return exitPass
}
