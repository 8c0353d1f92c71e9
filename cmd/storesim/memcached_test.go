package main

import (
	"os"
	"strings"
	"testing"
)

// TestMemcachedURLs: memcached:// is parsed like redis://, and its usage
// errors are one line and exit 2 (no server needed).
func TestMemcachedURLs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"run-bad-url", []string{"run", "--driver", "memcached://nohost"}, "want memcached://HOST:PORT"},
		{"run-unreachable", []string{"run", "--driver", "memcached://127.0.0.1:1", "--seeds", "0:1"}, "memcached://127.0.0.1:1: memcachedriver: connect"},
		{"run-determinism", []string{"run", "--driver", "memcached://127.0.0.1:1", "--check-determinism"}, "a seed replays the workload, not the interleaving"},
		{"replay", []string{"replay", "--seed", "1", "--driver", "memcached://127.0.0.1:1"}, "cannot run in the simulator"},
		{"certify-bad-url", []string{"certify", "--driver", "memcached://nohost"}, "want memcached://HOST:PORT"},
		{"certify-unreachable", []string{"certify", "--driver", "memcached://127.0.0.1:1", "--wait", "200ms"}, "127.0.0.1:1"},
		{"certify-evicting-memory", []string{"certify", "--driver", "memory", "--evicting"}, "memcached:// and redis:// drivers only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := storesim(tc.args...)
			if got.code != 2 || !strings.Contains(got.stderr, tc.want) || strings.Count(strings.TrimSpace(got.stderr), "\n") != 0 {
				t.Fatalf("storesim %v: exit %d, stderr %q; want exit 2 and one line with %q %s", tc.args, got.code, got.stderr, tc.want, repro(t))
			}
		})
	}
}

// TestMemcached: `storesim run --driver memcached://HOST:PORT` runs seeds in
// real time against the server, and `storesim certify --driver
// memcached://HOST:PORT --short` certifies it (exit 0). It needs a
// memcached: scripts/with-memcached.sh go test ./cmd/storesim -run Memcached.
func TestMemcached(t *testing.T) {
	const repro = "(repro: scripts/with-memcached.sh go test ./cmd/storesim -run '^TestMemcached$')"
	addr := os.Getenv("STORESIM_MEMCACHED_ADDR")
	if addr == "" {
		if os.Getenv("STORESIM_MEMCACHED_REQUIRED") == "1" {
			t.Fatalf("STORESIM_MEMCACHED_REQUIRED=1 but STORESIM_MEMCACHED_ADDR is empty %s", repro)
		}
		t.Skip("STORESIM_MEMCACHED_ADDR is not set; run: scripts/with-memcached.sh go test ./cmd/storesim -run Memcached")
	}
	url := "memcached://" + addr
	got := storesim("run", "--driver", url, "--seeds", "0:4")
	if got.code != 0 || !strings.Contains(got.stderr, "workers=1") || !strings.Contains(got.stderr, "a seed replays the workload, not the interleaving") ||
		!closing.MatchString(got.stderr) || !strings.Contains(got.stderr, "seeds: 4 passed, 0 failed") {
		t.Fatalf("run --driver %s: exit %d\nstdout:\n%s\nstderr:\n%s %s", url, got.code, got.stdout, got.stderr, repro)
	}
	got = storesim("run", "--driver", url, "--seeds", "5:1", "--json")
	if recs := records(t, got.stdout); got.code != 0 || len(recs) != 2 || recs[0]["real_time"] != true || recs[0]["verdict"] != "pass" ||
		recs[0]["repro"] != "storesim run --driver "+url+" --seeds 5:1 --profile default --ops 100" {
		t.Fatalf("run --json: exit %d\n%s%s %s", got.code, got.stdout, got.stderr, repro)
	}
	got = storesim("certify", "--driver", url, "--short")
	if got.code != 0 || !strings.Contains(got.stdout, "certified: true") || !strings.Contains(got.stderr, url+" certified") {
		t.Fatalf("certify --driver %s --short: exit %d\nstdout:\n%s\nstderr:\n%s %s", url, got.code, got.stdout, got.stderr, repro)
	}
}
