#!/usr/bin/env bash
# with-memcached.sh CMD… — run CMD with a private, throw-away memcached.
#
# Starts `memcached -l 127.0.0.1 -p P -U 0 -m MB -I 1m` on a free loopback
# port P (TCP only, no UDP), with a small memory limit (STORESIM_MEMCACHED_MB,
# default 8 MB) so that real LRU eviction happens once a test writes more than
# that; waits until it answers `version`, exports
#   STORESIM_MEMCACHED_ADDR=127.0.0.1:P
#   STORESIM_MEMCACHED_REQUIRED=1   (tests that need memcached fail instead of skip)
# runs CMD, stops the server (also on error or Ctrl-C) and exits with CMD's
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
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
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

# Pick a random high port that looks free, start the server on it, and wait
# for `version`; if the server dies (someone took the port in between), retry.
started=""
for attempt in 1 2 3 4 5 6 7 8 9 10; do
  port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
  port_free "$port" || continue
  log="$tmp/memcached-$port.log"
  memcached -l 127.0.0.1 -p "$port" -U 0 -m "$mb" -I 1m -c 1024 "${user[@]}" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do
    if ping "$port"; then
      started=1
      break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  [ -n "$started" ] && break
  echo "with-memcached.sh: memcached on port $port did not come up (attempt $attempt); log:" >&2
  cat "$log" >&2 2>/dev/null
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  pid=""
done
if [ -z "$started" ]; then
  echo "with-memcached.sh: could not start memcached" >&2
  exit 2
fi

export STORESIM_MEMCACHED_ADDR="127.0.0.1:$port"
export STORESIM_MEMCACHED_REQUIRED=1
echo "with-memcached.sh: memcached pid $pid on $STORESIM_MEMCACHED_ADDR (-m $mb MB)" >&2
"$@"
rc=$?
exit "$rc"
