package cli

import (
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunStoreStopsAnswering: a Redis or memcached server killed
// (SIGKILL) or paused (SIGSTOP) in the middle of `storesim run --driver
// URL` ends the run — after the seed in flight, however long the swarm
// was — with the one line "store unreachable: ADDR" and exit 2, not with a
// verdict per remaining seed. The server is stopped once it has served
// 1 000 commands (a few seeds in); t.Cleanup resumes and kills it by pid.
func TestRunStoreStopsAnswering(t *testing.T) {
	for _, scheme := range []string{redisScheme, memcachedScheme} {
		for _, tc := range []struct {
			name string
			sig  syscall.Signal
		}{{"killed", syscall.SIGKILL}, {"paused", syscall.SIGSTOP}} {
			t.Run(strings.TrimSuffix(scheme, "://")+"-"+tc.name, func(t *testing.T) {
				addr, proc := realServer(t, scheme)
				stopped := make(chan struct{})
				go func() {
					defer close(stopped)
					for n := served(scheme, addr); n >= 0 && n < 1000; n = served(scheme, addr) {
						time.Sleep(5 * time.Millisecond)
					}
					_ = proc.Signal(tc.sig)
				}()
				got := storesim("run", "--driver", scheme+addr, "--seeds", "0:100000", "--wait", "1s")
				<-stopped
				if got.code != exitUsage || !strings.Contains(got.stderr, "storesim run: store unreachable: "+addr) || !strings.Contains(got.stderr, "it stopped answering during seed ") {
					t.Fatalf("run against a %s server: exit %d, want 2 and \"store unreachable: %s\"\nstdout:\n%s\nstderr:\n%s %s", tc.name, got.code, addr, got.stdout, got.stderr, repro(t))
				}
				m := regexp.MustCompile(`seeds: (\d+) passed, (\d+) failed`).FindStringSubmatch(got.stderr)
				if m == nil {
					t.Fatalf("no closing line:\n%s %s", got.stderr, repro(t))
				}
				passed, _ := strconv.Atoi(m[1])
				failed, _ := strconv.Atoi(m[2])
				if passed == 0 || passed+failed >= 100000 || failed > 2 {
					t.Fatalf("run went on for %d passed and %d failed seeds after the store stopped: want it to stop after the seed in flight\n%s %s", passed, failed, got.stderr, repro(t))
				}
			})
		}
	}
}

// TestDiffStoreStopsAnswering: a store killed or paused under `storesim
// diff --driver memory --driver URL` ends the diff after the seed in
// flight with "store unreachable: ADDR", exit 2 — against a dead store
// every answer is a FAULT, which the contract allows, so without asking
// the diff would pass — and a paused one stops the side at its first
// unanswered call instead of waiting out every later one.
func TestDiffStoreStopsAnswering(t *testing.T) {
	for _, scheme := range []string{redisScheme, memcachedScheme} {
		for _, tc := range []struct {
			name string
			sig  syscall.Signal
		}{{"killed", syscall.SIGKILL}, {"paused", syscall.SIGSTOP}} {
			t.Run(strings.TrimSuffix(scheme, "://")+"-"+tc.name, func(t *testing.T) {
				addr, proc := realServer(t, scheme)
				stopped := make(chan struct{})
				go func() {
					defer close(stopped)
					for n := served(scheme, addr); n >= 0 && n < 1000; n = served(scheme, addr) {
						time.Sleep(5 * time.Millisecond)
					}
					_ = proc.Signal(tc.sig)
				}()
				got := storesim("diff", "--driver", "memory", "--driver", scheme+addr, "--seeds", "0:100000", "--wait", "500ms")
				<-stopped
				if got.code != exitUsage || !strings.Contains(got.stderr, "storesim diff: store unreachable: "+addr) {
					t.Fatalf("diff against a %s server: exit %d, want 2 and \"store unreachable: %s\"\nstdout:\n%s\nstderr:\n%s %s", tc.name, got.code, addr, got.stdout, got.stderr, repro(t))
				}
			})
		}
	}
}
