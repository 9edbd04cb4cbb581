#!/usr/bin/env bash
# Builds the API reference of the library products with swift-docc-plugin: one DocC archive per
# library, transformed for static hosting, into OUTPUT (default .build/docs; open
# OUTPUT/NAME/documentation/NAME/index.html through any static web server). DocC's warnings
# (a broken symbol link in a catalog, say) fail the run. That every public symbol of
# BatonStore and BatonCoordinator has a doc comment is a test (APIDocumentationTests).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/Scripts/bootstrap.sh"
output="${1:-$root/.build/docs}"
mkdir -p "$output"
# BATON_DOCS=1 adds the plugin to the manifest (Package.swift).
export BATON_DOCS=1
for target in BatonStore BatonCoordinator BatonSync BatonREST BatonServer SOQL; do
    echo "docs: $target" >&2
    swift package --package-path "$root" --allow-writing-to-directory "$output" \
        generate-documentation --target "$target" --output-path "$output/$target" \
        --transform-for-static-hosting --hosting-base-path "$target" --warnings-as-errors
done
echo "docs: written to $output" >&2
