#!/usr/bin/env bash
# Installs what Baton needs from Debian's packages when it is missing, and checks the Swift
# toolchain. Safe to run again: it installs nothing that is already there.
set -euo pipefail

packages=(libsqlite3-dev)
missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
# A test runs a real Python client (simple-salesforce, which it installs with pip).
if ! command -v python3 >/dev/null 2>&1; then
    missing+=(python3 python3-pip)
elif ! python3 -m pip --version >/dev/null 2>&1; then
    missing+=(python3-pip)
fi
if ((${#missing[@]})); then
    echo "bootstrap: installing ${missing[*]}" >&2
    sudo_cmd=()
    if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi

if ! command -v swift >/dev/null 2>&1; then
    for candidate in /opt/swift/usr/bin /opt/swift/bin; do
        if [[ -x $candidate/swift ]]; then export PATH="$candidate:$PATH"; fi
    done
fi
if ! command -v swift >/dev/null 2>&1; then
    echo "bootstrap: no Swift toolchain found; install Swift 6.3 (swift.org) and put it on PATH" >&2
    exit 1
fi

# Builds the `baton` executable (debug, or release with `build_baton release`) and sets $baton
# to its path. Build output goes to stderr.
build_baton() {
    local configuration="${1:-debug}"
    local here
    here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    swift build --package-path "$here" -c "$configuration" --product baton >&2
    baton="$here/.build/$configuration/baton"
}
