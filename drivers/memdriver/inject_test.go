package memdriver

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/arena"
)

// faultRun is one call under one fault, as the fault tests see it.
type faultRun struct {
	e       *env
	a       *arena.Arena
	call    drivers.Call
	w       *watch
	keys    []string
	afterOK []int // per row, touches that happened after the row's result was OK
}

// runFault runs one call of dir over four keys (all present in the store
// for FETCH) under mix and returns it settled. The arena hook of env checks
// D-ACCESS-END, D-SUB-6 and untouched MISS rows on every touch.
func runFault(t *testing.T, k kind, seed uint64, mix FaultMix, dir drivers.Direction, so StoreOptions) faultRun {
	t.Helper()
	const sb = 16
	e := newEnv(t, k, envOpts{seed: seed, cfg: Config{Faults: mix}, store: so})
	r := faultRun{e: e, a: e.arena("a", 4, sb), keys: []string{"k0", "k1", "k2", "k3"}, afterOK: make([]int, 4)}
	h := e.register(r.a)
	for i, key := range r.keys {
		if dir == drivers.Fetch {
			e.store.Put(key, content(key, sb))
		} else {
			r.a.Fill(i, content(key, sb))
		}
	}
	e.touchHook = func(tc arena.Touch) {
		if r.call.Results()[tc.By.Row] == drivers.OK {
			r.afterOK[tc.By.Row]++
		}
	}
	r.call, r.w = e.submit(dir, rows(h, r.keys...))
	e.run()
	r.w.settled()
	e.noViolations()
	return r
}

func (r faultRun) touches() int { return len(r.a.Touches()) }

func allStatus(res []drivers.Status, st drivers.Status) bool {
	for _, s := range res {
		if s != st {
			return false
		}
	}
	return true
}

// TestFaults checks that each injected fault has its legal shape (SPEC §6):
// a driver under any fault still keeps every D-rule.
func TestFaults(t *testing.T) {
	evicting := StoreOptions{Evicting: true}
	cases := []struct {
		name string
		run  func(t *testing.T, k kind)
	}{
		{"error-before", func(t *testing.T, k kind) {
			for _, dir := range []drivers.Direction{drivers.Fetch, drivers.Publish} {
				r := runFault(t, k, 1, FaultMix{ErrorBefore: 1}, dir, StoreOptions{})
				if !allStatus(r.call.Results(), drivers.Fault) || r.call.Access() != drivers.AccessEnded || r.touches() != 0 {
					t.Errorf("%v error-before = %v/%v with %d touches, want all FAULT/ENDED, none %s", dir, r.call.Results(), r.call.Access(), r.touches(), repro(t))
				}
			}
		}},
		{"error-after", func(t *testing.T, k kind) {
			proven, unproven := 0, 0
			for seed := uint64(0); seed < 40; seed++ {
				r := runFault(t, k, seed, FaultMix{ErrorAfter: 1}, drivers.Publish, StoreOptions{})
				if !slices.Contains(r.w.history, drivers.AccessUnprovable) && r.call.Access() != drivers.AccessUnprovable {
					continue // the call finished before the error point
				}
				if r.touches() == 0 || slices.Contains(r.call.Results(), drivers.NotAttempted) {
					t.Errorf("error-after: %d touches, results %v; want bytes moved and every unfinished row FAULT %s", r.touches(), r.call.Results(), repro(t))
				}
				if r.call.Access() == drivers.AccessEnded {
					proven++
				} else {
					unproven++
				}
			}
			if proven == 0 || unproven == 0 {
				t.Errorf("error-after over 40 seeds: %d proven later, %d never; want both %s", proven, unproven, repro(t))
			}
		}},
		{"wrong-length", func(t *testing.T, k kind) {
			r := runFault(t, k, 2, FaultMix{WrongLength: 1}, drivers.Fetch, StoreOptions{})
			if !allStatus(r.call.Results(), drivers.Fault) || r.call.Access() != drivers.AccessUnprovable || r.touches() == 0 {
				t.Errorf("wrong-length = %v/%v, %d touches; want every row FAULT, UNPROVABLE %s", r.call.Results(), r.call.Access(), r.touches(), repro(t))
			}
			if labels := r.e.d.Shutdown(context.Background()); !slices.Equal(labels, []string{"call:1:unprovable", "region:a:retained"}) {
				t.Errorf("wrong-length: Shutdown = %v %s", labels, repro(t))
			}
		}},
		{"late-write", func(t *testing.T, k kind) {
			r := runFault(t, k, 3, FaultMix{LateWrite: 1}, drivers.Fetch, StoreOptions{})
			if !allStatus(r.call.Results(), drivers.OK) || r.call.Access() != drivers.AccessEnded {
				t.Fatalf("late-write = %v/%v %s", r.call.Results(), r.call.Access(), repro(t))
			}
			for i, key := range r.keys {
				if r.afterOK[i] == 0 || !bytes.Equal(r.a.Peek(i), content(key, 16)) {
					t.Errorf("late-write row %d: %d writes after OK, slot holds object = %v %s", i, r.afterOK[i], bytes.Equal(r.a.Peek(i), content(key, 16)), repro(t))
				}
			}
		}},
		{"unprovable-later", func(t *testing.T, k kind) {
			r := runFault(t, k, 4, FaultMix{UnprovableLater: 1}, drivers.Publish, StoreOptions{})
			if !allStatus(r.call.Results(), drivers.OK) || !slices.Equal(r.w.history, []drivers.Access{drivers.AccessUnprovable, drivers.AccessEnded}) {
				t.Errorf("unprovable-later = %v, access history %v %s", r.call.Results(), r.w.history, repro(t))
			}
		}},
		{"timeout", func(t *testing.T, k kind) {
			hit := 0
			for seed := uint64(0); seed < 20; seed++ {
				r := runFault(t, k, seed, FaultMix{Timeout: 1}, drivers.Fetch, StoreOptions{})
				if r.call.Access() != drivers.AccessEnded {
					t.Errorf("timeout: access %v, want proven ENDED once quiet %s", r.call.Access(), repro(t))
				}
				if slices.Contains(r.w.history, drivers.AccessUnprovable) {
					hit++
				}
			}
			if hit == 0 {
				t.Errorf("timeout never fired over 20 seeds %s", repro(t))
			}
		}},
		{"row-fault", func(t *testing.T, k kind) {
			for _, dir := range []drivers.Direction{drivers.Fetch, drivers.Publish} {
				r := runFault(t, k, 5, FaultMix{RowFault: 1}, dir, StoreOptions{})
				if !allStatus(r.call.Results(), drivers.Fault) || r.call.Access() != drivers.AccessEnded {
					t.Errorf("%v row-fault = %v/%v %s", dir, r.call.Results(), r.call.Access(), repro(t))
				}
			}
		}},
		{"row-miss", func(t *testing.T, k kind) {
			r := runFault(t, k, 6, FaultMix{RowMiss: 1}, drivers.Fetch, evicting)
			if !allStatus(r.call.Results(), drivers.Miss) || r.touches() != 0 || r.e.store.Len() != 0 {
				t.Errorf("FETCH row-miss = %v, %d touches, %d keys left; want MISS by eviction %s", r.call.Results(), r.touches(), r.e.store.Len(), repro(t))
			}
			r = runFault(t, k, 6, FaultMix{RowMiss: 1}, drivers.Publish, StoreOptions{})
			if !allStatus(r.call.Results(), drivers.Miss) || r.e.store.Len() != 0 {
				t.Errorf("PUBLISH row-miss = %v, %d keys stored; want declined %s", r.call.Results(), r.e.store.Len(), repro(t))
			}
			r = runFault(t, k, 6, FaultMix{RowMiss: 1}, drivers.Fetch, StoreOptions{})
			if !allStatus(r.call.Results(), drivers.OK) {
				t.Errorf("FETCH row-miss on a store that does not evict = %v, want OK (fault inert) %s", r.call.Results(), repro(t))
			}
		}},
		{"stale-lookup", func(t *testing.T, k kind) {
			for _, absentIsMiss := range []bool{true, false} {
				caps := DefaultCaps
				caps.AbsentIsMiss = absentIsMiss
				e := newEnv(t, k, envOpts{cfg: Config{Caps: caps, Faults: FaultMix{StaleLookup: 1}}, store: evicting})
				h := e.register(e.arena("a", 2, 8))
				e.store.Put("k", make([]byte, 8))
				if found, err := e.d.Contains(context.Background(), []string{"k"}); err != nil || !found[0] {
					t.Fatalf("stale-lookup: Contains = %v, %v %s", found, err, repro(t))
				}
				c, w := e.submit(drivers.Fetch, rows(h, "k"))
				e.run()
				w.settled()
				if c.Results()[0] != drivers.Miss || e.store.Has("k") {
					t.Errorf("stale-lookup (AbsentIsMiss=%v): FETCH = %v, key held %v; want MISS, evicted %s", absentIsMiss, c.Results(), e.store.Has("k"), repro(t))
				}
			}
		}},
		{"evict", func(t *testing.T, k kind) {
			r := runFault(t, k, 7, FaultMix{Evict: 1}, drivers.Fetch, evicting)
			if r.e.store.Len() == 4 || slices.Contains(r.call.Results(), drivers.Fault) {
				t.Errorf("evict: %d keys left, results %v; want evictions and no FAULT %s", r.e.store.Len(), r.call.Results(), repro(t))
			}
		}},
		{"delay", func(t *testing.T, k kind) {
			calm := runFault(t, k, 8, FaultMix{}, drivers.Publish, StoreOptions{})
			slow := runFault(t, k, 8, FaultMix{Delay: 1}, drivers.Publish, StoreOptions{})
			if slow.e.s.Now() <= calm.e.s.Now() {
				t.Errorf("delay: finished at %v, calm run at %v %s", slow.e.s.Now(), calm.e.s.Now(), repro(t))
			}
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, k) })
			}
		})
	}
}
