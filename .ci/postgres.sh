#!/usr/bin/env bash
# Start or stop a throw-away PostgreSQL server for the test suite.
#   bash .ci/postgres.sh start   -> writes the connection URL to .ci/.pg_url
#   bash .ci/postgres.sh stop
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="${ACCORD_PG_DIR:-/tmp/accord-ci-pg}"
port="${ACCORD_PG_PORT:-55432}"

find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  return 1
}

start() {
  local bin
  if ! bin="$(find_bin)"; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq postgresql >/dev/null
    bin="$(find_bin)"
  fi
  id -u postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
  run_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
  # A server left by an earlier run holds the port: stop it (pg_ctl refuses to run as root).
  if [ -f "$root/data/postmaster.pid" ]; then
    run_pg "'$bin/pg_ctl' -D '$root/data' stop -m fast -w" >/dev/null 2>&1 \
      || kill "$(head -n 1 "$root/data/postmaster.pid")" 2>/dev/null || true
  fi
  rm -rf "$root"
  mkdir -p "$root"
  chown postgres "$root"
  run_pg "'$bin/initdb' -D '$root/data' -U postgres --auth=trust -E UTF8 >/dev/null"
  run_pg "'$bin/pg_ctl' -D '$root/data' -l '$root/log' -w -o \"-p $port -k $root -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off\" start >/dev/null"
  run_pg "'$bin/createdb' -h 127.0.0.1 -p $port -U postgres accord_test"
  echo "postgresql://postgres@127.0.0.1:$port/accord_test" > "$here/.pg_url"
  echo "postgres up: $(cat "$here/.pg_url")"
}

stop() {
  local bin
  bin="$(find_bin)" || return 0
  if [ -f "$root/data/postmaster.pid" ]; then
    if [ "$(id -u)" = 0 ]; then
      su postgres -s /bin/sh -c "'$bin/pg_ctl' -D '$root/data' stop -m fast" >/dev/null || true
    else
      "$bin/pg_ctl" -D "$root/data" stop -m fast >/dev/null || true
    fi
  fi
  rm -f "$here/.pg_url"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
