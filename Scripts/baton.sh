#!/usr/bin/env bash
# Builds baton (once) and runs it with the given arguments, e.g. `Scripts/baton.sh store info --dir D`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/Scripts/bootstrap.sh"
build_baton
exec "$baton" "$@"
