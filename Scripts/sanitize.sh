#!/usr/bin/env bash
# Builds everything with a sanitizer and runs the whole test suite under it, the `baton`
# processes the end-to-end tests start included.
#
#   Scripts/sanitize.sh address|thread [swift test arguments...]
#
# address: AddressSanitizer (out-of-bounds and use-after-free accesses, in Swift's unsafe
#          buffers and in C); thread: ThreadSanitizer (data races).
# The build goes to .build-address or .build-thread (about 8 minutes on 2 cores the first time).
# Every process writes its reports under .build-KIND/reports/; the script lists them at the end
# and exits non-zero when a test failed or any process reported anything. Suppressions, each
# with its reason, are in Scripts/sanitizers/KIND.supp.
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/bootstrap.sh

kind=${1:-}
case $kind in
    address | thread) shift ;;
    *)
        sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
        exit 64
        ;;
esac

scratch=".build-$kind"
reports="$PWD/$scratch/reports"
rm -rf "$reports"
mkdir -p "$reports"
suppressions="$PWD/Scripts/sanitizers/$kind.supp"

echo "sanitize: building with --sanitize=$kind into $scratch" >&2
swift build --build-tests --sanitize="$kind" --scratch-path "$scratch" 2>&1 \
    | grep -Ev '^\[[0-9]+/[0-9]+\]|unhandled|CMakeLists' >&2 || true

if [[ $kind == thread ]]; then
    export TSAN_OPTIONS="log_path=$reports/tsan suppressions=$suppressions halt_on_error=0 second_deadlock_stack=1 history_size=4"
else
    # Leaks are not looked for: the Swift runtime's caches of type metadata and the test
    # runner's own allocations live until exit by design, and LeakSanitizer reports them all.
    export ASAN_OPTIONS="log_path=$reports/asan suppressions=$suppressions detect_leaks=0 halt_on_error=0"
fi

echo "sanitize: running the suite under $kind (reports in $reports)" >&2
set +e
swift test --skip-build --sanitize="$kind" --scratch-path "$scratch" "$@" 2>&1 | tee "$scratch/test.log"
status=${PIPESTATUS[0]}
set -e

shopt -s nullglob
files=("$reports"/*)
count=0
for file in "${files[@]}"; do
    count=$((count + $(grep -c '^WARNING: ThreadSanitizer\|^==[0-9]*==ERROR: AddressSanitizer' "$file" || true)))
done
tests=$(grep -Eo 'Test run with [0-9]+ tests.*' "$scratch/test.log" | tail -1)
echo "sanitize: $kind: ${tests:-no test summary}; $count report(s) in ${#files[@]} file(s)"
for file in "${files[@]}"; do
    echo "--- $file"
    grep -A12 '^WARNING: ThreadSanitizer\|^==[0-9]*==ERROR: AddressSanitizer' "$file" | head -40
done
if ((status != 0 || count > 0)); then exit 1; fi
