#!/usr/bin/env bash
# Installs what the platform needs on Debian 12 and nothing else: PostgreSQL 15 (server and
# headers), TimescaleDB (Apache-2 edition), the platform's array kernels (built with gcc),
# Mosquitto. Safe to re-run: each step checks first.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
PG_MAJOR=${PG_MAJOR:-15}
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin

log() { printf 'install-system: %s\n' "$*" >&2; }

# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

apt_updated=0
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ $apt_updated -eq 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  log "installing ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

apt_install "postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR" gcc make libc6-dev mosquitto
# npm fetches the data API page's chart library at setup (scripts/install-web.sh). A Node.js
# installed some other way (with its own npm) is used as it is.
command -v npm >/dev/null || apt_install nodejs npm
# `--for-tests`: the browser the end-to-end page tests drive (Debian's Chromium and its driver),
# libcoap's coap-client, a CoAP client written elsewhere for the CoAP tests, Prometheus with
# promtool (the alerting rules' tests), pgBackRest (the restore drill) and RabbitMQ (3.10, with
# its MQTT plugin), the broker a cluster may run instead of Mosquitto: the tests start their own
# nodes (tests/support/rabbitmq.py), never the system service.
if [ "${1:-}" = "--for-tests" ]; then
  apt_install chromium chromium-driver libcoap3-bin prometheus pgbackrest rabbitmq-server
fi
# `--with-backup`: pgBackRest alone, for `EP_LOCAL_BACKUP=1 make run` (docs/operations.md#backups).
if [ "${1:-}" = "--with-backup" ]; then apt_install pgbackrest; fi
# Debian's python3 ships without ensurepip; the virtualenv needs it.
python3 -c 'import ensurepip' 2>/dev/null || apt_install python3-venv

sharedir=$("$PG_BIN/pg_config" --sharedir)
if [ ! -f "$sharedir/extension/timescaledb.control" ]; then
  # Prefer a distribution package; Debian 12 has none for PostgreSQL 15, so build from source.
  if [ $apt_updated -eq 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  dist_pkg=""
  for name in "timescaledb-2-postgresql-$PG_MAJOR" "postgresql-$PG_MAJOR-timescaledb"; do
    if apt-cache show "$name" >/dev/null 2>&1; then dist_pkg=$name; break; fi
  done
  if [ -n "$dist_pkg" ]; then
    apt_install "$dist_pkg"
  else
    apt_install cmake gcc make libssl-dev libkrb5-dev xz-utils dpkg-dev
    "$here/build-timescaledb.sh"
  fi
fi
# The platform's array kernels (sql/kernels), rebuilt when their source changed.
"$here/build-kernels.sh"
log "ok: postgresql-$PG_MAJOR, timescaledb $(grep default_version "$sharedir/extension/timescaledb.control" | cut -d"'" -f2), mosquitto, npm $(npm --version 2>/dev/null)"
