package backend_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/model/lender"
	"github.com/storesim/storesim/sim"
)

type submitted struct {
	ep   *endpoint
	ln   *lender.Loan
	a    *backend.Attempt
	keys []string
}

// runSwarm is one seeded run: two backends in one process on one store, each
// on its own reference driver with the seed's swarm fault mix, a random
// workload of publishes, fetches and cancels over a small key space, then
// shutdown. It returns the scheduler's trace hash.
func runSwarm(t *testing.T, seed uint64) uint64 {
	w := newWorld(t, seed, memdriver.StoreOptions{Evicting: seed%2 == 1})
	w.repro = fmt.Sprintf("(repro: go test ./backend -run 'TestSwarm/seed=%d$')", seed)
	r := sim.NewRand(sim.SubSeed(seed, "workload"))
	mix := memdriver.Swarm(seed)
	var eps []*endpoint
	for i, name := range []string{"a", "b"} {
		fl := flavour{driverKinds[(int(seed)+i)%2], r.Chance(0.5)}
		eps = append(eps, w.endpoint(name, epOpts{fl: fl, maxRows: 1 + r.Intn(4), faults: mix, slots: 24,
			cfg: backend.Config{MaxCallsInFlight: 1 + r.Intn(3), MaxQueuedCalls: 1 + r.Intn(8), MaxUnprovable: 1 + r.Intn(3)}}))
	}
	var subs []submitted
	for op := 0; op < 30; op++ {
		ep := eps[r.Intn(len(eps))]
		if ep.b.Capabilities() == (drivers.Capabilities{}) {
			continue
		}
		keys := make([]string, 1+r.Intn(6))
		for i := range keys {
			keys[i] = fmt.Sprintf("k%d", r.Intn(8)) // repeated keys on purpose
		}
		var (
			ln  *lender.Loan
			a   *backend.Attempt
			err error
		)
		if r.Chance(0.5) {
			cs := make([][]byte, len(keys))
			for i, k := range keys {
				cs[i] = content(k)
			}
			ln, a, err = ep.l.Publish(ep.b, keys, cs)
		} else {
			ln, a, err = ep.l.Fetch(ep.b, keys)
		}
		if err == nil {
			subs = append(subs, submitted{ep, ln, a, keys})
			if r.Chance(0.1) {
				a.Cancel()
			}
		}
		w.s.RunUntil(w.s.Now() + time.Duration(r.Intn(40_000)))
	}
	w.s.RunUntil(w.s.Now() + time.Duration(1e9))
	for _, ep := range eps {
		ep.b.Shutdown(ep.l.ShutdownReturned)
	}
	w.run() // fails on a hang: every attempt and shutdown must finish
	for _, ep := range eps {
		if labels, done := ep.b.ShutdownLabels(); !done || len(labels) > 0 != ep.l.Held() {
			t.Fatalf("%s: shutdown done %v labels %q but held %v (S-HOLD) %s", ep.name, done, labels, ep.l.Held(), w.repro)
		}
	}
	for _, s := range subs {
		checkSubmitted(t, w, s)
	}
	w.check()
	return w.s.TraceHash()
}

// checkSubmitted: after shutdown every attempt has an outcome (liveness);
// a served fetch row holds exactly the object of its key (every publisher
// writes content(key)); marks are exactly the served rows (S-MARKS).
func checkSubmitted(t *testing.T, w *world, s submitted) {
	t.Helper()
	o := s.a.Outcome()
	if o.State == backend.Pending {
		t.Fatalf("%s attempt %d has no outcome after shutdown %s", s.ep.name, s.a.ID(), w.repro)
	}
	if s.a.Dir() != drivers.Fetch || o.State != backend.Delivered {
		return
	}
	for i, k := range s.keys {
		if o.Served[i] != s.ln.Marks()[i] {
			t.Fatalf("row %d served %v marked %v (S-MARKS) %s", i, o.Served[i], s.ln.Marks()[i], w.repro)
		}
		if o.Served[i] && !bytes.Equal(s.ln.Data(i), content(k)) {
			t.Fatalf("%s attempt %d row %d (%s) served %q, want %q %s", s.ep.name, s.a.ID(), i, k, s.ln.Data(i), content(k), w.repro)
		}
	}
}

// TestSwarm runs seeded swarm runs (faults from memdriver.Swarm) of two
// backends on one store and replays one seed to check determinism.
func TestSwarm(t *testing.T) {
	n := uint64(300)
	if testing.Short() {
		n = 40
	}
	for seed := uint64(1); seed <= n; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runSwarm(t, seed) })
	}
	t.Run("deterministic", func(t *testing.T) {
		if a, b := runSwarm(t, 17), runSwarm(t, 17); a != b {
			t.Fatalf("seed 17 ran twice gave trace hashes %x and %x (repro: go test ./backend -run TestSwarm/deterministic)", a, b)
		}
	})
}
