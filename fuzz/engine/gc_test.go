package engine

import (
	"runtime"
	"testing"
)

// TestTuneFuzzWorkerOutsideWorker: outside a go test -fuzz worker process
// (this test binary without -test.fuzzworker), TuneFuzzWorker leaves
// GOMAXPROCS as it is.
func TestTuneFuzzWorkerOutsideWorker(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	TuneFuzzWorker()
	if after := runtime.GOMAXPROCS(0); after != before {
		runtime.GOMAXPROCS(before)
		t.Fatalf("GOMAXPROCS %d → %d outside a fuzz worker (repro: go test ./fuzz/engine -run TestTuneFuzzWorkerOutsideWorker)", before, after)
	}
}
