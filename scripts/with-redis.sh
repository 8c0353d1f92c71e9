#!/usr/bin/env bash
# with-redis.sh CMD… — run CMD with a private, throw-away redis-server.
#
# Starts `redis-server --port P --bind 127.0.0.1 --save '' --appendonly no
# --daemonize no` on a free loopback port P, in its own directory under a
# mktemp dir, waits until it answers PING, exports
#   STORESIM_REDIS_ADDR=127.0.0.1:P
#   STORESIM_REDIS_REQUIRED=1   (tests that need Redis fail instead of skip)
# runs CMD, stops the server (also on error or Ctrl-C) and exits with CMD's
# exit code.
#
# redis-server missing: prints how to install it and exits 2 — unless
# STORESIM_INSTALL_REDIS=1, we are root and apt-get exists, in which case it
# installs it (what .ci/run does).
#
# Example: scripts/with-redis.sh go test ./drivers/redisdriver
set -uo pipefail

if [ $# -eq 0 ]; then
  echo "usage: scripts/with-redis.sh CMD [ARG…]" >&2
  exit 2
fi

if ! command -v redis-server >/dev/null 2>&1; then
  if [ "${STORESIM_INSTALL_REDIS:-}" = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "with-redis.sh: installing redis-server (apt-get install -y redis-server)" >&2
    if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >&2; then
      echo "with-redis.sh: apt-get install -y redis-server failed" >&2
      exit 2
    fi
  else
    echo "redis-server not found: install it with: apt-get install -y redis-server" >&2
    exit 2
  fi
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/storesim-redis.XXXXXX") || exit 2
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

# ping PORT: true when a server on 127.0.0.1:PORT answers +PONG.
ping() {
  local reply=""
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  printf 'PING\r\n' >&3
  IFS= read -r -t 1 reply <&3
  exec 3<&- 3>&-
  [ "${reply%$'\r'}" = "+PONG" ]
}

# port_free PORT: true when nothing accepts connections on it.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Pick a random high port that looks free, start the server on it, and wait
# for PING; if the server dies (someone took the port in between), retry.
started=""
for attempt in 1 2 3 4 5 6 7 8 9 10; do
  port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
  port_free "$port" || continue
  dir="$tmp/$port"
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize no --dir "$dir" --logfile "$dir/redis.log" &
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
  echo "with-redis.sh: redis-server on port $port did not come up (attempt $attempt); log:" >&2
  cat "$dir/redis.log" >&2 2>/dev/null
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  pid=""
done
if [ -z "$started" ]; then
  echo "with-redis.sh: could not start redis-server" >&2
  exit 2
fi

export STORESIM_REDIS_ADDR="127.0.0.1:$port"
export STORESIM_REDIS_REQUIRED=1
echo "with-redis.sh: redis-server pid $pid on $STORESIM_REDIS_ADDR" >&2
"$@"
rc=$?
exit "$rc"
