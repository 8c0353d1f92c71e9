#!/usr/bin/env bash
# fuzz-smoke.sh DURATION — run every go test -fuzz target of packages fuzz and
# fuzz/machine for DURATION each (default 10s), one after the other; fail on
# the first failure. Used by `make fuzz-smoke`. A failing input is written by
# go test under testdata/fuzz/<Target>/ of the target's package and replays
# with plain `go test ./fuzz` (or ./fuzz/machine).
#
# -fuzzminimizetime: go minimizes every input that adds coverage, for up to
# 60 s by default, and counts none of those runs; the harness targets take
# milliseconds per run and find new coverage often, so a 10 s smoke would
# spend its time minimizing (0 execs/s). 100 runs per minimization keeps it
# fuzzing; set FUZZ_MINIMIZE to change it.
set -euo pipefail
cd "$(dirname "$0")/.."
time=${1:-10s}
n=0
for pkg in ./fuzz ./fuzz/machine; do
	targets=$(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true)
	if [ -z "$targets" ]; then
		echo "fuzz-smoke: no fuzz targets in $pkg" >&2
		exit 1
	fi
	for target in $targets; do
		echo "== $pkg $target ($time)"
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$time" -fuzzminimizetime "${FUZZ_MINIMIZE:-100x}" "$pkg"; then
			echo "fuzz-smoke: $target failed (repro: go test $pkg -run '$target/<entry>' with the entry go test named above)" >&2
			exit 1
		fi
		n=$((n + 1))
	done
done
echo "fuzz-smoke: $n targets passed, $time each"
