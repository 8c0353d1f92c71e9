package drivertest_test

import (
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/drivertest"
	"github.com/storesim/storesim/drivers/memdriver"
)

// TestEvictingCacheCertified: a cache that evicts a key just before every
// put of it keeps the contract of a store that may evict — a later publish
// of a held key may then store its own object, which on such a store cannot
// be told from first-writer-wins after an eviction (D-SUB-4 is judged by
// S-LIN's evicting model there). Declared Evicting, it must fail no rule;
// declared durable, it must be refused for D-SUB-4 (the cases still see a
// rewrite where no eviction is allowed).
func TestEvictingCacheCertified(t *testing.T) {
	const repro = "go test ./drivers/drivertest -run '^TestEvictingCacheCertified$' -count=1"
	for _, evicting := range []bool{true, false} {
		h := drivertest.Harness{
			Name: "conform:evict-on-put", ExternalStore: true, Evicting: evicting,
			New: func(env drivertest.Env) (drivers.Driver, error) {
				store, err := memdriver.NewStore(memdriver.StoreOptions{Evicting: evicting}) // its own, per run
				if err != nil {
					return nil, err
				}
				f := newFIFO(env).(*fifo)
				f.store, f.evictOnPut = store, true
				return f, nil
			},
		}
		rep := drivertest.Certify(h, drivertest.Options{Short: true}) // no swarm: it would take its own simulated store for the truth
		sub4 := false
		for _, r := range rep.Failed() {
			sub4 = sub4 || r == "D-SUB-4"
		}
		switch {
		case evicting && len(rep.Failed()) > 0:
			t.Fatalf("declared evicting, the cache fails %v:\n%s(repro: %s)", rep.Failed(), rep.Table(), repro)
		case !evicting && !sub4:
			t.Fatalf("declared durable, the cache is not refused for D-SUB-4:\n%s(repro: %s)", rep.Table(), repro)
		}
	}
}

// TestOwnEvictionsCertified: a cache that evicts its oldest object from the
// suite's own store when it runs out of room keeps the contract of a store
// that may evict. Declared Evicting, it certifies: the cases do not take
// "absent now" for a rollback or a lie, and the swarm judges it against the
// evicting model only. Declared durable, it is refused (a lost key).
func TestOwnEvictionsCertified(t *testing.T) {
	const repro = "go test ./drivers/drivertest -run '^TestOwnEvictionsCertified$' -count=1"
	for _, evicting := range []bool{true, false} {
		h := drivertest.Harness{Name: "conform:capped", Evicting: evicting,
			New: func(env drivertest.Env) (drivers.Driver, error) { return newCapped(env), nil }}
		for seed := uint64(1); seed <= 3; seed++ {
			rep := drivertest.Certify(h, drivertest.Options{Short: true, Seed: seed})
			switch {
			case evicting && !rep.Certified:
				t.Fatalf("declared evicting, seed %d: not certified (failed %v, gaps %q):\n%s(repro: %s)", seed, rep.Failed(), rep.Gaps, rep.Table(), repro)
			case !evicting && len(rep.Failed()) == 0:
				t.Fatalf("declared durable, seed %d: the cache that loses keys fails no rule:\n%s(repro: %s)", seed, rep.Table(), repro)
			}
		}
	}
}
