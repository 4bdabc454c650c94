#!/usr/bin/env bash
# `make run`: inside the private stack (scripts/local-stack.sh with: started unless running or
# pointed elsewhere by EP_DATABASE_URL / EP_MQTT_URL), migrate, and serve every service in the
# foreground, with a demo homebase sending data. Ctrl-C stops the platform, the demo, then the
# private database and broker if this run started them.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${LOCAL_STACK_INSIDE:-}" ]; then
  # EP_LOCAL_BACKUP=1: the private cluster archives its WAL with pgBackRest (docs/operations.md#backups).
  if [ "${EP_LOCAL_BACKUP:-0}" = 1 ]; then scripts/install-system.sh --with-backup; fi
  exec scripts/local-stack.sh with scripts/run.sh "$@"
fi
demo=""

cleanup() {
  if [ -n "$demo" ]; then kill "$demo" 2>/dev/null || true; wait "$demo" 2>/dev/null || true; fi
}
trap cleanup EXIT
# Ctrl-C reaches the platform directly; it stops cleanly and this script then cleans up.
trap '' INT

.venv/bin/energy-platform migrate >/dev/null
# EP_LOCAL_BACKUP=1: a first full backup once the schema is there, recorded in public.backups.
if [ "${EP_LOCAL_BACKUP:-0}" = 1 ] && [ -z "$(psql -X -tAc 'SELECT 1 FROM public.backups LIMIT 1' "$EP_DATABASE_URL")" ]; then
  deploy/pgbackrest/backup.sh full "$EP_DATABASE_URL"
fi
# The demo homebase needs this cluster's secret before ingest starts: prepared first, run later.
eval "$(.venv/bin/python scripts/demo.py prepare)"
.venv/bin/python scripts/demo.py run >.local/demo.log 2>&1 &
demo=$!

host=${EP_HTTP_HOST:-127.0.0.1}
cat <<MSG

  energy-platform is starting (Ctrl-C stops it)
    data API      http://$host:${EP_HTTP_API_PORT:-8000}          OpenAPI: /schema
    provisioning  http://$host:${EP_HTTP_PROVISIONING_PORT:-8001}/api
    forwarder     http://$host:${EP_HTTP_FORWARDER_PORT:-8002}
    CoAP          udp://${EP_DEVICES_HOST:-127.0.0.1}:${EP_DEVICES_COAP_PORT:-5683}
    TFTP          udp://${EP_DEVICES_HOST:-127.0.0.1}:${EP_PROVISIONING_TFTP_PORT:-6969}
    database      $EP_DATABASE_URL
    MQTT broker   mqtt://${EP_MQTT_URL##*@}   (accounts only; passwords in .local/mqtt-accounts.env)

  A demo homebase ($DEMO_SN) sends data every 5 s. See it in the browser:
    page          http://$host:${EP_HTTP_API_PORT:-8000}/
    sign in as    user id $DEMO_USER, token $DEMO_TOKEN
  or with
    curl -H "Authorization: Bearer $DEMO_TOKEN" http://$host:${EP_HTTP_API_PORT:-8000}/feeds/$DEMO_FEED/streams

MSG
.venv/bin/energy-platform serve all
