#!/usr/bin/env bash
# with-memcached.sh CMD… — run CMD with private, throw-away memcached servers.
#
# Starts two `memcached -l 127.0.0.1 -p P -U 0 -m MB -I 1m` on free loopback
# ports (TCP only, no UDP), each with a small memory limit
# (STORESIM_MEMCACHED_MB, default 8 MB) so that real LRU eviction happens once
# a test writes more than that; waits until they answer `version`, exports
#   STORESIM_MEMCACHED_ADDR=127.0.0.1:P        the server every test shares
#   STORESIM_MEMCACHED_EVICT_ADDR=127.0.0.1:Q  a second one, for the one test
#                   that fills it to make it evict (and retunes its slab
#                   mover): filling the shared one would starve the others
#   STORESIM_MEMCACHED_REQUIRED=1   (tests that need memcached fail instead of skip)
# runs CMD, stops the servers (also on error or Ctrl-C) and exits with CMD's
# exit code.
#
# memcached missing: prints how to install it and exits 2 — unless
# STORESIM_INSTALL_MEMCACHED=1, we are root and apt-get exists, in which case
# it installs it (what .ci/run and scripts/test.sh do).
#
# Example: scripts/with-memcached.sh go test ./drivers/memcachedriver
# Both servers: scripts/with-redis.sh scripts/with-memcached.sh go test ./...
set -uo pipefail

if [ $# -eq 0 ]; then
  echo "usage: scripts/with-memcached.sh CMD [ARG…]" >&2
  exit 2
fi

if ! command -v memcached >/dev/null 2>&1; then
  if [ "${STORESIM_INSTALL_MEMCACHED:-}" = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "with-memcached.sh: installing memcached (apt-get install -y memcached)" >&2
    if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 memcached) >&2; then
      echo "with-memcached.sh: apt-get install -y memcached failed" >&2
      exit 2
    fi
  else
    echo "memcached not found: install it with: apt-get install -y memcached" >&2
    exit 2
  fi
fi

mb=${STORESIM_MEMCACHED_MB:-8}
case "$mb" in
  ''|*[!0-9]*) echo "with-memcached.sh: STORESIM_MEMCACHED_MB=$mb: want a number of megabytes" >&2; exit 2 ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/storesim-memcached.XXXXXX") || exit 2
cleanup() {
  local p
  for p in "${pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then
      kill "$p" 2>/dev/null
      wait "$p" 2>/dev/null
    fi
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ping PORT: true when a server on 127.0.0.1:PORT answers `version`.
ping() {
  local reply=""
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  printf 'version\r\n' >&3
  IFS= read -r -t 1 reply <&3
  exec 3<&- 3>&-
  case "$reply" in VERSION*) return 0 ;; esac
  return 1
}

# port_free PORT: true when nothing accepts connections on it.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# memcached refuses to run as root without -u.
user=()
if [ "$(id -u)" = 0 ]; then user=(-u root); fi

# start_server VAR: pick a random high port that looks free, start a server
# on it and wait for `version`; if the server dies (someone took the port in
# between), retry. Sets VAR to the port and appends the pid to pids.
pids=()
start_server() {
  local var=$1 attempt p log pid started=""
  for attempt in 1 2 3 4 5 6 7 8 9 10; do
    p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    port_free "$p" || continue
    log="$tmp/memcached-$p.log"
    memcached -l 127.0.0.1 -p "$p" -U 0 -m "$mb" -I 1m -c 1024 "${user[@]}" >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do
      if ping "$p"; then
        started=1
        break
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    if [ -n "$started" ]; then
      pids+=("$pid")
      printf -v "$var" '%s' "$p"
      return 0
    fi
    echo "with-memcached.sh: memcached on port $p did not come up (attempt $attempt); log:" >&2
    cat "$log" >&2 2>/dev/null
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  echo "with-memcached.sh: could not start memcached" >&2
  exit 2
}
start_server port
start_server evict_port

export STORESIM_MEMCACHED_ADDR="127.0.0.1:$port"
export STORESIM_MEMCACHED_EVICT_ADDR="127.0.0.1:$evict_port"
export STORESIM_MEMCACHED_REQUIRED=1
echo "with-memcached.sh: memcached pids ${pids[*]} on $STORESIM_MEMCACHED_ADDR and $STORESIM_MEMCACHED_EVICT_ADDR (-m $mb MB each)" >&2
"$@"
rc=$?
exit "$rc"
