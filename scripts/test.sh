#!/usr/bin/env bash
# The README's test command: install, then run the suite in three legs.
#   SQLite leg:         the unit and API suites (pytest -m "not e2e").
#   PostgreSQL leg:     the same suites on the database of the scaled mode.
#   PostgreSQL e2e leg: every e2e test (@pytest.mark.e2e: real processes, i.e. the cross-process/
#                       Redis WebSocket, MCP server-process, Alertmanager and browser suites), once.
# The e2e leg runs beside the other two (it spends much of its time waiting on the processes it
# starts): each leg has its own test database and its own Redis database number, so no leg sees
# another's rows, channel-layer groups or throttle counters. Its output is printed when it ends.
# Fails (never passes silently) when a leg collects no tests, PostgreSQL or Redis is unavailable,
# or a test skips for a missing service or tool (UNS_CI=1, see tests/conftest.py).
# Extra arguments go to both pytest runs.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh || exit 1
PY=.venv/bin/python
status=0
# Imports point down: the import-linter contracts (pyproject.toml, [tool.importlinter]) and no
# circle anywhere in the import graph (grimp's, imports inside functions included).
.venv/bin/lint-imports || { echo "!!! import contracts BROKEN (an import points up): see lint-imports above"; status=1; }
$PY scripts/check_import_cycles.py || { echo "!!! the import graph has a CIRCLE: see above"; status=1; }
# A skip for a missing service (Redis, Chromium, Alertmanager) fails the leg (tests/conftest.py).
export UNS_CI=1
# run_leg NAME [VAR=value ...] -- [pytest args ...]
run_leg() {
  local name=$1; shift
  local status_file=""
  if [ "$1" = "--status-file" ]; then status_file=$2; shift 2; fi
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  echo "=============================== $name ==============================="
  env "${envs[@]}" $PY -m pytest -p no:cacheprovider --durations=25 "$@" "${PYTEST_ARGS[@]}"
  local rc=$?
  if [ $rc -eq 5 ]; then echo "!!! $name: NO TESTS COLLECTED - failing the run"; rc=1; fi
  if [ $rc -ne 0 ]; then echo "!!! $name leg FAILED (exit $rc)"; status=1; fi
  [ -z "$status_file" ] || echo $rc > "$status_file"
}
PYTEST_ARGS=("$@")
# Security lint of the product code (tests/ and bench/ are not shipped): every finding of medium
# severity and confidence or above fails the run; a reviewed one carries `# nosec BXXX  # why` on
# its line. (Bandit tests only the first literal part of an f-string, and warns that a `nosec`
# on the line skipped nothing for the other parts: those warnings are dropped.)
$PY -m bandit -q -r core notifications policies console uns_project manage.py --severity-level medium \
  --confidence-level medium 2> >(grep -v "but no failed test on file" >&2) \
  || { echo "!!! bandit: a new security finding (fix it, or mark it # nosec BXXX with the reason)"; status=1; }
# The console (frontend/): type-check and build it (Django serves frontend/dist; the browser tests
# load it), then its Vitest unit tests. The browser tests drive Debian's Chromium, never
# `playwright install`.
(cd frontend && npm install --no-audit --no-fund && npx --no -- tsc --noEmit -p . && npx --no vite build \
  && npx --no vitest run) || { echo "!!! console (frontend) build or Vitest unit tests FAILED"; status=1; }
# The console's /ui types are generated (console/schemas.py -> OpenAPI -> openapi-typescript): a
# /ui field changed without `scripts/gen_ui_types.sh` fails the build here.
scripts/check_ui_types.sh || { echo "!!! generated /ui types DRIFTED: run scripts/gen_ui_types.sh and commit"; status=1; }
# The console's problem codes are generated from the catalog (core/codes.py).
$PY scripts/gen_problem_codes.py --check \
  || { echo "!!! generated problem codes DRIFTED: run scripts/gen_problem_codes.py and commit"; status=1; }
# Likewise the /api/v1 types the console's write calls are typed on (drf-spectacular's document ->
# openapi-typescript): an /api/v1 payload changed without `scripts/gen_api_types.sh` fails here.
scripts/check_api_types.sh || { echo "!!! generated /api/v1 types DRIFTED: run scripts/gen_api_types.sh and commit"; status=1; }
# The documentation: the reference pages are generated from the code (settings, API, frames, tools,
# events, problem codes, metrics, commands, states): one changed without `make reference` fails
# here; then the site builds with --strict (a broken link or a missing page fails).
$PY scripts/gen_reference.py --check \
  || { echo "!!! generated reference pages DRIFTED: run scripts/gen_reference.py (make reference) and commit"; status=1; }
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir var/site \
  || { echo "!!! the documentation site does not build (mkdocs build --strict: see above)"; status=1; }
# `manage.py check --deploy` with the documented production settings (docs/how-to/production.env)
# prints no warning.
scripts/check_deploy.sh \
  || { echo "!!! manage.py check --deploy WARNS with the documented production settings: see above"; status=1; }
[ -x /usr/bin/chromium ] || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium) >&2 \
  || echo "!!! chromium could not be installed: the console browser tests will FAIL"
# The Alertmanager end-to-end test drives a real Alertmanager (Debian's prometheus-alertmanager).
command -v prometheus-alertmanager >/dev/null 2>&1 || (apt-get update -q && DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends prometheus-alertmanager) >&2 \
  || echo "!!! prometheus-alertmanager could not be installed: its end-to-end test will FAIL"

# Redis for every leg: the readiness check of a Redis channel layer and the shared login
# throttle (unit tests), and the scaled-mode end-to-end tests' channel layer between processes.
REDIS_URL_0=$(scripts/services.sh redis) || { echo "!!! Redis could not be started: failing the run"; exit 1; }
redis_db() { echo "${REDIS_URL_0%/*}/$1"; }  # the same server, database number $1

PG_URL=$(scripts/services.sh) || { echo "!!! PostgreSQL could not be started: failing the run"; exit 1; }
# Each PostgreSQL leg's own test database (the e2e and MCP suites also create uns_e2e_<random> /
# uns_mcp_<random> ones), so two runs against one server do not collide.
RUN_ID="$$_$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
TEST_DB="test_uns_$RUN_ID"
E2E_DB="test_uns_e2e_$RUN_ID"
mkdir -p var
E2E_LOG=$(mktemp var/e2e-leg.XXXXXX.log)
E2E_RC=$(mktemp var/e2e-leg.XXXXXX.rc)
echo 1 > "$E2E_RC"  # unless the leg says otherwise
run_leg "PostgreSQL e2e leg ($PG_URL, test database $E2E_DB): e2e suites" --status-file "$E2E_RC" \
  DATABASE_URL="$PG_URL" UNS_REQUIRE_POSTGRES=1 UNS_TEST_DB_NAME="$E2E_DB" UNS_TEST_REDIS_URL="$(redis_db 3)" \
  -- -m e2e > "$E2E_LOG" 2>&1 &
E2E_PID=$!
echo "(the PostgreSQL e2e leg runs beside the next two legs; its output follows them)"

run_leg "SQLite leg: unit + API suites (e2e tests run in the PostgreSQL e2e leg)" \
  DATABASE_URL="sqlite:///$PWD/var/test.sqlite3" UNS_TEST_REDIS_URL="$(redis_db 1)" -- -m "not e2e"

run_leg "PostgreSQL leg ($PG_URL, test database $TEST_DB): unit + API suites" \
  DATABASE_URL="$PG_URL" UNS_REQUIRE_POSTGRES=1 UNS_TEST_DB_NAME="$TEST_DB" UNS_TEST_REDIS_URL="$(redis_db 2)" \
  -- -m "not e2e"

wait $E2E_PID
cat "$E2E_LOG"
e2e_rc=$(cat "$E2E_RC")
rm -f "$E2E_LOG" "$E2E_RC"
if [ "$e2e_rc" != 0 ]; then echo "!!! PostgreSQL e2e leg FAILED (exit $e2e_rc)"; status=1; fi
# Django drops the test databases itself; when a connection is still open at the very end it only
# warns ("is being accessed by other users") and the database would stay on the server.
for db in "$TEST_DB" "$E2E_DB"; do
  psql "${PG_URL%/*}/postgres" -qc "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null 2>&1 || true
done
exit $status
