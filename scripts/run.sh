#!/usr/bin/env bash
# `make run`: the embedded mode. Installs the locked Python environment, installs and builds the
# console, migrates and collects the static files, then serves (manage.py uns_serve, which runs
# the system checks) on ${HOST:-127.0.0.1}:${PORT:-8000}.
#
# Each step runs only when its inputs changed since it last succeeded: var/stamps/<step> holds a
# hash of its inputs, written after the step succeeded; a different hash, or a missing output,
# runs the step again. Migrations are decided by the database itself (`migrate --check`), so a
# new or fresh database is always migrated.
set -euo pipefail
cd "$(dirname "$0")/.."
STAMPS=var/stamps
mkdir -p "$STAMPS"
PY=.venv/bin/python

# inputs_hash EXTRA PATH...: one hash over EXTRA (tool versions, settings) and the names and
# contents of the files under each PATH (a missing path counts as absent; node_modules never).
inputs_hash() {
  local extra=$1 path paths=(); shift
  for path in "$@"; do [ -e "$path" ] && paths+=("$path"); done
  { printf '%s\n' "$extra" "${paths[@]}"
    [ ${#paths[@]} -eq 0 ] || find "${paths[@]}" \( -name node_modules -o -name __pycache__ \) -prune -o -type f -print0 \
      | sort -z | xargs -0 -r sha256sum; } | sha256sum | cut -d' ' -f1
}

# step NAME OUTPUT KEY COMMAND...: run COMMAND unless the stamp holds KEY and OUTPUT exists.
step() {
  local name=$1 output=$2 key=$3; shift 3
  if [ -e "$output" ] && [ "$(cat "$STAMPS/$name" 2>/dev/null)" = "$key" ]; then
    echo "$name: inputs unchanged since the last run, skipped"
    return
  fi
  rm -f "$STAMPS/$name"
  "$@"
  echo "$key" > "$STAMPS/$name"
}

key=$(inputs_hash "$(python3 --version 2>&1) $(command -v python3)" uv.lock pyproject.toml scripts/bootstrap.sh)
step install "$PY" "$key" scripts/bootstrap.sh

key=$(inputs_hash "$(node --version)" frontend/package.json frontend/package-lock.json)
step console-install frontend/node_modules/.package-lock.json "$key" \
  bash -c 'cd frontend && npm install --no-audit --no-fund'

# The build's inputs: everything in frontend/ but node_modules/ and dist/ (sources, configs, lockfile).
key=$(inputs_hash "$(node --version)" $(find frontend -mindepth 1 -maxdepth 1 ! -name node_modules ! -name dist))
step console-build frontend/dist/index.html "$key" bash -c 'cd frontend && npx --no vite build'

# The system checks run once, in uns_serve, hence --skip-checks here. The post-migrate seed
# (notifications.seed: groups, capabilities, the console channel) runs again when its inputs change.
key=$(inputs_hash "${DATABASE_URL:-}" notifications/seed.py notifications/access.py .env)
if ! $PY manage.py migrate --check --skip-checks >/dev/null 2>&1; then rm -f "$STAMPS/migrate"; fi
step migrate manage.py "$key" $PY manage.py migrate --no-input --skip-checks

# var/static: hashed, gzip + Brotli (WhiteNoise serves it). Inputs: the console's build, the
# installed packages' static files (uv.lock), the apps' own, the storage and its settings.
STATIC_ROOT=${UNS_STATIC_ROOT:-var/static}
key=$(inputs_hash "$STATIC_ROOT" frontend/dist uv.lock uns_project/static.py uns_project/settings.py .env \
  $(find notifications policies console -type d -name static -prune -print))
step collectstatic "$STATIC_ROOT/staticfiles.json" "$key" $PY manage.py collectstatic --no-input -v 0

exec $PY manage.py uns_serve --host "${HOST:-127.0.0.1}" --port "${PORT:-8000}"
