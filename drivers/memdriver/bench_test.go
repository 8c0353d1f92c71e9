package memdriver

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

// BenchmarkRoundTrip measures one PUBLISH and one FETCH of four rows
// through the simulator (Submit, transfer steps, callbacks, to idle).
func BenchmarkRoundTrip(b *testing.B) {
	for _, c := range []struct {
		name string
		m    FaultMix
		sb   int
	}{{"calm/64B", Calm(), 64}, {"calm/4KiB", Calm(), 4096}, {"default/64B", Default(), 64}, {"default/4KiB", Default(), 4096}} {
		mix := c
		b.Run(c.name, func(b *testing.B) {
			s := sim.New(sim.Options{Seed: 1, MaxWakeDelay: time.Microsecond})
			store, _ := NewStore(StoreOptions{})
			d := New(s, store, Config{Faults: mix.m})
			a := arena.New("a", 8, mix.sb, arena.Options{})
			for i := 0; i < 8; i++ {
				a.Lend(i, 1)
			}
			a.SetRegistered(true)
			h, err := d.Register(a.Region())
			for err != nil {
				h, err = d.Register(a.Region())
			}
			keys := make([][]drivers.Row, 64)
			for i := range keys {
				keys[i] = rows(h, fmt.Sprint("a", i), fmt.Sprint("b", i), fmt.Sprint("c", i), fmt.Sprint("d", i))
			}
			fetchRows := make([][]drivers.Row, len(keys))
			for i, rs := range keys {
				fetchRows[i] = append([]drivers.Row(nil), rs...)
				for j := range fetchRows[i] {
					fetchRows[i][j].Slot += 4
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, _ = d.Submit(drivers.RowBatch{Dir: drivers.Publish, Rows: keys[i%len(keys)]}, func() {})
				_ = s.RunUntilIdle(0)
				_, _ = d.Submit(drivers.RowBatch{Dir: drivers.Fetch, Rows: fetchRows[i%len(keys)]}, func() {})
				_ = s.RunUntilIdle(0)
			}
			b.ReportMetric(float64(s.Steps())/float64(b.N), "events/op")
		})
	}
}

// BenchmarkSwarmSeed measures one seed of TestSwarm end to end.
func BenchmarkSwarmSeed(b *testing.B) {
	var st swarmStats
	for i := 0; i < b.N; i++ {
		runSwarm(b, uint64(i%1000), &st)
	}
}

// BenchmarkFaultLines is what a run pays for one endpoint's fault mix: the
// swarm draw, its lines (as an op log carries them) and their parse.
//
//	go test -run '^$' -bench FaultLines -benchmem ./drivers/memdriver
func BenchmarkFaultLines(b *testing.B) {
	lines := 0
	for i := 0; b.Loop(); i++ {
		text := Swarm(uint64(i)).String()
		ls := strings.Split(text, "\n")
		lines += len(ls)
		if _, err := ParseFaultLines(ls...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(lines)/float64(b.N), "lines/op")
}
