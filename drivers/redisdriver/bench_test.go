package redisdriver

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/arena"
)

// BenchmarkPublishFetch16 measures driver throughput in rows/s: each
// iteration publishes 16 rows (one call, SET NX pipelined) and fetches them
// back (one call, GET pipelined) into arena memory, waiting for both calls
// to settle through their callbacks. Keys are fresh per iteration; after
// each iteration the 16 keys are deleted (one pipelined DEL) so the server's
// memory stays flat — outside the timer in the serial case, inside it in
// the concurrent one (rows/s there is a lower bound).
//
//	scripts/with-redis.sh go test -bench . -run '^$' ./drivers/redisdriver
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
				benchPair(b, r, hs, hd, keys)
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
					b.Errorf("register: %v", err)
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
				benchPair(b, r, hs, hd, keys)
				del(b, r, keys)
			}
		})
		b.ReportMetric(float64(32*b.N)/time.Since(start).Seconds(), "rows/s")
	})
}

func benchPair(b *testing.B, r *rig, hs, hd drivers.Handle, keys []string) {
	for _, x := range []struct {
		dir drivers.Direction
		h   drivers.Handle
	}{{drivers.Publish, hs}, {drivers.Fetch, hd}} {
		w := newWatcher()
		c, err := r.d.Submit(drivers.RowBatch{Dir: x.dir, Rows: rows(x.h, keys...)}, w.onChange)
		if err != nil {
			b.Fatalf("submit: %v", err)
		}
		for st := await(b, c, w); len(st) > 0; st = st[1:] {
			if st[0] != drivers.OK {
				b.Fatalf("%v row %v %s", x.dir, st[0], repro(b))
			}
		}
	}
}

func del(b *testing.B, r *rig, keys []string) {
	cmds := make(rueidis.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = r.raw.B().Del().Key(r.prefix + k).Build()
	}
	for _, res := range r.raw.DoMulti(context.Background(), cmds...) {
		if err := res.Error(); err != nil {
			b.Fatalf("del: %v", err)
		}
	}
}
