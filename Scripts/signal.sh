#!/usr/bin/env bash
# Lifecycle signals with nothing but the shell: these lines are all a script needs to drive
# participants. Usage: Scripts/signal.sh DIR NAME foreground|background
set -euo pipefail
dir="$1" name="$2" state="$3"
case "$state" in
    foreground | background) ;;
    *) echo "state must be foreground or background" >&2; exit 2 ;;
esac
mkdir -p "$dir/lifecycle"
# A plain write works (participants re-read the file on every change)…
echo "$state" >"$dir/lifecycle/$name"
# …and so does the atomic form, which `baton signal` uses:
#   echo "$state" > "$dir/lifecycle/.$name.tmp" && mv "$dir/lifecycle/.$name.tmp" "$dir/lifecycle/$name"
