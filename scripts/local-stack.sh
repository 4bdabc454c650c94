#!/usr/bin/env bash
# The private database and broker for development and tests, all state under .local/.
#   local-stack.sh start   start PostgreSQL (timescaledb preloaded) and Mosquitto unless running
#                          (EP_LOCAL_BACKUP=1: its WAL archived by pgBackRest into .local/pgbackrest),
#                          or unless EP_DATABASE_URL / EP_MQTT_URL point elsewhere
#   local-stack.sh stop    stop what it started
#   local-stack.sh running exit 0 when the private database (or, with EP_DATABASE_URL set, broker) runs
#   local-stack.sh env     print the EP_* variables that point at the private stack (the broker
#                          URLs with the service accounts' passwords, .local/mqtt-accounts.env),
#                          and the checkout's provisioning key (made once, .local/provisioning.key)
#   local-stack.sh with CMD...
#                          start what is missing, export those variables, run CMD, then stop what
#                          this call started (a stack already running stays running); exits with
#                          CMD's status. run.sh, test.sh and bench.sh run inside it.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# Some machines' environments set PYTHONDONTWRITEBYTECODE: then every Python process (each test
# worker, each CLI a test starts) compiles every module it imports from source again, about 0.5 s
# of CPU per CLI start and 8 s per test worker. Caching bytecode under .venv and src is harmless.
unset PYTHONDONTWRITEBYTECODE
PG_MAJOR=${PG_MAJOR:-15}
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
DB_NAME=${EP_LOCAL_DB_NAME:-energy_platform}
log() { printf 'local-stack: %s\n' "$*" >&2; }

is_root() { [ "$(id -u)" -eq 0 ]; }
# PostgreSQL refuses to run as root; Mosquitto drops root by itself. Each gets its own user.
as_user() { local user=$1; shift; if is_root; then runuser -u "$user" -- "$@"; else "$@"; fi; }

state_dir() {
  local dir="$root/.local"
  mkdir -p "$dir"
  # A checkout under a private home (mode 700) is not reachable by the service users: keep the
  # state in /var/lib then, linked from .local/.
  if is_root && ! runuser -u postgres -- test -x "$dir"; then
    local alt
    alt="/var/lib/energy-platform/$(printf '%s' "$root" | sha256sum | cut -c1-12)"
    mkdir -p "$alt" && chmod 755 /var/lib/energy-platform "$alt"
    for part in pg mosquitto; do
      [ -L "$dir/$part" ] || ln -sfn "$alt/$part" "$dir/$part"
    done
    dir=$alt
  fi
  printf '%s' "$dir"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_port() {
  local p=$1
  while port_busy "$p"; do p=$((p + 1)); done
  printf '%s' "$p"
}

STATE=$(state_dir)
PORTS="$root/.local/ports.env"
# Ports are chosen once (the defaults when free) and kept, so URLs stay stable across runs.
if [ ! -f "$PORTS" ]; then
  printf 'PG_PORT=%s\nMQTT_PORT=%s\n' "$(pick_port 54329)" "$(pick_port 1883)" > "$PORTS"
fi
# shellcheck disable=SC1090
. "$PORTS"
PGDATA="$STATE/pg/data"
MQ="$STATE/mosquitto"

# The key that encrypts homebase secrets: one per checkout, made on first use, never printed
# anywhere but by `env`. Losing it makes the stored homebase secrets unreadable.
provisioning_key() {
  local file="$root/.local/provisioning.key"
  if [ ! -s "$file" ]; then
    (umask 077; od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$file")
  fi
  cat "$file"
}

# The broker's service passwords: made once per checkout like the key above, kept in
# .local/mqtt-accounts.env, printed only by `env` (inside the URLs).
mqtt_passwords() {
  local file="$root/.local/mqtt-accounts.env"
  if [ ! -s "$file" ]; then
    (umask 077; printf 'MQTT_ACCOUNTS_PASSWORD=%s\nMQTT_INGEST_PASSWORD=%s\n' \
      "$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')" \
      "$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')" > "$file")
  fi
  # shellcheck disable=SC1090
  . "$file"
}

db_url() { printf 'postgresql://postgres@127.0.0.1:%s/%s' "$PG_PORT" "${1:-$DB_NAME}"; }
mqtt_url() { mqtt_passwords; printf 'mqtt://ingest:%s@127.0.0.1:%s' "$MQTT_INGEST_PASSWORD" "$MQTT_PORT"; }
mqtt_accounts_url() {
  mqtt_passwords; printf 'mqtt://accounts:%s@127.0.0.1:%s' "$MQTT_ACCOUNTS_PASSWORD" "$MQTT_PORT"
}

start_db() {
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    log "creating the private PostgreSQL cluster in $PGDATA"
    mkdir -p "$STATE/pg/run" "$STATE/pg/log"
    is_root && chown -R postgres:postgres "$STATE/pg"
    as_user postgres "$PG_BIN/initdb" -D "$PGDATA" -U postgres --auth=trust -E UTF8 \
      --no-locale >/dev/null
    cat >> "$PGDATA/postgresql.conf" <<CONF
# energy-platform private cluster
listen_addresses = '127.0.0.1'
unix_socket_directories = '$STATE/pg/run'
shared_preload_libraries = 'timescaledb'
timescaledb.telemetry_level = off
max_connections = 200
shared_buffers = 256MB
work_mem = 16MB
max_locks_per_transaction = 256
logging_collector = off
CONF
  fi
  [ "${EP_LOCAL_BACKUP:-0}" = 1 ] && configure_backup
  # The port lives on the command line so that a changed ports.env takes effect.
  if ! as_user postgres "$PG_BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
    as_user postgres "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$STATE/pg/log/postgres.log" \
      -o "-p $PG_PORT" -w -t 60 start >/dev/null \
      || { tail -n 20 "$STATE/pg/log/postgres.log" >&2; exit 1; }
    log "PostgreSQL on 127.0.0.1:$PG_PORT"
  fi
  local psql=("$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -tA)
  if [ -z "$("${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" ]; then
    "${psql[@]}" -c "CREATE DATABASE $DB_NAME"
  fi
  [ "${EP_LOCAL_BACKUP:-0}" = 1 ] && init_backup
  return 0
}

# EP_LOCAL_BACKUP=1: WAL archived by pgBackRest into .local/pgbackrest/ (docs/operations.md#backups).
BACKUP_DIR="$STATE/pgbackrest"
backup_env() {
  printf 'export PGBACKREST_CONFIG=%s\nexport PGBACKREST_STANZA=energy-platform\n' \
    "$BACKUP_DIR/pgbackrest.conf"
}
configure_backup() {
  command -v pgbackrest >/dev/null \
    || { log "EP_LOCAL_BACKUP=1 needs pgBackRest: scripts/install-system.sh --with-backup"; exit 1; }
  mkdir -p "$BACKUP_DIR"/{repo,log,lock,spool}
  cat > "$BACKUP_DIR/pgbackrest.conf" <<CONF
[global]
repo1-path=$BACKUP_DIR/repo
repo1-retention-full=2
log-path=$BACKUP_DIR/log
lock-path=$BACKUP_DIR/lock
spool-path=$BACKUP_DIR/spool
start-fast=y
compress-type=lz4

[energy-platform]
pg1-path=$PGDATA
pg1-port=$PG_PORT
pg1-socket-path=$STATE/pg/run
pg1-user=postgres
CONF
  # archive_mode takes effect at the next start, which follows.
  cat > "$PGDATA/backup.conf" <<CONF
archive_mode = on
archive_command = 'pgbackrest --config=$BACKUP_DIR/pgbackrest.conf --stanza=energy-platform archive-push %p'
archive_timeout = 60
CONF
  grep -q "^include_if_exists = 'backup.conf'" "$PGDATA/postgresql.conf" \
    || echo "include_if_exists = 'backup.conf'" >> "$PGDATA/postgresql.conf"
  if is_root; then chown -R postgres:postgres "$BACKUP_DIR" "$PGDATA/backup.conf"; fi
  # A cluster already running started without archiving: restart it.
  if as_user postgres "$PG_BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1 \
     && [ "$("$PG_BIN/psql" -X -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -tAc 'SHOW archive_mode')" != on ]; then
    stop_db
  fi
}
# The stanza once; the first full backup is run.sh's, after the migrations, so that it is recorded.
init_backup() {
  eval "$(backup_env)"
  [ -d "$BACKUP_DIR/repo/backup/energy-platform" ] || "$root/deploy/pgbackrest/backup.sh" init >&2
}

start_broker() {
  mkdir -p "$MQ/data"
  mqtt_passwords
  local user_line="" dynsec="$MQ/data/dynamic-security.json"
  if is_root; then user_line="user mosquitto"; fi
  local conf
  conf=$(cat <<CONF
# energy-platform private broker: loopback only, accounts only (dynamic security plugin),
# persistent sessions kept on disk. Same limits as deploy/mosquitto/mosquitto.conf.
$user_line
listener $MQTT_PORT 127.0.0.1
allow_anonymous false
plugin $(dynsec_plugin)
plugin_opt_config_file $dynsec
persistence true
persistence_location $MQ/data/
# A snapshot every second: what the broker acknowledged and had not yet handed to ingest is
# lost on SIGKILL for at most 1 s (docs/devices.md#the-brokers-crash-window, measured).
autosave_interval 1
# Only ingest may subscribe (ACLs), so only its queue grows: never dropped, however long it is
# away. Ingest acknowledges after commit; its Receive Maximum (2000) bounds what is in flight.
max_queued_messages 0
max_inflight_messages 2000
# 1 MiB of payload (ingest's MAX_PAYLOAD_BYTES) and its headers; larger packets are refused.
max_packet_size 1049600
pid_file $MQ/mosquitto.pid
log_dest file $MQ/mosquitto.log
log_type error
log_type warning
log_type notice
CONF
)
  if [ -f "$MQ/mosquitto.pid" ] && kill -0 "$(cat "$MQ/mosquitto.pid")" 2>/dev/null; then
    # Running with this very configuration: nothing to do. Started with an older one (say,
    # anonymous, before broker accounts): restart it, or its clients would find no accounts.
    [ "$conf" = "$(cat "$MQ/mosquitto.conf" 2>/dev/null)" ] && return
    stop_broker
  fi
  # Mosquitto 2.0.11 rewrites this file in place (truncate, write) at every account change, so
  # a broker killed meanwhile leaves it cut, and would start knowing no account, not even its
  # admin. The cut file is kept beside for a look and a new one made: accounts.sh below gives
  # the platform's own accounts again, the engine's reconciliation the homebases' ones.
  if [ -s "$dynsec" ] && ! python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$dynsec" 2>/dev/null; then
    mv "$dynsec" "$dynsec.cut-$(date +%s)"
    log "Mosquitto's accounts file was cut (a kill while it wrote it); made again"
  fi
  # No anonymous client: every account lives in the dynamic security plugin's file, the
  # platform's own ones made below, homebases' ones when the cluster pairs them.
  if [ ! -s "$dynsec" ]; then
    mosquitto_ctrl dynsec init "$dynsec" accounts "$MQTT_ACCOUNTS_PASSWORD" >/dev/null
  fi
  if is_root; then chown -R mosquitto:mosquitto "$MQ"; fi
  printf '%s\n' "$conf" > "$MQ/mosquitto.conf"
  mosquitto -c "$MQ/mosquitto.conf" -d
  for _ in $(seq 50); do port_busy "$MQTT_PORT" && break; sleep 0.1; done
  port_busy "$MQTT_PORT" || { tail -n 20 "$MQ/mosquitto.log" >&2; exit 1; }
  MQTT_ACCOUNTS_PASSWORD=$MQTT_ACCOUNTS_PASSWORD MQTT_INGEST_PASSWORD=$MQTT_INGEST_PASSWORD \
    "$root/deploy/mosquitto/accounts.sh" 127.0.0.1 "$MQTT_PORT"
  log "Mosquitto on 127.0.0.1:$MQTT_PORT"
}

dynsec_plugin() {
  local found
  found=$(find /usr/lib -name mosquitto_dynamic_security.so 2>/dev/null | head -n 1)
  [ -n "$found" ] || { log "mosquitto_dynamic_security.so not found (apt-get install mosquitto)"; exit 1; }
  printf '%s' "$found"
}

db_running() {
  [ -f "$PGDATA/PG_VERSION" ] && as_user postgres "$PG_BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1
}

broker_running() { [ -f "$MQ/mosquitto.pid" ] && kill -0 "$(cat "$MQ/mosquitto.pid")" 2>/dev/null; }

print_env() {
  echo "export EP_DATABASE_URL=${EP_DATABASE_URL:-$(db_url)}"
  echo "export EP_MQTT_URL=${EP_MQTT_URL:-$(mqtt_url)}"
  echo "export EP_MQTT_ACCOUNTS_URL=${EP_MQTT_ACCOUNTS_URL:-$(mqtt_accounts_url)}"
  echo "export EP_PROVISIONING_SECRET_KEY=${EP_PROVISIONING_SECRET_KEY:-$(provisioning_key)}"
  if [ "${EP_LOCAL_BACKUP:-0}" = 1 ]; then backup_env; fi
}

# `with CMD...`: what this call starts it stops again, whatever way CMD ends. A URL given in the
# environment means that part runs elsewhere: it is neither started nor stopped.
run_with() {
  local started=()
  if [ -z "${EP_DATABASE_URL:-}" ] && ! db_running; then started+=(db); fi
  if [ -z "${EP_MQTT_URL:-}" ] && ! broker_running; then started+=(broker); fi
  # shellcheck disable=SC2064 # the list is fixed now, on purpose
  trap "for part in ${started[*]:-}; do stop_\$part; done" EXIT
  [ -n "${EP_DATABASE_URL:-}" ] || start_db
  [ -n "${EP_MQTT_URL:-}" ] || start_broker
  eval "$(print_env)"
  # Ctrl-C goes to CMD (the whole foreground group gets it); this shell waits for CMD to end,
  # then stops what it started. A trap with a command, unlike '', is not inherited by CMD.
  trap ':' INT
  local status=0
  LOCAL_STACK_INSIDE=1 "$@" || status=$?
  exit "$status"
}

stop_db() {
  [ -f "$PGDATA/PG_VERSION" ] || return 0
  as_user postgres "$PG_BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1 || return 0
  as_user postgres "$PG_BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null && log "PostgreSQL stopped"
}

stop_broker() {
  [ -f "$MQ/mosquitto.pid" ] || return 0
  local pid; pid=$(cat "$MQ/mosquitto.pid")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    log "Mosquitto stopped"
  fi
  rm -f "$MQ/mosquitto.pid"
}

case "${1:-}" in
  start)
    [ -n "${EP_DATABASE_URL:-}" ] || start_db
    [ -n "${EP_MQTT_URL:-}" ] || start_broker
    ;;
  stop)
    [ -n "${EP_DATABASE_URL:-}" ] || stop_db
    [ -n "${EP_MQTT_URL:-}" ] || stop_broker
    ;;
  running)
    if [ -z "${EP_DATABASE_URL:-}" ]; then
      db_running
    else
      [ -n "${EP_MQTT_URL:-}" ] || port_busy "$MQTT_PORT"
    fi
    ;;
  env) print_env ;;
  with)
    shift
    [ $# -gt 0 ] || { echo "usage: $0 with CMD [ARG...]" >&2; exit 2; }
    run_with "$@"
    ;;
  *) echo "usage: $0 start|stop|running|env|with CMD..." >&2; exit 2 ;;
esac
