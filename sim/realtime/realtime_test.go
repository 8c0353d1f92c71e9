package realtime

import (
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSerialExecution: posts, wakes and timers all run on the one executor,
// never concurrently, and a stopped timer never runs.
func TestSerialExecution(t *testing.T) {
	r := New(1)
	defer r.Close()
	var running, overlap, ran atomic.Int32
	body := func() {
		if running.Add(1) > 1 {
			overlap.Add(1)
		}
		time.Sleep(10 * time.Microsecond)
		running.Add(-1)
		ran.Add(1)
	}
	wake := r.Wake("w", body)
	for range 50 {
		go wake()
		r.Post("p", body)
		r.After(time.Millisecond, "t", body)
	}
	stopped := r.After(time.Hour, "never", func() { t.Error("stopped timer ran") })
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer returned false (repro: go test ./sim/realtime)")
	}
	deadline := time.Now().Add(5 * time.Second)
	for ran.Load() < 150 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	r.Do(func() {})
	if ran.Load() != 150 || overlap.Load() != 0 {
		t.Fatalf("ran %d of 150, %d overlaps (repro: go test -race ./sim/realtime)", ran.Load(), overlap.Load())
	}
}
