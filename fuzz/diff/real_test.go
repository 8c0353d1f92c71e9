package diff_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/storesim/storesim/broken/memcachedbroken"
	"github.com/storesim/storesim/broken/redisbroken"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memcachedriver"
	"github.com/storesim/storesim/drivers/redisdriver"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/diff"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/registry"
)

// server is the address of the private server a scripts/with-*.sh wrapper
// started, or a skip (a failure when the wrapper says it is required).
func server(t *testing.T, env, required, script string) string {
	t.Helper()
	addr := os.Getenv(env)
	if addr == "" {
		if os.Getenv(required) == "1" {
			t.Fatalf("%s=1 but %s is empty (repro: %s go test ./fuzz/diff -run '^%s$')", required, env, script, t.Name())
		}
		t.Skipf("%s is not set; run: %s go test ./fuzz/diff -run '^%s$'", env, script, t.Name())
	}
	return addr
}

// realSide is a real store's side on a fresh key prefix.
func realSide(name string, evicting bool, build func(prefix string, caps drivers.Capabilities) (drivers.Driver, error)) diff.Side {
	prefix := fmt.Sprintf("storesim-difftest/%d/%d/", os.Getpid(), time.Now().UnixNano())
	return diff.Side{Name: name, RealTime: true, Evicting: evicting, Wait: 5 * time.Second,
		New: func(_ string, env registry.Env) (drivers.Driver, error) { return build(prefix, env.Caps) },
		Cleanup: func() error { // forget the run's keys
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			d, err := build(prefix, drivers.Capabilities{})
			if err != nil {
				return err
			}
			defer d.Shutdown(ctx)
			if f, ok := d.(interface{ Flush(context.Context) error }); ok {
				return f.Flush(ctx)
			}
			return nil
		}}
}

// TestRealStores: memory against Redis and memcached (judged as the
// evicting cache it is) agrees on every seed and profile, and each store's
// broken driver that rewrites a held key (OverwritesOnPublish, a plain SET
// after the first-writer-wins put) is found as a divergence on D-SUB-4, in
// real time.
func TestRealStores(t *testing.T) {
	for _, st := range []struct {
		name, env, required, script string
		evicting                    bool
		good, bad                   func(addr string) func(string, drivers.Capabilities) (drivers.Driver, error)
	}{
		{"redis", "STORESIM_REDIS_ADDR", "STORESIM_REDIS_REQUIRED", "scripts/with-redis.sh", false,
			func(addr string) func(string, drivers.Capabilities) (drivers.Driver, error) {
				return func(p string, c drivers.Capabilities) (drivers.Driver, error) {
					return redisdriver.New(redisdriver.Config{Addr: addr, Prefix: p, Caps: c})
				}
			},
			func(addr string) func(string, drivers.Capabilities) (drivers.Driver, error) {
				return func(p string, c drivers.Capabilities) (drivers.Driver, error) {
					return redisbroken.New(redisbroken.OverwritesOnPublish, redisdriver.Config{Addr: addr, Prefix: p, Caps: c})
				}
			}},
		{"memcached", "STORESIM_MEMCACHED_ADDR", "STORESIM_MEMCACHED_REQUIRED", "scripts/with-memcached.sh", true,
			func(addr string) func(string, drivers.Capabilities) (drivers.Driver, error) {
				return func(p string, c drivers.Capabilities) (drivers.Driver, error) {
					return memcachedriver.New(memcachedriver.Config{Addr: addr, Prefix: p, Caps: c})
				}
			},
			func(addr string) func(string, drivers.Capabilities) (drivers.Driver, error) {
				return func(p string, c drivers.Capabilities) (drivers.Driver, error) {
					return memcachedbroken.New(memcachedbroken.OverwritesOnPublish, memcachedriver.Config{Addr: addr, Prefix: p, Caps: c})
				}
			}},
	} {
		t.Run(st.name, func(t *testing.T) {
			addr := server(t, st.env, st.required, st.script)
			rp := fmt.Sprintf("(repro: %s go test ./fuzz/diff -run '^TestRealStores$/^%s$')", st.script, st.name)
			for _, p := range []engine.Profile{engine.Calm, engine.Default} {
				for seed := range uint64(6) {
					log := engine.Plan(seed, engine.Config{Driver: "memory", Profile: p})
					res := diff.Run(log, diff.Side{Name: "memory"}, realSide(st.name, st.evicting, st.good(addr)), diff.Config{Repro: rp})
					if v := res.Verdict(); v != engine.Pass || res.Rows < 100 {
						t.Fatalf("memory vs %s, seed %d, profile %s: %s, %d rows:\n%s", st.name, seed, p, v, res.Rows, res.Report())
					}
				}
			}
			for seed := range uint64(10) {
				log := engine.Plan(seed, engine.Config{Driver: "memory", Profile: engine.Calm})
				// Judged as a store that does not evict: on an evicting store a
				// rewrite cannot be told from an eviction followed by a put.
				// The test's memcached holds a few kB (the one tests fill to
				// make it evict is STORESIM_MEMCACHED_EVICT_ADDR), so it does
				// not evict within a run.
				res := diff.Run(log, diff.Side{Name: "memory"}, realSide(st.name+"-overwrites", false, st.bad(addr)), diff.Config{Repro: rp})
				if d := res.First(); d != nil {
					if d.Side != 1 || d.Rule != rules.DSub4 {
						t.Fatalf("seed %d: first divergence %+v, want the broken %s on D-SUB-4:\n%s", seed, d, st.name, res.Report())
					}
					t.Logf("found on seed %d:\n%s", seed, res.Report())
					return
				}
			}
			t.Fatalf("%s's OverwritesOnPublish never diverged from memory in 10 seeds %s", st.name, rp)
		})
	}
}
