# Shared by the scripts under scripts/ (sourced, not run): the one way to run a command as root.
# shellcheck shell=bash

# Runs "$@" as root: directly when already root, else through sudo; without sudo it stops with
# the command it needed, so a fresh machine says what to run by hand.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    printf '%s: need root (or sudo) to run: %s\n' "$(basename "$0" .sh)" "$*" >&2; exit 1
  fi
}
