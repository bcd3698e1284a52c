#!/usr/bin/env bash
# Make sure PostgreSQL answers; print the DATABASE_URL to use on stdout.
# Uses 127.0.0.1:5432 when it answers; otherwise installs PostgreSQL from Debian's packages if
# needed and starts a throwaway cluster (fsync off) on 127.0.0.1:55432 in var/pg.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { echo "[services] $*" >&2; }
# `scripts/services.sh redis`: make sure Redis answers instead, and print the REDIS_URL to use.
# Uses 127.0.0.1:6379 when it answers; otherwise installs redis-server from Debian's packages if
# needed and starts a throwaway server (no persistence) on 127.0.0.1:56379.
if [ "${1:-}" = "redis" ]; then
  redis_up() { redis-cli -h 127.0.0.1 -p "$1" ping >/dev/null 2>&1; }
  if redis_up 6379; then echo "redis://127.0.0.1:6379/0"; exit 0; fi
  RPORT=56379
  if redis_up $RPORT; then echo "redis://127.0.0.1:$RPORT/0"; exit 0; fi
  if ! command -v redis-server >/dev/null 2>&1; then
    log "Redis not installed: apt-get install redis-server"
    (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server) >&2
  fi
  log "starting a throwaway Redis on 127.0.0.1:$RPORT"
  redis-server --bind 127.0.0.1 --port $RPORT --save '' --appendonly no --daemonize yes >&2
  for _ in $(seq 100); do redis_up $RPORT && break; sleep 0.1; done
  redis_up $RPORT || { log "Redis did not start on $RPORT"; exit 1; }
  echo "redis://127.0.0.1:$RPORT/0"; exit 0
fi
if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  echo "postgres://postgres@127.0.0.1:5432/uns"; exit 0
fi
PORT=55432
if pg_isready -q -h 127.0.0.1 -p $PORT 2>/dev/null; then echo "postgres://postgres@127.0.0.1:$PORT/uns"; exit 0; fi
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)
if [ -z "$BIN" ]; then
  log "PostgreSQL not installed: apt-get install postgresql"
  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql) >&2
  BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
fi
DATA="$PWD/var/pg"
rm -rf "$DATA" && mkdir -p "$DATA" && chown postgres "$DATA"
log "starting a throwaway PostgreSQL cluster on 127.0.0.1:$PORT"
runuser -u postgres -- "$BIN/initdb" -q -A trust -U postgres -D "$DATA" >&2
runuser -u postgres -- "$BIN/pg_ctl" -s -D "$DATA" -l "$DATA/log" -w \
  -o "-c listen_addresses=127.0.0.1 -c port=$PORT -c fsync=off -c unix_socket_directories=$DATA -c max_connections=200" start >&2
echo "postgres://postgres@127.0.0.1:$PORT/uns"
