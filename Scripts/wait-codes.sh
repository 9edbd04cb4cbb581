#!/usr/bin/env bash
# Shows `baton wait`'s exit codes on a fresh shared directory: 0 when the condition holds,
# 2 when the timeout passes first, 1 on an error (a missing directory, which wait refuses and
# never creates). Exits non-zero if any code is not the one documented.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/Scripts/bootstrap.sh"
build_baton
set +e # the point is to see non-zero exit codes
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
"$baton" store init --dir "$dir/shared" >/dev/null || exit 1

failed=0
expect() {
    local want="$1"
    shift
    "$baton" "$@" 2>/tmp/baton-wait-codes.$$
    local got=$?
    local said
    said="$(head -n 1 /tmp/baton-wait-codes.$$)"
    rm -f /tmp/baton-wait-codes.$$
    printf '%-62s exit %s (want %s)%s\n' "baton $*" "$got" "$want" "${said:+  $said}"
    [[ $got == "$want" ]] || failed=1
}

expect 0 wait --dir "$dir/shared" --no-writer --timeout 5
expect 2 wait --dir "$dir/shared" --writer host --timeout 0.5
expect 1 wait --dir "$dir/no/such/dir" --writer host --timeout 5
if [[ -e $dir/no ]]; then
    echo "wait created $dir/no"
    failed=1
fi
expect 64 wait --dir "$dir/shared" --timeout 5
exit $failed
