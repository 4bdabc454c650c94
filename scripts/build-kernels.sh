#!/usr/bin/env bash
# Builds the platform's array kernels (sql/kernels) against the local PostgreSQL, out of tree
# under .local/kernels, and installs the library beside PostgreSQL's own when it differs from the
# one installed. `energy-platform migrate` binds the SQL functions to it (sql/functions/
# 10_core_kernels.sql); a server without it runs their SQL references instead, slower.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
PG_MAJOR=${PG_MAJOR:-15}
pg_config=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config
build="$root/.local/kernels"
log() { printf 'build-kernels: %s\n' "$*" >&2; }
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

mkdir -p "$build"
# Copied with their times, so that make rebuilds only what changed.
cp -p "$root"/sql/kernels/Makefile "$root"/sql/kernels/*.c "$build"/
make -s -C "$build" PG_CONFIG="$pg_config" >/dev/null
library=energy_platform_kernels.so
installed="$("$pg_config" --pkglibdir)/$library"
if ! cmp -s "$build/$library" "$installed"; then
  log "installing $installed"
  # A new file renamed into place: a backend loading it meanwhile reads the old one or the new
  # one whole, and servers running keep the one they loaded.
  as_root install -m 755 "$build/$library" "$installed.new"
  as_root mv -f "$installed.new" "$installed"
fi
