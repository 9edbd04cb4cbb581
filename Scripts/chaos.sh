#!/usr/bin/env bash
# Runs a seeded chaos run (default: --seed 1 --rounds 200) on a release build. Extra arguments
# go to `baton chaos`, e.g. `Scripts/chaos.sh --seed 42 --rounds 50 --json`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/Scripts/bootstrap.sh"
swift build --package-path "$root" -c release --product baton >&2
args=("$@")
if ((${#args[@]} == 0)); then args=(--seed 1 --rounds 200); fi
exec "$root/.build/release/baton" chaos "${args[@]}"
