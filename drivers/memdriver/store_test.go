package memdriver

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

func TestStore(t *testing.T) {
	t.Run("first-writer-wins", func(t *testing.T) {
		var events []StoreEvent
		s, err := NewStore(StoreOptions{OnEvent: func(e StoreEvent) { events = append(events, e) }})
		if err != nil {
			t.Fatal(err)
		}
		obj := []byte("one")
		if !s.Put("k", obj) || s.Put("k", []byte("two")) {
			t.Fatalf("D-SUB-4: Put wrote a held key %s", repro(t))
		}
		obj[0] = 'X' // the store keeps its own copy
		got, ok := s.Get("k")
		if !ok || string(got) != "one" {
			t.Fatalf("D-SUB-4: Get = %q, %v; want the first object %s", got, ok, repro(t))
		}
		got[0] = 'Y'
		if again, _ := s.Get("k"); string(again) != "one" {
			t.Fatalf("Get returned the store's own bytes %s", repro(t))
		}
		if !s.Evict("k") || s.Evict("k") || s.Has("k") {
			t.Fatalf("Evict twice: the key should go once %s", repro(t))
		}
		want := []StoreEvent{
			{Kind: EventPut, Key: "k", Stored: true}, {Kind: EventPut, Key: "k"},
			{Kind: EventEvict, Key: "k", Stored: true}, {Kind: EventEvict, Key: "k"},
		}
		if !slices.Equal(events, want) {
			t.Errorf("events = %v, want %v %s", events, want, repro(t))
		}
	})
	t.Run("keys-sorted", func(t *testing.T) {
		s, _ := NewStore(StoreOptions{})
		for _, k := range []string{"c", "a", "b"} {
			s.Put(k, nil)
		}
		if got := s.Keys(); !slices.Equal(got, []string{"a", "b", "c"}) || s.Len() != 3 {
			t.Errorf("Keys = %v, Len = %d %s", got, s.Len(), repro(t))
		}
	})
	t.Run("evicting-seeded", func(t *testing.T) {
		run := func(seed uint64) []string {
			s, err := NewStore(StoreOptions{Evicting: true, EvictChance: 0.3, Rand: sim.NewRand(seed)})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 50; i++ {
				s.Put(string(rune('A'+i)), []byte{byte(i)})
			}
			return s.Keys()
		}
		a, b, c := run(1), run(1), run(2)
		if !slices.Equal(a, b) || len(a) == 50 || slices.Equal(a, c) {
			t.Errorf("evictions: seed 1 gave %d and %d keys, seed 2 %d; want equal, fewer than 50, different %s", len(a), len(b), len(c), repro(t))
		}
	})
	t.Run("bad-options", func(t *testing.T) {
		for _, o := range []StoreOptions{
			{Evicting: true, EvictChance: -0.1, Rand: sim.NewRand(0)},
			{Evicting: true, EvictChance: 1.5, Rand: sim.NewRand(0)},
			{Evicting: true, EvictChance: math.NaN(), Rand: sim.NewRand(0)},
			{Evicting: true, EvictChance: 0.5},
			{EvictChance: 0.5, Rand: sim.NewRand(0)},
		} {
			if _, err := NewStore(o); !errors.Is(err, ErrBadStoreOptions) {
				t.Errorf("NewStore(%+v) = %v, want ErrBadStoreOptions %s", o, err, repro(t))
			}
		}
	})
}

// TestTwoDriversOneStore: two endpoints publish and fetch through one
// store and see each other's rows; the first writer wins across drivers.
func TestTwoDriversOneStore(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			e := newEnv(t, k, envOpts{seed: 11})
			other := New(e.s, e.store, Config{Name: "other"})
			const sb = 8
			a := e.arena("a", 2, sb)
			b := arena.New("b", 2, sb, arena.Options{}) // the other driver's calls are not tracked by e
			b.Lend(0, 1)
			b.Lend(1, 1)
			ha := e.register(a)
			hb, err := other.Register(b.Region())
			if err != nil {
				t.Fatal(err)
			}
			b.SetRegistered(true)
			a.Fill(0, content("from-a", sb))
			b.Fill(0, content("from-b", sb))
			b.Fill(1, content("clash-b", sb))
			a.Fill(1, content("clash-a", sb))

			pa, _ := e.submit(drivers.Publish, rows(ha, "from-a", "clash"))
			e.run()
			pb, err := other.Submit(drivers.RowBatch{Dir: drivers.Publish, Rows: rows(hb, "from-b", "clash")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			e.run()
			if !allStatus(pa.Results(), drivers.OK) || !allStatus(pb.Results(), drivers.OK) {
				t.Fatalf("publishes = %v, %v %s", pa.Results(), pb.Results(), repro(t))
			}
			fa, _ := e.submit(drivers.Fetch, rows(ha, "from-b", "clash"))
			fb, err := other.Submit(drivers.RowBatch{Dir: drivers.Fetch, Rows: rows(hb, "from-a")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			e.run()
			if !allStatus(fa.Results(), drivers.OK) || !allStatus(fb.Results(), drivers.OK) {
				t.Fatalf("fetches = %v, %v %s", fa.Results(), fb.Results(), repro(t))
			}
			if !bytes.Equal(a.Peek(0), content("from-b", sb)) || !bytes.Equal(b.Peek(0), content("from-a", sb)) {
				t.Errorf("a fetch did not return the other driver's object %s", repro(t))
			}
			if !bytes.Equal(a.Peek(1), content("clash-a", sb)) {
				t.Errorf("D-SUB-4: the second driver's publish replaced the first object %s", repro(t))
			}
			if l1, l2 := e.d.Shutdown(context.Background()), other.Shutdown(context.Background()); len(l1)+len(l2) != 0 {
				t.Errorf("Shutdown labels %v %v %s", l1, l2, repro(t))
			}
		})
	}
}
