#!/usr/bin/env bash
# The data API page's browser library (uPlot, pinned in web/package-lock.json) from the npm
# registry, copied into the folder the data API serves. The platform serves only its own copy:
# the page loads nothing from other hosts. Re-running without a change of the lock does nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
vendor=$root/src/energy_platform/api/dashboard/static/vendor
stamp=$vendor/uplot/uPlot.esm.js  # the copy itself marks the install: newer than the lock
if [ -f "$stamp" ] && [ "$stamp" -nt "$root/web/package-lock.json" ]; then exit 0; fi
command -v npm >/dev/null || { echo "install-web: npm missing (scripts/install-system.sh installs it)" >&2; exit 1; }

# `npm ci` installs exactly the lock, verifying each package's integrity hash; no install scripts.
npm ci --prefix "$root/web" --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
rm -rf "$vendor" && mkdir -p "$vendor/uplot"
cp "$root/web/node_modules/uplot/dist/uPlot.esm.js" "$root/web/node_modules/uplot/dist/uPlot.min.css" \
   "$root/web/node_modules/uplot/LICENSE" "$vendor/uplot/"
touch "$stamp"
echo "install-web: uPlot $(sed -n 's/.*"version": "\(.*\)".*/\1/p' "$root/web/node_modules/uplot/package.json") in $vendor" >&2
