#!/bin/bash
# shim_bench.sh - the shim's allocation path for `make bench` (bench/run), as
# Markdown:
#   table  src/shim/track.c alone (bench/shim_track_bench.c, cc -O2): ns per
#          put + take pair, the address reused each time and never reused,
#          with 0, 1,000 and 100,000 other allocations live; with TRACK_BASE
#          (another tree, e.g. a worktree of main) its track.c side by side
#   pair   cuMemAlloc_v2 + cuMemFree_v2 of 64 bytes on the stand-in driver
#          (tests/shim/shim_probe bench), bare and under the shim with a
#          memory limit, addresses reused (malloc's) and not reused
#          (TESSERA_STANDIN_QUARANTINE=65536), median of 5
# BUILD names the build folder (default build).
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

cc -O2 -std=c17 -D_GNU_SOURCE -Isrc bench/shim_track_bench.c src/shim/track.c -o "$W/track"
if [ -n "${TRACK_BASE:-}" ]; then
    cc -O2 -std=c17 -D_GNU_SOURCE -I"$TRACK_BASE/src" bench/shim_track_bench.c \
        "$TRACK_BASE/src/shim/track.c" -o "$W/track_base"
fi
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

echo "## Shim allocation table ($(nproc) cores, $(date -u +%Y-%m-%d))"
echo
echo "| table | live | reused ns/pair | not reused ns/pair |"
echo "|---|---|---|---|"
for t in track track_base; do
    [ -x "$W/$t" ] || continue
    for live in 0 1000 100000; do
        out=$("$W/$t" 2000000 "$live")
        echo "| ${t/track_base/base} | $live | $(echo "$out" | field reuse_ns) | $(echo "$out" | field fresh_ns) |"
    done
done
echo

export LD_LIBRARY_PATH="$BUILD/tests/standin/cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TESSERA_STANDIN_GPU="$W/gpu.lock"
printf 'version = 1\nmemoryLimit = 16Gi\nregion = %s/r\n' "$W" >"$W/limits"
pair() { # QUARANTINE PRELOAD -> median ns per pair of 5 runs
    for _ in 1 2 3 4 5; do
        TESSERA_STANDIN_QUARANTINE=$1 TESSERA_CUDA_LIMITS_FILE="$W/limits" LD_PRELOAD="$2" \
            "$BUILD/tests/shim/shim_probe" bench 1000000 64 | field pair_ns
    done | median
}
echo "| addresses | bare stand-in ns/pair | under the shim ns/pair | shim's cost ns |"
echo "|---|---|---|---|"
for q in 0 65536; do
    bare=$(pair "$q" "")
    shim=$(pair "$q" "$PWD/$BUILD/src/shim/libtessera-cuda.so")
    what=$([ "$q" = 0 ] && echo reused || echo "not reused (quarantine $q)")
    echo "| $what | $bare | $shim | $(awk -v a="$shim" -v b="$bare" 'BEGIN { printf "%.1f", a - b }') |"
done
