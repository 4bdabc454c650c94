#!/usr/bin/env bash
# Creates .venv with the project and its locked dependencies (uv.lock). Re-running after a change
# of pyproject.toml or uv.lock syncs; otherwise it does nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
PYTHON=${PYTHON:-python3}
UV_VERSION=$(grep -oE '"uv==[0-9.]+"' pyproject.toml | grep -oE '[0-9.]+[0-9]')

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "install-python: Python 3.11+ required, found $("$PYTHON" --version)" >&2; exit 1; }
stamp=.venv/.synced
if [ -f "$stamp" ] && [ "$stamp" -nt uv.lock ] && [ "$stamp" -nt pyproject.toml ]; then exit 0; fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
[ -x .venv/bin/uv ] || .venv/bin/python -m pip install -q "uv==$UV_VERSION"
UV_PROJECT_ENVIRONMENT=.venv .venv/bin/uv sync --frozen --quiet
touch "$stamp"
