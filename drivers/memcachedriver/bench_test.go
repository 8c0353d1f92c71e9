package memcachedriver

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/monitor/realprobe"
	"github.com/storesim/storesim/sim/arena"
)

// BenchmarkPublishFetch16 measures driver throughput in rows/s: each
// iteration publishes 16 rows (one call: 16 adds in row order) and fetches
// them back (one call: one multi-get) into arena memory, waiting for both
// calls to settle through their callbacks. Keys are fresh per iteration;
// after each iteration the 16 keys are deleted so the server's memory stays
// flat (it runs with -m 8) — outside the timer in the serial case, inside
// it in the concurrent one (rows/s there is a lower bound).
//
//	scripts/with-memcached.sh go test -bench PublishFetch -run '^$' ./drivers/memcachedriver
func BenchmarkPublishFetch16(b *testing.B) {
	for _, slot := range []int{4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("serial/slot=%dKiB", slot>>10), func(b *testing.B) {
			r := newRig(b, Config{})
			src, hs := r.arena("src", 16, slot)
			_, hd := r.arena("dst", 16, slot)
			for i := range 16 {
				src.Fill(i, content(fmt.Sprint(i), slot))
			}
			b.SetBytes(int64(32 * slot))
			b.ResetTimer()
			for n := range b.N {
				keys := keyset(fmt.Sprintf("b%d", n), 16)
				benchPair(b, r.d, hs, hd, keys)
				b.StopTimer()
				del(b, r, keys)
				b.StartTimer()
			}
			b.ReportMetric(float64(32*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
	b.Run("concurrent/slot=4KiB", func(b *testing.B) {
		const slot = 4 << 10
		r := newRig(b, Config{})
		var seq, worker atomic.Int64
		b.SetBytes(32 * slot)
		b.SetParallelism(4) // 4×GOMAXPROCS goroutines (8 on 2 cores), one pair in flight each
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			w := worker.Add(1)
			src := arena.New(fmt.Sprintf("src%d", w), 16, slot, arena.Options{Clock: r.clock})
			dst := arena.New(fmt.Sprintf("dst%d", w), 16, slot, arena.Options{Clock: r.clock})
			var hs, hd drivers.Handle
			for _, x := range []struct {
				a *arena.Arena
				h *drivers.Handle
			}{{src, &hs}, {dst, &hd}} {
				h, err := r.d.Register(x.a.Region())
				if err != nil {
					b.Errorf("register: %v %s", err, repro(b))
					return
				}
				*x.h = h
				x.a.SetRegistered(true)
				for i := range 16 {
					x.a.Lend(i, 1)
				}
			}
			for pb.Next() {
				keys := keyset(fmt.Sprintf("p%d", seq.Add(1)), 16)
				benchPair(b, r.d, hs, hd, keys)
				del(b, r, keys)
			}
		})
		b.ReportMetric(float64(32*b.N)/time.Since(start).Seconds(), "rows/s")
	})
}

// benchPair publishes keys from hs and fetches them into hd through d, one
// 16-row call each, waiting for each call to settle through its callbacks.
func benchPair(b *testing.B, d drivers.Driver, hs, hd drivers.Handle, keys []string) {
	for _, x := range []struct {
		dir drivers.Direction
		h   drivers.Handle
	}{{drivers.Publish, hs}, {drivers.Fetch, hd}} {
		w := newWatcher()
		c, err := d.Submit(drivers.RowBatch{Dir: x.dir, Rows: rows(x.h, keys...)}, w.onChange)
		if err != nil {
			b.Fatalf("submit: %v %s", err, repro(b))
		}
		for st := await(b, c, w); len(st) > 0; st = st[1:] {
			if st[0] != drivers.OK {
				b.Fatalf("%v row %v %s", x.dir, st[0], repro(b))
			}
		}
	}
}

// BenchmarkMonitorOverhead is the contract monitor's cost on the memcached
// driver over a real server. One workload — a 16-row PUBLISH of fresh keys,
// then a 16-row FETCH of them (4 KiB slots), each awaited through its
// change callbacks — runs bare and through monitor.Wrap configured as the
// harness's real-time mode configures it (wall clock,
// realprobe.LockProbe for D-CB-4, realprobe.Stopwatch for D-CAN-1), on one
// driver.
//
// The machine is shared and a round trip's cost drifts by ±20 % within
// seconds, more than the overhead sought, so the two are measured side by
// side: every iteration of either sub-benchmark runs one pair bare and one
// monitored, in alternating order; the sub-benchmark's timer counts its own
// variant, and "monitored" also reports the paired ratio monitored/bare of
// the same iterations (goal: at most 1.10, a throughput loss of at most
// 10 %). Keys are deleted outside the timers.
//
//	scripts/with-memcached.sh go test -run '^$' -bench MonitorOverhead -count 5 ./drivers/memcachedriver
func BenchmarkMonitorOverhead(b *testing.B) {
	const slot = 4 << 10
	for _, monitored := range []bool{false, true} {
		b.Run(map[bool]string{false: "bare", true: "monitored"}[monitored], func(b *testing.B) {
			r := newRig(b, Config{})
			m := monitor.Wrap(r.d, monitor.Options{Clock: r.clock, Seed: 1,
				LockProbe: realprobe.LockProbe(0), CancelBound: realprobe.Stopwatch(0)})
			sides := [2]benchSide{newBenchSide(b, r, r.d, "bare", slot), newBenchSide(b, r, m.Driver(), "mon", slot)}
			own, other := sides[0], sides[1]
			if monitored {
				own, other = sides[1], sides[0]
			}
			var otherTime time.Duration
			b.SetBytes(32 * slot)
			b.ResetTimer()
			for n := range b.N {
				ownKeys, otherKeys := keyset(fmt.Sprintf("o%d", n), 16), keyset(fmt.Sprintf("x%d", n), 16)
				if n%2 == 1 {
					b.StopTimer()
					t0 := time.Now()
					benchPair(b, other.d, other.src, other.dst, otherKeys)
					otherTime += time.Since(t0)
					b.StartTimer()
				}
				benchPair(b, own.d, own.src, own.dst, ownKeys)
				b.StopTimer()
				if n%2 == 0 {
					t0 := time.Now()
					benchPair(b, other.d, other.src, other.dst, otherKeys)
					otherTime += time.Since(t0)
				}
				del(b, r, append(ownKeys, otherKeys...))
				b.StartTimer()
			}
			b.ReportMetric(float64(32*b.N)/b.Elapsed().Seconds(), "rows/s")
			if monitored && otherTime > 0 {
				b.ReportMetric(float64(b.Elapsed())/float64(otherTime), "monitored/bare")
			}
			if v := m.Violations(); len(v) > 0 {
				b.Fatalf("the monitor found %d violations on the correct driver, first %s %s", len(v), v[0], repro(b))
			}
		})
	}
}

// benchSide is one variant of BenchmarkMonitorOverhead: a driver (bare or
// monitored) and its two registered regions, every slot lent, src filled.
type benchSide struct {
	d        drivers.Driver
	src, dst drivers.Handle
}

func newBenchSide(b *testing.B, r *rig, d drivers.Driver, name string, slot int) benchSide {
	s := benchSide{d: d}
	for i, h := range []*drivers.Handle{&s.src, &s.dst} {
		a := arena.New(fmt.Sprintf("%s%d", name, i), 16, slot, arena.Options{Clock: r.clock})
		var err error
		if *h, err = d.Register(a.Region()); err != nil {
			b.Fatalf("register %s: %v %s", a.Label(), err, repro(b))
		}
		a.SetRegistered(true)
		for sl := range 16 {
			a.Lend(sl, 1)
			if i == 0 {
				a.Fill(sl, content(fmt.Sprint(sl), slot))
			}
		}
	}
	return s
}

func del(b *testing.B, r *rig, keys []string) {
	for _, k := range keys {
		if err := r.raw.Delete(r.d.ItemKey(k)); err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
			b.Fatalf("delete %q: %v %s", k, err, repro(b))
		}
	}
}
