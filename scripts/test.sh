#!/usr/bin/env bash
# The README's test command: install, then run the suite in two legs.
#   SQLite leg:     the unit and API suites (pytest -m "not e2e").
#   PostgreSQL leg: the same suites plus every e2e test (@pytest.mark.e2e: real processes, i.e. the
#                   cross-process/Redis WebSocket, MCP server-process, Alertmanager and browser
#                   suites), once, on the database of the scaled mode.
# Fails (never passes silently) when a leg collects no tests, PostgreSQL or Redis is unavailable,
# or a test skips for a missing service or tool (UNS_CI=1, see tests/conftest.py).
# Extra arguments go to both pytest runs.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh || exit 1
PY=.venv/bin/python
status=0
# A skip for a missing service (Redis, Chromium, Alertmanager) fails the leg (tests/conftest.py).
export UNS_CI=1
# run_leg NAME [VAR=value ...] -- [pytest args ...]
run_leg() {
  local name=$1; shift
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  echo "=============================== $name ==============================="
  env "${envs[@]}" $PY -m pytest -p no:cacheprovider --durations=25 "$@" "${PYTEST_ARGS[@]}"
  local rc=$?
  if [ $rc -eq 5 ]; then echo "!!! $name: NO TESTS COLLECTED - failing the run"; rc=1; fi
  if [ $rc -ne 0 ]; then echo "!!! $name leg FAILED (exit $rc)"; status=1; fi
}
PYTEST_ARGS=("$@")
# The console (frontend/): type-check and build it (Django serves frontend/dist; the browser tests
# load it), then its Vitest unit tests. The browser tests drive Debian's Chromium, never
# `playwright install`.
(cd frontend && npm install --no-audit --no-fund && npx --no -- tsc --noEmit -p . && npx --no vite build \
  && npx --no vitest run) || { echo "!!! console (frontend) build or Vitest unit tests FAILED"; status=1; }
# The console's /ui types are generated (console/schemas.py -> OpenAPI -> openapi-typescript): a
# /ui field changed without `scripts/gen_ui_types.sh` fails the build here.
scripts/check_ui_types.sh || { echo "!!! generated /ui types DRIFTED: run scripts/gen_ui_types.sh and commit"; status=1; }
[ -x /usr/bin/chromium ] || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium) >&2 \
  || echo "!!! chromium could not be installed: the console browser tests will FAIL"
# The Alertmanager end-to-end test drives a real Alertmanager (Debian's prometheus-alertmanager).
command -v prometheus-alertmanager >/dev/null 2>&1 || (apt-get update -q && DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends prometheus-alertmanager) >&2 \
  || echo "!!! prometheus-alertmanager could not be installed: its end-to-end test will FAIL"

# Redis for both legs: the readiness check of a Redis channel layer and the shared login
# throttle (unit tests), and the scaled-mode end-to-end tests' channel layer between processes.
UNS_TEST_REDIS_URL=$(scripts/services.sh redis) || { echo "!!! Redis could not be started: failing the run"; exit 1; }
export UNS_TEST_REDIS_URL

run_leg "SQLite leg: unit + API suites (e2e tests run in the PostgreSQL leg)" \
  DATABASE_URL="sqlite:///$PWD/var/test.sqlite3" -- -m "not e2e"

PG_URL=$(scripts/services.sh) || { echo "!!! PostgreSQL could not be started: failing the run"; exit 1; }
# This run's own test database (the e2e and MCP suites create uns_e2e_<random> / uns_mcp_<random>
# ones), so two runs against one server do not collide.
TEST_DB="test_uns_$$_$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
run_leg "PostgreSQL leg ($PG_URL, test database $TEST_DB): unit + API + e2e suites" \
  DATABASE_URL="$PG_URL" UNS_REQUIRE_POSTGRES=1 UNS_TEST_DB_NAME="$TEST_DB" --
# Django drops the test database itself; when a connection is still open at the very end it only
# warns ("is being accessed by other users") and the database would stay on the server.
psql "${PG_URL%/*}/postgres" -qc "DROP DATABASE IF EXISTS \"$TEST_DB\" WITH (FORCE)" >/dev/null 2>&1 || true
exit $status
