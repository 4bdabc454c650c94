#!/usr/bin/env bash
# `make test`: the private stack as for `make run` (unless pointed elsewhere), then lint and
# pytest. What this script started it stops again; a stack already running stays running.
set -euo pipefail
cd "$(dirname "$0")/.."
given_db=${EP_DATABASE_URL:-}; given_mqtt=${EP_MQTT_URL:-}

if ! scripts/local-stack.sh running; then
  trap 'EP_DATABASE_URL=$given_db EP_MQTT_URL=$given_mqtt scripts/local-stack.sh stop' EXIT
fi
scripts/local-stack.sh start
eval "$(scripts/local-stack.sh env)"

.venv/bin/energy-platform migrate >/dev/null
make --no-print-directory lint
.venv/bin/pytest "$@"
