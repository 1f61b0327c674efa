#!/usr/bin/env bash
# fight.sh - `tessera fight`: bad usage (exit 2) and no driver or no device
# (exit 1), each with a message; user programs on the latency pipe, whose
# latencies are exact, so the verdicts are too: a quiet A/A control PASSes at
# the default 10% and the run PASSes (exit 0), a tenant whose runs alternate
# 100 us and 1 ms is declared too noisy (exit 4) with nothing judged, a
# malformed line ends it (exit 1, line:column named); the warm-up ends at
# steady state. On the stand-in driver: fight_standin.sh (open loop, the
# neighbour, the memory fight), fight_verdict.sh and fight_noise.sh (the
# verdicts). Needs TESSERA and TESSERA_SRC.
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
expect_in "$TMP/err" "unknown --noisy-kind (matmul, stream, burst, memory, idle) 'fft'"
expect_rc 2 F --arrival bursty
expect_in "$TMP/err" "unknown --arrival (poisson, fixed, closed) 'bursty'"
expect_rc 2 F --rate 0
expect_in "$TMP/err" "--rate must be requests per second, above 0 to 100000, not '0'"
expect_rc 2 F --rate 100001
expect_rc 2 F --rate 5x
expect_rc 2 F --noisy-depth 0
expect_in "$TMP/err" "--noisy-depth must be 1 to 64, not '0'"
expect_rc 2 F --noisy-depth 65
expect_rc 2 F --control-tolerance -1
expect_in "$TMP/err" "--control-tolerance must be a percentage from 0 to 100000, not '-1'"
expect_rc 2 F --repeat 33
expect_in "$TMP/err" "--repeat must be 1 to 32, not '33'"
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
expect_in "$TMP/out" "3 INCONCLUSIVE (more repeats needed)"
expect_in "$TMP/out" "4 too noisy (the A/A control did not pass)"

# --- user programs on the latency pipe (no driver needed for them; the A/A
# control's idle neighbour says it has no context and idles all the same)
sla='i=0; while [ $i -lt 60 ]; do echo "latency_us 100 gpu_us 90" >&$TESSERA_FIGHT_FD; i=$((i+1)); done'
noisy='while :; do echo "latency_us 5000" >&$TESSERA_FIGHT_FD; sleep 0.01; done'
U() { F --driver "$TMP/none.so" --noisy "$noisy" --requests 40 --warmup 5 --repeat 6 --mechanisms timeslice \
    --solo-time 50ms "$@"; }
expect_rc 0 U --sla "$sla"
expect_in "$TMP/out" "verdict: PASS"
expect_in "$TMP/out" "noisy command"
expect_in "$TMP/out" "tolerance 10.0% (A/A control 10.0%)"
# identical runs: every ratio is 1, the interval [+0.0%, +0.0%] at 62/64
expect_in "$TMP/out" "aa-idle      aa-alone          +0.0% [+0.0%, +0.0%] 96.9%"
expect_in "$TMP/out" "timeslice    baseline          +0.0% [+0.0%, +0.0%] 96.9%"
# the order: 6 shuffled rounds of the control, then 6 of the rest
if python3 - "$TMP/out" <<'PY'
import sys
order = [l for l in open(sys.argv[1]) if l.startswith("order:")][0].split()[1:]
assert len(order) == 12 + 18, order
for r in range(6):
    assert sorted(order[2 * r:2 * r + 2]) == ["aa-alone", "aa-idle"], order
    rnd = order[12 + 3 * r:12 + 3 * r + 3]
    assert sorted(rnd) == ["baseline", "noisy-solo", "timeslice"], order
assert order[:2] != order[2:4] or order[2:4] != order[4:6]  # shuffled, not fixed
PY
then ok; else bad "order of the runs"; fi
expect_in "$TMP/err" "tessera: fight: control run 12/12: aa-"
expect_in "$TMP/err" "tessera: fight: main run 18/18: "
expect_in "$TMP/err" "240 sla samples so far"
# 40 requests are too few for a p99 interval: said in words, not [nan, nan]
expect_in "$TMP/out" "none: needs 368 req"
check "an interval printed as nan" sh -c "! grep -qi nan '$TMP/out'"
# fewer than 6 repeats: no 95% interval of the median change, so no verdict
expect_rc 4 U --sla "$sla" --repeat 5
expect_in "$TMP/out" "none: 5 repeats"
# a tenant whose runs alternate 100 us and 1 ms (a count kept in a file): each
# round's two control runs differ tenfold, the control is too noisy (exit 4)
# and no mechanism is judged
echo 0 >"$TMP/count"
alt='n=$(cat '"$TMP"'/count); echo $((n+1)) >'"$TMP"'/count; us=$(( n % 2 ? 1000 : 100 ));
i=0; while [ $i -lt 60 ]; do echo "latency_us $us" >&$TESSERA_FIGHT_FD; i=$((i+1)); done'
expect_rc 4 U --sla "$alt" --seed 5 -o json
cp "$TMP/out" "$TMP/alt.json"
if python3 - "$TMP/out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ph = {p["name"]: p for p in r["phases"]}
assert r["verdict"] == "TOO NOISY", r["verdict"]
aa = ph["aa-idle"]
assert aa["status"] in ("fail", "inconclusive"), aa
alone = ph["aa-alone"]["sla"]["p99_runs_us"]
ratios = sorted(x / y for x, y in zip(aa["sla"]["p99_runs_us"], alone))
assert all(abs(x - 0.1) < 1e-9 or abs(x - 10) < 1e-9 for x in ratios), ratios
assert abs(aa["change"]["ratio"] - (ratios[2] + ratios[3]) / 2) < 1e-9, (aa["change"], ratios)
assert sorted(aa["change"]["interval"]) == [0.1, 10.0], aa["change"]
for name in ("baseline", "noisy-solo", "timeslice"):
    assert ph[name]["status"] == "skipped" and "A/A control" in ph[name]["reason"], ph[name]
assert r["order"] == r["order"][:12]
PY
then ok; else bad "too-noisy JSON"; cat "$TMP/out"; fi
# the warm-up ends at steady state: a tenant whose latency decays 100 + 10000 x 0.9^i
# warms up until two windows of 32 have medians within 5% (found again here in
# Python), or at --warmup when that comes first (then counted as not steady)
decay='awk "BEGIN { for (i = 0; i < 400; i++)
    printf \"latency_us %.3f\\n\", 100 + 10000 * 0.9 ^ i }" >&$TESSERA_FIGHT_FD'
for cap in 1000 96; do
    expect_rc 0 U --sla "$decay" --requests 100 --warmup $cap -o json
    cp "$TMP/out" "$TMP/warm-$cap.json"
done
if python3 - "$TMP" <<'PY'
import json, statistics, sys
lat = [100 + 10000 * 0.9 ** i for i in range(400)]
k = 32
while True:
    a = statistics.median(lat[k - 64:k - 32]) if k >= 64 else None
    b = statistics.median(lat[k - 32:k])
    if a and abs(b / a - 1) <= 0.05:
        break
    k += 32
for cap, want, unsteady in ((1000, k, 0), (96, 96, 6)):
    r = json.load(open("%s/warm-%d.json" % (sys.argv[1], cap)))
    b = {p["name"]: p for p in r["phases"]}["baseline"]["sla"]
    assert b["warmup_runs"] == [want] * 6 and b["warmup_unsteady"] == unsteady, (cap, want, b)
    assert b["requests"] == 600 and abs(b["max_us"] - round(lat[want], 3)) < 1e-6, b
# the seed decides the order: the same seed the same order, another seed another
o1, o2 = (json.load(open("%s/warm-%d.json" % (sys.argv[1], c)))["order"] for c in (1000, 96))
o5 = json.load(open("%s/alt.json" % sys.argv[1]))["order"]
assert o1 == o2 and o1[:12] != o5 and sorted(o1[:12]) == sorted(o5), (o1, o5)
print("steady after", k)
PY
then ok; else bad "warm-up to steady state"; fi
badsla='echo "latency_us 100" >&$TESSERA_FIGHT_FD; echo "latency_us 1,5" >&$TESSERA_FIGHT_FD'
expect_rc 1 F --driver "$TMP/none.so" --sla "$badsla" --noisy "$noisy" --mechanisms timeslice
expect_in "$TMP/err" "sla tenant:2:12: not a decimal number: '1,5'"

finish
