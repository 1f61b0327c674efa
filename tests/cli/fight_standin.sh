#!/usr/bin/env bash
# labels: slow
# fight_standin.sh - `tessera fight`'s workers on the stand-in CUDA driver
# (tests/standin/cuda): the SLA tenant's open loop against a closed loop
# under injected card stalls (TESSERA_STANDIN_STALL), the neighbour's kinds
# with a queue depth, a worker's unreadable --kernels file, and the memory
# fight with the shim capping the neighbour. Needs TESSERA and TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

F() { "$TESSERA" fight "$@"; }

use_standin_cuda
shim="$build/src/shim/libtessera-cuda.so"
# In the sanitized build, the ASan tessera binary under the ASan shim (with
# libasan preloaded first) segfaults before main, even for --version: the
# shim phases run in the plain build only (reported to the shim's owner).
if ldd "$TESSERA" 2>/dev/null | grep -q libasan; then
    echo "fight_standin.sh: sanitized build: shim phases skipped (the shim crashes an ASan tessera)"
    shim="$TMP/no-shim-under-asan.so"
fi

# a worker's unreadable --kernels file is named in its error
expect_rc 1 env TESSERA_FIGHT_FD=2 "$TESSERA" fight --worker sla --requests 2 \
    --kernels "$TMP/none.fatbin"
expect_in "$TMP/err" "sla worker: $TMP/none.fatbin: cannot open"

# open loop against closed loop: the card stalls 30 ms in every 200 ms. The
# closed loop meets each stall with one request (its max), so its p99 stays
# below the stall; open loop, every request due during a stall waits for its
# end (about a sixth of them), so the p99 shows it. 3,000 requests: the
# closed loop serves about 8,500 a second on the asynchronous stand-in, so
# its run lasts longer than a period and cannot miss every stall. Repeat 1:
# the control has no interval (exit 4), the aa-alone phase's numbers are read.
for a in closed poisson fixed; do
    expect_rc 4 env TESSERA_STANDIN_STALL=200000:30000 "$TESSERA" fight --repeat 1 \
        --requests 3000 --warmup 0 --rate 2000 --arrival $a --mechanisms timeslice -o json
    cp "$TMP/out" "$TMP/stall-$a.json"
done
python3 - "$TMP" <<'PY'
import json, sys
def sla(a):
    r = json.load(open("%s/stall-%s.json" % (sys.argv[1], a)))
    assert r["config"]["arrival"] == a
    return {p["name"]: p for p in r["phases"]}["aa-alone"]["sla"]
c, p, f = sla("closed"), sla("poisson"), sla("fixed")
print("p99 under stalls: closed %.0f us (max %.0f), poisson %.0f us, fixed %.0f us"
      % (c["p99_us"], c["max_us"], p["p99_us"], f["p99_us"]))
assert c["requests"] == p["requests"] == f["requests"] == 3000
assert c["max_us"] >= 15000, c          # the closed loop met a stall ...
assert p["p99_us"] >= 15000 and f["p99_us"] >= 15000, (p, f)
# ... and its p99 shows it far less than the open loops' do: judged as a
# ratio measured in this run, not against 15 ms (a busy host's own stalls
# move the closed loop's p99 to 12-19 ms at load 6). The closed loop has no
# host-stall measure (it never waits to send), so on a machine with more
# runnable processes than cores a ratio under 2 is said, with the load, and
# not judged.
if not (p["p99_us"] > 2 * c["p99_us"] and f["p99_us"] > 2 * c["p99_us"]):
    import os
    load = os.getloadavg()[0]
    if load > os.cpu_count():
        print("SKIPPED: open/closed p99 ratio under 2 at load %.1f on %d cores"
              % (load, os.cpu_count()))
        sys.exit(3)
    sys.exit(1)
PY
case $? in
0) ok ;;
3) SKIP=$((SKIP + 1)) ;;
*) bad "open loop did not show the stalls the closed loop under-samples" ;;
esac

# the host taking the SLA tenant's CPU is measured: ten SIGSTOPs of 150 ms,
# one every 350 ms, while it serves 2,000 requests at 500 a second (open
# loop, fixed). A stop that lands while it waits to send shows as one
# host_us of 120 ms or more; one that lands inside a request (about a fifth
# of the time on the stand-in) is not seen, so at least 5 of the 10, and
# never more than 10. The stops are long so that a busy machine's own
# scheduling stalls (37-81 ms seen with two busy loops a core beside it) are
# not taken for stops. A tenant that cannot keep to its schedule never waits
# to send, so it has no host stall to measure: when even its fastest tenth
# of requests ends more than a period (2 ms) after its due time and fewer
# than 5 stops were seen, that is said with the measured lateness and the
# load, and not judged.
# host_stalls: the experiment once; the judge's status (0 seen, 1 not, 3
# not judged). A stop inside a request is not seen, and the sanitized
# build's requests are longer (2 of 10 seen once, at -j6, while its fastest
# tenth kept to schedule): a failure is measured once more, and judged on
# that; a worker that never reports its stalls fails both.
host_stalls() {
    TESSERA_FIGHT_FD=1 "$TESSERA" fight --worker sla --requests 2000 --rate 500 --arrival fixed \
        >"$TMP/host.lat" 2>"$TMP/host.err" &
    worker=$!
    sleep 0.3
    for _ in $(seq 10); do kill -STOP $worker; sleep 0.15; kill -CONT $worker; sleep 0.2; done
    wait $worker
    check "the stopped sla worker failed: $(head -3 "$TMP/host.err")" test $? -eq 0
    python3 - "$TMP/host.lat" <<'PY'
import os, statistics, sys
lines = [l.split() for l in open(sys.argv[1]) if l.startswith("latency_us")]
assert len(lines) == 2000 and all(len(l) == 6 and l[4] == "host_us" for l in lines), len(lines)
host = [float(l[5]) for l in lines]
seen = [h for h in host if h >= 120000]
late = statistics.quantiles([float(l[1]) for l in lines], n=10)[0]
print("host stalls seen: %d of 10 stops, %.0f ms in all; the fastest tenth of requests "
      "ended within %.0f us of their due time" % (len(seen), sum(host) / 1000, late))
if len(seen) < 5 and late > 2000:
    print("SKIPPED: the sla tenant ran %.0f ms behind its schedule (load %.1f on %d cores): "
          "it never waited to send, so no host stall could be measured"
          % (late / 1000, os.getloadavg()[0], os.cpu_count()))
    sys.exit(3)
assert 5 <= len(seen) <= 10 and sum(seen) >= 5 * 150000, seen
PY
}
host_stalls
rc=$?
if [ $rc -eq 1 ]; then
    echo "fight_standin: the host stalls measured once more"
    host_stalls
    rc=$?
fi
case $rc in
0) ok ;;
3) SKIP=$((SKIP + 1)) ;;
*) bad "host_us did not show the stops of the sla tenant" ;;
esac

# the neighbour keeps --noisy-depth operations in flight and reports each;
# kinds memory (takes the card's memory first) and idle (nothing at all)
# W SECS ARGS...: a noisy worker for SECS, then SIGTERM. Not timeout(1): it
# follows the TERM with a SIGCONT to the process group, which can cancel the
# stop LeakSanitizer's exit-time tracer asks of the worker (ASan build): the
# tracer then waits for ever while the worker spins (seen once at load 4).
W() {
    env TESSERA_FIGHT_FD=1 "$TESSERA" fight --worker noisy "${@:2}" &
    local pid=$!
    sleep "$1"
    kill -TERM "$pid"
    local i
    for i in $(seq 300); do dead "$pid" && break; sleep 0.2; done
    alive "$pid" && { bad "noisy worker ${*:2}: alive 60 s after SIGTERM"; kill -KILL "$pid"; }
    wait "$pid"
}
W 3 --noisy-kind burst --noisy-depth 3 >"$TMP/burst.out" 2>"$TMP/burst.err"
check "burst neighbour reported no operations" grep -q '^latency_us ' "$TMP/burst.out"
W 3 --noisy-kind memory >"$TMP/mem.out" 2>&1
expect_in "$TMP/mem.out" "mem_mib 256.0"
check "memory neighbour reported no operations" grep -q '^latency_us ' "$TMP/mem.out"
W 3 --noisy-kind idle >"$TMP/idle.out" 2>&1
expect_in "$TMP/idle.out" "# idle neighbour: context held"
check "the idle neighbour ran operations" sh -c "! grep -q '^latency_us' '$TMP/idle.out'"

# memory fight: the neighbour allocates until refused; the shim caps it at 30%
# (the control's tolerance is wide: this machine's scheduler is not what is
# tested here, and the memory verdict is on failures)
if [ -e "$shim" ]; then
    F --memory --requests 50 --warmup 5 --rate 2000 --control-tolerance 100000 \
        --mechanisms timeslice,shim --shim "$shim" -o json >"$TMP/out" 2>"$TMP/err"
    rc=$?
    reason=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["verdict_reason"])' \
        "$TMP/out" 2>/dev/null)
    if [ "$rc" -eq 4 ] || [ "$rc" -eq 3 ] && [[ $reason == *"the host took the sla tenant's CPU"* ]]; then
        skip "memory fight: no verdict on this host (exit $rc): $reason"
    elif [ "$rc" -ne 0 ]; then
        bad "memory fight exited $rc: $reason"; head -5 "$TMP/err"
    elif python3 - "$TMP/out" <<'PY'
import json, sys
ph = {p["name"]: p for p in json.load(open(sys.argv[1]))["phases"]}
t, s = ph["timeslice"]["noisy"]["mem_mib_max"], ph["shim"]["noisy"]["mem_mib_max"]
assert t >= 250 and 0 < s <= 0.3 * 256 + 4, (t, s)
assert ph["shim"]["sla"]["failed_requests"] == 0 and ph["shim"]["status"] == "pass"
assert ph["shim"]["baseline"] == "shim-alone" and ph["shim-alone"]["status"] == "measured"
PY
    then ok; else bad "memory fight JSON"; cat "$TMP/out"; fi
fi
finish
