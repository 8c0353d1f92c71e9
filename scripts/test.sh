#!/usr/bin/env bash
# The README's test command: the whole suite, with a private redis-server for
# the Redis driver's tests. Installs redis-server with apt-get when it is
# missing and we are root; otherwise says how to install it and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: installing redis-server (apt-get install -y redis-server)" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >&2
  else
    echo "test.sh: redis-server not found: install it with: apt-get install -y redis-server" >&2
    exit 2
  fi
fi
# shellcheck disable=SC2086
exec scripts/with-redis.sh go test ${STORESIM_TEST_FLAGS:-} -count=1 ./... "$@"
