#!/bin/sh
# The platform's own RabbitMQ account, made or reset through the management API as the
# administrator `accounts` (RabbitMQ's default user in compose): `ingest` may declare, bind and
# consume the ingest queue and nothing else (docs/operations.md#running-rabbitmq). Homebase
# accounts are the cluster's to give when it pairs them.
#   accounts.sh HOST PORT   with RABBITMQ_ACCOUNTS_PASSWORD and RABBITMQ_INGEST_PASSWORD set
set -eu
api="http://$1:$2/api"
auth="accounts:$RABBITMQ_ACCOUNTS_PASSWORD"
# The management API answers once the node has booted.
i=0
until curl -fsS -u "$auth" "$api/overview" >/dev/null; do
  i=$((i + 1)); [ "$i" -lt 60 ] || { echo "rabbitmq not up" >&2; exit 1; }; sleep 2
done
curl -fsS -u "$auth" -X PUT -H 'content-type: application/json' "$api/users/ingest" \
  -d "{\"password\": \"$RABBITMQ_INGEST_PASSWORD\", \"tags\": \"\"}"
curl -fsS -u "$auth" -X PUT -H 'content-type: application/json' "$api/permissions/%2F/ingest" \
  -d '{"configure": "^ingest$", "write": "^ingest$", "read": "^(ingest|amq\\.topic)$"}'
echo "rabbitmq accounts ready"
