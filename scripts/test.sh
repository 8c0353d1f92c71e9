#!/usr/bin/env bash
# The README's test command: the whole suite, with a private redis-server for
# the Redis driver's tests and private memcached servers for the memcached
# driver's. Installs redis-server and memcached with apt-get when they are
# missing and we are root; otherwise says how to install them and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v memcached >/dev/null 2>&1 || missing+=(memcached)
command -v python3 >/dev/null 2>&1 || missing+=(python3) # the process-boundary driver tests (drivers/procdriver) run the Python drivers
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: installing ${missing[*]} (apt-get install -y ${missing[*]})" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 "${missing[@]}") >&2
  else
    echo "test.sh: ${missing[*]} not found: install with: apt-get install -y ${missing[*]}" >&2
    exit 2
  fi
fi
# shellcheck disable=SC2086
exec scripts/with-redis.sh scripts/with-memcached.sh go test ${STORESIM_TEST_FLAGS:-} -count=1 ./... "$@"
