package redisdriver

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/arena"
)

// plantScenario checks one contract point on a driver; it returns "" when
// the driver behaved correctly, else what it did wrong.
type plantScenario struct {
	name  string
	plant string // the plant that must break this point (and only this one)
	run   func(t *testing.T, cfg Config) string
}

var plantScenarios = []plantScenario{
	{"D-SUB-4/first-writer-wins", PlantOverwritesOnPublish, func(t *testing.T, cfg Config) string {
		r := newRig(t, cfg)
		a, h := r.arena("a", 2, slotBytes)
		first, second := bytes.Repeat([]byte{'A'}, slotBytes), bytes.Repeat([]byte{'B'}, slotBytes)
		a.Fill(0, first)
		a.Fill(1, second)
		c, w := r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: h, Slot: 0})
		await(t, c, w)
		c, w = r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: h, Slot: 1})
		st := await(t, c, w)
		v, _ := r.rawGet("k")
		switch {
		case v == string(second):
			return fmt.Sprintf("second PUBLISH (%v) replaced the first object", st[0])
		case v != string(first):
			return "store lost the first object"
		case st[0] != drivers.OK && st[0] != drivers.Miss:
			return fmt.Sprintf("second PUBLISH answered %v, want OK or MISS", st[0])
		}
		return ""
	}},
	{"D-MISS-HONEST/absent-is-miss", PlantMissAsFault, func(t *testing.T, cfg Config) string {
		r := newRig(t, cfg)
		a, h := r.arena("a", 1, slotBytes)
		c, w := r.submit(drivers.Fetch, drivers.Row{Key: "absent", Handle: h})
		st := await(t, c, w)
		if n := len(touchesBy(a, c.ID())); n != 0 {
			return fmt.Sprintf("%v row touched its slot %d times", st[0], n)
		}
		if st[0] != drivers.Miss {
			return fmt.Sprintf("absent key answered %v", st[0])
		}
		return ""
	}},
	{"D-STATUS/no-write-after-report", PlantWritesAfterReport, func(t *testing.T, cfg Config) string {
		var (
			mu    sync.Mutex
			d     *Driver
			wrong []string
		)
		// At every slot touch, ask the driver whether the touching row was
		// already reported: a FETCH slot must never be written after that.
		hook := func(tc arena.Touch) {
			mu.Lock()
			drv := d
			mu.Unlock()
			drv.mu.Lock()
			c := drv.calls[tc.By.Call]
			var st drivers.Status
			if c != nil {
				st = c.results[tc.By.Row]
			}
			drv.mu.Unlock()
			if st.Final() {
				mu.Lock()
				wrong = append(wrong, fmt.Sprintf("row %d written after it was reported %v", tc.By.Row, st))
				mu.Unlock()
			}
		}
		r := newRig(t, cfg)
		mu.Lock()
		d = r.d
		mu.Unlock()
		a := arena.New("a", 4, slotBytes, arena.Options{Clock: r.clock, OnTouch: hook})
		h, err := r.d.Register(a.Region())
		if err != nil {
			t.Fatal(err)
		}
		a.SetRegistered(true)
		keys := keyset("war", 4)
		for i, k := range keys {
			a.Lend(i, 1)
			r.rawSet(k, content(k, slotBytes))
		}
		c, w := r.submit(drivers.Fetch, rows(h, keys...)...)
		await(t, c, w)
		mu.Lock()
		defer mu.Unlock()
		if len(wrong) > 0 {
			return wrong[0]
		}
		return ""
	}},
}

// TestPlants shows that the plain driver keeps each planted point and that
// each plant breaks exactly its own point and none of the others.
func TestPlants(t *testing.T) {
	for _, plant := range append([]string{""}, Plants()...) {
		name := plant
		if name == "" {
			name = "plain"
		}
		t.Run(name, func(t *testing.T) {
			for _, sc := range plantScenarios {
				t.Run(sc.name, func(t *testing.T) {
					got := sc.run(t, Config{Plant: plant})
					switch {
					case sc.plant == plant && got == "":
						t.Fatalf("plant %s did not break %s %s", plant, sc.name, repro(t))
					case sc.plant != plant && got != "":
						t.Fatalf("driver (plant %q) broke %s: %s %s", plant, sc.name, got, repro(t))
					}
				})
			}
		})
	}
}
