#!/usr/bin/env bash
# agent_enforce.sh - `tessera agent watch`'s enforcement (docs/agent.md,
# "Enforcement") with REAL processes in REAL cgroups (cgroup v1 pids
# hierarchy, the kubelet's cgroupfs layout kubepods/burstable/pod<UID>/<ID>)
# and a kubelet root laid out as the kubelet's atomic writer does
# (..data -> ..<time>/, cuda-limits -> ..data/cuda-limits), over the
# stand-in NVML whose `proc;` lines give each pid's usedGpuMemory (`mem=`):
#   A  over its 1Gi limit (4Gi), policy kill, a process the shim never saw:
#      killed within the bound (measured), one ledger entry (observed,
#      tenant alpha), counted in tessera_agent_violations_total;
#   B  over, policy report: logged and counted, still alive;
#   C  two processes, each within limit + tolerance, together over: both killed;
#   D  a neighbour under its limit: untouched;
#   E  a pod without a limit file on a shared card: untouched, unjudged;
#   F  a malformed limit file: judged as a limit of 0 (the shim fails closed
#      on it too), killed, the fault logged;
#   G  cuda-limits a link out of the volume (to /etc/passwd): refused, killed;
#   H  a pod's cgroup without a container ID: untouched, logged, unjudged;
#   I  a host process in no pod: untouched;
#   J  the limit file `tessera render` writes for a spec whose tenant says
#      enforcement: {onMemoryViolation: report} (spec -> render -> kubelet
#      -> agent): over, reported with the plan's tenant and workload;
#   K  a process whose usedGpuMemory NVML does not report (MIG, MPS on some
#      drivers): untouched, its container said and counted as unjudged;
# and `agent watch` without --node takes its node from the NodeConfig.
# Needs root (cgroups); without a writable cgroup v1 pids hierarchy it says
# SKIPPED. Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

need_pod_cgroups agent_enforce

use_standin_nvml
PORT=$(free_port)
URL="http://127.0.0.1:$PORT"
WPID=
cleanup() {
    [ -n "$WPID" ] && kill -9 "$WPID" 2>/dev/null
    pod_cleanup
    rm -rf "$TMP"
}
trap cleanup EXIT

# Two H100s without MIG: GPU 0 time-sliced between tenants, GPU 1 whole.
cat >"$TMP/node.state" <<'EOF'
gpu;uuid=GPU-e0000000-0000-4000-8000-000000000000;name=NVIDIA H100 80GB HBM3;pci=00000000:1B:00.0;memory_mib=81559;mig=0;pending=0;compute_mode=0
gpu;uuid=GPU-e1111111-1111-4111-8111-111111111111;name=NVIDIA H100 80GB HBM3;pci=00000000:43:00.0;memory_mib=81559;mig=0;pending=0;compute_mode=0
seq;n=1
EOF
cat >"$TMP/node-config.json" <<'EOF'
{"apiVersion": "tessera.dev/v1alpha1", "kind": "NodeConfig", "node": "gpu-node-7",
 "gpus": [{"index": 0, "model": "h100-80gb-sxm", "mode": "time-slicing", "instances": []},
          {"index": 1, "model": "h100-80gb-sxm", "mode": "whole", "instances": []}]}
EOF

KUBELET="$TMP/kubelet"
# proc POD CTR: a sleeping process in the container's cgroup; prints its pid
proc() {
    local d="$CG/burstable/pod$(pod_uid "$1")/$2"
    mkdir -p "$d"
    CGS+=("$d")
    sleep 600 &
    local p=$!
    disown "$p" # no job report when the agent kills it
    PIDS+=("$p")
    echo "$p" >"$d/cgroup.procs"
    LAST=$p
}
# gpu_proc PID GPU BYTES: NVML shows PID on GPU holding BYTES (atomic rewrite)
gpu_proc() {
    { cat "$TMP/node.state"; echo "proc;gpu=$2;pid=$1;name=python3;mem=$3"; } >"$TMP/state.tmp"
    mv "$TMP/state.tmp" "$TMP/node.state"
}
metric() { curl -s "$URL/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
wait_for() {
    local desc=$1 i
    shift
    for i in $(seq 100); do "$@" && { ok; return 0; }; sleep 0.1; done
    bad "timed out waiting for: $desc"
    tail -20 "$TMP/watch.log"
    return 1
}
GI=$((1 << 30))
MI=$((1 << 20))
BASE="version = 1\nregion = /run/tessera/cuda.region\npidMap = /run/tessera-pids/pid-map\n"

kubelet_limits 1 "${BASE}memoryLimit = 1Gi\ntenant = alpha\nworkload = chat\nonMemoryViolation = kill\n"
kubelet_limits 2 "${BASE}memoryLimit = 1Gi\ntenant = beta\nworkload = rag\nonMemoryViolation = report\n"
kubelet_limits 3 "${BASE}memoryLimit = 1Gi\nbackstopTolerance = 256Mi\ntenant = gamma\nworkload = embed\n"
kubelet_limits 4 "${BASE}memoryLimit = 4Gi\ntenant = delta\nworkload = nb\n"
mkdir -p "$KUBELET/pods/$(pod_uid 5)/volumes"
kubelet_limits 6 "version = 1\nmemoryLimit = 8Qi\ntenant = zeta\n"
kubelet_limits 7 "${BASE}memoryLimit = 1Gi\n"
kubelet_limits 10 "${BASE}memoryLimit = 1Gi\ntenant = kappa\nworkload = mig\n"
# J: what render writes for sandbox/notebooks (time-sliced, 16Gi) with report
awk '{ print } /^metadata: \{name: sandbox\}/ { s = 1 }
     s && /^  namespaces:/ { print "  enforcement: {onMemoryViolation: report}"; s = 0 }' \
    "$TESSERA_SRC/examples/mixed-fleet.yaml" >"$TMP/spec.yaml"
"$TESSERA" render -f "$TMP/spec.yaml" --out-dir "$TMP/render" >/dev/null 2>&1
python3 - "$TMP/render/tenants/sandbox/cuda-limits.yaml" >"$TMP/rendered" <<'PY'
import sys, yaml
for o in yaml.safe_load_all(open(sys.argv[1])):
    if o and o["metadata"]["name"] == "tessera-cuda-limits-notebooks":
        print(o["data"]["cuda-limits"], end="")
PY
expect_in "$TMP/rendered" "onMemoryViolation = report"
expect_in "$TMP/rendered" "tenant = sandbox"
kubelet_limits 9 "$(cat "$TMP/rendered")"
ln -sfn /etc/passwd "$KUBELET/pods/$(pod_uid 7)/volumes/kubernetes.io~configmap/tessera-limits/cuda-limits"

proc 2 b0b0b0b0; B=$LAST
proc 3 c0c0c0c0; C1=$LAST
proc 3 c0c0c0c0; C2=$LAST
proc 4 d0d0d0d0; D=$LAST
proc 5 e0e0e0e0; E=$LAST
proc 6 f0f0f0f0; F=$LAST
proc 7 a7a7a7a7; G=$LAST
proc 8 not-a-container; H=$LAST
proc 9 e9e9e9e9; J=$LAST
proc 10 1a1a1a1a; K=$LAST
sleep 600 &
I=$!
disown "$I"
PIDS+=("$I")
gpu_proc "$B" 0 $((3 * GI))
gpu_proc "$C1" 0 $((1200 * MI))
gpu_proc "$C2" 0 $((1200 * MI))
gpu_proc "$D" 0 $((2 * GI))
gpu_proc "$K" 0 na
gpu_proc "$E" 0 $((40 * GI))
gpu_proc "$F" 1 $((2 * GI))
gpu_proc "$G" 0 $((2 * GI))
gpu_proc "$H" 0 $((10 * GI))
gpu_proc "$I" 0 $((50 * GI))
gpu_proc "$J" 0 $((20 * GI))

# 1. no --node, no $NODE_NAME: the node is the NodeConfig's
unset NODE_NAME
"$TESSERA" agent watch --node-config "$TMP/node-config.json" --kubelet-root "$KUBELET" \
    --listen "127.0.0.1:$PORT" --db "sqlite:$TMP/ledger.db" --interval-ms 200 \
    2>"$TMP/watch.log" &
WPID=$!
wait_for "/readyz (the NodeConfig's node taken)" sh -c "curl -sf '$URL/readyz' >/dev/null"
expect_in "$TMP/watch.log" 'node=gpu-node-7'
wait_for "two enforcement rounds" sh -c "[ \"\$(curl -s '$URL/metrics' |
    awk '\$1 == \"tessera_agent_enforce_rounds_total\" {print \$2}')\" -ge 2 ] 2>/dev/null"

# 2. what the first rounds did
wait_for "C's two processes killed" sh -c "! [ -e /proc/$C1/cmdline ] || grep -q '^State:.*Z' /proc/$C1/status"
check "C2 alive: the sum was over" dead "$C2"
check "F (malformed limit file) alive" dead "$F"
check "G (limit file a link out) alive" dead "$G"
check "B (report) killed" alive "$B"
check "D (neighbour under its limit) killed" alive "$D"
check "E (pod without a limit file) killed" alive "$E"
check "H (malformed cgroup) killed" alive "$H"
check "I (host process) killed" alive "$I"
check "J (rendered, report) killed" alive "$J"
check "K (usedGpuMemory not available) killed" alive "$K"
expect_in "$TMP/watch.log" 'msg="limit exceeded" node=gpu-node-7 tenant=beta workload=rag kind=memory action=report result=reported'
expect_in "$TMP/watch.log" 'tenant=gamma workload=embed kind=memory action=kill result="killed 2 processes"'
expect_in "$TMP/watch.log" 'tenant=sandbox workload=notebooks kind=memory action=report result=reported'
expect_in "$TMP/watch.log" "memoryLimit: unknown unit"
expect_in "$TMP/watch.log" "a link to '/etc/passwd'"
expect_in "$TMP/watch.log" 'reason=no-limits'
expect_in "$TMP/watch.log" "reason=unreadable-cgroup"
check "E unjudged not counted" test "$(metric 'tessera_agent_unjudged_processes{reason="no-limits"}')" = 1
check "I unjudged not counted" test "$(metric 'tessera_agent_unjudged_processes{reason="no-pod"}')" = 1
check "K unjudged not counted" \
    test "$(metric 'tessera_agent_unjudged_processes{reason="memory-unknown"}')" = 1
expect_in "$TMP/watch.log" 'reason=memory-unknown'
check "beta's report not counted once" \
    test "$(metric 'tessera_agent_violations_total{tenant="beta",workload="rag",kind="memory",action="report"}')" = 1

# 3. the catch bound: A appears over its limit; time until it is dead
proc 1 a0a0a0a0; A=$LAST
t0=$(date +%s%N)
gpu_proc "$A" 0 $((4 * GI))
for i in $(seq 400); do dead "$A" && break; sleep 0.01; done
t1=$(date +%s%N)
CATCH_MS=$(((t1 - t0) / 1000000))
echo "agent_enforce: catch time $CATCH_MS ms (enforce interval 1000 ms)"
check "A not killed within 2 s (took $CATCH_MS ms)" dead "$A"
check "catch time $CATCH_MS ms over the bound (interval 1000 ms + 500 ms)" test "$CATCH_MS" -le 1500
wait_for "alpha's kill counted" sh -c "curl -s '$URL/metrics' | grep -qF \
    'tessera_agent_violations_total{tenant=\"alpha\",workload=\"chat\",kind=\"memory\",action=\"kill\"} 1'"
sleep 1.2 # a round more with the zombie still listed: still one episode
check "alpha counted again for the same episode" \
    test "$(metric 'tessera_agent_violations_total{tenant="alpha",workload="chat",kind="memory",action="kill"}')" = 1
check "kills not counted" test "$(metric tessera_agent_enforce_kills_total)" -ge 5
check "B killed later" alive "$B"

# 4. the ledger: an observed entry with the tenant; custody untouched
kill -TERM "$WPID"
wait "$WPID"
check "watch did not stop with 0" test $? -eq 0
WPID=
"$TESSERA" ledger history --db "sqlite:$TMP/ledger.db" --tenant alpha -o json >"$TMP/hist.json" 2>&1
expect_in "$TMP/hist.json" '"profile": "enforce:memory:kill"'
expect_in "$TMP/hist.json" '"source": "observed"'
expect_in "$TMP/hist.json" '"gpu_uuid": "GPU-e0000000-0000-4000-8000-000000000000"'
expect_in "$TMP/hist.json" '"workload": "chat"'
"$TESSERA" ledger who --db "sqlite:$TMP/ledger.db" --instance GPU-e0000000-0000-4000-8000-000000000000 \
    --at "$(date -u +%Y-%m-%dT%H:%M:%SZ -d '+1 min')" >"$TMP/who.txt" 2>&1
expect_in "$TMP/who.txt" "observed (seen on the device, not custody)"
check "who names alpha as a holder: $(cat "$TMP/who.txt")" sh -c "! grep -B100 'observed (seen' '$TMP/who.txt' | grep -q alpha"

# 5. bad usage
expect_rc 2 "$TESSERA" agent watch --node-config "$TMP/node-config.json" --enforce-interval-ms -5
expect_rc 2 "$TESSERA" agent watch --node-config "$TMP/node-config.json" --sm-window-ms 0
finish
