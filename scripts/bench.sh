#!/usr/bin/env bash
# `make bench`: the private stack as for `make test`, wrk for the HTTP load, then every benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v wrk >/dev/null; then
  as_root apt-get install -y -qq wrk >/dev/null 2>&1 \
    || { as_root apt-get update -qq && as_root apt-get install -y -qq wrk >/dev/null; }
fi
given_db=${EP_DATABASE_URL:-}; given_mqtt=${EP_MQTT_URL:-}
if ! scripts/local-stack.sh running; then
  trap 'EP_DATABASE_URL=$given_db EP_MQTT_URL=$given_mqtt scripts/local-stack.sh stop' EXIT
fi
scripts/local-stack.sh start
eval "$(scripts/local-stack.sh env)"
.venv/bin/python -m benchmarks.run_all "$@"
