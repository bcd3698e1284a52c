#!/usr/bin/env bash
# Fail when the committed /api/v1 types drifted: the OpenAPI document no longer matches what
# drf-spectacular renders, or api-v1.ts is not what openapi-typescript makes of the committed
# document. scripts/test.sh runs it; fix a failure with scripts/gen_api_types.sh and commit.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
doc=$(mktemp)
types=$(mktemp)
trap 'rm -f "$doc" "$types"' EXIT
"$PY" manage.py spectacular --skip-checks --format openapi-json --file "$doc"
status=0
if ! diff -u frontend/src/generated/api-v1-openapi.json "$doc"; then
  echo "frontend/src/generated/api-v1-openapi.json is out of date" >&2
  status=1
fi
(cd frontend && ./node_modules/.bin/openapi-typescript src/generated/api-v1-openapi.json --default-non-nullable false -o "$types" >/dev/null)
if ! diff -u frontend/src/generated/api-v1.ts "$types"; then
  echo "frontend/src/generated/api-v1.ts is out of date" >&2
  status=1
fi
if [ $status -ne 0 ]; then
  echo "run scripts/gen_api_types.sh and commit" >&2
  exit 1
fi
echo "generated /api/v1 TypeScript types are up to date"
