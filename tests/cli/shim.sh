#!/usr/bin/env bash
# shim.sh - libtessera-cuda.so end to end on the stand-in driver
# (tests/standin/cuda), driving tests/shim/shim_probe under LD_PRELOAD:
# exported symbols; the three ways to reach the driver (direct, dlsym,
# cuGetProcAddress/_v2, _ptsz); every allocation kind charged and credited
# exactly; cuMemGetInfo/cuDeviceTotalMem show the limit; processes sharing
# one region, a neighbour with its own unaffected; a SIGKILLed holder (also
# left a zombie) reclaimed; 16 threads x 10,000 alloc/free never over the
# limit (and under ThreadSanitizer in the plain build); the limit file wins
# over the environment; malformed files, variables and regions fail closed
# with their location; the SM limiter's 30/70 and 10/90 splits; overhead.
# Paths come from shim-test.env, written by tests/shim/CMakeLists.txt next
# to $TESSERA. Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

use_shim_probes
# The stand-in NVML without its state file comes first, so that the SM share
# measures with the stand-in driver's hook even where a real NVML is installed.
export LD_LIBRARY_PATH="$STANDIN_DIR:$(dirname "$TESSERA")/standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset TESSERA_STANDIN_NVML

# P LIMITFILE ARGS...: the probe under the shim with that limit file.
P() { local f=$1; shift; TESSERA_CUDA_LIMITS_FILE="$f" LD_PRELOAD="$preload" "$PROBE" "$@"; }
limits() { printf 'version = 1\n%s\nregion = %s\n' "$2" "$TMP/$1.region" >"$TMP/$1"; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" "$2" | head -1; }

# The limit file `tessera render` writes for the worked example's time-sliced
# notebooks (a ConfigMap) is one the shim reads: the card shows its 16 GiB cap.
"$TESSERA" render -f "$TESSERA_SRC/examples/four-h100.yaml" --out-dir "$TMP/render" >/dev/null 2>&1 \
    && /usr/bin/python3 -c 'import sys, yaml
print(yaml.safe_load(open(sys.argv[1]))["data"]["cuda-limits"], end="")' \
        "$TMP/render/tenants/platform-dev/cuda-limits.yaml" \
        | sed "s|/run/tessera/cuda.region|$TMP/rendered.region|" >"$TMP/rendered" \
    && ok || bad "render wrote no limit file for the notebooks"
P "$TMP/rendered" info >"$TMP/info" 2>&1
grep -q "total=$((16 << 30)) " "$TMP/info" && ok || bad "rendered limit file: $(cat "$TMP/info")"

limits mi "memoryLimit = 1Mi"
limits other "memoryLimit = 1Mi"

# Only the interposed entry points are exported.
if command -v nm >/dev/null; then
    nm -D --defined-only "$SHIM" | awk '{print $3}' | grep -v -E '^(cu[A-Za-z0-9_]+|dlsym)$' \
        | grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' >"$TMP/extra"
    [ ! -s "$TMP/extra" ] && ok || bad "extra exported symbols: $(tr '\n' ' ' <"$TMP/extra")"
    nm -D --defined-only "$SHIM" | grep -q ' T cuMemCreate$' && ok || bad "cuMemCreate not exported"
fi

# Every path to the driver is limited: 10 chunks of 100000 fit in 1 MiB.
expect_rc 0 P "$TMP/mi" paths 100000
for p in direct dlsym dlsym-default gpa gpa2 gpa-direct; do
    expect_in "$TMP/out" "path=$p allocs=10 rc=2 used=1000000"
done
expect_in "$TMP/out" "path=ptsz used=100000"

# Each kind charged and credited exactly; each refused over the limit.
expect_rc 0 P "$TMP/mi" kinds
expect_in "$TMP/out" "kinds_checked=1"
expect_in "$TMP/out" "kind=pitch rc=0 charged=7168"
expect_in "$TMP/out" "kind=vmm rc=0 charged=262144"

# The application sees the limit as the card.
expect_rc 0 P "$TMP/mi" info
expect_in "$TMP/out" "rc=0 free=1048576 total=1048576 device_total=1048576"
# No file, no environment: the shim passes the card through.
expect_rc 0 P "$TMP/absent" info
expect_in "$TMP/out" "total=17179869184 device_total=17179869184"

# hold LIMITFILE BYTES READY: a probe that allocates and waits to be
# killed, exec'd in the background (so $! is the probe itself).
hold() {
    TESSERA_CUDA_LIMITS_FILE="$1" LD_PRELOAD="$preload" exec "$PROBE" hold "$2" "$3" >/dev/null 2>&1
}
wait_ready() { for _ in $(seq 200); do [ -s "$1" ] && break; sleep 0.05; done; }

# Several processes share one region; a neighbour with its own is unaffected.
hold "$TMP/mi" 600000 "$TMP/ready1" &
holder=$!
wait_ready "$TMP/ready1"
[ "$(cat "$TMP/ready1" 2>/dev/null)" = 0 ] && ok || bad "holder did not allocate"
expect_rc 3 P "$TMP/mi" try 600000
expect_in "$TMP/out" "rc=2"
expect_rc 0 P "$TMP/mi" try 400000
expect_rc 0 P "$TMP/other" try 600000
expect_rc 0 P "$TMP/mi" info
expect_in "$TMP/out" "free=448576 total=1048576"

# Killed while holding memory: the next process that looks reclaims it.
{ kill -9 "$holder"; wait "$holder"; } 2>/dev/null
expect_rc 0 P "$TMP/mi" try 600000
expect_rc 0 P "$TMP/mi" info
expect_in "$TMP/out" "free=1048576 total=1048576"

# The same when the dead holder stays a zombie: its parent never reaps it.
( hold "$TMP/mi" 600000 "$TMP/ready2" & exec sleep infinity ) &
parent=$!
wait_ready "$TMP/ready2"
expect_rc 3 P "$TMP/mi" try 600000
zombie=$(pgrep -P "$parent" | head -1)
[ -n "$zombie" ] && kill -9 "$zombie"
for _ in $(seq 100); do grep -q '^State:.*Z' "/proc/$zombie/status" 2>/dev/null && break; sleep 0.02; done
grep -q '^State:.*Z' "/proc/$zombie/status" 2>/dev/null && ok || bad "holder '$zombie' is not a zombie"
expect_rc 0 P "$TMP/mi" try 600000
{ kill "$parent"; wait "$parent"; } 2>/dev/null

# Many threads racing at the limit: never over it, back to 0 at the end.
expect_rc 0 P "$TMP/mi" threads 16 10000 100000
expect_in "$TMP/out" "over=0 used=0 live=0"
if [ -n "${SHIM_TSAN:-}" ]; then
    limits tsan "memoryLimit = 1Mi"
    TSAN_OPTIONS="halt_on_error=1:exitcode=66" TESSERA_CUDA_LIMITS_FILE="$TMP/tsan" \
        LD_PRELOAD="$SHIM_TSAN" "$PROBE_TSAN" threads 16 2000 100000 >"$TMP/tsan.out" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] && ! grep -q "ThreadSanitizer" "$TMP/tsan.out" && ok \
        || { bad "ThreadSanitizer run exited $rc"; head -40 "$TMP/tsan.out"; }
else
    echo "SKIP: ThreadSanitizer run (sanitized build: only in the plain build)"
fi

# The file wins over the environment (a shell opened later in the pod).
TESSERA_CUDA_MEMORY_LIMIT=8Gi expect_rc 0 P "$TMP/mi" info
expect_in "$TMP/out" "total=1048576 device_total=1048576"
TESSERA_CUDA_MEMORY_LIMIT=2Mi TESSERA_CUDA_REGION="$TMP/env.region" \
    expect_rc 0 P "$TMP/absent" info
expect_in "$TMP/out" "total=2097152 device_total=2097152"

# Malformed inputs fail closed, with their location.
printf 'version = 1\nmemoryLimit = 8Qi\n' >"$TMP/badunit"
expect_rc 3 P "$TMP/badunit" try 1000
expect_in "$TMP/err" "$TMP/badunit:2:16: memoryLimit: unknown unit"
expect_in "$TMP/err" "failing closed"
expect_rc 0 P "$TMP/badunit" info
expect_in "$TMP/out" "rc=0 free=0"
printf 'memoryLimit = 1Gi\n' >"$TMP/nover"
expect_rc 3 P "$TMP/nover" try 1000
expect_in "$TMP/err" "$TMP/nover:1:1: missing 'version = 1'"
printf 'version = 1\nsmPercent = 30\nsmPercent = 40\n' >"$TMP/twice"
expect_rc 3 P "$TMP/twice" try 1000
expect_in "$TMP/err" "$TMP/twice:3:1: smPercent: key given twice"
printf 'version = 2\n' >"$TMP/v2"
expect_rc 3 P "$TMP/v2" try 1000
expect_in "$TMP/err" "$TMP/v2:1:11: version: unsupported version"
mkdir -p "$TMP/dir"
expect_rc 3 P "$TMP/dir" try 1000
expect_in "$TMP/err" "failing closed"
TESSERA_CUDA_MEMORY_LIMIT=lots expect_rc 3 P "$TMP/absent" try 1000
expect_in "$TMP/err" "TESSERA_CUDA_MEMORY_LIMIT='lots': column 1: expected a number"
TESSERA_CUDA_REGION=run/x expect_rc 3 P "$TMP/absent" try 1000
expect_in "$TMP/err" "TESSERA_CUDA_REGION='run/x': column 1: must be an absolute path"
head -c 100 /dev/urandom >"$TMP/junk.region"
printf 'version = 1\nmemoryLimit = 1Mi\nregion = %s\n' "$TMP/junk.region" >"$TMP/junk"
expect_rc 3 P "$TMP/junk" try 1000
expect_in "$TMP/err" "not an accounting region"

# The SM share: two tenants on the stand-in card launching back to back for
# 2 s (1 ms kernels); the 30% one rotates all four launch paths. Each one's
# share of the card's busy time comes from the stand-in's counters.
sm_split() {
    printf 'version = 1\nsmPercent = %s\nregion = %s\n' "$1" "$TMP/sma.region" >"$TMP/sma"
    printf 'version = 1\nsmPercent = %s\nregion = %s\n' "$2" "$TMP/smb.region" >"$TMP/smb"
    rm -f "$TMP/gpu.lock" "$TMP/sma.region" "$TMP/smb.region"
    P "$TMP/sma" launch 2 1000 all >"$TMP/a.out" 2>&1 &
    local a=$!
    P "$TMP/smb" launch 2 1000 one >"$TMP/b.out" 2>&1
    wait "$a"
    python3 - "$TMP/a.out" "$TMP/b.out" "$1" <<'PY'
import re, sys
busy = [int(re.search(r"busy_ns=(\d+)", open(f).read()).group(1)) for f in sys.argv[1:3]]
share, want = busy[0] / sum(busy), int(sys.argv[3]) / 100
print(f"sm split {sys.argv[3]}%: measured {share:.3f} / {1 - share:.3f}, card busy {sum(busy) / 2e9:.3f}")
sys.exit(0 if abs(share - want) <= 0.05 and sum(busy) / 2e9 >= 0.85 else 1)
PY
}
sm_split 30 70 && ok || bad "30/70 split outside 0.05 (or card under 85% busy)"
sm_split 10 90 && ok || bad "10/90 split outside 0.05 (or card under 85% busy)"

# Overhead per alloc+free pair, with and without the shim (reported).
"$PROBE" bench 200000 >"$TMP/b0" && P "$TMP/mi" bench 200000 >"$TMP/b1" && ok || bad "bench"
echo "alloc+free pair: $(field pair_ns "$TMP/b0") ns bare, $(field pair_ns "$TMP/b1") ns under the shim"

finish
