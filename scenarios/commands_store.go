package scenarios

import (
	"strconv"

	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/sim"
)

// The commands of the store: store (durable or evicting; the scenario's
// scheduler and seed) and evict.

func cmdStore(w *scenarioRun, b *block) error {
	if w.s != nil {
		return w.fail(b, "store defined twice")
	}
	switch b.pos[0] {
	case "durable":
	case "evicting":
		w.evicting = true
	default:
		return w.fail(b, "bad argument %q: want durable or evicting", b.pos[0])
	}
	seed := uint64(1)
	if v, ok := b.args["seed"]; ok {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return w.badArg(b, "seed", "an unsigned integer")
		}
		seed = n
	}
	wake, err := w.durArg(b, "wake-delay", 0)
	if err != nil {
		return err
	}
	coalesce, err := w.floatArg(b, "coalesce", 0)
	if err != nil {
		return err
	}
	evict, err := w.floatArg(b, "evict-chance", 0)
	if err != nil {
		return err
	}
	if evict > 0 && !w.evicting {
		return w.fail(b, "evict-chance needs an evicting store")
	}
	w.seed = seed
	w.s = sim.New(sim.Options{Seed: seed, MaxWakeDelay: wake, CoalesceChance: coalesce})
	st, err := memdriver.NewStore(memdriver.StoreOptions{Evicting: w.evicting, EvictChance: evict, Rand: w.s.Rand("scenario/store"), OnEvent: w.storeEvent})
	if err != nil {
		return w.fail(b, "%v", err)
	}
	w.store = st
	w.printf("store %s seed=%d wake-delay=%v coalesce=%v evict-chance=%v", b.pos[0], seed, wake, coalesce, evict)
	return nil
}

func cmdEvict(w *scenarioRun, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	w.store.Evict(b.pos[0])
	return nil
}
