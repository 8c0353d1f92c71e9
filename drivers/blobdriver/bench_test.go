package blobdriver_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/blobdriver"
	"github.com/storesim/storesim/drivers/drivertest"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/monitor/realprobe"
	"github.com/storesim/storesim/sim/arena"
)

// The benchmarks of this file run on both real backends, as sub-benchmarks
// file/ (a file bucket on a fresh temporary directory) and s3/ (the S3
// protocol over loopback HTTP against a fresh in-process gofakes3 server,
// blobtest.StartS3). Neither needs anything outside the test process, so
// scripts/bench.sh always runs them.
var benchStores = []struct {
	name string
	mk   func(testing.TB) store
}{{"file", fileStore}, {"s3", s3Store}}

// benchRig is one driver on a fresh store and the wall clock its arenas
// and monitor stamp with.
type benchRig struct {
	d     *blobdriver.Driver
	clock wallClock
}

func newBenchRig(b *testing.B, mk func(testing.TB) store) *benchRig {
	st := mk(b)
	return &benchRig{d: newDriver(b, st.url, blobdriver.Config{}), clock: wallClock{start: time.Now()}}
}

// arena registers an arena region of slots×slotBytes with every slot lent
// (no touch log: a benchmark's would grow without bound).
func (r *benchRig) arena(b *testing.B, d drivers.Driver, label string, slots, slotBytes int) (*arena.Arena, drivers.Handle) {
	b.Helper()
	a := arena.New(label, slots, slotBytes, arena.Options{Clock: r.clock})
	h, err := d.Register(a.Region())
	if err != nil {
		b.Fatalf("register %s: %v %s", label, err, repro(b))
	}
	a.SetRegistered(true)
	for s := range slots {
		a.Lend(s, 1)
	}
	return a, h
}

// del deletes keys' objects so the store stays flat (the temporary
// directory, gofakes3's memory).
func (r *benchRig) del(b *testing.B, keys []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, k := range keys {
		if err := r.d.Delete(ctx, k); err != nil {
			b.Fatalf("delete %q: %v %s", k, err, repro(b))
		}
	}
}

func keyset(name string, n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("%s/%02d", name, i)
	}
	return ks
}

// content is the deterministic object stored under key (n bytes).
func content(key string, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	seed := sha256.Sum256([]byte(key))
	for len(out) < n {
		out = append(out, seed[:]...)
		seed = sha256.Sum256(seed[:])
	}
	return out[:n]
}

// BenchmarkPublishFetch16 measures driver throughput in rows/s on each
// backend: each iteration publishes 16 rows (one call: 16 conditional
// writes in row order) and fetches them back (one call: 16 reads) into
// arena memory, waiting for both calls to settle through their callbacks.
// Keys are fresh per iteration; after each iteration the 16 objects are
// deleted so the store stays flat — outside the timer in the serial case,
// inside it in the concurrent one (rows/s there is a lower bound).
//
//	go test -run '^$' -bench PublishFetch ./drivers/blobdriver
func BenchmarkPublishFetch16(b *testing.B) {
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			for _, slot := range []int{4 << 10, 64 << 10} {
				b.Run(fmt.Sprintf("serial/slot=%dKiB", slot>>10), func(b *testing.B) {
					r := newBenchRig(b, bs.mk)
					src, hs := r.arena(b, r.d, "src", 16, slot)
					_, hd := r.arena(b, r.d, "dst", 16, slot)
					for i := range 16 {
						src.Fill(i, content(fmt.Sprint(i), slot))
					}
					b.SetBytes(int64(32 * slot))
					b.ResetTimer()
					for n := range b.N {
						keys := keyset(fmt.Sprintf("b%d", n), 16)
						benchPair(b, r.d, hs, hd, keys)
						b.StopTimer()
						r.del(b, keys)
						b.StartTimer()
					}
					b.ReportMetric(float64(32*b.N)/b.Elapsed().Seconds(), "rows/s")
				})
			}
			b.Run("concurrent/slot=4KiB", func(b *testing.B) {
				const slot = 4 << 10
				r := newBenchRig(b, bs.mk)
				var seq, worker atomic.Int64
				b.SetBytes(32 * slot)
				b.SetParallelism(4) // 4×GOMAXPROCS goroutines (8 on 2 cores), one pair in flight each
				b.ResetTimer()
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					w := worker.Add(1)
					src, hs := r.arena(b, r.d, fmt.Sprintf("src%d", w), 16, slot)
					_, hd := r.arena(b, r.d, fmt.Sprintf("dst%d", w), 16, slot)
					for i := range 16 {
						src.Fill(i, content(fmt.Sprint(i), slot))
					}
					for pb.Next() {
						keys := keyset(fmt.Sprintf("p%d", seq.Add(1)), 16)
						benchPair(b, r.d, hs, hd, keys)
						r.del(b, keys)
					}
				})
				b.ReportMetric(float64(32*b.N)/time.Since(start).Seconds(), "rows/s")
			})
		})
	}
}

// benchPair publishes keys from hs and fetches them into hd through d, one
// 16-row call each, waiting for each call to settle through its callbacks.
func benchPair(b *testing.B, d drivers.Driver, hs, hd drivers.Handle, keys []string) {
	for _, x := range []struct {
		dir drivers.Direction
		h   drivers.Handle
	}{{drivers.Publish, hs}, {drivers.Fetch, hd}} {
		c, wake := submit(b, d, x.dir, rows(x.h, keys...)...)
		await(b, c, wake)
		for _, st := range c.Results() {
			if st != drivers.OK {
				b.Fatalf("%v row %v %s", x.dir, st, repro(b))
			}
		}
	}
}

// BenchmarkMonitorOverhead is the contract monitor's cost on the blob
// driver over each real backend. One workload — a 16-row PUBLISH of fresh
// keys, then a 16-row FETCH of them (4 KiB slots), each awaited through its
// change callbacks — runs bare and through monitor.Wrap configured as the
// harness's real-time mode configures it (wall clock,
// realprobe.LockProbe for D-CB-4, realprobe.Stopwatch for D-CAN-1), on one
// driver.
//
// The machine is shared and a round trip's cost drifts within seconds, by
// more than the overhead sought, so the two are measured side by side:
// every iteration of either sub-benchmark runs one pair bare and one
// monitored, in alternating order; the sub-benchmark's timer counts its own
// variant, and "monitored" also reports the paired ratio monitored/bare of
// the same iterations (goal: at most 1.10, a throughput loss of at most
// 10 %). Objects are deleted outside the timers.
//
//	go test -run '^$' -bench MonitorOverhead -count 5 ./drivers/blobdriver
func BenchmarkMonitorOverhead(b *testing.B) {
	const slot = 4 << 10
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			for _, monitored := range []bool{false, true} {
				b.Run(map[bool]string{false: "bare", true: "monitored"}[monitored], func(b *testing.B) {
					r := newBenchRig(b, bs.mk)
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
						r.del(b, append(ownKeys, otherKeys...))
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
		})
	}
}

// benchSide is one variant of BenchmarkMonitorOverhead: a driver (bare or
// monitored) and its two registered regions, every slot lent, src filled.
type benchSide struct {
	d        drivers.Driver
	src, dst drivers.Handle
}

func newBenchSide(b *testing.B, r *benchRig, d drivers.Driver, name string, slot int) benchSide {
	s := benchSide{d: d}
	src, hs := r.arena(b, d, name+"0", 16, slot)
	_, hd := r.arena(b, d, name+"1", 16, slot)
	for sl := range 16 {
		src.Fill(sl, content(fmt.Sprint(sl), slot))
	}
	s.src, s.dst = hs, hd
	return s
}

// BenchmarkCertify is the certification time of the blob driver on each
// real backend, in real time: one whole certification per iteration, at
// the CLI's scale (`storesim certify --driver blob:file:///DIR`: every rule
// group, 12 seeds per case) and at -short's, on the durable store model
// TestCertify uses. The s3/ figures are the only S3 certification times:
// the CLI cannot reach the in-process gofakes3 server. It reports seconds
// per certification and fails unless the driver is certified.
//
//	go test -run '^$' -bench Certify -benchtime 1x ./drivers/blobdriver
func BenchmarkCertify(b *testing.B) {
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			for _, sc := range []struct {
				name string
				opts drivertest.Options
			}{{"scale=cli", drivertest.Options{}}, {"scale=short", drivertest.Options{Short: true}}} {
				b.Run(sc.name, func(b *testing.B) {
					st := bs.mk(b)
					r := newCertRig(b, st.url, fmt.Sprintf("bench/%d", time.Now().UnixNano()))
					h := r.harness("blob:"+st.name, realDriver)
					b.ResetTimer()
					for range b.N {
						if rep := drivertest.Certify(h, sc.opts); !rep.Certified {
							b.Fatalf("blob:%s not certified: failed %v, gaps %v\n%s(repro: go test -run '^$' -bench 'Certify/%s/%s' -benchtime 1x ./drivers/blobdriver)",
								st.name, rep.Failed(), rep.Gaps, rep.Table(), st.name, sc.name)
						}
					}
					b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/certification")
				})
			}
		})
	}
}
