#!/usr/bin/env bash
# labels: slow timing
# agent_enforce_sm.sh - `tessera agent watch` judges the SM share (docs/agent.md,
# "Enforcement", the SM share) from NVML's utilisation samples: REAL
# processes running kernels on the stand-in CUDA card (TESSERA_STANDIN_GPU),
# each in a REAL cgroup of the kubelet's cgroupfs layout
# (kubepods/burstable/pod<UID>/<ID>), each pod with its limit file under a
# kubelet root; the stand-in NVML samples the card by host pid every 167 ms
# (nvmlDeviceGetProcessUtilization, nvmlDeviceGetSamples), as a driver does.
# The tenants run the probe WITHOUT the shim (no LD_PRELOAD: the bypass),
# but for D:
#   1  C (smPercent 10, onSmViolation kill) alone on the card for a whole
#      window and more: the card is all its (work-conserving): not judged;
#   2  N (smPercent 90, report) wants the whole card; A (smPercent 10, kill)
#      starts beside it and takes about half: killed within the bound
#      (measured from A's start); N, within its share, is not reported;
#   3  B (smPercent 10, report) beside N: reported once (log, metric
#      kind="sm", an observed ledger entry enforce:sm:report), still alive;
#   4  D (smPercent 10, kill) WITH the shim beside N for a window and more:
#      the shim holds it to its share; not judged.
# The window is 3 s here (--sm-window-ms 3000); the bound is one window, one
# sample period, one poll and one round (plus the round itself).
# Needs root (cgroups); without a writable cgroup v1 pids hierarchy it says
# SKIPPED. Needs TESSERA, TESSERA_SRC; shim-test.env next to $TESSERA.
source "$TESSERA_SRC/tests/lib.sh"

need_pod_cgroups agent_enforce_sm

use_shim_probes
use_standin_nvml
export LD_LIBRARY_PATH="$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TESSERA_STANDIN_NVML_SAMPLE_MS=167
unset LD_PRELOAD
WINDOW_MS=${AGENT_SM_TEST_WINDOW_MS:-3000} # 10000 measures the default
PORT=$(free_port)
URL="http://127.0.0.1:$PORT"
WPID=
cleanup() {
    [ -n "$WPID" ] && kill -9 "$WPID" 2>/dev/null
    pod_cleanup
    rm -rf "$TMP"
}
trap cleanup EXIT

# One H100 without MIG, time-sliced between tenants.
cat >"$TMP/node.state" <<'EOF'
gpu;uuid=GPU-e5000000-0000-4000-8000-000000000000;name=NVIDIA H100 80GB HBM3;pci=00000000:1B:00.0;memory_mib=81559;mig=0;pending=0;compute_mode=0
seq;n=1
EOF
cat >"$TMP/node-config.json" <<'EOF'
{"apiVersion": "tessera.dev/v1alpha1", "kind": "NodeConfig", "node": "gpu-node-5",
 "gpus": [{"index": 0, "model": "h100-80gb-sxm", "mode": "time-slicing", "instances": []}]}
EOF

KUBELET="$TMP/kubelet"
# tenant POD CTR: the probe launching 1 ms kernels back to back for a minute,
# without the shim, in the container's cgroup (it joins before the exec);
# NVML lists it on GPU 0 (256 MiB: memory is not what is judged here).
tenant() {
    local d="$CG/burstable/pod$(pod_uid "$1")/$2"
    mkdir -p "$d"
    CGS+=("$d")
    bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" launch "$3" 1000 one' _ "$d" "$PROBE" \
        "${SECS:-60}" >"$TMP/$2.out" 2>&1 &
    LAST=$!
    disown "$LAST"
    PIDS+=("$LAST")
    { cat "$TMP/node.state"; echo "proc;gpu=0;pid=$LAST;name=python3;mem=$((256 << 20))"; } \
        >"$TMP/state.tmp"
    mv "$TMP/state.tmp" "$TMP/node.state"
}
metric() { curl -s "$URL/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

kubelet_limits 1 "version = 1\nsmPercent = 10\ntenant = gamma\nworkload = solo\nonSmViolation = kill\n"
kubelet_limits 2 "version = 1\nsmPercent = 90\ntenant = nu\nworkload = big\nonSmViolation = report\n"
kubelet_limits 3 "version = 1\nsmPercent = 10\ntenant = alpha\nworkload = train\nonSmViolation = kill\n"
kubelet_limits 4 "version = 1\nsmPercent = 10\ntenant = beta\nworkload = rag\n"

"$TESSERA" agent watch --node-config "$TMP/node-config.json" --kubelet-root "$KUBELET" \
    --listen "127.0.0.1:$PORT" --db "sqlite:$TMP/ledger.db" --interval-ms 1000 \
    --sm-window-ms "$WINDOW_MS" 2>"$TMP/watch.log" &
WPID=$!
for i in $(seq 100); do curl -sf "$URL/readyz" >/dev/null && break; sleep 0.1; done

# 1. alone: the card is all C's for a window and a half, and C is not judged
tenant 1 c1c1c1c1
C=$LAST
sleep $((WINDOW_MS * 3 / 2000)).5
check "C (alone on the card) killed" alive "$C"
check "C (alone) judged: $(grep 'limit exceeded' "$TMP/watch.log")" \
    sh -c "! grep -q 'limit exceeded' '$TMP/watch.log'"
kill -9 "$C"
check "the card was not sampled: $(cat "$TMP/c1c1c1c1.out")" test -e "$TMP/gpu.lock.nvml"

# 2. N wants the card; A starts beside it and takes about half: the catch
tenant 2 n2n2n2n2
N=$LAST
sleep 1
tenant 3 a3a3a3a3
A=$LAST
t0=$(now_ms)
for i in $(seq 1000); do dead "$A" && break; sleep 0.02; done
CATCH_MS=$(($(now_ms) - t0))
BOUND_MS=$((WINDOW_MS + 167 + 100 + 1000 + 500))
echo "agent_enforce_sm: catch time $CATCH_MS ms (window $WINDOW_MS ms, bound $BOUND_MS ms)"
check "A (bypassed, 10%) not killed within $CATCH_MS ms" dead "$A"
check "catch time $CATCH_MS ms over the bound $BOUND_MS ms" test "$CATCH_MS" -le "$BOUND_MS"
expect_in "$TMP/watch.log" 'tenant=alpha workload=train kind=sm action=kill result="killed 1 process"'
grep 'kind=sm' "$TMP/watch.log" | head -3

# 3. B (report) beside N: reported once, alive; N never
tenant 4 b4b4b4b4
B=$LAST
for i in $(seq 300); do grep -q 'tenant=beta workload=rag kind=sm' "$TMP/watch.log" && break; sleep 0.05; done
expect_in "$TMP/watch.log" 'tenant=beta workload=rag kind=sm action=report result=reported'
sleep 1.5 # more rounds over: still one episode
check "B (report) killed" alive "$B"
check "N (within its share) killed" alive "$N"
check "N judged: $(grep 'tenant=nu' "$TMP/watch.log")" sh -c "! grep -q 'tenant=nu' '$TMP/watch.log'"
check "beta's report not counted once" \
    test "$(metric 'tessera_agent_violations_total{tenant="beta",workload="rag",kind="sm",action="report"}')" = 1
check "alpha's kill not counted" \
    test "$(metric 'tessera_agent_violations_total{tenant="alpha",workload="train",kind="sm",action="kill"}')" = 1
grep 'kind=sm' "$TMP/watch.log" | sed 's/^/  /'

# 4. D under the shim (LD_PRELOAD, the same smPercent 10 and kill) beside N
# for a window and more: the shim holds it to its share, the agent leaves it.
kill -9 "$B"
printf 'version = 1\nsmPercent = 10\nregion = %s\n' "$TMP/d.region" >"$TMP/d.limits"
kubelet_limits 5 "version = 1\nsmPercent = 10\ntenant = delta\nworkload = fair\nonSmViolation = kill\n"
D_SECS=$((WINDOW_MS * 3 / 2000 + 2))
SECS=$D_SECS TESSERA_CUDA_LIMITS_FILE="$TMP/d.limits" LD_PRELOAD="$preload" tenant 5 d5d5d5d5
D=$LAST
sleep $((D_SECS - 1))
check "D (under the shim, within its share) killed: $(cat "$TMP/d5d5d5d5.out")" alive "$D"
check "D judged: $(grep 'tenant=delta' "$TMP/watch.log")" \
    sh -c "! grep -q 'tenant=delta' '$TMP/watch.log'"
# D ran its kernels the whole time, held to about its share by the shim
for i in $(seq 100); do grep -q busy_ns "$TMP/d5d5d5d5.out" && break; sleep 0.1; done
D_BUSY=$(sed -n 's/.*busy_ns=\([0-9]*\).*/\1/p' "$TMP/d5d5d5d5.out")
echo "agent_enforce_sm: D under the shim: $(cat "$TMP/d5d5d5d5.out") over $D_SECS s"
check "D did not run under the shim: $(cat "$TMP/d5d5d5d5.out")" \
    test "${D_BUSY:-0}" -gt $((D_SECS * 20000000)) # 2% of the card: it ran
check "D took more than 20% of the card under the shim" \
    test "${D_BUSY:-0}" -lt $((D_SECS * 200000000))

kill -TERM "$WPID"
wait "$WPID"
check "watch did not stop with 0" test $? -eq 0
WPID=
"$TESSERA" ledger history --db "sqlite:$TMP/ledger.db" --tenant beta -o json >"$TMP/hist.json" 2>&1
expect_in "$TMP/hist.json" '"profile": "enforce:sm:report"'
expect_in "$TMP/hist.json" '"source": "observed"'
expect_in "$TMP/hist.json" '"gpu_uuid": "GPU-e5000000-0000-4000-8000-000000000000"'
# the window is at most 128 rounds
expect_rc 2 "$TESSERA" agent watch --node-config "$TMP/node-config.json" --enforce-interval-ms 100 \
    --sm-window-ms 12900
expect_in "$TMP/err" "--sm-window-ms holds at most 128 enforcement rounds"
finish
