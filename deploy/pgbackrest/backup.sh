#!/usr/bin/env bash
# Point-in-time backups of the PostgreSQL cluster that holds the platform's databases, with
# pgBackRest (docs/operations.md#backups). pgBackRest reads its own configuration file
# (PGBACKREST_CONFIG, default /etc/pgbackrest.conf: the repository and pg1-path/port/socket) and
# this script's stanza is PGBACKREST_STANZA (default energy-platform). As root, pgBackRest runs as
# the user that owns the data directory (PGUSER_OS, default postgres), as archive_command does.
#
#   backup.sh init                      create the stanza and check that WAL archiving works
#   backup.sh full|diff|incr [URL...]   take a backup; then record it in public.backups of each
#                                       database URL given (ep_backup_age_seconds reads it)
#   backup.sh restore TIME [OPTION...]  restore the stopped cluster to TIME (ISO 8601 with an
#                                       offset) and promote there; the data directory must be
#                                       gone or empty unless OPTION is --delta. Start
#                                       PostgreSQL afterwards: it replays WAL up to TIME.
#   backup.sh info                      what the repository holds (pgbackrest info)
set -euo pipefail

export PGBACKREST_STANZA=${PGBACKREST_STANZA:-energy-platform}
os_user=${PGUSER_OS:-postgres}
log() { printf 'backup: %s\n' "$*" >&2; }

pgbackrest_() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$os_user" -- env PGBACKREST_CONFIG="${PGBACKREST_CONFIG:-/etc/pgbackrest.conf}" \
      PGBACKREST_STANZA="$PGBACKREST_STANZA" pgbackrest "$@"
  else
    pgbackrest "$@"
  fi
}

latest_label() {
  pgbackrest_ --output=json info | python3 -c \
    'import json, sys; print(json.load(sys.stdin)[0]["backup"][-1]["label"])'
}

case "${1:-}" in
  init)
    pgbackrest_ stanza-create
    pgbackrest_ check
    ;;
  full | diff | incr)
    kind=$1; shift
    started=$(date +%s)
    pgbackrest_ backup --type="$kind"
    label=$(latest_label)
    for url in "$@"; do
      psql -X -q -v ON_ERROR_STOP=1 -v stanza="$PGBACKREST_STANZA" -v label="$label" \
        -v kind="$kind" "$url" <<'SQL'
INSERT INTO public.backups (stanza, label, kind) VALUES (:'stanza', :'label', :'kind');
SQL
    done
    log "$kind backup $label in $(( $(date +%s) - started )) s"
    ;;
  restore)
    [ $# -ge 2 ] || { echo "usage: $0 restore TIME [OPTION...]" >&2; exit 2; }
    target=$2; shift 2
    pgbackrest_ restore --type=time --target="$target" --target-action=promote "$@"
    log "restored to $target: start PostgreSQL; it replays WAL up to then and promotes"
    ;;
  info) pgbackrest_ info ;;
  *) echo "usage: $0 init | full|diff|incr [DATABASE_URL...] | restore TIME [OPTION...] | info" >&2; exit 2 ;;
esac
