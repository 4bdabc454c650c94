#!/usr/bin/env bash
# `make run`: start the private stack (unless EP_DATABASE_URL / EP_MQTT_URL point elsewhere),
# migrate, and serve every service in the foreground. Ctrl-C stops the platform, then the private
# database and broker if this run started them.
set -euo pipefail
cd "$(dirname "$0")/.."
given_db=${EP_DATABASE_URL:-}; given_mqtt=${EP_MQTT_URL:-}

if ! scripts/local-stack.sh running; then
  trap 'EP_DATABASE_URL=$given_db EP_MQTT_URL=$given_mqtt scripts/local-stack.sh stop' EXIT
fi
scripts/local-stack.sh start
eval "$(scripts/local-stack.sh env)"
# Ctrl-C reaches the platform directly; it stops cleanly and this script then stops the stack.
trap '' INT

.venv/bin/energy-platform migrate >/dev/null
host=${EP_HTTP_HOST:-127.0.0.1}
cat <<MSG

  energy-platform is starting (Ctrl-C stops it)
    data API      http://$host:${EP_HTTP_API_PORT:-8000}          OpenAPI: /schema
    provisioning  http://$host:${EP_HTTP_PROVISIONING_PORT:-8001}/api
    forwarder     http://$host:${EP_HTTP_FORWARDER_PORT:-8002}
    CoAP          udp://${EP_DEVICES_HOST:-127.0.0.1}:${EP_DEVICES_COAP_PORT:-5683}
    database      $EP_DATABASE_URL
    MQTT broker   $EP_MQTT_URL

MSG
.venv/bin/energy-platform serve all
