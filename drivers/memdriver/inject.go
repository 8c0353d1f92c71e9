package memdriver

import (
	"fmt"
	"math"
	"strings"

	"github.com/storesim/storesim/drivers"
)

// This file is the scenario language's fault control (package scenarios):
// a scenario states an interleaving exactly, so instead of rates drawn per
// run it switches faults on and off between the events it delivers, and it
// names the few faults whose target a rate cannot pick. Every fault set here
// is one a FaultMix can also produce, so the driver stays conforming.

// SetFault sets the rate of one fault kind (a name of [FaultNames]) of the
// live driver, from the next draw on. A rate of 1 makes every draw at that
// fault's draw point hit, 0 switches it off; so a scenario brackets the
// events it wants faulted. It refuses an unknown name or a rate outside
// [0, 1].
func (d *Driver) SetFault(kind string, rate float64) error {
	k := lookupFault(kind)
	if k < 0 {
		return fmt.Errorf("%w: unknown fault %q (known: %s)", ErrBadFaultMix, kind, strings.Join(FaultNames(), " "))
	}
	if math.IsNaN(rate) || rate < 0 || rate > 1 {
		return fmt.Errorf("%w: fault %s: rate %v outside [0, 1]", ErrBadFaultMix, kind, rate)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	*d.mix.rate(k) = rate
	return nil
}

// InjectStaleLookup makes key stale, as the stale-lookup fault does when a
// lookup finds it: the next FETCH row of key evicts it first and reports an
// honest MISS with the slot untouched (present at lookup, absent at fetch).
// Use it on an evicting store only; on a durable one the eviction breaks the
// store model (S-LIN).
func (d *Driver) InjectStaleLookup(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.markStale(key)
}

// markStale makes key stale (see InjectStaleLookup); most runs never mark
// one, so the map is made on the first. Caller holds d.mu.
func (d *Driver) markStale(key string) {
	if d.stale == nil {
		d.stale = map[string]bool{}
	}
	d.stale[key] = true
}

// InjectTogetherFailure makes the next RegisterTogether of d fail at the
// region labelled label (the together-fail fault at a chosen region k) when
// that region is among those registered; the regions before it are rolled
// back as usual (rollback-fail still applies). One shot.
func (d *Driver) InjectTogetherFailure(label string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failAtLabel = label
}

// injectedFailAt is the hook in RegisterTogether (d.mu held): the index of
// the region an InjectTogetherFailure named, else failAt unchanged.
func (d *Driver) injectedFailAt(regions []drivers.Region, failAt int) int {
	label := d.failAtLabel
	if label == "" {
		return failAt
	}
	d.failAtLabel = ""
	for k, r := range regions {
		if r.Label == label {
			return k
		}
	}
	return failAt
}
