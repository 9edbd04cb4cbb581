#!/usr/bin/env bash
# Runs a seeded chaos run (default: --seed 1 --rounds 200) on a release build. Extra arguments
# go to `baton chaos`, e.g. `Scripts/chaos.sh --seed 42 --rounds 50 --json`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/Scripts/bootstrap.sh"
build_baton release
args=("$@")
if ((${#args[@]} == 0)); then args=(--seed 1 --rounds 200); fi
exec "$baton" chaos "${args[@]}"
