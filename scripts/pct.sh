#!/usr/bin/env bash
# scripts/pct.sh — docs/PCT.md: random vs PCT schedules on the zoo's ordering
# bugs, and the schedule shrink on zoo bugs (issue "Beyond one machine and
# beyond random schedules", items 3 and 4). Never edit its numbers by hand.
#
# 1. for every zoo bug with a depth (realhunt list: third column), builds
#    realhunt with the bug planted and runs `realhunt pct`: 5 hunts per
#    policy (random; PCT at depths 1, 2 and 3), the same start seeds, side
#    by side in one process;
# 2. for every bug of SHRINK_BUGS, `realhunt schedshrink`: the first failing
#    seed, shrunk (ops, then the schedule), the decision counts, and whether
#    the shrunk file and its scenario fail the same rule;
# 3. writes docs/PCT.md (realhunt render-pct).
#
# Environment: PCT_BUGS (default: every bug with a depth), PCT_LIMIT (seeds
# per hunt, default 10000), SHRINK_BUGS, PCT_OUT (keep raw JSON Lines and
# binaries there). Budget: about 15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

t0=$(date +%s)
out=${PCT_OUT:-$(mktemp -d /tmp/storesim-pct.XXXXXX)}
mkdir -p "$out/bin"
results="$out/pct.jsonl"
: >"$results"
limit=${PCT_LIMIT:-10000}
starts=0,10000,20000,30000,40000
go build -o "$out/bin/realhunt-plain" ./broken/zoo/realhunt
all=$("$out/bin/realhunt-plain" list)
pct_bugs=${PCT_BUGS:-$(echo "$all" | awk 'NF == 3 { print $1 }')}
shrink_bugs=${SHRINK_BUGS:-"ended_at_results unprovable_as_ended any_call_ended outcome_is_end cancel_proves_end fold_stops_listening cancel_no_settle late_success cancel_overrides marks_shift hold_early timeout_no_labels nocut_key fault_as_miss $pct_bugs"}

build() { # build BUG → $out/bin/realhunt-BUG
  [ -x "$out/bin/realhunt-$1" ] && return
  local ov
  ov=$("$out/bin/realhunt-plain" overlay -dir "$out/overlay/$1" "$1")
  go build -overlay "$ov" -o "$out/bin/realhunt-$1" ./broken/zoo/realhunt
}

echo "pct: raw results in $out" >&2
for bug in $pct_bugs; do
  echo "pct: step 1/3: $bug: random vs PCT, 5 hunts each, at most $limit seeds" >&2
  build "$bug"
  "$out/bin/realhunt-$bug" pct -starts "$starts" -limit "$limit" -depths 1,2,3 >>"$results"
done
for bug in $shrink_bugs; do
  echo "pct: step 2/3: $bug: shrinking the first failing seed, ops then schedule" >&2
  build "$bug"
  "$out/bin/realhunt-$bug" schedshrink -limit 2000 -runs 4000 -time 60s >>"$results"
done

echo "pct: step 3/3: docs/PCT.md" >&2
total=$(( $(date +%s) - t0 ))
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
python3 - "$results" "$total" "$(nproc)" "${cpu:-unknown}" "$(go version)" "$(git rev-parse --short HEAD)" "$limit" "$starts" <<'PY'
import json, sys, datetime
path, total, nproc, cpu, gov, commit, limit, starts = sys.argv[1:]
meta = {
    "kind": "meta",
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    "commit": commit, "nproc": int(nproc), "cpu": cpu, "go_version": gov, "total_s": float(total),
    "commands": [
        "scripts/pct.sh                      # all of the below, then docs/PCT.md",
        "ov=$(go run ./broken/zoo/realhunt overlay <name>)   # plants one bug",
        "go build -overlay $ov -o realhunt ./broken/zoo/realhunt",
        f"realhunt pct -starts {starts} -limit {limit} -depths 1,2,3   # random and PCT at depths 1, 2, 3: 5 hunts each",
        "realhunt schedshrink -limit 2000 -runs 4000 -time 60s   # first failing seed; shrink ops, then the schedule",
        "storesim run --sched pct --depth 2 --seeds 0:1000        # the same PCT hunt from the CLI",
        "storesim shrink --seed N --out min.txt                   # writes the sched script; replay min.txt needs no seed draws",
        "go run ./broken/zoo/realhunt render-pct -in pct.jsonl > docs/PCT.md",
    ],
}
with open(path, "a") as f:
    f.write(json.dumps(meta) + "\n")
PY
mkdir -p docs
"$out/bin/realhunt-plain" render-pct -in "$results" >docs/PCT.md.tmp
mv docs/PCT.md.tmp docs/PCT.md
echo "pct: wrote docs/PCT.md in ${total} s" >&2
