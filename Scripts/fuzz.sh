#!/usr/bin/env bash
# Runs one libFuzzer target under AddressSanitizer for a while, starting from its seed corpus.
#
#   Scripts/fuzz.sh TARGET [SECONDS] [-- LIBFUZZER_FLAGS...]
#   Scripts/fuzz.sh all [SECONDS]               every target in turn
#   Scripts/fuzz.sh --list
#   Scripts/fuzz.sh --replay TARGET FILE...    run inputs once (a crash artifact, say)
#
# TARGET is one of the names --list prints (json, soql, ...). SECONDS defaults to 60. The build
# goes to .build-fuzz (release, -sanitize=fuzzer,address, testable), the corpus the run grows to
# .build-fuzz/corpus/TARGET (the committed seeds stay in Fuzz/Corpus/TARGET), crash artifacts to
# .build-fuzz/artifacts/TARGET/. Exits non-zero when the target crashed or broke an invariant;
# the last lines name the input that did it. A summary line says how many inputs ran and how
# fast.
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/bootstrap.sh

declare -A products=(
    [json]=FuzzJSON [json-scanner]=FuzzJSONScanner [soql]=FuzzSOQL [datetime]=FuzzDateTime
    [lifecycle]=FuzzLifecycle [lease-record]=FuzzLeaseRecord
    [participant-status]=FuzzParticipantStatus [schema]=FuzzSchema
    [server-request]=FuzzServerRequest
)

usage() {
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 64
}

if [[ ${1:-} == --list ]]; then
    printf '%s\n' "${!products[@]}" | sort
    exit 0
fi
if [[ ${1:-} == all ]]; then
    # Every target in turn, each for SECONDS; a summary line each, and non-zero if any failed.
    shift
    failed=0
    for each in $(printf '%s\n' "${!products[@]}" | sort); do
        "$0" "$each" "$@" 2>/dev/null | tail -1 || failed=1
    done
    exit $failed
fi
replay=false
if [[ ${1:-} == --replay ]]; then
    replay=true
    shift
fi
target=${1:-}
[[ -n $target ]] || usage
product=${products[$target]:-}
if [[ -z $product ]]; then
    echo "fuzz: no target '$target'; one of: $(printf '%s ' "${!products[@]}")" >&2
    exit 64
fi
shift

scratch=.build-fuzz
echo "fuzz: building $product (release, -sanitize=fuzzer,address)" >&2
BATON_FUZZ=1 swift build -c release --scratch-path "$scratch" --product "$product" \
    --sanitize=address -Xswiftc -sanitize=fuzzer -Xswiftc -enable-testing -Xswiftc -use-ld=lld \
    2>&1 | grep -Ev '^\[[0-9]+/[0-9]+\]|unhandled|CMakeLists|^warning: .*found [0-9]+ file' >&2 || true
binary="$scratch/release/$product"
[[ -x $binary ]] || { echo "fuzz: the build of $product failed" >&2; exit 1; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:symbolize=1}
# libFuzzer reports a crash itself; the Swift runtime's backtracer would only trip over ASan.
export SWIFT_BACKTRACE=enable=no
if $replay; then
    (($#)) || usage
    exec "$binary" "$@"
fi

seconds=${1:-60}
if [[ $seconds == -- ]]; then seconds=60; else shift || true; fi
[[ ${1:-} == -- ]] && shift
[[ $seconds =~ ^[0-9]+$ ]] || { echo "fuzz: SECONDS must be a whole number, got '$seconds'" >&2; exit 64; }

seeds="Fuzz/Corpus/$target"
corpus="$scratch/corpus/$target"
artifacts="$scratch/artifacts/$target/"
mkdir -p "$corpus" "$artifacts"
dictionary=()
[[ -f Fuzz/Dictionaries/$target.dict ]] && dictionary=(-dict="Fuzz/Dictionaries/$target.dict")
log="$scratch/logs/$target-$(date -u +%Y%m%dT%H%M%SZ).log"
mkdir -p "$(dirname "$log")"
echo "fuzz: running $target for $seconds s (log: $log)" >&2
started=$(date +%s)
set +e
"$binary" "$corpus" "$seeds" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
    -rss_limit_mb=4096 -artifact_prefix="$artifacts" "${dictionary[@]}" "$@" 2>&1 | tee "$log" | grep -E '^#[0-9]+.*(pulse|DONE)|^==|ERROR|invariant|Fatal|artifact|stat::' >&2
status=${PIPESTATUS[0]}
set -e
elapsed=$(($(date +%s) - started))
runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
speed=$(grep -Eo 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
coverage=$(grep -Eo '^#[0-9]+.*cov: [0-9]+' "$log" | tail -1 | grep -Eo 'cov: [0-9]+' | grep -Eo '[0-9]+')
echo "fuzz: $target: ${runs:-?} inputs in $elapsed s, ${speed:-?}/s, coverage ${coverage:-?} edges, corpus $(ls "$corpus" | wc -l) files, exit $status"
exit "$status"
