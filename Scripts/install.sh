#!/usr/bin/env bash
# Installs `baton` as PREFIX/bin/baton (default PREFIX: ~/.local): a release build, or with
# --debug the debug build the demo and the tests use (already built after either, so instant).
# Installs what the machine lacks first (Scripts/bootstrap.sh), and says whether PREFIX/bin is
# on PATH.
set -euo pipefail
configuration=release
prefix="$HOME/.local"
for argument in "$@"; do
    case "$argument" in
        -h | --help)
            echo "usage: Scripts/install.sh [--debug] [PREFIX]   (installs PREFIX/bin/baton; default PREFIX ~/.local)"
            exit 0
            ;;
        --debug) configuration=debug ;;
        -*)
            echo "install.sh: unknown option $argument (see --help)" >&2
            exit 64
            ;;
        *) prefix="$argument" ;;
    esac
done
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/Scripts/bootstrap.sh"
build_baton "$configuration"
mkdir -p "$prefix/bin"
install -m 0755 "$baton" "$prefix/bin/baton"
echo "installed baton $("$prefix/bin/baton" --version) ($configuration) as $prefix/bin/baton"
case ":$PATH:" in
    *":$prefix/bin:"*) ;;
    *) echo "$prefix/bin is not on PATH; add it: export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
