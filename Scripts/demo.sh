#!/usr/bin/env bash
# The main job: build baton and run the demo (embedded reference server, temporary shared
# directory, a host and an extension as separate processes). Extra arguments go to `baton demo`,
# e.g. `Scripts/demo.sh --records 20000 --report /tmp/baton.html`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/Scripts/bootstrap.sh"
build_baton
exec "$baton" demo "$@"
