#!/usr/bin/env bash
# Fail when the committed /ui types drifted: the OpenAPI document or limits no longer match
# console/schemas.py, or ui.ts is not what openapi-typescript makes of the committed document.
# scripts/test.sh runs it; fix a failure with scripts/gen_ui_types.sh and commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
"$PY" manage.py uns_ui_schema --skip-checks --check
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
(cd frontend && ./node_modules/.bin/openapi-typescript src/generated/ui-openapi.json -o "$tmp" >/dev/null)
if ! diff -u frontend/src/generated/ui.ts "$tmp"; then
  echo "frontend/src/generated/ui.ts is out of date: run scripts/gen_ui_types.sh and commit" >&2
  exit 1
fi
echo "generated TypeScript types are up to date"
