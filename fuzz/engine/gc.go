package engine

import (
	"os"
	"runtime/debug"
	"sync"
)

// GCPercent is the garbage collector's target the swarm runs with: a seed's
// live heap is a few megabytes and it allocates under 1 MB of short-lived
// data, so at Go's default (100) a swarm spends about a third of its CPU
// collecting. At 400 the same swarm costs 0.70 of the CPU time (storesim run
// --seeds 0:1000 --driver memory --workers 1, GOGC=100 vs 400, five
// alternating pairs). GCMemoryLimit bounds what the looser target may cost.
const (
	GCPercent     = 400
	GCMemoryLimit = 4 << 30
)

var tuneOnce sync.Once

// TuneGC sets GCPercent and GCMemoryLimit unless the user set GOGC or
// GOMEMLIMIT (then theirs rule). The CLI, the fuzz targets and the
// pipeline benchmarks call it, so all three run seeds the same way. Only
// memory and GC timing change: no verdict depends on them.
func TuneGC() {
	tuneOnce.Do(func() {
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(GCPercent)
		}
		if os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(GCMemoryLimit)
		}
	})
}
