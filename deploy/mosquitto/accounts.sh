#!/bin/sh
# The platform's own broker accounts on a Mosquitto with the dynamic security plugin; run once
# the broker is up (again at any time: it is idempotent and resets the passwords).
#   accounts.sh HOST PORT
# Environment: MQTT_ACCOUNTS_PASSWORD (the plugin's admin, user "accounts", made by
# `mosquitto_ctrl dynsec init FILE accounts PASSWORD`), MQTT_INGEST_PASSWORD (user "ingest").
# Homebase accounts are not made here: the cluster gives one when it pairs a homebase.
set -eu
host=$1 port=$2
ctrl() { mosquitto_ctrl -h "$host" -p "$port" -u accounts -P "$MQTT_ACCOUNTS_PASSWORD" dynsec "$@" 2>/dev/null; }

# Wait for the broker (compose starts this beside it).
i=0
until ctrl getDefaultACLAccess | grep -q publishClientSend; do
  i=$((i + 1)); [ "$i" -lt 100 ] || { echo "accounts.sh: broker $host:$port unreachable" >&2; exit 1; }
  sleep 0.2
done

# ingest: subscribes to every homebase's data (shared subscription) and presence, publishes
# nothing. One level of topic prefix (EP_MQTT_TOPIC_PREFIX, used by tests) is allowed.
ctrl createRole ingest >/dev/null || true
for topic in '$share/+/homebases/+/data' '$share/+/+/homebases/+/data' \
             'homebases/+/status' '+/homebases/+/status'; do
  ctrl addRoleACL ingest subscribePattern "$topic" allow >/dev/null || true
done
# mosquitto_ctrl exits 0 even when a command fails ("already exists"): each step is idempotent.
ctrl createClient ingest -p "$MQTT_INGEST_PASSWORD" >/dev/null
ctrl setClientPassword ingest "$MQTT_INGEST_PASSWORD" >/dev/null
ctrl addClientRole ingest ingest >/dev/null
