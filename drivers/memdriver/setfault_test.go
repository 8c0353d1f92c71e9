package memdriver

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers"
)

// TestSetFault: a rate switched on mid-run hits the next draw, switched off
// it stops; bad names and rates are refused.
func TestSetFault(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			e := newEnv(t, k, envOpts{seed: 3})
			a := e.arena("a", 4, 16)
			h := e.register(a)
			for _, key := range []string{"k0", "k1"} {
				e.store.Put(key, content(key, 16))
			}
			if err := e.d.SetFault("error-before", 1); err != nil {
				t.Fatalf("SetFault: %v %s", err, repro(t))
			}
			c1, _ := e.submit(drivers.Fetch, rows(h, "k0"))
			if err := e.d.SetFault("error-before", 0); err != nil {
				t.Fatalf("SetFault: %v %s", err, repro(t))
			}
			c2, _ := e.submit(drivers.Fetch, []drivers.Row{{Key: "k1", Handle: h, Slot: 1, Position: 0}})
			e.run()
			if got := c1.Results(); !slices.Equal(got, statuses(drivers.Fault)) {
				t.Errorf("faulted call: %v, want [FAULT] %s", got, repro(t))
			}
			if got := c2.Results(); !slices.Equal(got, statuses(drivers.OK)) {
				t.Errorf("call after the fault was switched off: %v, want [OK] %s", got, repro(t))
			}
			for _, bad := range []struct {
				kind string
				rate float64
			}{{"no-such-fault", 1}, {"row-fault", 1.5}, {"row-fault", -1}} {
				if err := e.d.SetFault(bad.kind, bad.rate); !errors.Is(err, ErrBadFaultMix) {
					t.Errorf("SetFault(%q, %v) = %v, want ErrBadFaultMix %s", bad.kind, bad.rate, err, repro(t))
				}
			}
		})
	}
}

// TestInjectStaleLookup: a key made stale is evicted by its next FETCH row,
// which reports an honest MISS without touching the slot.
func TestInjectStaleLookup(t *testing.T) {
	e := newEnv(t, kinds[0], envOpts{seed: 4, store: StoreOptions{Evicting: true}})
	a := e.arena("a", 2, 16)
	h := e.register(a)
	e.store.Put("k0", content("k0", 16))
	e.d.InjectStaleLookup("k0")
	c, w := e.submit(drivers.Fetch, rows(h, "k0"))
	e.run()
	w.settled()
	if got := c.Results(); !slices.Equal(got, statuses(drivers.Miss)) || e.store.Has("k0") || len(touchesBy(a, c.ID(), 0)) != 0 {
		t.Fatalf("stale key: results %v, still stored %v, touches %d; want [MISS], evicted, untouched %s", got, e.store.Has("k0"), len(touchesBy(a, c.ID(), 0)), repro(t))
	}
}

// TestInjectTogetherFailure: the next together-registration fails exactly at
// the named region, rolls the earlier ones back, and only once.
func TestInjectTogetherFailure(t *testing.T) {
	e := newEnv(t, kinds[1], envOpts{seed: 5})
	regs := []drivers.Region{e.arena("r0", 1, 8).Region(), e.arena("r1", 1, 8).Region(), e.arena("r2", 1, 8).Region()}
	e.d.InjectTogetherFailure("r1")
	_, err := e.td.RegisterTogether(regs)
	if !errors.Is(err, drivers.ErrRegistrationRefused) || !strings.Contains(err.Error(), `"r1"`) {
		t.Fatalf("RegisterTogether = %v, want a refusal at region r1 %s", err, repro(t))
	}
	if n := len(e.d.bindings); n != 0 {
		t.Fatalf("%d bindings left after the rollback %s", n, repro(t))
	}
	hs, err := e.td.RegisterTogether(regs)
	if err != nil || len(hs) != 3 {
		t.Fatalf("second RegisterTogether = %v, %v; the injection is one shot %s", hs, err, repro(t))
	}
}
