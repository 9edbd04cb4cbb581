#!/usr/bin/env bash
# Builds everything and runs the whole test suite (unit tests and end-to-end tests that run
# the built `baton` binary as separate processes).
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/bootstrap.sh
# One build of everything, each dependency once: the libraries, `baton`, the NotesPair
# example's apps (targets of this package too) and the tests.
swift build --build-tests
swift test --skip-build "$@"
