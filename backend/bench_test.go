package backend_test

import (
	"fmt"
	"testing"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/sim"
)

// BenchmarkPipeline measures the whole simulated pipeline: one backend on a
// calm memdriver, each iteration a publish and a fetch of 8 rows (4 calls,
// look-ups first), run to quiescence. rows/s counts rows moved per
// wall-clock second.
//
//	go test ./backend -run '^$' -bench Pipeline -benchtime 2000x
func BenchmarkPipeline(b *testing.B) {
	for _, absent := range []bool{true, false} {
		b.Run(fmt.Sprintf("absent-is-miss=%v", absent), func(b *testing.B) {
			s := sim.New(sim.Options{Seed: 1})
			st, _ := memdriver.NewStore(memdriver.StoreOptions{})
			caps := memdriver.DefaultCaps
			caps.AbsentIsMiss = absent
			d := memdriver.New(s, st, memdriver.Config{Caps: caps})
			rs := []drivers.Region{{Label: "kv", SlotBytes: 64, Slots: 16, Mem: make(drivers.Bytes, 64*16)}}
			be, err := backend.New(s, d, rs, backend.Config{})
			if err != nil {
				b.Fatal(err)
			}
			h, _ := be.Handle("kv")
			views := [2]drivers.View{}
			for v := range views {
				for i := range 8 {
					views[v].Rows = append(views[v].Rows, drivers.Row{Handle: h, Slot: 8*v + i, Position: i})
					views[v].Mask = append(views[v].Mask, true)
				}
			}
			b.ResetTimer()
			for n := range b.N {
				for i := range 8 {
					k := fmt.Sprintf("k%d-%d", n, i)
					views[0].Rows[i].Key, views[1].Rows[i].Key = k, k
				}
				p, _ := be.Publish(views[0])
				_ = s.RunUntilIdle(0)
				f, _ := be.Fetch(views[1])
				_ = s.RunUntilIdle(0)
				if p.State() != backend.Delivered || f.State() != backend.Delivered {
					b.Fatalf("publish %v fetch %v", p.Outcome(), f.Outcome())
				}
			}
			b.ReportMetric(float64(16*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
