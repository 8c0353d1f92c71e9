package cli

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestRunRedis: `storesim run --driver redis://HOST:PORT` runs seeds in
// real time against the server (exit 0 on a pass), one worker by default,
// says what a seed replays, and its JSON records are marked real_time with
// a zero trace hash and a repro that reruns the seed in real time. It needs
// a redis-server: scripts/with-redis.sh go test ./cmd/storesim/cli -run Redis.
func TestRunRedis(t *testing.T) {
	addr := os.Getenv("STORESIM_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("STORESIM_REDIS_REQUIRED") == "1" {
			t.Fatalf("STORESIM_REDIS_REQUIRED=1 but STORESIM_REDIS_ADDR is empty (repro: scripts/with-redis.sh go test ./cmd/storesim/cli -run '^TestRunRedis$')")
		}
		t.Skip("STORESIM_REDIS_ADDR is not set; run: scripts/with-redis.sh go test ./cmd/storesim/cli -run Redis")
	}
	url := "redis://" + addr
	repro := "(repro: scripts/with-redis.sh go test ./cmd/storesim/cli -run '^TestRunRedis$')"
	got := storesim("run", "--driver", url, "--seeds", "0:4")
	if got.code != 0 || !strings.Contains(got.stderr, "workers=1") || !strings.Contains(got.stderr, "a seed replays the workload, not the interleaving") ||
		!closing.MatchString(got.stderr) || !strings.Contains(got.stderr, "seeds: 4 passed, 0 failed") {
		t.Fatalf("run --driver %s: exit %d\nstdout:\n%s\nstderr:\n%s %s", url, got.code, got.stdout, got.stderr, repro)
	}
	got = storesim("run", "--driver", url, "--seeds", "5:2", "--json", "--stretch", "4")
	recs := records(t, got.stdout)
	if got.code != 0 || len(recs) != 3 {
		t.Fatalf("--json: exit %d, %d lines:\n%s%s %s", got.code, len(recs), got.stdout, got.stderr, repro)
	}
	zero := regexp.MustCompile(`^0{16}$`)
	for i, r := range recs[:2] {
		want := fmt.Sprintf("storesim run --driver %s --seeds %d:1 --profile default --ops 100 --stretch 4", url, 5+i)
		if r["real_time"] != true || !zero.MatchString(r["trace_hash"].(string)) || r["repro"] != want || r["verdict"] != "pass" {
			t.Fatalf("record %d: %v, want real_time, a zero trace hash, a pass and repro %q %s", i, r, want, repro)
		}
	}
	if recs[2]["driver"] != url || recs[2]["passed"] != 2.0 {
		t.Fatalf("summary %v %s", recs[2], repro)
	}
}
