#!/usr/bin/env bash
# agent_watch.sh - `tessera agent watch` against the stand-in NVML
# (tests/standin/nvml) over tests/fixtures/agent/h100-mixed.state (two H100
# 80GB HBM3): a node config matching the cards makes no mutating call; a
# changed one makes exactly the planned calls (GPU 0: destroy 2g.20gb at
# 4:2, create 1g.20gb there; GPU 1 untouched), writes the inventory, and
# records custody events (the new instance for the plan's tenant, the
# destroyed one as unassigned); a file rewritten with only another node's
# card changed, or reformatted, reconciles nothing; a malformed file keeps
# the last plan and is counted; a busy card is left alone, reported in
# /metrics and the log, retried with backoff and changed once idle; the pid
# map names the busy process; kill -9 in the middle of a change (the
# stand-in's KILL_AFTER knob) and a restart leave the card as planned with
# every GPU instance whole; SIGTERM ends a long sleep at once with exit 0;
# JSON logs; bad usage. Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

fx="$TESSERA_SRC/tests/fixtures"
spec="$fx/agent/spec.yaml"
use_standin_nvml
PORT=$(free_port)
URL="http://127.0.0.1:$PORT"
WPID=
cleanup() {
    [ -n "$WPID" ] && kill -9 "$WPID" 2>/dev/null
    [ -n "$SLEEPER" ] && kill "$SLEEPER"
    rm -rf "$TMP"
}
trap cleanup EXIT

# The plans: the cards as they are (GPU 0 3g.40gb@0 2g.20gb@4 1g.10gb@6, GPU 1
# 4g.40gb@0 1g.10gb@4,5) and the spec's plan (GPU 0: 1g.20gb at 4:2).
"$TESSERA" plan -f "$spec" -o json >"$TMP/plan.json"
python3 - "$TMP" <<'PY'
import json, sys
d = sys.argv[1]
p = json.load(open(d + "/plan.json"))
def inst(n, s, z, t=None):
    return {"profile": n, "start": s, "size": z, "tenant": t, "workload": t and "w"}
g0 = [g for g in p["gpus"] if g["index"] == 0][0]
g1 = [g for g in p["gpus"] if g["index"] == 1][0]
g1["mode"] = "mig"
g1["instances"] = [inst("4g.40gb", 0, 4), inst("1g.10gb", 4, 1), inst("1g.10gb", 5, 1)]
json.dump(p, open(d + "/want.json", "w"))
g0["instances"] = [inst("3g.40gb", 0, 4, "alpha"), inst("2g.20gb", 4, 2, "beta"),
                   inst("1g.10gb", 6, 1, "gamma")]
json.dump(p, open(d + "/same.json", "w"))
# the spec's plan again, with a card of another node added, reindented
q = json.load(open(d + "/want.json"))
other = dict(q["gpus"][0], node="gpu-node-2")
q["gpus"].append(other)
json.dump(q, open(d + "/other.json", "w"), indent=4)
PY

# put FILE: replace the node config atomically (as the kubelet does)
put() { cp "$1" "$TMP/cfg.tmp" && mv "$TMP/cfg.tmp" "$TMP/node-config.json"; }
metric() { curl -s "$URL/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
# wait_for DESC CMD...: poll CMD up to 30 s
wait_for() {
    local desc=$1 i
    shift
    for i in $(seq 300); do "$@" && { ok; return 0; }; sleep 0.1; done
    bad "timed out waiting for: $desc"
    tail -20 "$TMP/watch.log"
    return 1
}
metric_is() { [ "$(metric "$1")" = "$2" ]; }
metric_at_least() { local v; v=$(metric "$1"); [ -n "$v" ] && [ "$v" -ge "$2" ]; }
OK='tessera_agent_reconciles_total{result="ok"}'
FAILED='tessera_agent_reconciles_total{result="failed"}'
start() {
    "$TESSERA" agent watch --node gpu-node-1 --node-config "$TMP/node-config.json" \
        --listen "127.0.0.1:$PORT" --inventory-out "$TMP/inv.json" \
        --pid-map-out "$TMP/pids.txt" --journal "$TMP/journal.json" \
        --db "sqlite:$TMP/ledger.db" "$@" 2>>"$TMP/watch.log" &
    WPID=$!
}
stop() {
    kill -TERM "$WPID"
    wait "$WPID"
    local rc=$?
    WPID=
    return $rc
}
GPU1="4g.40gb@0:4+1 1g.10gb@4:1+1 1g.10gb@5:1+1"

# 1. no config yet: alive, not ready; then the cards' own geometry: nothing changes
start --interval-ms 50 --backoff-max-ms 400
wait_for "/healthz" sh -c "curl -sf '$URL/healthz' >/dev/null"
expect_rc 22 curl -sf "$URL/readyz"
wait_for "config error counted" metric_at_least tessera_agent_config_errors_total 1
expect_in "$TMP/watch.log" "msg=\"node config not loaded; keeping the last good plan\""
put "$TMP/same.json"
wait_for "first reconcile" metric_is "$OK" 1
wait_for "/readyz" sh -c "curl -sf '$URL/readyz' >/dev/null"
check "matching cards got mutating calls: $(cat "$TMP/calls.log")" test ! -s "$TMP/calls.log"
check "drift not 0" metric_is tessera_agent_drift_cards 0
check "planned cards not 2" metric_is tessera_agent_planned_cards 2
"$TESSERA" agent inventory --node gpu-node-1 -o json >"$TMP/direct.json"
wait_for "inventory written" test -s "$TMP/inv.json"
check "inventory-out differs from agent inventory" \
    python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); sys.exit(a!=b)' \
    "$TMP/inv.json" "$TMP/direct.json"
expect_in "$TMP/pids.txt" "# tessera pid map v1"
sleep 0.3
check "unchanged config reconciled again" metric_is "$OK" 1

# 2. the plan changes: exactly the planned calls, GPU 1 untouched
put "$TMP/want.json"
wait_for "second reconcile" metric_is "$OK" 2
cat >"$TMP/calls.want" <<'EOF'
nvmlComputeInstanceDestroy gpu=0 5 0 -> 0
nvmlGpuInstanceDestroy gpu=0 5 0 -> 0
nvmlDeviceCreateGpuInstanceWithPlacement gpu=0 15 4 -> 0
nvmlGpuInstanceCreateComputeInstance gpu=0 2 0 -> 0
EOF
check "calls differ: $(cat "$TMP/calls.log")" cmp -s "$TMP/calls.log" "$TMP/calls.want"
wait_for "inventory shows the new geometry" \
    sh -c "[ \"\$(python3 -c 'import json; d=json.load(open(\"$TMP/inv.json\")); \
print(len(d[\"gpus\"][0][\"gpuInstances\"]))')\" = 3 ] && grep -q 1g.20gb '$TMP/inv.json'"
[ "$(inventory_geometry "$TMP/inv.json" 0)" = "3g.40gb@0:4+1 1g.20gb@4:2+1 1g.10gb@6:1+1" ] && ok ||
    bad "GPU 0 is $(inventory_geometry "$TMP/inv.json" 0)"
[ "$(inventory_geometry "$TMP/inv.json" 1)" = "$GPU1" ] && ok || bad "GPU 1 is $(inventory_geometry "$TMP/inv.json" 1)"
check "plan changes not 2" metric_is tessera_agent_plan_changes_total 2
expect_in "$TMP/watch.log" "msg=reconcile node=gpu-node-1 result=ok kept=1 changed=1 busy=0"
expect_in "$TMP/watch.log" "custody_events=2"
# custody: the new instance is beta's (the plan's), the destroyed one unassigned
NEW=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
gi = [x for x in d["gpus"][0]["gpuInstances"] if x["placement"]["start"] == 4][0]
print(gi["computeInstances"][0]["uuid"])' "$TMP/inv.json")
expect_rc 0 "$TESSERA" ledger who --db "sqlite:$TMP/ledger.db" --instance "$NEW" \
    --at 2100-01-01T00:00:00Z
expect_in "$TMP/out" "beta"
expect_rc 0 "$TESSERA" ledger who --db "sqlite:$TMP/ledger.db" \
    --instance MIG-1f4a2b3c-0005-5a6b-8c7d-0e1f2a3b4c05 --at 2100-01-01T00:00:00Z
expect_in "$TMP/out" "unassigned"

# 3. another node's card added and the file reindented: no reconcile
put "$TMP/other.json"
sleep 0.4
check "another node's change reconciled this one" metric_is "$OK" 2
check "plan change counted for another node" metric_is tessera_agent_plan_changes_total 2
# a malformed file: counted, named, the last plan kept
printf '{"kind": "Plan", "gpus": [{"node": 7}]}' >"$TMP/bad.json"
put "$TMP/bad.json"
wait_for "config error counted" metric_at_least tessera_agent_config_errors_total 2
expect_in "$TMP/watch.log" "where=\"$TMP/node-config.json: gpus[0]"
check "readyz lost after a bad file" sh -c "curl -sf '$URL/readyz' >/dev/null"

# 4. busy: a process on GPU 0 when the plan wants 2g.20gb back: left alone
sleep 30 &
SLEEPER=$!
echo "proc;gpu=0;pid=$SLEEPER;name=python3" >>"$TMP/node.state"
put "$TMP/same.json"
wait_for "busy refusal" metric_at_least tessera_agent_busy_refusals_total 1
wait_for "busy retried with backoff" metric_at_least tessera_agent_busy_refusals_total 2
check "busy card got mutating calls" cmp -s "$TMP/calls.log" "$TMP/calls.want"
wait_for "drift reported" metric_is tessera_agent_drift_cards 1
check "last reconcile not failed" metric_is tessera_agent_last_reconcile_success 0
check "busy instances gauge" metric_at_least tessera_agent_busy_instances 1
expect_in "$TMP/watch.log" "refused: 1 process running on GPU 0: pid $SLEEPER (python3)"
expect_in "$TMP/watch.log" "result=busy"
INODE=$(stat -L -c %i "/proc/$SLEEPER/ns/pid")
expect_in "$TMP/pids.txt" "$INODE $SLEEPER $SLEEPER 0 -"
# the process ends: the next retry changes the card
grep -v '^proc;' "$TMP/node.state" >"$TMP/idle.state" && mv "$TMP/idle.state" "$TMP/node.state"
kill "$SLEEPER"
SLEEPER=
wait_for "retry after the card is idle" metric_is "$OK" 3
wait_for "drift gone" metric_is tessera_agent_drift_cards 0
check "busy instances gauge back to 0" metric_is tessera_agent_busy_instances 0
[ "$(wc -l <"$TMP/calls.log")" -eq 8 ] && ok || bad "want 8 calls: $(cat "$TMP/calls.log")"

# 5. SIGTERM during a long sleep: exit 0 at once (not after the minute)
stop
check "first watch did not exit 0" test $? -eq 0
start --interval-ms 60000
wait_for "/healthz" sh -c "curl -sf '$URL/healthz' >/dev/null"
T0=$(date +%s)
stop
check "SIGTERM exit not 0" test $? -eq 0
[ $(($(date +%s) - T0)) -lt 30 ] && ok || bad "SIGTERM waited for the interval"
expect_in "$TMP/watch.log" "msg=stopped node=gpu-node-1"

# 6. kill -9 in the middle of a change, then a restart
cp "$fx/agent/h100-mixed.state" "$TMP/node.state"
: >"$TMP/calls.log"
put "$TMP/want.json"
export TESSERA_STANDIN_NVML_KILL_AFTER=3
start --interval-ms 50
unset TESSERA_STANDIN_NVML_KILL_AFTER
wait "$WPID"
check "the crash was not a SIGKILL" test $? -eq 137
WPID=
check "no journal left by the crash" test -s "$TMP/journal.json"
"$TESSERA" agent inventory --node gpu-node-1 -o json >"$TMP/crashed.json"
[ "$(inventory_geometry "$TMP/crashed.json" 0)" = "3g.40gb@0:4+1 1g.20gb@4:2+0 1g.10gb@6:1+1" ] && ok ||
    bad "after the crash GPU 0 is $(inventory_geometry "$TMP/crashed.json" 0)"
start --interval-ms 50
wait_for "reconcile after the restart" metric_is "$OK" 1
expect_in "$TMP/watch.log" "GPU 0: destroyed half-made 1g.20gb at 4:2 (no compute instance)"
check "recovery not counted" metric_is tessera_agent_recoveries_total 1
check "journal left after recovery" test ! -e "$TMP/journal.json"
stop
"$TESSERA" agent inventory --node gpu-node-1 -o json >"$TMP/after.json"
[ "$(inventory_geometry "$TMP/after.json" 0)" = "3g.40gb@0:4+1 1g.20gb@4:2+1 1g.10gb@6:1+1" ] && ok ||
    bad "after recovery GPU 0 is $(inventory_geometry "$TMP/after.json" 0)"
[ "$(inventory_geometry "$TMP/after.json" 1)" = "$GPU1" ] && ok ||
    bad "GPU 1 is $(inventory_geometry "$TMP/after.json" 1)"
grep -q 'gpu=1' "$TMP/calls.log" && bad "GPU 1 got a mutating call" || ok

# 7. JSON logs: every line an object with ts, level, msg
: >"$TMP/watch.log"
start --interval-ms 50 --log-format json
wait_for "reconcile (json)" metric_is "$OK" 1
stop
check "json log lines" python3 -c 'import json,sys
lines = open(sys.argv[1]).read().splitlines()
assert lines and all({"ts", "level", "msg"} <= set(json.loads(l)) for l in lines)
assert any(json.loads(l)["msg"] == "reconcile" for l in lines)' "$TMP/watch.log"

# 8. bad usage and what cannot start
expect_rc 2 "$TESSERA" agent watch --node gpu-node-1
expect_in "$TMP/err" "watch needs --node-config"
expect_rc 2 "$TESSERA" agent watch --node-config x --interval-ms 0
expect_in "$TMP/err" "'0' is not a number of milliseconds"
expect_rc 2 "$TESSERA" agent watch --node-config x --log-format xml
expect_rc 2 "$TESSERA" agent watch --node-config x --listen nonsense
expect_in "$TMP/err" "--listen"
expect_rc 2 "$TESSERA" agent watch --node-config x --hmac-key-file k
printf '{"kind": "AgentJournal", "gpu": "zero"}' >"$TMP/journal.json"
expect_rc 2 "$TESSERA" agent watch --node-config x --journal "$TMP/journal.json"
expect_in "$TMP/err" "journal.json"
rm -f "$TMP/journal.json"
HELD=$(free_port)
python3 -c 'import socket,time,sys
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(20)' "$HELD" &
HOLDER=$!
wait_for "port held" sh -c "curl -s -m 1 'http://127.0.0.1:$HELD/' >/dev/null; [ \$? -ne 7 ]"
expect_rc 1 timeout 20 "$TESSERA" agent watch --node-config x --listen "127.0.0.1:$HELD"
expect_in "$TMP/err" "cannot listen on 127.0.0.1:$HELD"
kill "$HOLDER" 2>/dev/null
finish
