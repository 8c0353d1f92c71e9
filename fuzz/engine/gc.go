package engine

import (
	"flag"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
)

// GCPercent is the garbage collector's target the swarm runs with: a seed's
// live heap is a few megabytes and it allocates under 1 MB of short-lived
// data, so at Go's default (100) a swarm spends about a third of its CPU
// collecting. At 400 the same swarm cost 0.70 of the CPU time (storesim run
// --seeds 0:1000 --driver memory --workers 1, GOGC=100 vs 400, five
// alternating pairs). At 1600 it costs less again, though gctrace puts the
// collector's own share at 1 %: each cycle's mark phase keeps write barriers
// on for several milliseconds of the run. storesim run --seeds 0:20000
// --workers 2, alternating: 400 gave 153,535 / 157,247 / 154,574 seeds/min
// at 43 MB peak RSS, 800 167,589 / 173,130 (59 MB), 1600 176,871 / 177,094 /
// 175,767 / 180,800 (93-101 MB), 3200 179,486 / 185,275 (155-160 MB): 1600
// takes most of the gain for a tenth of a gigabyte.
//
// FuzzGCPercent is a fuzz worker's (TuneFuzzGC): go test -fuzz -parallel 2
// played fewer inputs at 1600 than at 400 in each of three alternating
// 20 s rounds (7,900 / 9,295 / 8,905 inputs/s against 10,280 / 10,216 /
// 10,712), and 200 and 800 did no better than 400 — though one execution on
// one P in a benchmark ran faster at 1600: two workers and the coordinator
// share the machine's caches. GCMemoryLimit bounds what the looser targets
// may cost.
const (
	GCPercent     = 1600
	FuzzGCPercent = 400
	GCMemoryLimit = 4 << 30
)

var tuneOnce sync.Once

// TuneGC sets GCPercent and GCMemoryLimit unless the user set GOGC or
// GOMEMLIMIT (then theirs rule). The CLI and the pipeline benchmarks call
// it, so both run seeds the same way. The first of TuneGC and TuneFuzzGC
// in a process decides. Only memory and GC timing change: no verdict
// depends on them.
func TuneGC() { tuneGC(GCPercent) }

// TuneFuzzGC is TuneGC at FuzzGCPercent: the fuzz targets (FuzzOpLog,
// targets.OpLog) and the benchmarks of one fuzz execution call it.
func TuneFuzzGC() { tuneGC(FuzzGCPercent) }

func tuneGC(percent int) {
	tuneOnce.Do(func() {
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(percent)
		}
		if os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(GCMemoryLimit)
		}
	})
}

// TuneFuzzWorker sizes a go test -fuzz worker process to its share of the
// CPUs, unless the user set GOMAXPROCS. The fuzzer starts -parallel worker
// processes (default: one per CPU), each with GOMAXPROCS = the CPUs, so the
// workers' Ps outnumber the cores -parallel times over; a worker runs one
// input at a time, and package testing hands each input to a new goroutine,
// which wakes an idle P's thread to spin on a core the other workers need.
// With NumCPU/parallel Ps (at least one) per worker, FuzzOpLog played
// 9,200-11,800 inputs/s instead of 7,800-7,950 (2 workers on 2 cores, 20 s
// from a fresh fuzz cache, three runs each). Anywhere but in a fuzz worker
// it does nothing. Only scheduling of the process changes: no verdict
// depends on it.
func TuneFuzzWorker() {
	if os.Getenv("GOMAXPROCS") != "" || !flagIs("test.fuzzworker", "true") {
		return
	}
	parallel := runtime.GOMAXPROCS(0) // testing's default for -parallel
	if f := flag.Lookup("test.parallel"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			parallel = n
		}
	}
	runtime.GOMAXPROCS(max(1, runtime.NumCPU()/parallel))
}

func flagIs(name, value string) bool {
	f := flag.Lookup(name)
	return f != nil && f.Value.String() == value
}

// GrowStack grows the calling goroutine's stack, while it is still
// shallow, to the 64 KiB a run reaches. Package testing runs each fuzz
// input on a new goroutine, whose 8 KiB stack then grew three times during
// the run, each time copying the deep stack of the moment and adjusting
// its frames (runtime.copystack: 3.4 % of a FuzzOpLog execution's
// instructions); one early growth copies almost nothing. Call it first in a
// fuzz target's body. The frame is zeroed on every call, so it is just over
// 32 KiB, the least that takes the stack to 64 KiB at once: a decode and run
// of a corpus input on a new goroutine took 0.98-0.99 of the time it took
// with a 48 KiB frame, and without GrowStack 1.015-1.023 (three runs of
// 3,000 alternating rounds). Only the stack's size changes: no verdict
// depends on it.
//
//go:noinline
func GrowStack() {
	var frame [33 << 10]byte // 8 KiB doubled until this frame fits: 64 KiB
	keep(frame[:])
}

//go:noinline
func keep([]byte) {}
