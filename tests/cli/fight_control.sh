#!/usr/bin/env bash
# labels: slow timing
# fight_control.sh - `tessera fight` (make check: 1,000 Poisson requests a run
# at 1,000 a second, 5 repeats; make bench: its default load, 2,000 and 9) on
# the stand-in CUDA driver
# (asynchronous, synthetic timings: an SLA request holds the card 100 us)
# with a neighbour that is actually idle: the A/A control and time-slicing
# beside the idle neighbour must never FAIL (exit 1) or err (2).
# The tolerance is 25%, not the default 10%: on this shared 2-core VM the
# host's own interrupts (about 80 a second, 50-100 us each) land on 1-2% of
# the 100 us requests, right at the p99, so a run's p99 moves +-15% with the
# host alone (bench/RESULTS.md). A PASS is checked in full. A host that
# stalls the tenant for longer (the VM's neighbours) can still make the
# control TOO NOISY (4) or INCONCLUSIVE (3): then the verdict must say what
# the host took (the tenant's measured host stalls), which is reported and
# not failed; two tries. It runs beside other tests (two of ctest's slots):
# their load is host noise the control must declare, never a FAIL; run
# alone it still met TOO NOISY on this VM in each of the last 5 runs of make
# check (host stalls 0.4-1.0 a second), so alone bought no more PASSes.
# fight_noise.sh
# checks that injected noise is declared too noisy. Needs TESSERA and
# TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

use_standin_cuda
# A latency acceptance test measures the build it runs: under the sanitizers
# every tenant runs several times slower, so the plain build's run is the
# one that counts (labelled timing: make check's sanitized stage leaves it
# out, as it does fight_verdict.sh; the fight's code runs sanitized in
# fight.sh, fight_noise.sh and fight_standin.sh).
if ldd "$TESSERA" 2>/dev/null | grep -q libasan; then
    echo "fight_control.sh: sanitized build: the timed control runs in the plain build only"
    ok
    finish
    exit
fi
# make check runs 1,000 requests a run, 5 repeats (about 12 s a try); make
# bench (bench/acceptance.sh) the default load with FIGHT_CONTROL_FULL=1.
REQUESTS=1000 REPEAT=5
if [ "${FIGHT_CONTROL_FULL:-}" = 1 ]; then REQUESTS=2000 REPEAT=9; fi # the fight's defaults
passed=0
for try in 1 2; do
    "$TESSERA" fight --mechanisms timeslice --noisy-kind idle --seed $try --tolerance 25 \
        --requests $REQUESTS --repeat $REPEAT -o json >"$TMP/out" 2>"$TMP/err"
    rc=$?
    check "try $try: an idle neighbour FAILed or erred (exit $rc)" test "$rc" -ne 1 -a "$rc" -ne 2
    if [ "$rc" -eq 0 ]; then passed=1; break; fi
    python3 - "$TMP/out" "$try" "$rc" $((REQUESTS * REPEAT)) <<'PY' && ok || bad "try $try: not PASS, and the report does not say what the host took"
import json, sys
r = json.load(open(sys.argv[1]))
ph = {p["name"]: p for p in r["phases"]}
host = [ph[n]["host"] for n in ("aa-alone", "aa-idle")]
assert all(h and h["requests"] == int(sys.argv[4]) for h in host), host
if r["verdict"] == "TOO NOISY":
    assert "meanwhile the host took the sla tenant's CPU" in r["verdict_reason"], r["verdict_reason"]
print("fight_control.sh: try %s: exit %s, %s; control intervals %s; host stalls a second %s"
      % (sys.argv[2], sys.argv[3], r["verdict"], ph["aa-idle"].get("change", {}).get("interval"),
         [round(h["stalls_per_s"], 1) for h in host]))
PY
done
[ "$passed" -eq 1 ] ||
    skip "no PASS in two tries: this host was too noisy for a verdict (its stalls above)"
if [ "$passed" -eq 0 ]; then :; elif python3 - "$TMP/out" "$REQUESTS" "$REPEAT" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ph = {p["name"]: p for p in r["phases"]}
c = r["config"]
requests, repeat = int(sys.argv[2]), int(sys.argv[3])
assert c["repeat"] == repeat and c["tolerance"] == 0.25 and c["control_tolerance"] == 0.25, c
assert c["requests"] == requests and c["arrival"] == "poisson" and c["rate"] == 1000, c
aa, ts = ph["aa-idle"], ph["timeslice"]
lo, hi = aa["change"]["interval"]  # the control: within the tolerance both ways
assert aa["status"] == "pass" and 1 / 1.25 - 1e-9 <= lo <= hi <= 1.25 + 1e-9, aa["change"]
lo, hi = ts["change"]["interval"]  # a mechanism: its neighbour must not slow it
assert ts["status"] == "pass" and hi <= 1.25 + 1e-9, ts["change"]
assert aa["change"]["repeats"] == repeat and ts["change"]["repeats"] == repeat
# the paired runs met the same arrivals: every run's p99 is a 100 us request
# behind at most a few others, not a host stall
for name in ("aa-alone", "aa-idle", "baseline", "timeslice"):
    runs = ph[name]["sla"]["p99_runs_us"]
    assert len(runs) == repeat and all(100 <= x < 1000 for x in runs), (name, runs)
    h = ph[name]["host"]  # every measured request said what the host took
    assert h["requests"] == requests * repeat and h["stalls_per_s"] >= 0 and h["stalled_ms_per_s"] >= 0, h
assert r["verdict"] == "PASS", r["verdict"]
PY
then ok; else bad "the passing run's JSON"; cat "$TMP/out"; fi
finish
