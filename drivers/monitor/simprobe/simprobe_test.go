package simprobe

import (
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/storesim/storesim/drivers/monitor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const repro = "(repro: go test ./drivers/monitor/simprobe -run TestProbe)"

// TestProbe: a read that returns is returned, one parked on what the
// caller holds is blocked — every time, whatever the load (the loop count
// is a bound on repetitions, not on time).
func TestProbe(t *testing.T) {
	var mu sync.Mutex
	var rw sync.RWMutex
	ch := make(chan struct{})
	for i := range 200 {
		if r := probe(func() { mu.Lock(); mu.Unlock() }, UndecidedAfter); r.Verdict != monitor.ReadReturned {
			t.Fatalf("run %d: a free lock: %v (%s) %s", i, r.Verdict, r.Observed, repro)
		}
	}
	for _, tc := range []struct {
		name  string
		hold  func()
		read  func()
		free  func()
		state string
	}{
		{"mutex", mu.Lock, func() { mu.Lock(); mu.Unlock() }, mu.Unlock, "sync.Mutex.Lock"},
		{"rwmutex", rw.Lock, func() { rw.RLock(); rw.RUnlock() }, rw.Unlock, "sync.RWMutex.RLock"},
		{"channel", func() {}, func() { <-ch }, func() { ch <- struct{}{} }, "chan receive"},
	} {
		for i := range 20 {
			tc.hold()
			r := probe(tc.read, UndecidedAfter)
			tc.free() // the abandoned read finishes now; goleak checks it ends
			if r.Verdict != monitor.ReadBlocked || !strings.Contains(r.Observed, tc.state) {
				t.Fatalf("%s, run %d: %v (%s), want blocked naming %s %s", tc.name, i, r.Verdict, r.Observed, tc.state, repro)
			}
		}
	}
}

// TestUndecided: a read that neither returns nor parks is undecided after
// the safety bound, never blocked.
func TestUndecided(t *testing.T) {
	stop := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(stop) })
	spin := func() {
		for {
			select {
			case <-stop:
				return
			default:
				time.Sleep(time.Millisecond)
			}
		}
	}
	r := probe(spin, 50*time.Millisecond)
	once.Do(func() { close(stop) })
	if r.Verdict != monitor.ReadUndecided {
		t.Fatalf("a sleeping read: %v (%s), want undecided (repro: go test ./drivers/monitor/simprobe -run TestUndecided)", r.Verdict, r.Observed)
	}
}
