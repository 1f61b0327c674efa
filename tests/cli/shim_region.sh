#!/usr/bin/env bash
# shim_region.sh - a tenant that writes the accounting region instead of
# asking the shim (tests/shim/shim_tamper.c, docs/shim.md "What a tenant can
# still write"), on the stand-in driver at a 1 GiB limit. Each probe prints
# how many times the limit the stand-in held for all its processes at once;
# where the shim can stop the write it must stay within the limit:
#   openclose  open()+close() of the region file, then a sibling starts
#              (POSIX locks went with the close: 2.00x in 3 rounds before)
#   remove     the region file removed, then a sibling (2.00x before)
#   zero       this process's slot zeroed, then more, then a sibling 200 ms
#              later (9.00x before: every later charge invisible)
# and the guard says once on stderr that it repaired the region. The SM
# bucket refilled from a thread (refill) the shim cannot stop: measured
# and printed, not judged here (the node agent is the authority).
# Needs TESSERA, TESSERA_SRC; shim-test.env next to $TESSERA.
source "$TESSERA_SRC/tests/lib.sh"

use_shim_probes
export LD_LIBRARY_PATH="$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
printf 'version = 1\nmemoryLimit = 1Gi\nregion = %s\n' "$TMP/r.region" >"$TMP/lim"

# probe NAME ARGS...: run it on a fresh region; must hold within the limit.
probe() {
    rm -f "$TMP/r.region"
    expect_rc 0 env TESSERA_CUDA_LIMITS_FILE="$TMP/lim" LD_PRELOAD="$preload" "$TAMPER" "$1" \
        "$TMP/r.region" "${@:2}"
    expect_in "$TMP/out" "probe=$1 held="
    expect_in "$TMP/out" "limit=1073741824"
    grep -h "probe=" "$TMP/out"
}

probe openclose 3
probe remove
expect_in "$TMP/err" "the accounting region was written by something other than the shim"
probe zero 200
expect_in "$TMP/err" "the accounting region was written by something other than the shim"

# The slot locks are open file description locks: /proc/locks lists them
# as OFDLCK, not POSIX.
rm -f "$TMP/r.region"
TESSERA_CUDA_LIMITS_FILE="$TMP/lim" LD_PRELOAD="$preload" "$TAMPER" sibling </dev/zero \
    >/dev/null 2>&1 &
holder=$!
sleep 0.5
grep -q OFDLCK /proc/locks && ok || bad "no OFD lock held by the region's process"
kill "$holder"
wait "$holder" 2>/dev/null

finish
