#!/usr/bin/env bash
# scripts/zoo.sh — the bug zoo, in full (issue "Prove it", parts 1 and 2).
#
# 1. proves every caught bug is caught: STORESIM_ZOO=1 go test ./broken/zoo
#    (plants each bug with its patch, broken/zoo/patches/<name>.patch, and
#    builds the package once per bug with go test -overlay);
# 2. measures each bug: the swarm's seeds and wall time to the first failure
#    (median of 5 start offsets), storesim shrink on the first failing seed,
#    and the naive stress test (-race, wall-clock runtime) for a bounded time;
# 3. writes docs/ZOO.md from the measurements (never edit its numbers by hand).
#
# Environment: ZOO_BUGS="a b" measures only those bugs (docs/ZOO.md then lists
# the others as not measured); ZOO_NAIVE_BUDGET (default 15s) bounds each naive
# run; ZOO_LIMIT (default 2000) and ZOO_ESCAPE_LIMIT (default 200) bound each
# swarm hunt of a caught bug and of an escape; ZOO_OUT keeps the raw JSON Lines
# and binaries in that directory. Budget: about 12 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

t0=$(date +%s)
out=${ZOO_OUT:-$(mktemp -d /tmp/storesim-zoo.XXXXXX)}
mkdir -p "$out/bin"
results="$out/results.jsonl"
: >"$results"
budget=${ZOO_NAIVE_BUDGET:-15s}
naive_runs=${ZOO_NAIVE_RUNS:-3}
limit=${ZOO_LIMIT:-2000}
escape_limit=${ZOO_ESCAPE_LIMIT:-200}

echo "zoo: raw results in $out" >&2
echo "zoo: step 1/3: every caught bug is caught (STORESIM_ZOO=1 go test ./broken/zoo)" >&2
STORESIM_ZOO=1 go test -count=1 ./broken/zoo

go build -o "$out/bin/realhunt-plain" ./broken/zoo/realhunt
all=$("$out/bin/realhunt-plain" list)
want=${ZOO_BUGS:-$(echo "$all" | cut -d' ' -f1)}

echo "zoo: step 2/3: measuring $(echo $want | wc -w) bugs" >&2
for bug in $want; do
  kind=$(echo "$all" | awk -v b="$bug" '$1 == b { print $2 }')
  if [ -z "$kind" ]; then
    echo "zoo: unknown bug $bug (see: go run ./broken/zoo/realhunt list)" >&2
    exit 2
  fi
  n=$limit runs=$naive_runs
  [ "$kind" = escape ] && n=$escape_limit runs=1
  b0=$(date +%s)
  ov=$("$out/bin/realhunt-plain" overlay -dir "$out/overlay/$bug" "$bug")
  go build -overlay "$ov" -o "$out/bin/storesim" ./cmd/storesim
  go build -overlay "$ov" -o "$out/bin/realhunt" ./broken/zoo/realhunt
  go build -race -overlay "$ov" -o "$out/bin/realhunt-race" ./broken/zoo/realhunt
  shrink=()
  [ "$kind" = caught ] && shrink=(-storesim "$out/bin/storesim")
  "$out/bin/realhunt" swarm -starts 0,10000,20000,30000,40000 -limit "$n" "${shrink[@]}" >>"$results"
  "$out/bin/realhunt-race" naive -budget "$budget" -runs "$runs" >>"$results"
  echo "zoo: $bug ($kind) measured in $(( $(date +%s) - b0 )) s" >&2
done

echo "zoo: step 3/3: docs/ZOO.md" >&2
total=$(( $(date +%s) - t0 ))
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
python3 - "$results" "$total" "$(nproc)" "${cpu:-unknown}" "$(go version)" "$(git rev-parse --short HEAD)" "$budget" "$limit" "$escape_limit" "$naive_runs" <<'EOF'
import json, sys, datetime
path, total, nproc, cpu, gov, commit, budget, limit, escape_limit, naive_runs = sys.argv[1:]
meta = {
    "kind": "meta",
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    "commit": commit, "nproc": int(nproc), "cpu": cpu, "go_version": gov, "total_s": float(total),
    "commands": [
        "scripts/zoo.sh                      # all of the below, then docs/ZOO.md",
        "STORESIM_ZOO=1 go test -count=1 ./broken/zoo   # every caught bug is caught, names its rule",
        "ov=$(go run ./broken/zoo/realhunt overlay <name>)   # plants one bug: patched copies + overlay.json",
        "go test -overlay $ov ./broken/zoo -run '^TestSwarmFinds$' -v   # one bug",
        "go build -overlay $ov -o storesim ./cmd/storesim",
        "go build -overlay $ov -o realhunt ./broken/zoo/realhunt",
        "go build -race -overlay $ov -o realhunt-race ./broken/zoo/realhunt",
        f"realhunt swarm -starts 0,10000,20000,30000,40000 -limit {limit} -storesim storesim   # escapes: -limit {escape_limit}, no shrink",
        "storesim shrink --seed <first failing seed> --time 20s   # run by realhunt swarm",
        f"realhunt-race naive -budget {budget} -runs {naive_runs}   # escapes: -runs 1; each run a child process, GORACE=halt_on_error=1",
        "go run ./broken/zoo/realhunt render -in results.jsonl > docs/ZOO.md",
    ],
}
with open(path, "a") as f:
    f.write(json.dumps(meta) + "\n")
EOF
mkdir -p docs
"$out/bin/realhunt-plain" render -in "$results" >docs/ZOO.md.tmp
mv docs/ZOO.md.tmp docs/ZOO.md
echo "zoo: wrote docs/ZOO.md in ${total} s" >&2
