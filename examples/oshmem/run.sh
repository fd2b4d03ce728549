#!/usr/bin/env bash
# Build the OpenSHMEM classic dispatch/combine and run one scenario on 4 PEs:
#   examples/oshmem/run.sh SCENARIO OUT      (run.sh --list: the scenarios)
# OUT gets manifest.json, rankR.mtr and rankR.status ("ok", "wrong N", "hang"; none for
# a killed PE), ready for `moetrace ingest OUT -o DATASET`. Completion is judged by the
# per-PE status files, not oshrun's exit status (shmem_finalize crashes in UCX here, and a
# killed or hung PE ends the job). Needs oshcc and oshrun (Debian: openmpi-bin, libopenmpi-dev).
# Env: MOE_BUILD (build directory), MOE_NP (PEs, default 4), MOE_WATCHDOG (seconds, default 3).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"

# A straggler (timing, not a bug) makes the race a fault opens come out the same way every run:
# rank $1 pauses 200 ms at point $2 of launch 1, so the stale flag is read before the new one lands.
late() { echo "--straggle $1 --straggle-at $2 --straggle-launch 1"; }

scenario_args() {
    case "$1" in
        clean)            echo "--rounds 2 --straggle 1" ;;
        wrap)             echo "--rounds 2 --straggle 1 --ring-capacity 64" ;;
        invalid-expert)   echo "--rounds 1 --fault invalid-expert --rank 2 --round 0 --token 3 --topk 1" ;;
        status-not-reset) echo "--rounds 2 --fault status-not-reset --rank 1 --core 1 --round 0 $(late 2 combine)" ;;
        count-not-reset)  echo "--rounds 2 --fault count-not-reset --rank 3 --round 0 $(late 0 dispatch)" ;;
        ready-off)        echo "--rounds 1 --fault ready-off --rank 0 --core 1 --round 0" ;;
        pe-killed)        echo "--rounds 1 --fault pe-killed --rank 3 --round 0" ;;
        generation-eq)    echo "--rounds 2 --fault generation-eq --rank 1 --straggle 1" ;;
        missing-quiet)    echo "--rounds 1 --fault missing-quiet --rank 2 --core 0 --round 0" ;;
        amo-before-quiet) echo "--rounds 1 --fault amo-before-quiet --rank 0 --core 1 --round 0" ;;
        *) return 1 ;;
    esac
}
SCENARIOS="clean wrap invalid-expert status-not-reset count-not-reset ready-off pe-killed generation-eq missing-quiet amo-before-quiet"

if [ "${1:-}" = "--list" ]; then
    echo "$SCENARIOS" | tr ' ' '\n'
    exit 0
fi
if [ $# -ne 2 ] || ! ARGS="$(scenario_args "$1")"; then
    echo "usage: $0 SCENARIO OUT   (scenarios: $SCENARIOS)" >&2
    exit 2
fi
for tool in oshcc oshrun; do
    command -v "$tool" >/dev/null || { echo "$0: $tool not found (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 2; }
done

BUILD="${MOE_BUILD:-${TMPDIR:-/tmp}/moetrace-oshmem-build}"
EXE="$BUILD/moe_classic"
mkdir -p "$BUILD"
SRCS=("$HERE/host.c" "$HERE/kernels.c")
DEPS=("${SRCS[@]}" "$HERE/moe.h" "$HERE/../../kernels/device/moetrace.h" "$HERE/../../kernels/device/moetrace_host.h")
stale=0
for f in "${DEPS[@]}"; do [ -e "$EXE" ] && [ "$EXE" -nt "$f" ] || stale=1; done
if [ "$stale" = 1 ]; then
    oshcc -std=c99 -D_DEFAULT_SOURCE -Wall -Wextra -Werror -O2 -pthread -o "$EXE.tmp" "${SRCS[@]}"
    mv "$EXE.tmp" "$EXE"
fi

OUT="$2"
rm -rf "$OUT"
mkdir -p "$OUT"
FLAGS=(--oversubscribe --enable-recovery -np "${MOE_NP:-4}")
[ "$(id -u)" = 0 ] && FLAGS=(--allow-run-as-root "${FLAGS[@]}")
# shellcheck disable=SC2086
timeout 60 oshrun "${FLAGS[@]}" "$EXE" "$OUT" --watchdog "${MOE_WATCHDOG:-3}" $ARGS >"$OUT/oshrun.log" 2>&1 || true
for ((r = 0; r < ${MOE_NP:-4}; r++)); do
    printf 'rank %d: %s\n' "$r" "$(cat "$OUT/rank$r.status" 2>/dev/null || echo "no status (died)")"
done
