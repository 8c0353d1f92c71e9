package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/storesim/storesim/broken"
	"github.com/storesim/storesim/fuzz/workload"
)

const redisScheme = "redis://"

// plainDrivers say what the drivers that break nothing are.
var plainDrivers = map[string]string{
	"memory":   "the reference driver over the in-process store, one registration per region (breaks nothing)",
	"together": "the reference driver that registers an endpoint's regions in one together-call (breaks nothing)",
}

// driverLine is what storesim drivers prints after a driver's name.
func driverLine(name string) string {
	if s, ok := broken.Lookup(name); ok && strings.HasPrefix(name, broken.Prefix) {
		rule := s.Rule.String()
		if s.Alt != 0 {
			rule += " / " + s.Alt.String()
		}
		return fmt.Sprintf("breaks %s: %s (SPEC §7)", rule, s.Fault)
	}
	if d, ok := plainDrivers[name]; ok {
		return d
	}
	return ""
}

func driversCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if isHelp(args) {
		return noFlagsHelp("drivers", stdout)
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "storesim drivers: takes no arguments, got %q\n", args)
		return exitUsage
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\t%s\n", workload.Mixed, "run's default: memory or together per endpoint, drawn from the seed (breaks nothing)")
	for _, n := range appOf(ctx).names() {
		fmt.Fprintf(tw, "%s\t%s\n", n, driverLine(n))
	}
	tw.Flush()
	fmt.Fprintln(stdout, "# also redis://HOST:PORT (a real Redis or Valkey server) and memcached://HOST:PORT (a real memcached) and blob:BUCKET-URL (an object store: blob:file:///DIR, blob:s3://BUCKET?endpoint=…): accepted by certify and run (real time: a seed replays the workload, not the interleaving); replay, shrink and scenario simulate their drivers and refuse them")
	fmt.Fprintln(stdout, "# and exec:COMMAND [ARGS…]: a driver process in any language speaking docs/PROTOCOL.md (e.g. 'exec:python3 python/reference_driver.py'), in real time like the real stores")
	return exitPass
}
