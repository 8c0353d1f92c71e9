package cli

import (
	"os"
	"runtime/debug"
	"sync"
)

// gcPercent is the garbage collector's target storesim runs with: a seed's
// live heap is a few megabytes and it allocates about 1 MB of short-lived
// data, so at Go's default (100) a swarm spends about a third of its CPU
// collecting. At 400 the same swarm costs 0.70 of the CPU time (storesim run
// --seeds 0:1000 --driver memory --workers 1, GOGC=100 vs 400, five
// alternating pairs). gcMemoryLimit bounds what the looser target may cost.
const (
	gcPercent     = 400
	gcMemoryLimit = 4 << 30
)

var tuneOnce sync.Once

// tuneGC sets gcPercent and gcMemoryLimit unless the user set GOGC or
// GOMEMLIMIT (then theirs rule). Only memory and GC timing change: no
// verdict depends on them.
func tuneGC() {
	tuneOnce.Do(func() {
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(gcPercent)
		}
		if os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(gcMemoryLimit)
		}
	})
}
