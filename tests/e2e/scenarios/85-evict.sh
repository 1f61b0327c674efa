# 85-evict.sh - the agent's `evict` (docs/agent.md, "Enforcement") against the
# real API server: `tessera agent watch --node NODE` with the stand-in NVML
# showing a REAL process, in a REAL cgroup of the kubelet's layout
# (kubepods/burstable/pod<UID>/<ID>, cgroup v1 pids), over its memory limit;
# the pod is a real Pod bound to a KWOK node, its limit file laid out as the
# kubelet holds it (onMemoryViolation = evict). The agent's identity is the
# ServiceAccount and ClusterRole of deploy/base/agent.yaml, with a token the
# API server issued for it, and the e2e CA verifies the server:
#   trainer   evicted through policy/v1 Eviction (deleted or deletionTimestamp
#             set), its process not killed, tessera_agent_enforce_evictions_total
#             {result="ok"} 1;
#   guarded   a PodDisruptionBudget (minAvailable 1) refuses it: HTTP 429,
#             the process killed instead, {result="refused"}, the pod stays;
#   stranger  a pod UID the node does not have: the eviction fails, killed.
# Needs root with a writable cgroup v1 pids hierarchy (else SKIPPED) and the
# stand-in NVML built beside $TESSERA. Sourced by tests/e2e/run.

ev_cg=/sys/fs/cgroup/pids/kubepods
ev_made_cg=
[ -d "$ev_cg" ] || ev_made_cg=1
ev_nvml="$(dirname "$TESSERA")/standin/libnvidia-ml.so.1"
if ! mkdir -p "$ev_cg/burstable/e2e-$$" 2>/dev/null || [ ! -e "$ev_nvml" ]; then
    rmdir "$ev_cg/burstable/e2e-$$" 2>/dev/null
    echo "85-evict: SKIPPED: needs a writable $ev_cg (root, cgroup v1 pids) and $ev_nvml"
else
rmdir "$ev_cg/burstable/e2e-$$"
EV=$TMP/evict
mkdir -p "$EV"
ev_pids=()
ev_cgs=()
ev_node=evict-node-1
kwok_node "$ev_node"

# the agent's identity, as deploy/base/agent.yaml makes it
kc create namespace tessera-system >/dev/null 2>&1
/usr/bin/python3 - "$TESSERA_SRC/deploy/base/agent.yaml" >"$EV/rbac.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
print(yaml.safe_dump_all([d for d in docs if d["kind"] in
                          ("ServiceAccount", "ClusterRole", "ClusterRoleBinding")]))
PY
kc apply --server-side -f "$EV/rbac.yaml" >/dev/null || bad "the agent's RBAC not applied"
kc -n tessera-system create token tessera-agent --duration 1h >"$EV/token" ||
    bad "no token for the agent's ServiceAccount"
check "the agent may not delete pods" [ "$(kc auth can-i delete pods -A \
    --as system:serviceaccount:tessera-system:tessera-agent 2>/dev/null)" = no ]

kc create namespace evict-a >/dev/null
for p in trainer guarded; do
    kc apply -f - >/dev/null <<EOF || bad "pod $p not made"
apiVersion: v1
kind: Pod
metadata: {name: $p, namespace: evict-a, labels: {app: $p}}
spec:
  nodeName: $ev_node
  containers: [{name: main, image: registry.e2e.invalid/cuda:e2e}]
EOF
done
kc apply -f - >/dev/null <<EOF || bad "PodDisruptionBudget not made"
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: guarded, namespace: evict-a}
spec: {minAvailable: 1, selector: {matchLabels: {app: guarded}}}
EOF
ev_running() { [ "$(kc -n evict-a get pods -o jsonpath='{.items[*].status.phase}')" = 'Running Running' ]; }
ev_pdb_seen() { [ "$(kc -n evict-a get pdb guarded -o jsonpath='{.status.observedGeneration}')" -ge 1 ]; }
eventually 60 ev_running || bad "KWOK did not run the pods: $(kc -n evict-a get pods 2>&1)"
eventually 60 ev_pdb_seen || bad "the disruption controller did not see the budget"
trainer_uid=$(kc -n evict-a get pod trainer -o jsonpath='{.metadata.uid}')
guarded_uid=$(kc -n evict-a get pod guarded -o jsonpath='{.metadata.uid}')
stranger_uid=0badc0de-0000-4000-8000-000000000085

# ev_proc UID CTR: a process in the container's cgroup, its limit file as the
# kubelet holds it (1Gi, evict), and NVML showing it with 4 GiB
echo "gpu;uuid=GPU-e8500000-0000-4000-8000-000000000000;name=NVIDIA H100 80GB HBM3;pci=00000000:1B:00.0;memory_mib=81559;mig=0;pending=0;compute_mode=0" >"$EV/node.state"
ev_proc() {
    local d="$ev_cg/burstable/pod$1/$2"
    local v="$EV/kubelet/pods/$1/volumes/kubernetes.io~configmap/tessera-limits"
    mkdir -p "$d" "$v/..2026_01_01_00_00_00.000000001"
    ev_cgs+=("$d")
    printf 'version = 1\nmemoryLimit = 1Gi\ntenant = %s\nworkload = train\nonMemoryViolation = evict\n' \
        "$3" >"$v/..2026_01_01_00_00_00.000000001/cuda-limits"
    ln -sfn ..2026_01_01_00_00_00.000000001 "$v/..data"
    ln -sfn ..data/cuda-limits "$v/cuda-limits"
    sleep 600 &
    EV_LAST=$!
    disown "$EV_LAST"
    ev_pids+=("$EV_LAST")
    echo "$EV_LAST" >"$d/cgroup.procs"
    echo "proc;gpu=0;pid=$EV_LAST;name=python3;mem=$((4 << 30))" >>"$EV/node.state"
}
ev_alive() { [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
ev_proc "$trainer_uid" "$(printf 'a%.0s' $(seq 64))" alpha
ev_trainer=$EV_LAST
ev_proc "$guarded_uid" "$(printf 'b%.0s' $(seq 64))" beta
ev_guarded=$EV_LAST
ev_proc "$stranger_uid" "$(printf 'c%.0s' $(seq 64))" gamma
ev_stranger=$EV_LAST
cat >"$EV/node-config.json" <<EOF
{"apiVersion": "tessera.dev/v1alpha1", "kind": "NodeConfig", "node": "$ev_node",
 "gpus": [{"index": 0, "model": "h100-80gb-sxm", "mode": "time-slicing", "instances": []}]}
EOF

ev_port=$(free_port)
TESSERA_NVML_LIBRARY=$ev_nvml TESSERA_STANDIN_NVML=$EV/node.state \
    "$TESSERA" agent watch --node-config "$EV/node-config.json" --node "$ev_node" \
    --kubelet-root "$EV/kubelet" --listen "127.0.0.1:$ev_port" --interval-ms 1000 \
    --kube-api "https://127.0.0.1:$CP_API_PORT" --kube-token-file "$EV/token" \
    --kube-ca-file "$CP_DIR/pki/ca.crt" 2>"$EV/watch.log" &
ev_watch=$!
ev_metric() { curl -s "http://127.0.0.1:$ev_port/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
ev_acted() {
    [ "$(ev_metric 'tessera_agent_enforce_evictions_total{result="failed"}')" -ge 1 ] &&
        [ "$(ev_metric 'tessera_agent_enforce_evictions_total{result="refused"}')" -ge 1 ] &&
        [ "$(ev_metric 'tessera_agent_enforce_evictions_total{result="ok"}')" -ge 1 ]
} 2>/dev/null
eventually 30 ev_acted || { bad "the agent did not act on the three pods"; cat "$EV/watch.log"; }

# trainer: evicted (gone, or terminating), its process left alone
ev_gone() {
    local ts
    ts=$(kc -n evict-a get pod trainer -o jsonpath='{.metadata.deletionTimestamp}' 2>"$EV/get.err")
    [ -n "$ts" ] || grep -q NotFound "$EV/get.err"
}
eventually 30 ev_gone && ok || bad "trainer not evicted: $(kc -n evict-a get pod trainer -o yaml 2>&1 | head -30)"
expect_in "$EV/watch.log" "tenant=alpha workload=train kind=memory action=evict result=\"evicted the pod\" pod_uid=$trainer_uid"
check "trainer's process killed after its eviction" ev_alive "$ev_trainer"
check "evictions ok not 1: $(ev_metric 'tessera_agent_enforce_evictions_total{result="ok"}')" \
    [ "$(ev_metric 'tessera_agent_enforce_evictions_total{result="ok"}')" = 1 ]
# guarded: 429 from the budget, killed instead, the pod stays
expect_in "$EV/watch.log" "tenant=beta workload=train kind=memory action=kill result=\"eviction failed (evicting evict-a/guarded: HTTP 429 (a PodDisruptionBudget allows no disruption now)"
check "guarded's process alive after a refused eviction" sh -c "! [ -e /proc/$ev_guarded ] || grep -q '^State:.*Z' /proc/$ev_guarded/status"
check "guarded deleted though its budget refused" [ -z "$(kc -n evict-a get pod guarded -o jsonpath='{.metadata.deletionTimestamp}')" ]
# stranger: no such pod on the node, killed
expect_in "$EV/watch.log" "eviction failed (pod $stranger_uid is not among node $ev_node's pods), killed 1 process"
check "stranger's process alive" sh -c "! [ -e /proc/$ev_stranger ] || grep -q '^State:.*Z' /proc/$ev_stranger/status"
grep 'limit exceeded' "$EV/watch.log" | sed 's/^/  /'

kill -TERM "$ev_watch"
wait "$ev_watch" 2>/dev/null

for p in "${ev_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
sleep 0.2
for d in "${ev_cgs[@]}"; do rmdir "$d" "$(dirname "$d")" 2>/dev/null; done
[ -n "$ev_made_cg" ] && rmdir "$ev_cg/burstable" "$ev_cg" 2>/dev/null
kc delete namespace evict-a --wait=false >/dev/null 2>&1
kc delete node "$ev_node" --wait=false >/dev/null 2>&1
fi
