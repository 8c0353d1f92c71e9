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
