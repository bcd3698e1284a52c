#!/usr/bin/env bash
# Regenerate the console's /api/v1 types: the OpenAPI document drf-spectacular renders
# (manage.py spectacular), then the TypeScript types from that document (openapi-typescript),
# which the console's write calls are typed on (openapi-fetch, src/api.ts). Run after changing an
# /api/v1 payload, and commit frontend/src/generated/. Also: `npm run gen:types`. A member with a
# default is optional in what the console sends (--default-non-nullable false).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
"$PY" manage.py spectacular --skip-checks --format openapi-json --file frontend/src/generated/api-v1-openapi.json
(cd frontend && ./node_modules/.bin/openapi-typescript src/generated/api-v1-openapi.json --default-non-nullable false -o src/generated/api-v1.ts >/dev/null)
echo "regenerated frontend/src/generated/ (api-v1-openapi.json, api-v1.ts)"
