#!/usr/bin/env bash
# `make test`: inside the private stack (scripts/local-stack.sh with: started unless running or
# pointed elsewhere, stopped again if this run started it), migrate, lint, then pytest "$@".
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${LOCAL_STACK_INSIDE:-}" ] || exec scripts/local-stack.sh with scripts/test.sh "$@"

.venv/bin/energy-platform migrate >/dev/null
make --no-print-directory lint
.venv/bin/pytest -n "${PYTEST_WORKERS:-4}" --dist loadgroup "$@"
