#!/usr/bin/env bash
# `manage.py check --deploy` with the documented production settings (docs/how-to/production.env,
# plus a random secret key, which the file leaves to the operator) must print no warning.
# scripts/test.sh runs it; a setting that brings a deployment warning back fails here.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
env_file=$(mktemp)
trap 'rm -f "$env_file"' EXIT
cp docs/how-to/production.env "$env_file"
"$PY" -c 'import secrets; print("DJANGO_SECRET_KEY=" + secrets.token_urlsafe(50))' >> "$env_file"
# Only the file's variables and the secret: none of the caller's UNS_*/DJANGO_* settings leak in.
# shellcheck disable=SC2046
env -i PATH="$PATH" HOME="${HOME:-/tmp}" $(grep -E '^[A-Z_]+=' "$env_file") \
  "$PY" manage.py check --deploy --fail-level WARNING
