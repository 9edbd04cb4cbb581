#!/usr/bin/env bash
# Runs the full benchmark set on a release build and writes the figures next to the repo:
# bench.json and bench.md. Extra arguments go to `baton bench` (default: --records 100000 --trials 10).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/Scripts/bootstrap.sh"
build_baton release
args=("$@")
if ((${#args[@]} == 0)); then args=(--records 100000 --trials 10); fi
exec "$baton" bench "${args[@]}" --json "$root/bench.json" --markdown "$root/bench.md"
