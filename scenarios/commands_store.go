package scenarios

import (
	"strconv"

	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/sim"
)

// The commands of the store: store (durable or evicting; the scenario's
// scheduler and seed; order=fifo: the default schedule, nothing drawn from
// the seed) and evict.

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
	o := sim.Options{Seed: seed, MaxWakeDelay: wake, CoalesceChance: coalesce}
	fifo := false
	switch b.args["order"] {
	case "", "seed":
	case "fifo":
		// The default schedule (sim.Schedule{}): events due together run
		// in creation order, no callback delay, no coalescing; the
		// scheduler draws nothing from the seed.
		if wake != 0 || coalesce != 0 {
			return w.fail(b, "order=fifo is the default schedule: no callback delay and no coalescing (drop wake-delay and coalesce)")
		}
		o.Script, fifo = &sim.Schedule{}, true
	default:
		return w.badArg(b, "order", "seed or fifo")
	}
	w.seed = seed
	w.s = sim.New(o)
	st, err := memdriver.NewStore(memdriver.StoreOptions{Evicting: w.evicting, EvictChance: evict, Rand: w.s.Rand("scenario/store"), OnEvent: w.storeEvent})
	if err != nil {
		return w.fail(b, "%v", err)
	}
	w.store = st
	if fifo {
		w.printf("store %s seed=%d order=fifo evict-chance=%v", b.pos[0], seed, evict)
		return nil
	}
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
