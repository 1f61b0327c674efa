#!/usr/bin/env bash
# fight.sh - `tessera fight` end to end on the stand-in CUDA driver
# (tests/standin/cuda, synthetic timings: the SLA request holds the card
# 100 us, the noisy "matmul" 2 ms): time-slicing must move the SLA p99 far
# beyond 10% (verdict FAIL, exit 1 with --expect timeslice), the JSON is
# checked with python3 and the SVG rendered with rsvg-convert; the shim
# phase runs when libtessera-cuda.so was built; the memory fight shows the
# shim capping the neighbour's memory; user programs on the latency pipe,
# a malformed line (exit 1, line:column named); bad usage (exit 2) and no
# driver or no device (the test cannot run: exit 1, the one exit-code rule of
# every verb), each with a message. Needs TESSERA and TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

build=$(cd "$(dirname "$TESSERA")" && pwd)
F() { "$TESSERA" fight "$@"; }

# --- bad usage: exit 2, and the message says what is wrong
expect_rc 2 F --mechanisms timeslice,warp
expect_in "$TMP/err" "unknown mechanism (timeslice, shim, mps, mig) in 'timeslice,warp'"
expect_rc 2 F --tolerance -5
expect_in "$TMP/err" "--tolerance must be a percentage from 0 to 1000, not '-5'"
expect_rc 2 F --tolerance 10x
expect_rc 2 F --noisy-kind fft
expect_in "$TMP/err" "unknown --noisy-kind (matmul, stream, burst) 'fft'"
expect_rc 2 F --repeat 0
expect_rc 2 F --requests 1
expect_rc 2 F --phase-time soon
expect_rc 2 F -o xml
expect_in "$TMP/err" "yaml"
expect_rc 2 F --sla true
expect_in "$TMP/err" "--sla and --noisy go together"
expect_rc 2 F stray
# --- no driver, no device: the job cannot run, exit 1 (as `agent` without NVML)
expect_rc 1 F --driver "$TMP/none/libcuda.so.1"
expect_in "$TMP/err" "no CUDA driver: cannot load '$TMP/none/libcuda.so.1'"
expect_rc 1 env LD_LIBRARY_PATH="$TMP" "$TESSERA" fight --driver libcuda-absent.so.1
expect_in "$TMP/err" "no CUDA driver"
# a driver that loads but finds no device: its reason is passed on
if command -v cc >/dev/null 2>&1; then
    {
        echo 'int cuInit(unsigned f) { (void)f; return 100; }'
        echo 'int cuGetErrorString(int r, const char **s) { (void)r; *s = "no device here"; return 0; }'
        for f in cuDeviceGet cuDeviceGetName cuDeviceGetAttribute cuDeviceTotalMem_v2 \
            cuCtxCreate_v2 cuCtxDestroy_v2 cuCtxSynchronize cuModuleLoadData cuModuleUnload \
            cuModuleGetFunction cuLaunchKernel cuStreamCreate cuStreamDestroy_v2 \
            cuStreamSynchronize cuEventCreate cuEventDestroy_v2 cuEventRecord \
            cuEventSynchronize cuEventElapsedTime cuMemAlloc_v2 cuMemFree_v2; do
            echo "int $f(void) { return 1; }"
        done
    } >"$TMP/nodev.c"
    if cc -shared -fPIC -o "$TMP/nodev.so" "$TMP/nodev.c" 2>/dev/null; then
        expect_rc 1 F --driver "$TMP/nodev.so"
        expect_in "$TMP/err" "no usable CUDA device: cuInit: CUDA error 100 (no device here)"
    fi
fi
expect_rc 0 F --help
expect_in "$TMP/out" "usage: tessera fight"

# --- user programs on the latency pipe (no driver needed for them)
sla='i=0; while [ $i -lt 60 ]; do echo "latency_us 100 gpu_us 90" >&$TESSERA_FIGHT_FD; i=$((i+1)); done'
noisy='while :; do echo "latency_us 5000" >&$TESSERA_FIGHT_FD; sleep 0.01; done'
expect_rc 0 F --driver "$TMP/none.so" --sla "$sla" --noisy "$noisy" --requests 40 --warmup 5 \
    --mechanisms timeslice --solo-time 200ms
expect_in "$TMP/out" "verdict: PASS"
expect_in "$TMP/out" "noisy command"
# 40 requests are too few for a p99 interval: said in words, not [nan, nan]
expect_in "$TMP/out" "none: needs 368 req"
check "an interval printed as nan" sh -c "! grep -qi nan '$TMP/out'"
badsla='echo "latency_us 100" >&$TESSERA_FIGHT_FD; echo "latency_us 1,5" >&$TESSERA_FIGHT_FD'
expect_rc 1 F --driver "$TMP/none.so" --sla "$badsla" --noisy "$noisy" --mechanisms timeslice
expect_in "$TMP/err" "sla tenant:2:12: not a decimal number: '1,5'"

# --- the stand-in driver
standin="$build/tests/standin/cuda"
if [ ! -e "$standin/libcuda.so.1" ]; then
    echo "fight.sh: stand-in driver not built ($standin): end-to-end part skipped"
    finish
    exit $?
fi
export LD_LIBRARY_PATH="$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TESSERA_STANDIN_GPU="$TMP/gpu.lock" TESSERA_STANDIN_TOTAL_MEM=256M
shim="$build/src/shim/libtessera-cuda.so"
S() { "$TESSERA" fight "$@"; }
# In the sanitized build, the ASan tessera binary under the ASan shim (with
# libasan preloaded first) segfaults before main, even for --version: the
# shim phases run in the plain build only (reported to the shim's owner).
if ldd "$TESSERA" 2>/dev/null | grep -q libasan; then
    echo "fight.sh: sanitized build: shim phases skipped (the shim crashes an ASan tessera)"
    shim="$TMP/no-shim-under-asan.so"
fi
mechs=timeslice
[ -e "$shim" ] && mechs=timeslice,shim

# a worker's unreadable --kernels file is named in its error
expect_rc 1 env TESSERA_FIGHT_FD=2 "$TESSERA" fight --worker sla --requests 2 \
    --kernels "$TMP/none.fatbin"
expect_in "$TMP/err" "sla worker: $TMP/none.fatbin: cannot open"

expect_rc 1 S --requests 400 --warmup 20 --seed 7 --mechanisms "$mechs" --expect timeslice \
    --shim "$shim" -o json --svg "$TMP/fight.svg"
cp "$TMP/out" "$TMP/fight.json"
if python3 - "$TMP/fight.json" "$mechs" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
mechs = sys.argv[2].split(",")
ph = {p["name"]: p for p in r["phases"]}
assert r["version"] == 1 and r["device"] == "Stand-in GPU", r["device"]
assert r["verdict"] == "FAIL" and r["config"]["synthetic"] is True
assert r["config"]["seed"] == 7 and r["config"]["tolerance"] == 0.1
assert sorted(r["order"]) == sorted(["baseline", "noisy-solo"] + mechs), r["order"]
b, t = ph["baseline"]["sla"], ph["timeslice"]
assert b["requests"] == 400 and b["p50_us"] >= 100, b
assert b["p50_us"] <= b["p99_us"] <= b["p999_us"] <= b["max_us"]
lo, hi = b["p99_ci95_us"]
assert lo <= b["p99_us"] <= hi
assert t["status"] == "fail" and t["gating"] is True
assert t["p99_ratio"] > 2.0, t["p99_ratio"]          # far beyond 10%
assert t["sla"]["p99_us"] > 1000                      # the 2 ms kernels block the card
assert t["noisy"]["throughput_ops"] > 0 and t["noisy"]["slowdown"] > 0
assert ph["noisy-solo"]["noisy"]["throughput_ops"] > 0
for m in ("mps", "mig"):
    assert ph[m]["status"] == "skipped" and ph[m]["reason"], ph[m]
if "shim" in mechs:
    assert ph["shim"]["status"] in ("pass", "fail") and ph["shim"]["sla"]["requests"] == 400
    print("shim p99 ratio %.2f, timeslice %.2f" % (ph["shim"]["p99_ratio"], t["p99_ratio"]))
PY
then ok; else bad "fight JSON"; fi
expect_in "$TMP/fight.svg" "<polyline"
expect_in "$TMP/fight.svg" "timeslice p99"
if rsvg-convert "$TMP/fight.svg" -o "$TMP/fight.png" 2>"$TMP/rsvg.err" && [ -s "$TMP/fight.png" ]
then ok; else bad "rsvg-convert could not render the SVG"; cat "$TMP/rsvg.err"; fi

# text, another noisy kind, default gating (timeslice alone gates: FAIL). 400
# requests: the p99 is then the 4th slowest, so one scheduler stall of this
# shared machine in the baseline cannot hide the 1 ms kernels' effect.
expect_rc 1 F --requests 400 --warmup 5 --mechanisms timeslice --noisy-kind stream
expect_in "$TMP/out" "verdict: FAIL (timeslice: the sla p99 moved beyond the tolerance)"
expect_in "$TMP/out" "mps           skipped: not asked for (--mechanisms)"

# memory fight: the neighbour allocates until refused; the shim caps it at 30%
if [ -e "$shim" ]; then
    expect_rc 0 S --memory --requests 100 --warmup 5 --mechanisms timeslice,shim --shim "$shim" \
        -o json
    if python3 - "$TMP/out" <<'PY'
import json, sys
ph = {p["name"]: p for p in json.load(open(sys.argv[1]))["phases"]}
t, s = ph["timeslice"]["noisy"]["mem_mib_max"], ph["shim"]["noisy"]["mem_mib_max"]
assert t >= 250 and 0 < s <= 0.3 * 256 + 4, (t, s)
assert ph["shim"]["sla"]["failed_requests"] == 0 and ph["shim"]["status"] == "pass"
PY
    then ok; else bad "memory fight JSON"; cat "$TMP/out"; fi
fi
finish
