#!/usr/bin/env bash
# make bench: every benchmark the issues ask for, run side by side in one
# process per package (repeated benchmarks alternate, medians taken), printed as ratios (the machine is shared and noisy:
# absolute figures drift, ratios measured together hold). Under 5 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-$(mktemp)}
run() { go test -run '^$' -count 1 "$@" | tee -a "$out" | grep -E '^Benchmark' ; }
: > "$out"
: > "$out.memcached"
echo "# machine: $(nproc) cores, $(go version | cut -d' ' -f3-), $(date -u +%F)"
run -bench 'Loop' -benchtime 2000000x -count 3 ./sim
run -bench 'RunSeed' -benchtime 300x ./fuzz/engine
run -bench 'Check' -benchtime 5x ./model
run -bench 'Overhead' -benchtime 50000x -count 5 ./drivers/monitor
run -bench 'DecodeRun' -benchtime 300x ./fuzz
# Optional: the monitor on the Redis driver needs a server
# (scripts/with-redis.sh scripts/bench.sh provides one).
if [ -n "${STORESIM_REDIS_ADDR:-}" ]; then
  run -bench 'MonitorOverhead' -benchtime 1000x -count 5 ./drivers/redisdriver
  run -bench 'PublishFetch16/serial/slot=4KiB' -benchtime 1000x -count 5 ./drivers/redisdriver
  # Certification time, in real time: the CLI's scale and -short's, once each.
  run -bench 'Certify' -benchtime 1x ./drivers/redisdriver
fi
# Likewise the memcached driver (scripts/with-memcached.sh scripts/bench.sh).
if [ -n "${STORESIM_MEMCACHED_ADDR:-}" ]; then
  # A file of its own: the Redis figures below grep $out.
  for b in 'MonitorOverhead' 'PublishFetch16/serial/slot=4KiB'; do
    go test -run '^$' -bench "$b" -benchtime 1000x -count 5 ./drivers/memcachedriver | tee -a "$out.memcached" | grep -E '^Benchmark'
  done
  go test -run '^$' -bench 'Certify' -benchtime 1x ./drivers/memcachedriver | tee -a "$out.memcached" | grep -E '^Benchmark'
fi
# The process boundary (drivers/procdriver): the Python reference driver
# vs the Go memory driver, both in real time (needs python3).
if command -v python3 >/dev/null; then
  run -bench 'RowsPerSecond' -benchtime 1000x -count 3 ./drivers/procdriver
fi
metric() { # metric BENCH-REGEX UNIT → the median of the values before UNIT on the matching lines
  grep -E "^$1-" "$out" | awk -v u="$2" '{for (i=2;i<=NF;i++) if ($i==u) print $(i-1)}' | sort -g |
    awk '{v[NR]=$1} END{if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'
}
sched=$(metric 'BenchmarkSchedulerLoop' events/s); bare=$(metric 'BenchmarkBareLoop' events/s)
seeds=$(metric 'BenchmarkRunSeed' seeds/s); evs=$(metric 'BenchmarkRunSeed' events/seed)
fb=$(metric 'BenchmarkOverhead/bare' ns/op); fm=$(metric 'BenchmarkOverhead/monitored' ns/op)
mb=$(metric 'BenchmarkOverheadMemdriver/bare' ns/op); mm=$(metric 'BenchmarkOverheadMemdriver/monitored' ns/op)
fz=$(metric 'BenchmarkDecodeRun' ns/op)
echo
echo "## ratios (same run)"
awk -v s="$sched" -v b="$bare" 'BEGIN{printf "scheduler / bare priority-queue loop (events/s): %.2f   (%.0f vs %.0f)\n", s/b, s, b}'
awk -v n="$seeds" -v e="$evs" -v b="$bare" 'BEGIN{printf "full pipeline: %.0f seeds/s (%.0f seeds/min), %.0f events/seed; checked event rate / bare loop: %.3f\n", n, n*60, e, n*e/b}'
grep -E '^BenchmarkCheck' "$out" | awk '{for (i=2;i<=NF;i++) if ($i=="ms/10k-ops") v=$(i-1); printf "porcupine %-32s %8.2f ms per 10k ops\n", $1, v}'
awk -v b="$fb" -v m="$fm" 'BEGIN{printf "monitor overhead, fake driver (worst case): monitored/bare = %.2f\n", m/b}'
awk -v b="$mb" -v m="$mm" 'BEGIN{printf "monitor overhead, memdriver: monitored/bare = %.2f\n", m/b}'
if command -v python3 >/dev/null; then
  for s in 64 4096; do
    g=$(metric "BenchmarkRowsPerSecond/memdriver/slot=$s" rows/s); p=$(metric "BenchmarkRowsPerSecond/python/slot=$s" rows/s)
    awk -v g="$g" -v p="$p" -v s="$s" 'BEGIN{printf "driver process (Python reference driver, JSON lines, shared mappings) vs Go memory driver, real time, %s B slots: %.0f vs %.0f rows/s, python/go = %.2f\n", s, p, g, p/g}'
  done
else
  echo "driver process overhead: skipped (no python3)"
fi
if [ -n "${STORESIM_REDIS_ADDR:-}" ]; then
  # Median of the 5 paired ratios (bare and monitored pairs alternate in one loop).
  grep -E '^BenchmarkMonitorOverhead/monitored' "$out" |
    awk '{for (i=2;i<=NF;i++) if ($i=="monitored/bare") print $(i-1)}' | sort -g |
    awk '{v[NR]=$1} END{m=v[int((NR+1)/2)]; printf "monitor overhead, Redis driver (real server, paired, median of %d): monitored/bare = %.3f, throughput loss %.1f %% (goal <= 10 %%)\n", NR, m, 100*(1-1/m)}'
  rr=$(metric 'BenchmarkPublishFetch16/serial/slot=4KiB' rows/s)
  rc=$(metric 'BenchmarkCertify/scale=cli' s/certification); rs=$(metric 'BenchmarkCertify/scale=short' s/certification)
  awk -v r="$rr" -v c="$rc" -v s="$rs" 'BEGIN{printf "Redis driver (real server): %.0f rows/s (16-row publish + fetch, 4 KiB slots, serial); certification %.1f s (the CLI scale), %.1f s (-short)\n", r, c, s}'
else
  echo "monitor overhead, Redis driver: skipped (no STORESIM_REDIS_ADDR; run scripts/with-redis.sh scripts/bench.sh)"
fi
if [ -n "${STORESIM_MEMCACHED_ADDR:-}" ]; then
  mc=$(grep -E '^BenchmarkMonitorOverhead/monitored' "$out.memcached" |
    awk '{for (i=2;i<=NF;i++) if ($i=="monitored/bare") print $(i-1)}' | sort -g |
    awk '{v[NR]=$1} END{if (NR) print v[int((NR+1)/2)]}')
  rows=$(grep -E '^BenchmarkPublishFetch16/serial/slot=4KiB-' "$out.memcached" | awk '{for (i=2;i<=NF;i++) if ($i=="rows/s") print $(i-1)}' | sort -g |
    awk '{v[NR]=$1} END{if (NR) print v[int((NR+1)/2)]}')
  awk -v m="$mc" -v r="$rows" 'BEGIN{printf "memcached driver (real server): monitor overhead monitored/bare = %.3f (paired, median of 5), throughput loss %.1f %%; %.0f rows/s (16-row publish + fetch, 4 KiB slots, serial)\n", m, 100*(1-1/m), r}'
  mcc=$(grep -E '^BenchmarkCertify/scale=cli-' "$out.memcached" | awk '{for (i=2;i<=NF;i++) if ($i=="s/certification") print $(i-1)}' | head -1)
  mcs=$(grep -E '^BenchmarkCertify/scale=short-' "$out.memcached" | awk '{for (i=2;i<=NF;i++) if ($i=="s/certification") print $(i-1)}' | head -1)
  awk -v c="$mcc" -v s="$mcs" 'BEGIN{printf "memcached driver (real server): certification %.1f s (the CLI scale), %.1f s (-short)\n", c, s}'
else
  echo "memcached driver: skipped (no STORESIM_MEMCACHED_ADDR; run scripts/with-memcached.sh scripts/bench.sh)"
fi
awk -v f="$fz" 'BEGIN{printf "fuzz: one 100-op decode+run = %.2f ms → %.0f execs/s per core before coverage instrumentation\n", f/1e6, 1e9/f}'
