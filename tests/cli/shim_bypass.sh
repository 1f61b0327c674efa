#!/usr/bin/env bash
# shim_bypass.sh - every known way past the shim's memory limit, one probe
# each (tests/shim/shim_bypass.c) under LD_PRELOAD on the stand-in driver:
# VMM memory released while still mapped (also into sparse tiles), the legacy unversioned entry
# points, mipmapped arrays, the device malloc heap, pools keeping their
# reserve, graph memory, imports (IPC, shareable handles, mapped or not),
# contexts (legacy cuCtxCreate, green contexts), pending device launches,
# dlsym(RTLD_NEXT)
# from a library loaded after the shim, the driver holding more than the
# shim charged (memoryBackstop),
# cuGetProcAddress handing out internal entry points, the tracking table
# at 300,000 live allocations, fork, exec and pid namespaces. Each
# probe prints how many times the limit the driver itself held; all must
# stay within it. Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

use_shim_probes
export LD_LIBRARY_PATH="$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

limits() { printf 'version = 1\n%s\nregion = %s\n' "$2" "$TMP/$1.region" >"$TMP/$1"; }
B() { local f=$1; shift; TESSERA_CUDA_LIMITS_FILE="$f" LD_PRELOAD="$preload" "$BYPASS" "$@"; }

limits m64 "memoryLimit = 64Mi"
for probe in vmm sparse legacy mipmap heap pending setlimit stack defpool pool graph graphv2 module gpa next; do
    expect_rc 0 B "$TMP/m64" "$probe"
    expect_in "$TMP/out" "probe=$probe held="
    expect_in "$TMP/out" "limit=67108864"
done

# VMM: the mapped allocation stays charged after its release, and is
# credited at the unmap (the probe checks 0 at the end).
expect_rc 0 B "$TMP/m64" vmm
expect_in "$TMP/out" "vmm_mapped=1 charged_while_mapped=58720256"
# Sparse tiles backed by a released handle keep it charged until unmapped.
expect_rc 0 B "$TMP/m64" sparse
expect_in "$TMP/out" "tiles_mapped=1 charged_while_mapped=58720256"
# Contexts: an estimate charged for each (limit / 16 below 4 GiB: 128 MiB
# of 2 GiB), the primary context once however often it is retained; with
# contexts that hold 128 MiB on the stand-in, the primary and 15 more fit.
limits g2 "memoryLimit = 2Gi"
TESSERA_STANDIN_CTX_MEM=128M expect_rc 0 B "$TMP/g2" ctx
expect_in "$TMP/out" "primary_charged=134217728 contexts=15 charged=2147483648"
# ... and so are cuCtxCreate_v4 (CUDA 13.0's cuCtxCreate), _v3 and what
# cuGetProcAddress("cuCtxCreate", 13000) hands out: 16 of 128 MiB fit.
TESSERA_STANDIN_CTX_MEM=128M expect_rc 0 B "$TMP/g2" ctx4
expect_in "$TMP/out" "ctx4_contexts=16 charged=2147483648"
# ... and so is the unversioned cuCtxCreate the driver still exports.
TESSERA_STANDIN_CTX_MEM=128M expect_rc 0 B "$TMP/g2" ctxlegacy
expect_in "$TMP/out" "ctxlegacy_contexts=16 charged=2147483648"
# A green context retains the primary context (charged with the first) and
# is charged the context estimate itself: the primary and 15 fit.
TESSERA_STANDIN_CTX_MEM=128M expect_rc 0 B "$TMP/g2" green
expect_in "$TMP/out" "green_contexts=15 charged=2147483648"
# The backstop: contexts that hold 16 MiB on the stand-in against the
# shim's estimate of 4 MiB (64 MiB / 16). Without it 16 fit (4x the limit);
# memoryBackstop = report says so, refuse stops the second context.
TESSERA_STANDIN_CTX_MEM=16M expect_rc 1 B "$TMP/m64" drift 50
expect_in "$TMP/out" "drift_contexts=16"
limits rep "$(printf 'memoryLimit = 64Mi\nmemoryBackstop = report\nbackstopTolerance = 1Mi\nbackstopIntervalMs = 10')"
TESSERA_STANDIN_CTX_MEM=16M expect_rc 1 B "$TMP/rep" drift 50
expect_in "$TMP/err" "memoryBackstop: the driver shows 16777216 bytes for the container's 1 processes, the shim charged 4194304 (over by 12582912, tolerance 1048576)"
limits ref "$(printf 'memoryLimit = 64Mi\nmemoryBackstop = refuse\nbackstopTolerance = 1Mi\nbackstopIntervalMs = 10')"
TESSERA_STANDIN_CTX_MEM=16M expect_rc 0 B "$TMP/ref" drift 50
expect_in "$TMP/out" "drift_contexts=1"
expect_in "$TMP/out" "probe=drift held=16777216"
expect_in "$TMP/err" "refusing allocations"
# Within the tolerance (the default 512 MiB) nothing is said or refused.
limits tol "$(printf 'memoryLimit = 64Mi\nmemoryBackstop = refuse\nbackstopIntervalMs = 10')"
TESSERA_STANDIN_CTX_MEM=16M expect_rc 1 B "$TMP/tol" drift 50
expect_in "$TMP/out" "drift_contexts=16"
check "no backstop line within the tolerance" bash -c "! grep -q memoryBackstop '$TMP/err'"

# The legacy calls are refused at the limit, not before: 4 x 16 MiB fit.
expect_rc 0 B "$TMP/m64" legacy
expect_in "$TMP/out" "legacy_allocs=4 arrays=0"
# The heap cannot be raised past the limit; in the limit it can.
expect_rc 0 B "$TMP/m64" heap
expect_in "$TMP/out" "heap_rc=2 heap=8388608"
# Pending device-runtime launches are charged 4 KiB each beyond the default
# 2048: 65,536 more (4x the limit) are refused, 8,192 more (32 MiB) fit.
expect_rc 0 B "$TMP/m64" pending
expect_in "$TMP/out" "pending_rc=2 pending=2048"
expect_in "$TMP/out" "pending_in_limit_charged=33554432"
# A refused cuCtxSetLimit leaves the charge exactly as it was (it used to
# give back what it never charged: 4.38x a 1 GiB limit in 5 rounds of
# cuMemAlloc_v2 7/8 + a refused heap); then a heap in the limit that the
# card refuses (its contexts hold more than the estimate) is given back too.
limits g1 "memoryLimit = 1Gi"
expect_rc 0 B "$TMP/g1" setlimit
expect_in "$TMP/out" "setlimit_allocs=1 heap_in_limit_rc=0 charged=973078528"
TESSERA_STANDIN_CTX_MEM=128M TESSERA_STANDIN_TOTAL_MEM=1G expect_rc 0 B "$TMP/g1" setlimit
expect_in "$TMP/out" "setlimit_allocs=1 heap_in_limit_rc=2 charged=939524096"
# The stack is charged for every resident thread (100 SMs x 2048 on the
# stand-in): 2 KiB a thread does not fit 64 MiB, 1088 bytes (64 more than
# the default, 12.5 MiB) does.
expect_rc 0 B "$TMP/m64" stack
expect_in "$TMP/out" "stack_rc=2 stack=1024"
expect_in "$TMP/out" "stack_in_limit_charged=13107200"
# The default pool (cuMemAllocAsync) keeps what is freed until the next
# synchronisation: a second 56 MiB is refused before it, allowed after.
expect_rc 0 B "$TMP/m64" defpool
expect_in "$TMP/out" "defpool_before_sync_rc=2 after_sync_rc=0"
# A pool's kept reserve is charged after the sync (the second pool is
# refused), reused by its own pool, and credited at the trim.
expect_rc 0 B "$TMP/m64" pool
expect_in "$TMP/out" "pool_allocs=1 reused=1 charged_after_sync=58720256"
# Graph memory: the first graph's upload is charged, the second refused.
expect_rc 0 B "$TMP/m64" graph
expect_in "$TMP/out" "graph_launched=1 charged=58720256"
# ... through every instantiate entry point (cuGraphInstantiate, _v2,
# WithParams and its _ptsz, with and without the upload flag, and what
# cuGetProcAddress hands out for them by version): one of two 7/8 graphs
# runs each way (both ran before, 1.75x the limit).
expect_rc 0 B "$TMP/m64" graphv2
expect_in "$TMP/out" "graphv2_ran=1,1,1,1,1,1,1,1,1"
# Module __device__ globals and code take the card's memory at load: a
# second module or library of 7/8 of the limit is refused (unloaded again)
# by every loader; both loaded before (1.75x).
expect_rc 0 B "$TMP/m64" module
expect_in "$TMP/out" "module_loaded=1,1,1,1,1,1"
# Both versions cuGetProcAddress hands out are limited: 4 of 16 MiB each.
expect_rc 0 B "$TMP/m64" gpa
expect_in "$TMP/out" "gpa_allocs=4"
expect_in "$TMP/out" "gpa_legacy_allocs=4"
expect_rc 0 B "$TMP/m64" next
expect_in "$TMP/out" "next_allocs=4"

# The tracking table grows: 300,000 live allocations, none refused.
limits g16 "memoryLimit = 16Gi"
expect_rc 0 B "$TMP/g16" table 300000
expect_in "$TMP/out" "table_live=300000 rc=0 charged=19200000"

# Imports keep the exporter's memory alive, so the importing container is
# charged: a neighbour container (512 MiB) exports two 56 MiB allocations
# two 56 MiB VMM handles and two 56 MiB pool allocations; here (64 MiB)
# the second IPC open, the second pool pointer import and the second import
# of a VMM handle are refused, whether it is mapped or only held (its size
# found by trial mappings).
limits m512 "memoryLimit = 512Mi"
(TESSERA_CUDA_LIMITS_FILE="$TMP/m512" LD_PRELOAD="$preload" exec "$BYPASS" export \
    "$TMP/exported" 58720256 >"$TMP/export.out" 2>&1) &
exporter=$!
for _ in $(seq 200); do [ -s "$TMP/exported" ] && break; sleep 0.05; done
expect_rc 0 B "$TMP/m64" import "$TMP/exported"
expect_in "$TMP/out" "ipc_opened=1 charged=58720256"
expect_in "$TMP/out" "pool_ptrs_imported=1 charged=58720256"
expect_rc 0 B "$TMP/m64" share "$TMP/exported"
expect_in "$TMP/out" "imports_mapped=1 charged=58720256"
expect_rc 0 B "$TMP/m64" unmapped "$TMP/exported"
expect_in "$TMP/out" "imports_held=1 charged=58720256"
{ kill "$exporter"; wait "$exporter"; } 2>/dev/null

# fork: the child's free does not touch the parent's charge; exec: the new
# image is not charged the old one's memory (its lock went at the exec).
expect_rc 0 B "$TMP/m64" fork
expect_in "$TMP/out" "fork_parent_charged=33554432"
expect_rc 0 B "$TMP/m64" exec
expect_in "$TMP/out" "after_exec_rc=0 charged=50331648"

# Pid namespaces: a holder in its own pid namespace (pid 1 there, with its
# own /proc) sharing the region is alive to a process outside it, so the
# two cannot both take the limit; once it is gone its slot is reclaimed.
wait_ready() { for _ in $(seq 200); do [ -s "$1" ] && break; sleep 0.05; done; }
if unshare -Urp --fork --mount-proc --kill-child true 2>/dev/null; then
    limits ns "memoryLimit = 1Mi"
    (TESSERA_CUDA_LIMITS_FILE="$TMP/ns" LD_PRELOAD="$preload" exec unshare -Urp --fork \
        --mount-proc --kill-child "$PROBE" hold 600000 "$TMP/nsready" >/dev/null 2>&1) &
    nsholder=$!
    wait_ready "$TMP/nsready"
    [ "$(cat "$TMP/nsready" 2>/dev/null)" = 0 ] && ok || bad "namespaced holder did not allocate"
    expect_rc 3 env TESSERA_CUDA_LIMITS_FILE="$TMP/ns" LD_PRELOAD="$preload" "$PROBE" try 600000
    expect_in "$TMP/out" "rc=2"
    # ... and the same seen from a second namespace (LeakSanitizer cannot stop
    # the world inside a user and pid namespace: no leak check for this one)
    expect_rc 3 env TESSERA_CUDA_LIMITS_FILE="$TMP/ns" LD_PRELOAD="$preload" \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        unshare -Urp --fork --mount-proc "$PROBE" try 600000
    { kill -9 "$nsholder"; wait "$nsholder"; } 2>/dev/null
    for _ in $(seq 100); do
        pgrep -f "$PROBE hold 600000 $TMP/nsready" >/dev/null || break
        sleep 0.05
    done
    expect_rc 0 env TESSERA_CUDA_LIMITS_FILE="$TMP/ns" LD_PRELOAD="$preload" "$PROBE" try 600000
else
    echo "SKIP: pid namespaces (unshare -Urp --fork --mount-proc not allowed here)"
fi

# An unknown probe is bad usage.
expect_rc 2 B "$TMP/m64" nosuch
finish
