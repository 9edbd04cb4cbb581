#!/usr/bin/env bash
# Builds everything and runs the whole test suite (unit tests and end-to-end tests that run
# the built `baton` binary as separate processes).
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/bootstrap.sh
swift build --build-tests
# The example package (Examples/NotesPair, depending on this one by path), built here so its
# test only checks that it is up to date instead of building it beside the other tests.
swift build --package-path Examples/NotesPair --scratch-path .build-notes
swift test --skip-build "$@"
