#!/usr/bin/env bash
# Lock contention: N participants flipping between foreground and background at random for
# ROUNDS rounds (with plain `echo` writes), then one settles in the foreground and
# `baton lease check` audits the lease history. Usage: Scripts/contention.sh [N] [ROUNDS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/Scripts/bootstrap.sh"
build_baton
count="${1:-8}"
rounds="${2:-100}"
dir="$(mktemp -d /tmp/baton-contention-XXXXXX)"
pids=()
cleanup() {
    trap - EXIT INT TERM
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

source "$root/Scripts/reference-server.sh"
start_reference_server "Account=2000:400"
for i in $(seq 0 $((count - 1))); do
    role=extension; [[ $i -eq 0 ]] && role=host
    "$baton" participant --dir "$dir" --name "p$i" --role "$role" --server "$url" --lifecycle background \
        --sync-down 'accounts:accounts:SELECT Id, Name FROM Account' --batch-size 100 >"$dir/p$i.out" 2>&1 &
    pids+=($!)
done
for i in $(seq 0 $((count - 1))); do "$baton" wait --dir "$dir" --lifecycle "p$i=background" --timeout 60; done
echo "flipping $count participants for $rounds rounds…"
for round in $(seq 1 "$rounds"); do
    for i in $(seq 0 $((count - 1))); do
        if ((RANDOM % 2)); then echo foreground >"$dir/lifecycle/p$i"; else echo background >"$dir/lifecycle/p$i"; fi
    done
    sleep "0.0$((RANDOM % 9 + 1))"
done
for i in $(seq 1 $((count - 1))); do echo background >"$dir/lifecycle/p$i"; done
echo foreground >"$dir/lifecycle/p0"
"$baton" wait --dir "$dir" --writer p0 --timeout 120
"$baton" wait --dir "$dir" --sync accounts=done --timeout 120
"$baton" status --dir "$dir"
if grep -l "SQLITE_BUSY\|database is locked" "$dir"/*.out; then echo "SQLITE_BUSY surfaced" >&2; exit 1; fi
"$baton" lease check --dir "$dir"
