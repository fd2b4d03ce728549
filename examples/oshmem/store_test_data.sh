#!/usr/bin/env bash
# Run every scenario and keep its dumps, manifest and per-PE status files in
# tests/data/oshmem/<scenario>/, beside the hand-written expect.json (the injected root),
# so tests/test_oshmem.py diagnoses real-runtime traces on machines without Open MPI.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
DATA="$HERE/../../tests/data/oshmem"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
for s in $("$HERE/run.sh" --list); do
    "$HERE/run.sh" "$s" "$TMP/$s" | sed "s/^/$s: /"
    [ -f "$DATA/$s/expect.json" ] || { echo "$DATA/$s/expect.json missing: write the injected root first" >&2; exit 1; }
    rm -f "$DATA/$s"/*.mtr "$DATA/$s"/*.status "$DATA/$s/manifest.json"
    cp "$TMP/$s/manifest.json" "$TMP/$s"/*.mtr "$DATA/$s/"
    cp "$TMP/$s"/*.status "$DATA/$s/" 2>/dev/null || true
done
du -sh "$DATA"
