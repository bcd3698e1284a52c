#!/usr/bin/env bash
# The README's test command: install, then run the whole suite on SQLite and on PostgreSQL.
# Fails (never passes silently) when a leg collects no tests or PostgreSQL is unavailable.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh || exit 1
PY=.venv/bin/python
status=0
run_leg() {
  local name=$1; shift
  echo "=============================== $name ==============================="
  env "$@" $PY -m pytest -p no:cacheprovider "${PYTEST_ARGS[@]}"
  local rc=$?
  if [ $rc -eq 5 ]; then echo "!!! $name: NO TESTS COLLECTED - failing the run"; rc=1; fi
  if [ $rc -ne 0 ]; then echo "!!! $name leg FAILED (exit $rc)"; status=1; fi
}
PYTEST_ARGS=("$@")
# The scaled-mode end-to-end tests share a channel layer between processes through Redis.
UNS_TEST_REDIS_URL=$(scripts/services.sh redis) || { echo "!!! Redis could not be started: failing the run"; exit 1; }
export UNS_TEST_REDIS_URL
# The console (frontend/): type-check and build it (Django serves frontend/dist; the browser tests
# load it), then its Vitest unit tests. The browser tests drive Debian's Chromium, never
# `playwright install`.
(cd frontend && npm install --no-audit --no-fund && npx --no -- tsc --noEmit -p . && npx --no vite build \
  && npx --no vitest run) || { echo "!!! console (frontend) build or Vitest unit tests FAILED"; status=1; }
[ -x /usr/bin/chromium ] || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium) >&2 \
  || echo "!!! chromium could not be installed: the console browser tests will FAIL"
# The Alertmanager end-to-end test drives a real Alertmanager (Debian's prometheus-alertmanager).
command -v prometheus-alertmanager >/dev/null 2>&1 || (apt-get update -q && DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends prometheus-alertmanager) >&2 \
  || echo "!!! prometheus-alertmanager could not be installed: its end-to-end test will be SKIPPED"
run_leg "SQLite" DATABASE_URL="sqlite:///$PWD/var/test.sqlite3"
PG_URL=$(scripts/services.sh) || { echo "!!! PostgreSQL could not be started: failing the run"; exit 1; }
run_leg "PostgreSQL ($PG_URL)" DATABASE_URL="$PG_URL" UNS_REQUIRE_POSTGRES=1
exit $status
