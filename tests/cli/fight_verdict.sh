#!/usr/bin/env bash
# labels: slow timing
# fight_verdict.sh - `tessera fight`'s verdicts on the stand-in CUDA driver
# (tests/standin/cuda, synthetic timings: an SLA request holds the card
# 100 us, the noisy "matmul" 2 ms): the A/A control runs first and PASSes,
# time-slicing FAILs (exit 1 with --expect timeslice: the lower end of the
# interval of its median p99 change lies far above the tolerance), the shim
# is judged against the SLA tenant alone under the shim and its cost against
# the whole card; the JSON (python3), the SVG (rsvg-convert), the progress
# lines on stderr, the card's readings per phase through the stand-in NVML.
# This build machine is shared (load 8-12 on 2 cores): its scheduler alone
# moves a 100 us request's per-run p99 between 0.7 and 130 ms, so these
# checks judge at --tolerance 100 and the control at 10000 (either way):
# time-slicing's queue moves the p99 fifty times and more: its open loop
# falls behind by ~3.5 ms a request, so 300 requests a run put its p99 near
# a second, far above a baseline run caught in a 100-200 ms host stall. On a
# host busier still (two busy loops a core beside make check: load 10), a
# baseline run's stall can come near it and the fight says INCONCLUSIVE
# (exit 3): everything is checked as for FAIL but the verdict, which is
# SKIPPED with the baseline's measured p99; time-slicing must never PASS
# (exit 0) nor lean to it (the interval's upper end stays above +100%). fight_noise.sh
# checks the control against injected noise. Needs TESSERA and TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

use_standin_cuda
# the stand-in NVML gives fixed readings (1980 MHz, 40 C, 120 W): one per run
echo "gpu;uuid=GPU-f16;name=Stand-in GPU;pci=0000:01:00.0;memory_mib=256;mig=0" >"$TMP/nvml"
export TESSERA_STANDIN_NVML="$TMP/nvml" TESSERA_NVML_LIBRARY="$build/standin/libnvidia-ml.so.1"
shim="$build/src/shim/libtessera-cuda.so"
# the ASan tessera under the ASan shim crashes before main (see fight.sh)
ldd "$TESSERA" 2>/dev/null | grep -q libasan && shim="$TMP/no-shim-under-asan.so"
mechs=timeslice
[ -e "$shim" ] && mechs=timeslice,shim

"$TESSERA" fight --requests 300 --warmup 64 --rate 1000 --tolerance 100 --repeat 6 \
    --control-tolerance 10000 --seed 7 --mechanisms "$mechs,mps,mig" --expect timeslice \
    --shim "$shim" \
    -o json --svg "$TMP/fight.svg" >"$TMP/fight.json" 2>"$TMP/err"
rc=$?
check "fight exited $rc, not 1 (FAIL) or, on a contended host, 3 (INCONCLUSIVE): $(grep -v '^tessera: fight: ' "$TMP/err" | head -3)" \
    [ $rc -eq 1 -o $rc -eq 3 ]
python3 - "$TMP/fight.json" "$mechs" "$rc" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
mechs = sys.argv[2].split(",")
rc = int(sys.argv[3])
ph = {p["name"]: p for p in r["phases"]}
assert r["version"] == 2 and r["device"] == "Stand-in GPU", r["device"]
assert r["verdict"] == ("FAIL" if rc == 1 else "INCONCLUSIVE") and r["config"]["synthetic"] is True
assert r["config"]["seed"] == 7 and r["config"]["tolerance"] == 1.0
assert r["config"]["arrival"] == "poisson" and r["config"]["rate"] == 1000
assert r["config"]["repeat"] == 6 and r["config"]["noisy_depth"] == 4
alone = ["shim-alone"] if "shim" in mechs else []
main = ["baseline", "noisy-solo"] + alone + mechs
assert sorted(r["order"][:12]) == sorted(["aa-alone", "aa-idle"] * 6), r["order"]
assert sorted(r["order"][12:]) == sorted(main * 6), r["order"]
n = len(main)
for k in range(6):  # interleaved: every phase once in every round
    assert sorted(r["order"][12 + n * k:12 + n * (k + 1)]) == sorted(main), r["order"]
aa = ph["aa-idle"]
assert aa["status"] == "pass" and aa["baseline"] == "aa-alone", aa
card = ph["baseline"]["card"]
assert card == {"readings": 6, "sm_mhz_min": 1980, "sm_mhz_max": 1980, "temp_c_max": 40,
                "power_w_mean": 120}, card
assert ph["timeslice"]["card"]["readings"] == 6 and ph["mps"].get("card") is None
b, t = ph["baseline"]["sla"], ph["timeslice"]
assert b["requests"] == 1800 and len(b["p99_runs_us"]) == 6 and b["p50_us"] >= 100, b
assert b["p50_us"] <= b["p99_us"] <= b["p999_us"] <= b["max_us"]
assert t["status"] == ("fail" if rc == 1 else "inconclusive"), t["status"]
assert t["gating"] is True and t["baseline"] == "baseline"
c = t["change"]
assert c["repeats"] == 6 and abs(c["coverage"] - 62 / 64) < 1e-9, c
# the interval is [min, max] of the six paired ratios, computed here again
ratios = sorted(x / y for x, y in zip(t["sla"]["p99_runs_us"], b["p99_runs_us"]))
assert abs(c["interval"][0] - ratios[0]) < 1e-9 * ratios[0], (c, ratios)
assert abs(c["interval"][1] - ratios[-1]) < 1e-9 * ratios[-1], (c, ratios)
assert abs(c["ratio"] - (ratios[2] + ratios[3]) / 2) < 1e-9 * c["ratio"], (c, ratios)
if rc == 1:
    assert c["interval"][0] > 2.0, c                  # FAIL: the lower end above +100%
else:
    assert c["interval"][1] > 2.0, c                  # never near a PASS
assert t["noisy"]["throughput_ops"] > 0 and t["noisy"]["slowdown"] > 0
assert ph["noisy-solo"]["noisy"]["throughput_ops"] > 0
for m in ("mps", "mig"):
    assert ph[m]["status"] == "skipped" and ph[m]["reason"], ph[m]
assert ph["mig"]["reason"] == "MIG not tested: synthetic run (the stand-in driver has no MIG)"
if "shim" in mechs:
    s = ph["shim"]
    assert s["status"] in ("pass", "fail", "inconclusive") and s["baseline"] == "shim-alone"
    assert s["gating"] is False and ph["shim-alone"]["status"] == "measured"
    assert ph["shim-alone"]["baseline"] == "baseline" and ph["shim-alone"]["change"]["repeats"] == 6
    print("shim change %.2f %s, its cost %.2f, timeslice %.2f" % (s["change"]["ratio"],
          s["change"]["interval"], ph["shim-alone"]["change"]["ratio"], c["ratio"]))
if rc == 3:  # every check above held; only the verdict could not be reached
    print("SKIPPED: time-slicing's p99 change %s straddles the +100%% tolerance at load %.1f on "
          "%d cores: the baseline's per-run p99 reached %.0f us"
          % (c["interval"], os.getloadavg()[0], os.cpu_count(), max(b["p99_runs_us"])))
    sys.exit(3)
PY
case $? in
0) ok ;;
3) SKIP=$((SKIP + 1)) ;;
*) bad "fight JSON" ;;
esac
# one progress line a run on stderr: 12 of the control, 6 a phase after it
check "progress lines" test "$(grep -c '^tessera: fight: \(control\|main\) run ' "$TMP/err")" \
    -eq $((12 + 6 * (2 + $(echo "$mechs" | tr ',' '\n' | wc -l) * 2 - 1)))
expect_in "$TMP/err" "tessera: fight: control run 1/12: aa-"
expect_in "$TMP/fight.svg" "<polyline"
expect_in "$TMP/fight.svg" "timeslice p99"
if rsvg-convert "$TMP/fight.svg" -o "$TMP/fight.png" 2>"$TMP/rsvg.err" && [ -s "$TMP/fight.png" ]
then ok; else bad "rsvg-convert could not render the SVG"; cat "$TMP/rsvg.err"; fi
finish
