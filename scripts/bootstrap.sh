#!/usr/bin/env bash
# Install the Python environment (.venv) from uv.lock. Needs only python3 >= 3.11.
set -euo pipefail
cd "$(dirname "$0")/.."
export UV_PYTHON_DOWNLOADS=never
if command -v uv >/dev/null 2>&1; then UV=uv; else
  if [ ! -x .uv-tool/bin/uv ]; then python3 -m venv .uv-tool && .uv-tool/bin/pip install -q uv; fi
  UV=.uv-tool/bin/uv
fi
"$UV" sync --frozen --python "$(command -v python3)" -q
