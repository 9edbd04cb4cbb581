#!/usr/bin/env bash
# Runs the contention bench's workers by hand, for a profiler to wrap: 8 `baton bench-worker`
# processes of one mode (lease, bounded, busy, floor or guarded) on a fresh shared directory, all
# at once, then the total writes and the rate over the slowest worker's time, and for the lease,
# the floor and the guarded floor how a turn divides: the hold (granted to writes done), the
# release call, and the hand-over (writes done to the next holder granted). BENCHMARKS.md's
# per-turn figures come from it, e.g.
#   perf stat -a -e context-switches,'syscalls:sys_enter_pwrite64' -- Scripts/probes/contention.sh lease
#   perf record -F 4000 -g -a -- Scripts/probes/contention.sh floor
# usage: Scripts/probes/contention.sh MODE [PROCESSES] [WRITES]   (defaults 8, 1000; BATON= the binary)
set -euo pipefail
usage="usage: Scripts/probes/contention.sh lease|bounded|busy|floor|guarded [PROCESSES] [WRITES]"
mode=${1:-}
case "$mode" in
    lease | bounded | busy | floor | guarded) ;;
    *) echo "$usage" >&2; exit 2 ;;
esac
processes=${2:-8}
writes=${3:-1000}
here=$(cd "$(dirname "$0")/../.." && pwd)
baton=${BATON:-$here/.build/release/baton}
[ -x "$baton" ] || { echo "contention.sh: no $baton; run: swift build -c release --product baton" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$baton" store init --dir "$dir" >/dev/null
"$baton" store soup create --dir "$dir" writes >/dev/null
pids=()
for i in $(seq 0 $((processes - 1))); do
    "$baton" bench-worker --mode "$mode" --dir "$dir" --writes "$writes" --name "w$i" >"$dir/out$i" 2>"$dir/err$i" &
    pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
if ((failed)); then
    echo "contention.sh: a worker failed:" >&2
    cat "$dir"/err* >&2
    exit 1
fi
python3 - "$dir" "$processes" "$mode" <<'PY'
import json, sys
directory, processes, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
writes, errors, elapsed = 0, 0, []
for i in range(processes):
    result = json.loads(open(f"{directory}/out{i}").read().strip().splitlines()[-1])
    writes += result["writes"]
    errors += result["errors"]
    elapsed.append(result["elapsedMs"])
print(f"{mode}: {writes} writes, {errors} errors, {writes / (max(elapsed) / 1000):.0f} writes/s over the slowest worker's {max(elapsed):.0f} ms")
turns = sorted(
    turn for i in range(processes)
    for turn in json.loads(open(f"{directory}/out{i}").read().strip().splitlines()[-1]).get("turnsNs", []))
if len(turns) > 1:
    def line(name, values):
        values = sorted(v / 1000 for v in values)
        print(f"  {name:42s} p50 {values[len(values) // 2]:7.1f}  mean {sum(values) / len(values):7.1f}  p90 {values[int(len(values) * 0.9)]:7.1f} us")
    line("hold (granted -> writes done)", [w - g for g, w, _ in turns])
    line("release call", [r - w for _, w, r in turns])
    line("hand-over (writes done -> next granted)", [b[0] - a[1] for a, b in zip(turns, turns[1:])])
    line("turn (granted -> next granted)", [b[0] - a[0] for a, b in zip(turns, turns[1:])])
PY
