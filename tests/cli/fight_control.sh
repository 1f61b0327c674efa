#!/usr/bin/env bash
# fight_control.sh - `tessera fight` at its defaults on the stand-in CUDA
# driver (asynchronous, synthetic timings: an SLA request holds the card
# 100 us) with a neighbour that is actually idle: the A/A control and
# time-slicing beside the idle neighbour must never FAIL (exit 1) or err.
# On a quiet machine both PASS at the default 10% (3 of 3 seeds standalone,
# bench/RESULTS.md); under `make check` the host is not quiet enough (two
# fresh-clone runs: TOO NOISY or INCONCLUSIVE in every try), so a try that
# ends TOO NOISY (4) or INCONCLUSIVE (3) is reported, not failed, and a PASS
# is checked in full. ctest runs it alone (RUN_SERIAL). fight_noise.sh
# checks that injected noise is declared too noisy. Needs TESSERA and
# TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

use_standin_cuda
passed=0
for try in 1 2 3; do
    "$TESSERA" fight --mechanisms timeslice --noisy-kind idle --seed $try -o json \
        >"$TMP/out" 2>"$TMP/err"
    rc=$?
    check "try $try: an idle neighbour FAILed or erred (exit $rc)" test "$rc" -ne 1 -a "$rc" -ne 2
    if [ "$rc" -eq 0 ]; then passed=1; break; fi
    echo "fight_control.sh: try $try: exit $rc"
done
[ "$passed" -eq 1 ] ||
    echo "fight_control.sh: NOTE: no PASS in three tries: this host was too noisy for a verdict"
if [ "$passed" -eq 0 ]; then :; elif python3 - "$TMP/out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ph = {p["name"]: p for p in r["phases"]}
c = r["config"]
assert c["repeat"] == 9 and c["tolerance"] == 0.1 and c["control_tolerance"] == 0.1, c
assert c["requests"] == 2000 and c["arrival"] == "poisson" and c["rate"] == 1000, c
aa, ts = ph["aa-idle"], ph["timeslice"]
lo, hi = aa["change"]["interval"]  # the control: within the tolerance both ways
assert aa["status"] == "pass" and 1 / 1.1 - 1e-9 <= lo <= hi <= 1.1 + 1e-9, aa["change"]
lo, hi = ts["change"]["interval"]  # a mechanism: its neighbour must not slow it
assert ts["status"] == "pass" and hi <= 1.1 + 1e-9, ts["change"]
assert aa["change"]["repeats"] == 9 and ts["change"]["repeats"] == 9
# the paired runs met the same arrivals: every run's p99 is a 100 us request
# behind at most a few others, not a host stall
for name in ("aa-alone", "aa-idle", "baseline", "timeslice"):
    runs = ph[name]["sla"]["p99_runs_us"]
    assert len(runs) == 9 and all(100 <= x < 1000 for x in runs), (name, runs)
assert r["verdict"] == "PASS", r["verdict"]
PY
then ok; else bad "the passing run's JSON"; cat "$TMP/out"; fi
finish
