#!/usr/bin/env bash
# Builds TimescaleDB's Apache-2 edition from Debian's source package (suite trixie) and installs
# it into the local PostgreSQL. The deb-src list lives in the project's own apt options under
# .local/apt: nothing is written into /etc/apt.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
PG_MAJOR=${PG_MAJOR:-15}
SUITE=${TIMESCALEDB_SUITE:-trixie}
work="$root/.local/apt"
log() { printf 'build-timescaledb: %s\n' "$*" >&2; }
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

# Reuse the Debian mirror this machine is already configured with.
mirror=$(grep -hE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
  | grep -oE 'https?://[^ ]+/debian/?' | grep -v security | head -n1 || true)
[ -n "$mirror" ] || { log "no Debian mirror found in /etc/apt"; exit 1; }

mkdir -p "$work/lists/partial" "$work/src"
echo "deb-src ${mirror%/} $SUITE main" > "$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$work/lists" -o "APT::Sandbox::User=root")
log "fetching source package timescaledb ($SUITE)"
apt-get "${apt_opts[@]}" update -qq
(cd "$work/src" && apt-get "${apt_opts[@]}" source --download-only -qq timescaledb)

orig=$(ls "$work"/src/timescaledb_*.orig.tar.* | head -n1)
build="$work/build"
rm -rf "$build" && mkdir -p "$build"
tar -xf "$orig" -C "$build" --strip-components=1
cd "$build"
# Its cmake asks git for a revision; keep it from finding the project's own repository.
export GIT_CEILING_DIRECTORIES="$work"
log "building $(basename "$orig") (output in $work/build.log)"
{
  PATH="/usr/lib/postgresql/$PG_MAJOR/bin:$PATH" ./bootstrap -DAPACHE_ONLY=1 -DREGRESS_CHECKS=OFF \
    -DTAP_CHECKS=OFF -DWARNINGS_AS_ERRORS=OFF -DLINTER=OFF \
    -DPG_CONFIG="/usr/lib/postgresql/$PG_MAJOR/bin/pg_config"
  make -C build -j"$(nproc)"
  as_root make -C build install
} > "$work/build.log" 2>&1 || { tail -n 30 "$work/build.log" >&2; log "build failed"; exit 1; }
log "installed"
