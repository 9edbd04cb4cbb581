#!/usr/bin/env bash
# A paired run to drive by hand: a reference server, a host and an extension in the background
# on one shared directory. Prints the commands to signal them; Ctrl-C stops everything.
# Usage: Scripts/paired.sh [RECORDS] [DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/Scripts/bootstrap.sh"
build_baton
records="${1:-20000}"
dir="${2:-$(mktemp -d /tmp/baton-paired-XXXXXX)}"
pids=()
cleanup() {
    trap - EXIT INT TERM
    echo "stopping…" >&2
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    "$baton" lease check --dir "$dir" || true
}
trap cleanup EXIT INT TERM

source "$root/Scripts/reference-server.sh"
start_reference_server "Account=$records:$((records / 5))"
query='accounts:accounts:SELECT Id, Name, Number__c FROM Account'
"$baton" participant --dir "$dir" --name host --role host --server "$url" --lifecycle foreground \
    --sync-down "$query" --batch-size 200 >"$dir/host.out" 2>&1 &
pids+=($!)
"$baton" participant --dir "$dir" --name ext --role extension --server "$url" --lifecycle background \
    --sync-down "$query" --batch-size 200 >"$dir/ext.out" 2>&1 &
pids+=($!)

cat <<TEXT
server:    $url  ($records accounts)
directory: $dir
Try, from another shell:
  echo background > $dir/lifecycle/host       # the host hands the baton over…
  echo foreground > $dir/lifecycle/ext        # …and the extension takes it
  $baton status --dir $dir
  $baton syncs --dir $dir
  $baton wait --dir $dir --writer ext --timeout 30
  tail -F $dir/logs/host.jsonl
Ctrl-C stops everything.
TEXT
wait
