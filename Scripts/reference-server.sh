#!/usr/bin/env bash
# Sourced by the scripts that need a server: `start_reference_server SEED` starts
# `baton serve --json --seed SEED` in the background, appends its pid to `pids`, and sets `url`
# and exports BATON_TOKEN from its first line. Expects `baton` to name the binary.
start_reference_server() {
    local fifo info
    fifo="$(mktemp -u /tmp/baton-serve-XXXXXX)"
    mkfifo "$fifo"
    "$baton" serve --json --seed "$1" >"$fifo" &
    pids+=($!)
    read -r info <"$fifo"
    rm -f "$fifo"
    url="$(echo "$info" | sed -E 's/.*"url":"([^"]+)".*/\1/')"
    BATON_TOKEN="$(echo "$info" | sed -E 's/.*"token":"([^"]+)".*/\1/')"
    export BATON_TOKEN
}
