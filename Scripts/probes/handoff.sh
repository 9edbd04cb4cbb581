#!/usr/bin/env bash
# Compiles Scripts/probes/handoff.c and runs the kernel's flock against an ideal one-wake-per-turn
# hand-off, alternating, with 8 processes (the contention bench's shape). BENCHMARKS.md quotes it.
# usage: Scripts/probes/handoff.sh [CRITICAL_US ...]   (default: 100 300)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -o "$out/handoff" "$here/handoff.c"
if [ $# -eq 0 ]; then set -- 100 300; fi
for critical in "$@"; do
    [[ $critical =~ ^[0-9]+$ ]] || { echo "usage: Scripts/probes/handoff.sh [CRITICAL_US ...] (whole microseconds)" >&2; exit 2; }
done
for critical in "$@"; do
    for round in 1 2; do
        for mode in flock ticket; do
            printf 'critical %s us, round %s: ' "$critical" "$round"
            "$out/handoff" "$mode" 8 1000 "$critical" 300 | awk '
                /^worker/ { switches += $3; workers++ }
                /turns/ { rate = $0 }
                END { printf "%s, %.2f voluntary switches per turn and worker\n", rate, switches / workers }'
        done
    done
done
