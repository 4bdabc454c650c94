#!/usr/bin/env bash
# `make bench`: wrk for the HTTP load, then every benchmark inside the private stack as for
# `make test` (scripts/local-stack.sh with).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
if [ -z "${LOCAL_STACK_INSIDE:-}" ]; then
  if ! command -v wrk >/dev/null; then
    as_root apt-get install -y -qq wrk >/dev/null 2>&1 \
      || { as_root apt-get update -qq && as_root apt-get install -y -qq wrk >/dev/null; }
  fi
  exec scripts/local-stack.sh with scripts/bench.sh "$@"
fi
.venv/bin/python -m benchmarks.run_all "$@"
