package monitor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

// memWorkload drives a monitored reference driver through a seeded mix of
// publishes, fetches, cancels, lookups and closes, then drain and two
// shutdowns. Keys "pre/…" are in the store from the start and "none/…" are
// never published, so with the calm mix the harness knows their truth.
func memWorkload(t *testing.T, seed uint64, mix memdriver.FaultMix, together, truth bool) []rules.Violation {
	s := sim.New(sim.Options{Seed: seed, MaxWakeDelay: 3 * time.Microsecond, CoalesceChance: 0.3})
	store, err := memdriver.NewStore(memdriver.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const slotBytes, slots = 32, 16
	for i := range 4 {
		store.Put(fmt.Sprintf("pre/%d", i), make([]byte, slotBytes))
	}
	var d drivers.Driver
	cfg := memdriver.Config{Faults: mix}
	if together {
		d = memdriver.NewTogether(s, store, cfg)
	} else {
		d = memdriver.New(s, store, cfg)
	}
	opts := monitor.Options{Clock: s, Seed: seed}
	if truth {
		opts.Truth = func(k string) (bool, bool) {
			switch {
			case strings.HasPrefix(k, "pre/"):
				return true, true
			case strings.HasPrefix(k, "none/"):
				return false, true
			}
			return false, false
		}
	}
	m := monitor.Wrap(d, opts)
	md := m.Driver()

	var regions []drivers.Region
	for i := range 2 {
		a := arena.New(fmt.Sprintf("r%d", i), slots, slotBytes, arena.Options{Clock: s})
		for slot := range slots {
			a.Lend(slot, 1)
		}
		regions = append(regions, a.Region())
	}
	var hs []drivers.Handle
	for try := 0; len(hs) == 0 && try < 20; try++ {
		if tr, ok := md.(drivers.TogetherRegisterer); ok {
			hs, _ = tr.RegisterTogether(regions)
			continue
		}
		for _, r := range regions {
			if h, err := md.Register(r); err == nil {
				hs = append(hs, h)
			}
		}
	}
	if len(hs) == 0 {
		t.Fatalf("seed %d: no registration succeeded", seed)
	}

	rng := s.Rand("test/workload")
	pool := []string{"pre/0", "pre/1", "pre/2", "pre/3", "none/0", "none/1", "k/0", "k/1", "k/2", "k/3", "k/4", "k/5"}
	var calls []drivers.Call
	for step := range 80 {
		switch op := rng.Intn(10); {
		case op < 6:
			dir := drivers.Fetch
			if rng.Chance(0.4) {
				dir = drivers.Publish
			}
			h := hs[rng.Intn(len(hs))]
			n := 1 + rng.Intn(md.Capabilities().MaxRowsPerOp)
			b := drivers.RowBatch{Dir: dir}
			first := rng.Intn(len(pool))
			for i := range n {
				k := pool[(first+i)%len(pool)]
				if dir == drivers.Publish && strings.HasPrefix(k, "none/") {
					k = "k/p" + k
				}
				b.Rows = append(b.Rows, drivers.Row{Key: k, Handle: h, Slot: (step + i) % slots, Position: i})
			}
			var c drivers.Call
			wake := s.Wake("test/onChange", func() {
				if c != nil {
					c.Results()
					c.Access()
				}
			})
			if c, err = md.Submit(b, wake); err == nil {
				calls = append(calls, c)
			}
		case op < 7 && len(calls) > 0:
			calls[rng.Intn(len(calls))].Cancel()
		case op < 8:
			_, _ = md.Contains(context.Background(), []string{pool[rng.Intn(len(pool))], pool[rng.Intn(len(pool))]})
		case op < 9 && step > 60:
			_ = md.Unregister(hs[rng.Intn(len(hs))])
		default:
			s.RunUntil(s.Now() + time.Duration(rng.Intn(100))*time.Microsecond)
		}
	}
	for range 50 {
		if md.Drain().Done {
			break
		}
		if err := s.RunUntilIdle(1_000_000); err != nil && !errors.As(err, new(*sim.HangError)) {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	md.Shutdown(context.Background())
	md.Shutdown(context.Background())
	_ = s.RunUntilIdle(1_000_000)
	return m.Finish()
}

// TestMemdriverConforms: the reference drivers, monitored, under calm,
// default and swarm fault mixes, produce no violation.
func TestMemdriverConforms(t *testing.T) {
	mixes := []struct {
		name  string
		mix   func(seed uint64) memdriver.FaultMix
		truth bool
	}{
		{"calm", func(uint64) memdriver.FaultMix { return memdriver.Calm() }, true},
		{"default", func(uint64) memdriver.FaultMix { return memdriver.Default() }, false},
		{"swarm", memdriver.Swarm, false},
	}
	for _, mx := range mixes {
		for _, together := range []bool{false, true} {
			name := fmt.Sprintf("%s/together=%v", mx.name, together)
			t.Run(name, func(t *testing.T) {
				for seed := range uint64(200) {
					if vs := memWorkload(t, seed, mx.mix(seed), together, mx.truth); len(vs) > 0 {
						t.Fatalf("seed %d: the reference driver was flagged:\n%v\n(repro: go test ./drivers/monitor -run 'TestMemdriverConforms/%s')", seed, vs, name)
					}
				}
			})
		}
	}
}

// BenchmarkOverheadMemdriver is BenchmarkOverhead's workload on the
// reference driver under the default fault mix, bare and monitored, paired
// the same way (PairedRounds).
//
//	go test -bench OverheadMemdriver -run '^$' ./drivers/monitor
func BenchmarkOverheadMemdriver(b *testing.B) {
	rig := func(monitored bool) func(n int) {
		s := sim.New(sim.Options{Seed: 1, MaxWakeDelay: 3 * time.Microsecond})
		store, _ := memdriver.NewStore(memdriver.StoreOptions{})
		var d drivers.Driver = memdriver.New(s, store, memdriver.Config{Faults: memdriver.Default()})
		if monitored {
			d = monitor.Wrap(d, monitor.Options{Clock: s, Seed: 1}).Driver()
		}
		a := arena.New("r", 256, 64, arena.Options{})
		for slot := range 256 {
			a.Lend(slot, 1)
		}
		a.SetRegistered(true) // the monitor would; bare touches must not count as late
		h, err := d.Register(a.Region())
		if err != nil {
			b.Fatal(err)
		}
		keys := make([]string, 1024)
		for i := range keys {
			keys[i] = fmt.Sprintf("k/%d", i)
		}
		return func(n int) {
			for j := range 64 {
				batch := drivers.RowBatch{Dir: drivers.Direction(1 + (n+j)%2), Rows: make([]drivers.Row, 4)}
				for r := range batch.Rows {
					batch.Rows[r] = drivers.Row{Key: keys[(4*(n+j)+r)%len(keys)], Handle: h, Slot: (4*j + r) % 256, Position: r}
				}
				var c drivers.Call
				wake := s.Wake("bench/onChange", func() { c.Results(); c.Access() })
				c, _ = d.Submit(batch, wake)
			}
			if err := s.RunUntilIdle(0); err != nil {
				b.Fatal(err)
			}
		}
	}
	monitor.PairedRounds(b, rig(false), rig(true))
}
