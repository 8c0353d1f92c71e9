package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/storesim/storesim/broken/redisbroken"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/redisdriver"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/registry"
)

// RunReal starts the realtime runtime's executor and the drivers' goroutines.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// realRepro is the command that reruns a real-time test.
func realRepro(t *testing.T) string {
	return fmt.Sprintf("(repro: scripts/with-redis.sh go test -race ./fuzz/engine -run '^%s$')", strings.ReplaceAll(t.Name(), "/", "$/^"))
}

// redisAddr is the server of scripts/with-redis.sh. Without it the Redis
// tests skip, unless STORESIM_REDIS_REQUIRED=1 (that script, CI), where a
// missing server fails.
func redisAddr(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("STORESIM_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("STORESIM_REDIS_REQUIRED") == "1" {
			t.Fatalf("STORESIM_REDIS_REQUIRED=1 but STORESIM_REDIS_ADDR is empty %s", realRepro(t))
		}
		t.Skip("STORESIM_REDIS_ADDR is not set; run: scripts/with-redis.sh go test -race ./fuzz/engine -run Real")
	}
	return addr
}

// redisReal is the Redis RealDriver of one run, as `storesim run --driver
// redis://…` builds it: a fresh key prefix per run, every endpoint's driver
// on it (with the endpoint's capabilities; the broken Redis driver bug when
// bug is set), and a cleanup that flushes the prefix.
func redisReal(t *testing.T, addr string, seed uint64, bug redisbroken.Name) (RealDriver, string) {
	t.Helper()
	prefix := fmt.Sprintf("storesim-run/%d/%d/", seed, time.Now().UnixNano())
	return RealDriver{
		Name: "redis://" + addr,
		New: func(_ string, env registry.Env) (drivers.Driver, error) {
			cfg := redisdriver.Config{Addr: addr, Prefix: prefix, Caps: env.Caps}
			if bug == "" {
				return redisdriver.New(cfg)
			}
			return redisbroken.New(bug, cfg)
		},
		Cleanup: func(ctx context.Context) error {
			admin, err := redisdriver.New(redisdriver.Config{Addr: addr, Prefix: prefix})
			if err != nil {
				return err
			}
			defer admin.Shutdown(ctx)
			return admin.Flush(ctx)
		},
	}, prefix
}

func report(r *Result) string {
	var b strings.Builder
	r.WriteReport(&b)
	return b.String()
}

// TestRunRealRedis: generated workloads pass every check against a real
// Redis in real time, the runs are not vacuous, the report says what real
// time means, and each run's keys are gone afterwards.
func TestRunRealRedis(t *testing.T) {
	addr := redisAddr(t)
	raw, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("connect to %s: %v %s", addr, err, realRepro(t))
	}
	defer raw.Close()
	var attempts, delivered, rows int
	for seed := range uint64(6) {
		rd, prefix := redisReal(t, addr, seed, "")
		res := RunReal(Plan(seed, Config{}), Config{}, rd)
		out := report(res)
		if res.Verdict != Pass {
			t.Fatalf("seed %d:\n%s%s", seed, out, realRepro(t))
		}
		want := fmt.Sprintf("repro: storesim run --driver redis://%s --seeds %d:1 --profile default --ops 100", addr, seed)
		if !res.RealTime || res.TraceHash != 0 || !strings.Contains(out, "replays the workload, not the interleaving") || !strings.Contains(out, want) {
			t.Fatalf("seed %d: RealTime %v, trace %x; the report lacks the real-time note or %q:\n%s%s", seed, res.RealTime, res.TraceHash, want, out, realRepro(t))
		}
		for _, e := range res.Log.Endpoints {
			if len(e.Faults) > 0 {
				t.Fatalf("seed %d: endpoint %s kept fault lines %q in real time %s", seed, e.Name, e.Faults, realRepro(t))
			}
		}
		keys, err := raw.Do(context.Background(), raw.B().Keys().Pattern(prefix+"*").Build()).AsStrSlice()
		if err != nil || len(keys) > 0 {
			t.Fatalf("seed %d: after the run %d keys remain under %q (err %v) %s", seed, len(keys), prefix, err, realRepro(t))
		}
		attempts += res.Attempts
		delivered += res.Delivered
		rows += len(res.History)
	}
	if attempts == 0 || delivered == 0 || rows == 0 {
		t.Fatalf("vacuous: %d attempts, %d delivered, %d row operations over 6 seeds %s", attempts, delivered, rows, realRepro(t))
	}
	t.Logf("6 seeds: %d attempts, %d delivered, %d row operations checked", attempts, delivered, rows)
}

// TestRunRealRedisBroken: the broken Redis driver that reports a FETCH row
// OK before writing its slot fails on the memory oracle's D-STATUS rule (a
// slot written after its row was reported) within a few seeds.
func TestRunRealRedisBroken(t *testing.T) {
	addr := redisAddr(t)
	for seed := range uint64(10) {
		rd, _ := redisReal(t, addr, seed, redisbroken.WritesAfterReport)
		res := RunReal(Plan(seed, Config{Profile: Calm}), Config{Profile: Calm}, rd)
		for _, f := range res.Failures {
			if f.Rule == rules.DStatus && strings.Contains(f.Detail, "written after the report") {
				if res.Verdict != Safety {
					t.Fatalf("seed %d: verdict %s with a D-STATUS failure:\n%s%s", seed, res.Verdict, report(res), realRepro(t))
				}
				t.Logf("seed %d: %s\n  %s", seed, res.Summary(), f)
				return
			}
		}
		if res.Verdict != Pass && res.Verdict != Safety {
			t.Fatalf("seed %d: %s, want a D-STATUS failure:\n%s%s", seed, res.Verdict, report(res), realRepro(t))
		}
	}
	t.Fatalf("broken redis driver %s: no seed of 10 failed with D-STATUS %s", redisbroken.WritesAfterReport, realRepro(t))
}

// memReal is the reference memory driver on the real runtime: RunReal
// without a server (every build runs these).
func memReal(wrap func(drivers.Driver) drivers.Driver) RealDriver {
	store, _ := memdriver.NewStore(memdriver.StoreOptions{})
	return RealDriver{
		Name: "memory",
		New: func(name string, env registry.Env) (drivers.Driver, error) {
			env.Store = store
			d, err := registry.New("memory", env)
			if err != nil || wrap == nil {
				return d, err
			}
			return wrap(d), nil
		},
		DrainTimeout: 100 * time.Millisecond,
	}
}

// stuckShutdown blocks the run's first driver Shutdown (a backend's, on the
// runtime's executor) until release is closed, and every later one (RunReal's
// own clean-up of the other endpoints) until its context ends or release.
type stuckShutdown struct {
	drivers.Driver
	release chan struct{}
	calls   *atomic.Int32 // shared by the run's endpoints
}

func (s stuckShutdown) Shutdown(ctx context.Context) []string {
	if s.calls.Add(1) == 1 {
		<-s.release
	} else {
		select {
		case <-ctx.Done():
		case <-s.release: // the executor runs its queue on after the test
		}
	}
	return s.Driver.Shutdown(ctx)
}

// TestRunRealOutcomes: real time keeps the outcome classes apart. The
// reference memory driver passes on the real runtime; a driver that drops
// its callbacks fails on D-CB-2; a shutdown that never returns is a
// liveness failure naming what is pending; a driver that cannot be built
// is a harness error; and a failing cleanup turns a pass into a harness
// error.
func TestRunRealOutcomes(t *testing.T) {
	cases := []struct {
		name    string
		rd      func(t *testing.T) RealDriver
		verdict Verdict
		want    string // in the first failure, or the error
	}{
		{"memory passes", func(*testing.T) RealDriver { return memReal(nil) }, Pass, ""},
		{"lost callbacks", func(*testing.T) RealDriver {
			return memReal(func(d drivers.Driver) drivers.Driver { return silent{d} })
		}, Safety, "D-CB-2"},
		{"shutdown never returns", func(t *testing.T) RealDriver {
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			calls := new(atomic.Int32)
			rd := memReal(func(d drivers.Driver) drivers.Driver { return stuckShutdown{Driver: d, release: release, calls: calls} })
			rd.Wait = 300 * time.Millisecond
			return rd
		}, Liveness, "shutdown has not returned"},
		{"no driver", func(*testing.T) RealDriver {
			return RealDriver{Name: "nope", New: func(string, registry.Env) (drivers.Driver, error) {
				return nil, errors.New("no such store")
			}}
		}, HarnessError, "no such store"},
		{"cleanup fails", func(*testing.T) RealDriver {
			rd := memReal(nil)
			rd.Cleanup = func(context.Context) error { return errors.New("flush refused") }
			return rd
		}, HarnessError, "flush refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repro := fmt.Sprintf("(repro: go test -race ./fuzz/engine -run '^TestRunRealOutcomes$/^%s$')", strings.ReplaceAll(tc.name, " ", "_"))
			var got *Result
			for seed := range uint64(4) {
				got = RunReal(Plan(seed, Config{Profile: Calm}), Config{Profile: Calm}, tc.rd(t))
				if (tc.verdict == Pass) != (got.Verdict == tc.verdict) {
					break // a pass must hold on every seed; a failure needs one
				}
			}
			text := report(got)
			if got.Verdict != tc.verdict || !strings.Contains(text, tc.want) {
				t.Fatalf("seed %d: verdict %s, want %s with %q:\n%s%s", got.Seed, got.Verdict, tc.verdict, tc.want, text, repro)
			}
			if tc.verdict == Liveness && !strings.Contains(got.Failures[0].Detail, ErrRealTimeout.Error()) {
				t.Fatalf("the liveness failure does not say the run timed out: %s %s", got.Failures[0], repro)
			}
		})
	}
}

// TestRunRealKeepsWorkload: a real run plays the seed's workload (the same
// ops as the simulated run of that seed) — only the interleaving is real.
func TestRunRealKeepsWorkload(t *testing.T) {
	cfg := Config{Profile: Calm, Ops: 40}
	res := RunReal(Plan(3, cfg), cfg, memReal(nil))
	if res.Verdict != Pass || res.Log.String() != Plan(3, cfg).String() {
		t.Fatalf("real run: %s; its log differs from the seed's plan:\n%s\nvs\n%s(repro: go test -race ./fuzz/engine -run '^TestRunRealKeepsWorkload$')",
			res.Summary(), res.Log, Plan(3, cfg))
	}
}

// TestRunRealBadInput: no log or no factory is a harness error, not a panic.
func TestRunRealBadInput(t *testing.T) {
	for name, res := range map[string]*Result{
		"nil log":     RunReal(nil, Config{}, memReal(nil)),
		"nil factory": RunReal(Plan(1, Config{}), Config{}, RealDriver{Name: "x"}),
	} {
		if res.Verdict != HarnessError || res.Err == nil || !res.RealTime {
			t.Errorf("%s: verdict %s, error %v (repro: go test ./fuzz/engine -run '^TestRunRealBadInput$')", name, res.Verdict, res.Err)
		}
	}
}
