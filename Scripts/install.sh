#!/usr/bin/env bash
# Builds `baton` (release) and installs it as PREFIX/bin/baton (default PREFIX: ~/.local).
# Installs what the machine lacks first (Scripts/bootstrap.sh). Prints where it went and
# whether that directory is on PATH.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    echo "usage: Scripts/install.sh [PREFIX]   (installs PREFIX/bin/baton; default PREFIX ~/.local)"
    exit 0
fi
prefix="${1:-$HOME/.local}"
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/Scripts/bootstrap.sh"
build_baton release
mkdir -p "$prefix/bin"
install -m 0755 "$baton" "$prefix/bin/baton"
echo "installed $("$prefix/bin/baton" --version) as $prefix/bin/baton"
case ":$PATH:" in
    *":$prefix/bin:"*) ;;
    *) echo "$prefix/bin is not on PATH; add it: export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
