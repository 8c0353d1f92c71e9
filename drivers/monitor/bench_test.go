package monitor

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

// BenchmarkOverhead runs one workload — 4-row calls, 64 in flight, each
// callback a scheduler Wake that reads the call back — on the in-package fake
// driver, bare and monitored, in alternating rounds of one loop (which goes
// first alternates too), and reports the median of the per-round ratios
// monitored/bare: a paired A/B measurement, so a 10 % change shows through a
// noisy machine. The fake does almost nothing, so the ratio is the worst case
// of the monitor's overhead; see BenchmarkOverheadMemdriver for a realistic
// driver.
//
//	go test -bench Overhead -run '^$' ./drivers/monitor
func BenchmarkOverhead(b *testing.B) {
	rig := func(monitored bool) func(n int) {
		s := sim.New(sim.Options{Seed: 1})
		var d drivers.Driver = newFake(s, defaultCaps, bugs{})
		if monitored {
			d = Wrap(d, Options{Clock: s, Seed: 1}).Driver()
		}
		h, err := d.Register(arena.New("r", 256, 8, arena.Options{}).Region())
		if err != nil {
			b.Fatal(err)
		}
		keys := benchKeys()
		return func(n int) {
			for j := range 64 {
				batch := drivers.RowBatch{Dir: drivers.Fetch, Rows: make([]drivers.Row, 4)}
				for r := range batch.Rows {
					batch.Rows[r] = drivers.Row{Key: keys[(4*(n+j)+r)%len(keys)], Handle: h, Slot: (4*j + r) % 256, Position: r}
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
	}
	PairedRounds(b, rig(false), rig(true))
}

func benchKeys() []string {
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("k/%d", i)
	}
	return keys
}

// PairedRounds times rounds of 64 calls of bare and monitored alternately
// (the first of each pair alternates) and reports monitored/bare, the median
// of the per-pair ratios, and each side's ns per call.
func PairedRounds(b *testing.B, bare, monitored func(n int)) {
	b.Helper()
	var ratios []float64
	var tb, tm time.Duration
	n := 0
	for b.Loop() {
		var db, dm time.Duration
		for k := range 2 {
			if (n/64+k)%2 == 0 {
				t0 := time.Now()
				bare(n)
				db = time.Since(t0)
			} else {
				t0 := time.Now()
				monitored(n)
				dm = time.Since(t0)
			}
		}
		ratios = append(ratios, float64(dm)/float64(db))
		tb, tm = tb+db, tm+dm
		n += 64
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "monitored/bare")
	b.ReportMetric(float64(tb.Nanoseconds())/float64(n), "bare-ns/call")
	b.ReportMetric(float64(tm.Nanoseconds())/float64(n), "monitored-ns/call")
}
