package drivertest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"

	"github.com/storesim/storesim/broken/redisbroken"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/redisdriver"
)

// TestRedisRealTime certifies the Redis driver, a real driver over a real
// store, in real time: Env.Store is nil, MakeAbsent deletes keys through a
// client of its own, waits are real. It needs a redis-server
// (scripts/with-redis.sh go test ./drivers/drivertest -run Redis); without
// STORESIM_REDIS_ADDR it skips, unless STORESIM_REDIS_REQUIRED=1.
func TestRedisRealTime(t *testing.T) {
	addr := os.Getenv("STORESIM_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("STORESIM_REDIS_REQUIRED") == "1" {
			t.Fatalf("STORESIM_REDIS_REQUIRED=1 but STORESIM_REDIS_ADDR is empty (repro: scripts/with-redis.sh go test ./drivers/drivertest -run Redis)")
		}
		t.Skip("STORESIM_REDIS_ADDR is not set (run: scripts/with-redis.sh go test ./drivers/drivertest -run Redis)")
	}
	raw, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	defer raw.Close()
	var n atomic.Int64
	harness := func(bug redisbroken.Name) Harness {
		prefix := fmt.Sprintf("storesim-drivertest-%d-%s/", os.Getpid(), bug)
		return Harness{
			Name: "redis" + string(bug), RealTime: true, ExternalStore: true,
			New: func(env Env) (drivers.Driver, error) {
				cfg := redisdriver.Config{Addr: addr, Prefix: prefix, Caps: env.Caps}
				if bug == "" {
					return redisdriver.New(cfg)
				}
				return redisbroken.New(bug, cfg)
			},
			MakeAbsent: func(key string) error {
				n.Add(1)
				return raw.Do(context.Background(), raw.B().Del().Key(prefix+key).Build()).Error()
			},
		}
	}
	opts := Options{Short: true}
	if os.Getenv("STORESIM_DRIVERTEST_FULL") == "1" {
		opts = Options{} // the CLI's default: 12 seeds per case in real time
	}
	rep := Certify(harness(""), opts)
	if len(rep.Failed()) > 0 || n.Load() == 0 {
		t.Fatalf("redis in real time: failed %v, %d keys made absent:\n%s(repro: scripts/with-redis.sh go test ./drivers/drivertest -run '^TestRedisRealTime$')", rep.Failed(), n.Load(), rep.Table())
	}
	t.Logf("\n%s", rep.Table())
	// The broken Redis drivers (package broken/redisbroken) fail on their
	// rules, in real time too.
	for _, bug := range redisbroken.Names() {
		rule := bug.Rule()
		rep := Certify(harness(bug), Options{Short: true, Rules: []string{rule}})
		if !slices.Contains(rep.Failed(), rule) {
			t.Errorf("broken redis driver %s: want %s failed, got %v (repro: scripts/with-redis.sh go test ./drivers/drivertest -run '^TestRedisRealTime$')", bug, rule, rep.Failed())
		}
	}
}
