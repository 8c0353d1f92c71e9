package memdriver

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/arena"
	"github.com/storesim/storesim/sim/realtime"
)

// TestRealtime drives one driver on the wall-clock runtime from several
// goroutines at once (submits, cancels, lookups, drains) under the default
// fault mix. Run with -race: it proves the mutex discipline, and that
// Shutdown returns only after running callbacks finished (D-CB-5).
func TestRealtime(t *testing.T) {
	rt := realtime.New(7)
	defer rt.Close()
	store, _ := NewStore(StoreOptions{})
	d := NewTogether(rt, store, Config{Faults: Default()})
	const workers, perWorker, sb = 4, 20, 32
	var arenas []*arena.Arena
	var regions []drivers.Region
	for i := 0; i < workers; i++ {
		a := arena.New(fmt.Sprint("w", i), perWorker*4, sb, arena.Options{Clock: rt})
		for s := 0; s < perWorker*4; s++ {
			a.Lend(s, 1)
		}
		arenas, regions = append(arenas, a), append(regions, a.Region())
	}
	var hs []drivers.Handle
	for try := 0; hs == nil; try++ {
		var err error
		if hs, err = d.RegisterTogether(regions); err != nil && try > 20 {
			t.Fatalf("RegisterTogether: %v %s", err, repro(t))
		}
	}
	for _, a := range arenas {
		a.SetRegistered(true)
	}

	var mu sync.Mutex
	var shutDone bool
	var wg sync.WaitGroup
	for wi := 0; wi < workers; wi++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < perWorker; j++ {
				var rs []drivers.Row
				for k := 0; k < 1+j%4; k++ {
					key := fmt.Sprintf("k%d", (wi+j+k)%13)
					rs = append(rs, drivers.Row{Key: key, Handle: hs[wi], Slot: j*4 + k, Position: k})
				}
				dir := drivers.Publish
				if j%2 == 1 {
					dir = drivers.Fetch
				}
				c, err := d.Submit(drivers.RowBatch{Dir: dir, Rows: rs}, func() {
					mu.Lock()
					defer mu.Unlock()
					if shutDone {
						t.Errorf("D-CB-5: callback after Shutdown returned %s", repro(t))
					}
				})
				if err == nil && j%3 == 0 {
					c.Cancel()
				}
				_, _ = d.Contains(context.Background(), []string{"k1", "k2"})
				d.Drain()
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for !d.Drain().Done && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	labels := d.Shutdown(context.Background())
	mu.Lock()
	shutDone = true
	mu.Unlock()
	time.Sleep(5 * time.Millisecond) // give a stray callback the chance to show itself
	t.Logf("labels after the real-time run: %v", labels)
	for _, a := range arenas {
		for _, v := range a.Violations() {
			t.Errorf("%s: %v %s", v.Rule, v, repro(t))
		}
	}
}
