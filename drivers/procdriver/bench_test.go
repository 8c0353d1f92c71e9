package procdriver_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/sim/arena"
	"github.com/storesim/storesim/sim/realtime"
)

// BenchmarkRowsPerSecond measures what the process boundary costs: the
// same workload — one iteration publishes 16 rows (one call) and fetches
// them back (one call) into arena memory, waiting for both calls to end
// through their callbacks — on the Go memory driver on the real-time
// runtime (memdriver, no faults, 1 ns steps: its own cost only) and on the
// Python reference driver behind the protocol (python/reference_driver.py
// --latency-ms 0: JSON lines both ways, the region memory shared with the
// process, the audit of every region at every notification, Python's own
// cost), and on the same Python driver over Go heap memory the driver
// mirrors into mappings of its own (python-mirrored: what sharing the
// caller's memory saves). rows/s is 32 rows per iteration; the ratio of
// the Python and Go figures is the overhead.
//
//	go test -bench RowsPerSecond -run '^$' ./drivers/procdriver
func BenchmarkRowsPerSecond(b *testing.B) {
	for _, slot := range []int{64, 4 << 10} {
		b.Run(fmt.Sprintf("memdriver/slot=%d", slot), func(b *testing.B) {
			rt := realtime.New(1)
			defer rt.Close()
			store, _ := memdriver.NewStore(memdriver.StoreOptions{})
			caps := memdriver.DefaultCaps
			caps.MaxRowsPerOp = 16
			d := memdriver.New(rt, store, memdriver.Config{Caps: caps, StepDelay: time.Nanosecond})
			benchPairs(b, d, nil, slot)
			shutdown(b, d)
		})
		// python: the region memory is the caller's, shared (arena.Shared:
		// nothing is copied); python-mirrored: Go heap memory, which the
		// driver mirrors into mappings of its own (protocol 1's only way:
		// every PUBLISH slot copied out, every changed slot copied back).
		for _, m := range memModes {
			name := "python"
			if m.name != "shared" {
				name += "-" + m.name
			}
			b.Run(fmt.Sprintf("%s/slot=%d", name, slot), func(b *testing.B) {
				d := start(b, refCmd(b, "--latency-ms", "0", "--max-rows", "16"), nil)
				benchPairs(b, d, m.sh(b), slot)
				shutdown(b, d)
			})
		}
	}
}

func benchPairs(b *testing.B, d drivers.Driver, sh *arena.Shared, slot int) {
	src, dst := lent(sh, "src", 16, slot, false), lent(sh, "dst", 16, slot, false)
	hs, err := d.Register(src.Region())
	if err != nil {
		b.Fatalf("register: %v %s", err, repro(b))
	}
	hd, err := d.Register(dst.Region())
	if err != nil {
		b.Fatalf("register: %v %s", err, repro(b))
	}
	pub := make([]drivers.Row, 16)
	fet := make([]drivers.Row, 16)
	for i := range pub {
		content := make([]byte, slot)
		for j := range content {
			content[j] = byte(i + j)
		}
		src.Fill(i, content)
		key := fmt.Sprintf("bench/k%d", i) // the same keys every time: the store stays small
		pub[i] = drivers.Row{Key: key, Handle: hs, Slot: i, Position: i}
		fet[i] = drivers.Row{Key: key, Handle: hd, Slot: i, Position: i}
	}
	s := newSignal()
	done := func(c drivers.Call) func() bool {
		return func() bool {
			if c.Access() != drivers.AccessEnded {
				return false
			}
			for _, st := range c.Results() {
				if !st.Final() {
					return false
				}
			}
			return true
		}
	}
	b.SetBytes(int64(32 * slot))
	b.ResetTimer()
	for range b.N {
		for _, rows := range [][]drivers.Row{pub, fet} {
			dir := drivers.Publish
			if &rows[0] == &fet[0] {
				dir = drivers.Fetch
			}
			c, err := d.Submit(drivers.RowBatch{Dir: dir, Rows: rows}, s.fire)
			if err != nil {
				b.Fatalf("submit: %v %s", err, repro(b))
			}
			until(b, s, "the call", done(c))
			if res := c.Results(); res[15] != drivers.OK {
				b.Fatalf("%v: %v %s", dir, res, repro(b))
			}
		}
	}
	b.ReportMetric(float64(32*b.N)/b.Elapsed().Seconds(), "rows/s")
}
