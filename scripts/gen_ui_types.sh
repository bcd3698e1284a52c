#!/usr/bin/env bash
# Regenerate the console's /ui types: the OpenAPI document and limits from console/schemas.py
# (manage.py uns_ui_schema), then the TypeScript types from that document (openapi-typescript).
# Run after changing a /ui payload, and commit frontend/src/generated/. Also: `npm run gen:types`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
"$PY" manage.py uns_ui_schema --skip-checks
(cd frontend && ./node_modules/.bin/openapi-typescript src/generated/ui-openapi.json -o src/generated/ui.ts >/dev/null)
"$PY" scripts/gen_problem_codes.py  # the problem codes, from core/codes.py
echo "regenerated frontend/src/generated/ (ui-openapi.json, ui.ts, limits.ts)"
