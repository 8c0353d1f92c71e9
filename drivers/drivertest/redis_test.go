package drivertest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"

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
	harness := func(plant string) Harness {
		prefix := fmt.Sprintf("storesim-drivertest-%d-%s/", os.Getpid(), plant)
		return Harness{
			Name: "redis" + plant, RealTime: true, ExternalStore: true,
			New: func(env Env) (drivers.Driver, error) {
				return redisdriver.New(redisdriver.Config{Addr: addr, Prefix: prefix, Caps: env.Caps, Plant: plant})
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
	// Its planted violations fail on their rules, in real time too.
	for plant, rule := range map[string]string{
		redisdriver.PlantOverwritesOnPublish: "D-SUB-4",
		redisdriver.PlantMissAsFault:         "D-MISS-HONEST",
		redisdriver.PlantWritesAfterReport:   "D-STATUS",
	} {
		rep := Certify(harness(plant), Options{Short: true, Rules: []string{rule}})
		if !slices.Contains(rep.Failed(), rule) {
			t.Errorf("redis with plant %s: want %s failed, got %v (repro: scripts/with-redis.sh go test ./drivers/drivertest -run '^TestRedisRealTime$')", plant, rule, rep.Failed())
		}
	}
}
