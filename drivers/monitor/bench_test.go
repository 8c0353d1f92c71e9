package monitor

import (
	"fmt"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

// BenchmarkOverhead runs one workload — 4-row calls, 64 in flight, each
// callback a scheduler Wake that reads the call back — on the in-package fake
// driver, bare and monitored. The fake does almost nothing, so the ratio
// monitored/bare is the worst case of the monitor's overhead; see
// BenchmarkOverheadMemdriver for a realistic driver.
func BenchmarkOverhead(b *testing.B) {
	for _, monitored := range []bool{false, true} {
		b.Run(map[bool]string{false: "bare", true: "monitored"}[monitored], func(b *testing.B) {
			s := sim.New(sim.Options{Seed: 1})
			var d drivers.Driver = newFake(s, defaultCaps, bugs{})
			if monitored {
				d = Wrap(d, Options{Clock: s, Seed: 1}).Driver()
			}
			h, err := d.Register(arena.New("r", 256, 8, arena.Options{}).Region())
			if err != nil {
				b.Fatal(err)
			}
			keys := make([]string, 1024)
			for i := range keys {
				keys[i] = fmt.Sprintf("k/%d", i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; {
				for j := 0; j < 64 && n < b.N; j, n = j+1, n+1 {
					batch := drivers.RowBatch{Dir: drivers.Fetch, Rows: make([]drivers.Row, 4)}
					for r := range batch.Rows {
						batch.Rows[r] = drivers.Row{Key: keys[(4*n+r)%len(keys)], Handle: h, Slot: (4*j + r) % 256, Position: r}
					}
					var c drivers.Call
					wake := s.Wake("bench/onChange", func() { c.Results(); c.Access() })
					if c, err = d.Submit(batch, wake); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.RunUntilIdle(0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
