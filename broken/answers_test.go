package broken_test

import (
	"context"
	"fmt"

	"github.com/storesim/storesim/broken"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim/arena"
)

// The directed scenarios of the drivers whose bug hides in an answer the
// suite once took on trust (answers.go). Each puts the driver where the
// answer is given and asks for it, so the check that judges that answer
// sees it: the monitor's AtRest (a drain at rest), its Shutdown labels, its
// lookup truth, the memory oracle's store log, S-LIN over lookups.
func init() {
	for name, sc := range map[broken.Name]scenario{
		// Every row faults: once the calls ENDED and nothing is runnable, a
		// drain must be done.
		broken.DrainLeaksFaulted: {setup: setup{faults: memdriver.FaultMix{RowFault: 1}}, run: func(w *world) {
			w.fetch("pre/0", "pre/1")
			w.fetch("pre/2")
			w.run()
			w.d.Drain()
			w.run()
			w.atRest()
		}},
		// A wrong-length answer leaves the call UNPROVABLE for ever:
		// evidence, so at rest the drain must be done.
		broken.DrainWaitsForProof: {setup: setup{faults: memdriver.FaultMix{WrongLength: 1}}, run: func(w *world) {
			w.fetch("pre/0")
			w.run()
			w.d.Drain()
			w.run()
			w.atRest()
		}},
		// An UNPROVABLE call names the main region at Shutdown.
		broken.ReleasesRetained: {setup: setup{faults: memdriver.FaultMix{WrongLength: 1}}, run: func(w *world) {
			w.fetch("pre/0")
			w.run()
			w.shutdown()
		}},
		// A publish cancelled before any row started.
		broken.CancelledPublishLands: {run: func(w *world) {
			w.publish("k/0", "k/1", "k/2").Cancel()
			w.run()
		}},
		// A close refused as busy, then the same memory under another label:
		// the monitor sees the overlapping registration accepted.
		broken.BusyCloseForgets: {via: rules.DReg1, run: func(w *world) {
			w.fetch("pre/0", "pre/1")
			_ = w.d.Unregister(w.h)
			alias := w.main.Region()
			alias.Label = "alias"
			_, _ = w.d.Register(alias)
			w.run()
		}},
		// memdriver.DefaultCaps declares MaxRowsPerOp 4: a full-size lookup
		// mixing present and absent keys.
		broken.FullLookupAnyPresent: {run: func(w *world) {
			_, _ = w.d.Contains(context.Background(), []string{"pre/0", "none/0", "pre/1", "none/1"})
		}},
		// Another client stores a key the driver looked up absent; the store
		// model sees the stale "absent" (the monitor's truth does not know
		// late/ keys).
		broken.CachesAbsence: {via: rules.SLin, run: func(w *world) {
			_, _ = w.d.Contains(context.Background(), []string{"late/0"})
			w.publishElsewhere("late/0")
			_, _ = w.d.Contains(context.Background(), []string{"late/0"})
		}},
	} {
		scenarios[name] = sc
	}
}

// atRest tells the monitor that nothing is runnable (D-DRAIN-1 at rest).
func (w *world) atRest() {
	w.t.Helper()
	if _, judged := w.mon.AtRest(); !judged && !w.planted {
		w.t.Fatalf("seed %d: the monitor did not judge the drain at rest %s", w.seed, repro(w.t))
	}
}

// publishElsewhere publishes key through the calm seed endpoint: another
// client of the same store.
func (w *world) publishElsewhere(key string) {
	w.t.Helper()
	a := arena.New(fmt.Sprintf("seedlate%d", len(w.seedArenas)), 2, slotBytes, arena.Options{Clock: w.s, OnTouch: w.seedRec.OnTouch})
	a.Lend(0, 1)
	a.Lend(1, 1)
	w.seedArenas = append(w.seedArenas, a)
	md := w.seedMon.Driver()
	h, err := md.Register(a.Region())
	if err != nil {
		w.t.Fatalf("seed Register: %v %s", err, repro(w.t))
	}
	a.Fill(0, content(key, 0, slotBytes))
	if _, err := md.Submit(drivers.RowBatch{Dir: drivers.Publish, Rows: []drivers.Row{{Key: key, Handle: h, Slot: 0}}}, nil); err != nil {
		w.t.Fatalf("seed Submit: %v %s", err, repro(w.t))
	}
	w.run()
	if !w.store.Has(key) {
		w.t.Fatalf("the seed endpoint did not store %q %s", key, repro(w.t))
	}
}
