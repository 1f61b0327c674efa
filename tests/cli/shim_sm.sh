#!/usr/bin/env bash
# labels: slow timing
# shim_sm.sh - the SM share measures the right processes: two tenants, each
# a "container" in its own pid namespace (unshare --user --pid, no
# --mount-proc, so the stand-in counts by host pid as NVML does), share the
# stand-in card for 3 s with 1 ms kernels. The 10% tenant must get 0.10 of
# the card's busy time within 0.05 when its pid map (written here, as the
# node agent does) names its processes: with one process, with four, and on
# the legacy launch entry points. With no pid map the shim must say it
# cannot measure and still hold the tenant (no refund: never assumed idle).
# The same splits also run through the stand-in NVML (the production path:
# process samples every 167 ms; four processes held 6 s, as each starts on a
# guessed cost until its first sample; and 1 s samples held 8 s), and as a
# matrix: 1, 2 and 4 processes, kernels of 1, 4 and 16 ms, in pid
# namespaces and in the host's (four cases in make check, all 18 in make
# bench), each judged as the others, 3 s a case (2 s
# is mostly start-up on the NVML path: the first samples come a period and
# a tick after the start).
# Every figure is each process's own busy time from the stand-in's
# counters. The split is the promise only while the card is contended: the
# limiter holds a tenant to its share when the card is at least 90% busy
# (sm.c, SATURATED_PPM) and gives idle time away otherwise (work-conserving).
# So the card must be measured at least 90% busy for the split to be judged;
# when it is not (a loaded machine starves the 90% tenant), the split is
# reported as SKIPPED, loudly. The 10% tenant may also take what the 90% one
# leaves while the card still looks busy: the stand-in counts the time the
# 90% tenant's queue stood empty (dry_ns), and a share over its tolerance is
# SKIPPED, with that figure, where it passed 3% of the run. Only the bound
# "share + what the other left (or the idle time)" is then
# checked; that skip is counted in the test's summary. A split outside
# 0.05 is measured once more before it fails (twice, below). The splits through
# NVML are judged in the plain build only (SKIPPED under ASan, whose
# slowdown moves the first samples: a fresh make check measured 0.151
# there, 0.102 in the plain build of the same run).
# Needs TESSERA, TESSERA_SRC; shim-test.env next to $TESSERA.
source "$TESSERA_SRC/tests/lib.sh"

use_shim_probes
SAN=0
nm "$TESSERA" 2>/dev/null | grep -q __asan_init && SAN=1
export TESSERA_STANDIN_KERNEL_US=1000
# The stand-in NVML is on the library path, without its state file (so it
# cannot initialise and the shim measures with the stand-in driver's hook,
# even on a machine with a real NVML) until nvml_split gives it one.
export LD_LIBRARY_PATH="$STANDIN_DIR:$(dirname "$TESSERA")/standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset TESSERA_STANDIN_NVML TESSERA_STANDIN_NVML_SAMPLE_MS
SECS=3

if ! unshare --user --map-root-user --pid --fork true 2>"$TMP/unshare.err"; then
    bad "cannot make a pid namespace (unshare --user --pid): $(cat "$TMP/unshare.err")"
    finish
    exit
fi

# The rendered limit file names the pid map the deployed agent writes, and
# the rendered pod mounts its folder.
"$TESSERA" render -f "$TESSERA_SRC/examples/four-h100.yaml" --out-dir "$TMP/render" >/dev/null 2>&1 \
    || bad "render failed"
rendered=$(python3 -c 'import sys, yaml
print(yaml.safe_load(open(sys.argv[1]))["data"]["cuda-limits"], end="")' \
    "$TMP/render/tenants/platform-dev/cuda-limits.yaml" | sed -n 's/^pidMap = //p')
deployed=$(sed -n 's/.*--pid-map-out=//p' "$TESSERA_SRC/deploy/base/agent.yaml")
[ -n "$rendered" ] && [ "$rendered" = "$deployed" ] && ok \
    || bad "rendered pidMap '$rendered', deployed agent writes '$deployed'"
expect_in "$TMP/render/README.md" "{name: tessera-pids, hostPath: {path: ${deployed%/*}, type: Directory}}"

# tenant NAME PERCENT MIX NPROC: NPROC probes in one new pid namespace, each
# waiting for $TMP/NAME.go before it execs the probe under the shim.
tenant() {
    local n=$1
    printf 'version = 1\nsmPercent = %s\nregion = %s\npidMap = %s\n' "$2" "$TMP/$n.region" \
        "$TMP/$n.map" >"$TMP/$n"
    rm -f "$TMP/$n.region" "$TMP/$n.map" "$TMP/$n.go" "$TMP/$n".out.*
    unshare --user --map-root-user --pid --fork bash -c '
        for i in $(seq "$4"); do
            (while [ ! -e "$1.go" ]; do sleep 0.02; done
             exec env TESSERA_CUDA_LIMITS_FILE="$1" LD_PRELOAD="$2" "$3" launch "$5" "$7" "$6" \
                 >"$1.out.$i" 2>&1) &
        done
        wait' _ "$TMP/$n" "$preload" "$PROBE" "$4" "$SECS" "$3" "$TESSERA_STANDIN_KERNEL_US" &
}

# write_map NAME: the pid map of NAME's namespace, as the agent writes it:
# "<pid-namespace inode> <pid in it> <host pid>" for each of its processes.
write_map() {
    python3 "$TESSERA_SRC/tests/tools/write_pidmap.py" "$(pgrep -P "$1" | head -1)" "$TMP/$2.map"
}

busy() { cat "$TMP/$1".out.* | sed -n 's/.*busy_ns=\([0-9]*\).*/\1/p' | paste -sd+ | bc; }
dry() { cat "$TMP/$1".out.* | sed -n 's/.*dry_ns=\([0-9]*\).*/\1/p' | paste -sd+ | bc; }

# split WANT NAME A_MIX A_NPROC MAP: the 10% tenant NAME against a 90% one;
# MAP=map writes both pid maps before they start, MAP=none only B's (then
# the tenant must get at most its share, not the share within 0.05).
split() {
    local name=$2
    rm -f "$TMP/gpu.lock" "$TMP/gpu.lock.nvml"
    local make=tenant
    [ -n "${HOSTNS:-}" ] && make=host_tenant
    $make "$name" "$1" "$3" "$4"
    local a=$!
    $make big 90 one 1
    local b=$!
    sleep 0.5 # both namespaces made, their probes waiting
    if [ -z "${HOSTNS:-}" ]; then
        [ "$5" = map ] && write_map "$a" "$name"
        write_map "$b" big
    fi
    local t0 t1
    t0=$(date +%s%N)
    touch "$TMP/$name.go" "$TMP/big.go"
    wait "$a" "$b"
    t1=$(date +%s%N)
    python3 - "$(busy "$name")" "$(busy big)" "$1" "$((t1 - t0))" "$name" "$5" "$SAN" \
        "$(dry big)" <<'PY'
import os, sys
a, b, want = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) / 100
secs = int(sys.argv[4]) / 1e9 # from the start to the last probe's exit
card = (a + b) / (secs * 1e9)
left = int(sys.argv[8] or 0) / (secs * 1e9) # the 90% tenant's queue empty
share = a / (a + b) if a + b else 0
print(f"{sys.argv[5]}: tenant at {want:.2f} got {share:.3f} of the card's busy time "
      f"({a / 1e9:.2f} s of {(a + b) / 1e9:.2f} s), card {card:.3f} busy, "
      f"the 90% tenant's queue empty {left:.3f} of the run")
if a / (secs * 1e9) > want + max(left, 1 - min(card, 1)) + 0.05:
    print(f"{sys.argv[5]}: over its share plus the time the other left")
    sys.exit(1)
if card < 0.90:
    print(f"SKIPPED {sys.argv[5]}: card only {card:.3f} busy (under 0.90, loaded machine): "
          "the split is not judged, only the bound share + idle")
    sys.exit(3)
if share - want > 0.05 and left > 0.03:
    print(f"SKIPPED {sys.argv[5]}: over {want + 0.05:.2f}, but the 90% tenant's queue stood "
          f"empty {left:.3f} of the run (over 0.03, its launcher short of CPU): the excess "
          "is not judged, only the bound share + what the other left")
    sys.exit(3)
if sys.argv[7] == "1" and sys.argv[5].startswith("nvml_"):
    print(f"SKIPPED {sys.argv[5]}: the split through NVML samples is judged in the plain build; "
          "under ASan the first samples' timing is the sanitizer's (only the bound share + idle)")
    sys.exit(3)
sys.exit(0 if share - want <= 0.05 and (sys.argv[6] != "map" or want - share <= 0.05) else 1)
PY
}

# twice and judge: tests/lib.sh
judge "10/90 with a pid map: outside 0.05" twice split 10 one one 1 map
judge "10/90 with four processes: outside 0.05" twice split 10 four one 4 map
judge "10/90 on the legacy launches: outside 0.05" twice split 10 legacy legacy 1 map
grep -h "host pids unknown\|cannot be measured" "$TMP"/one.out.* "$TMP"/four.out.* \
    "$TMP"/legacy.out.* && bad "a mapped tenant said it cannot measure" || ok
[ -e "$TMP/gpu.lock.nvml" ] && bad "NVML answered utilisation without its state file" || ok

# The production path: busy time from NVML's process samples (the stand-in
# NVML, one H100 not in MIG mode, sampling the stand-in card every
# SAMPLE_MS). nvml_split SAMPLE_MS SECS NAME NPROC: the 10% tenant NAME with
# NPROC processes against a 90% one for SECS. The shim must have asked
# NVML: the stand-in keeps its samples beside the card file, made at the
# first utilisation call.
nvml_split() {
    local secs=$SECS
    printf 'gpu;uuid=GPU-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0;name=NVIDIA H100 80GB HBM3;%s\n' \
        'pci=00000000:1B:00.0;memory_mib=81559;mig=0;pending=0;compute_mode=0' >"$TMP/node.state"
    export TESSERA_STANDIN_NVML="$TMP/node.state" TESSERA_STANDIN_NVML_SAMPLE_MS=$1
    SECS=$2
    judge "10/90 from NVML at $1 ms samples ($3): outside 0.05" twice split 10 "$3" one "$4" map
    [ -e "$TMP/gpu.lock.nvml" ] && ok || bad "$3: the shim did not ask NVML for utilisation"
    SECS=$secs
    unset TESSERA_STANDIN_NVML TESSERA_STANDIN_NVML_SAMPLE_MS
}
nvml_split 167 3 nvml_one 1
nvml_split 167 6 nvml_four 4
nvml_split 1000 8 nvml_slow 1

# The matrix on the NVML path (issue 29): 1, 2 and 4 processes, kernels of
# 1, 4 and 16 ms, each tenant in its own pid namespace (pid map) and in the
# host's (hostns: no unshare, no map needed), 3 s a case.
host_tenant() {
    local n=$1
    printf 'version = 1\nsmPercent = %s\nregion = %s\npidMap = %s\n' "$2" "$TMP/$n.region" \
        "$TMP/$n.map" >"$TMP/$n"
    rm -f "$TMP/$n.region" "$TMP/$n.go" "$TMP/$n".out.*
    bash -c '
        for i in $(seq "$4"); do
            (while [ ! -e "$1.go" ]; do sleep 0.02; done
             exec env TESSERA_CUDA_LIMITS_FILE="$1" LD_PRELOAD="$2" "$3" launch "$5" "$7" "$6" \
                 >"$1.out.$i" 2>&1) &
        done
        wait' _ "$TMP/$n" "$preload" "$PROBE" "$4" "$SECS" "$3" "$TESSERA_STANDIN_KERNEL_US" &
}
matrix() {
    local kus=$TESSERA_STANDIN_KERNEL_US secs=$SECS
    printf 'gpu;uuid=GPU-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0;name=NVIDIA H100 80GB HBM3;%s\n' \
        'pci=00000000:1B:00.0;memory_mib=81559;mig=0;pending=0;compute_mode=0' >"$TMP/node.state"
    export TESSERA_STANDIN_NVML="$TMP/node.state" TESSERA_STANDIN_NVML_SAMPLE_MS=167
    SECS=3
    local case np us ns
    for case in $MATRIX; do
        IFS=: read -r np us ns <<<"$case"
        export TESSERA_STANDIN_KERNEL_US=$us
        if [ "$ns" = ns ]; then
            judge "10/90 from NVML, pid namespaces, $np processes, $us us kernels: outside 0.05" \
                twice split 10 "nvml_ns_${np}p_${us}us" one "$np" map
        else
            HOSTNS=1 judge "10/90 from NVML, host namespace, $np processes, $us us kernels: outside 0.05" \
                twice split 10 "nvml_host_${np}p_${us}us" one "$np" map
        fi
    done
    SECS=$secs
    export TESSERA_STANDIN_KERNEL_US=$kus
    unset TESSERA_STANDIN_NVML TESSERA_STANDIN_NVML_SAMPLE_MS
}
# make check runs four cases that hold each value of each axis at least once
# (processes 1, 2, 4; kernels 1, 4, 16 ms; both namespaces); make bench
# (bench/run) runs all 18 with SHIM_SM_MATRIX=full.
MATRIX="1:1000:ns 2:4000:host 4:16000:ns 4:1000:host"
if [ "${SHIM_SM_MATRIX:-}" = full ]; then
    MATRIX=$(for us in 1000 4000 16000; do for np in 1 2 4; do
        echo "$np:$us:ns $np:$us:host"; done; done)
fi
matrix
grep -h "host pids unknown\|cannot be measured" "$TMP"/nvml_*.out.* \
    && bad "a mapped tenant said it cannot measure (NVML)" || ok

# No pid map: said on stderr, and the tenant is still held (charged as
# busy every tick, so at most its share).
judge "10/90 with no pid map: over its share" split 10 nomap one 1 none
expect_in "$TMP/nomap.out.1" "$TMP/nomap.map: cannot open the pid map"
expect_in "$TMP/nomap.out.1" "cannot be measured: every tick with a launch is charged as fully busy"

finish
