#!/bin/bash
# meter_long_names.sh - pods with the longest names Kubernetes allows (a
# namespace of 63 bytes, pod names of 253) on one card are two keys, each
# billed its half (issue 14: the "#namespace/pod" suffix was cut at 128
# bytes, two replicas sharing a 200-byte prefix became one key and one went
# unbilled); a longer name is not Kubernetes' and its line is rejected with
# its place.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
T0=1767225600 # 2026-01-01T00:00:00Z
NS=lab-$(printf 'n%.0s' $(seq 59))          # 63 bytes
PREFIX=$(printf 'p%.0s' $(seq 200))          # the replicas' common 200 bytes
POD_A=$PREFIX-$(printf 'a%.0s' $(seq 52))    # 253 bytes
POD_B=$PREFIX-$(printf 'b%.0s' $(seq 52))
check "names of 63 and 253 bytes" [ ${#NS} -eq 63 -a ${#POD_A} -eq 253 -a ${#POD_B} -eq 253 ]

cat >"$TMP/spec.yaml" <<EOF
apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: f}
spec:
  nodes: [{name: n1, gpus: [{model: h100-80gb-sxm, count: 1}]}]
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: lab}
spec:
  contract: isolated
  namespaces: [$NS]
  workloads:
  - {name: big, kind: training, memoryHighWaterGiB: 75, replicas: 1}
EOF
line() { # POD TS: one sample of that pod on lab's card
    echo "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\",Hostname=\"n1\",modelName=\"NVIDIA H100 80GB HBM3\",namespace=\"$NS\",pod=\"$1\"} 50 $2"
}
for k in 0 1 2; do
    line "$POD_A" $(((T0 + 15 * k) * 1000))
    line "$POD_B" $(((T0 + 15 * k) * 1000))
done >"$TMP/long.prom"
expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "sqlite:$TMP/m.db" --at "$T0" "$TMP/long.prom"
expect_in "$TMP/out" "6 device scrapes, 6 new samples, 0 lines rejected, 0 custody violations"
keys=$(sqlite3 "$TMP/m.db" "SELECT count(DISTINCT device) FROM samples")
check "distinct device keys: $keys, want 2 (one per pod)" [ "$keys" = 2 ]
suffix=$(sqlite3 "$TMP/m.db" "SELECT device FROM samples WHERE pod = '$POD_B' LIMIT 1")
check "pod B's key is not GPU-1#$NS/$POD_B: $suffix" [ "$suffix" = "GPU-1#$NS/$POD_B" ]
# 30 s of the whole card, half each: 2 x 4167 micro-GPU-hours, half busy
"$TESSERA" usage -f "$TMP/spec.yaml" --db "sqlite:$TMP/m.db" -o json >"$TMP/usage.json"
got=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["rows"]; print(" ".join("%s %d %d" % (x["tenant"], x["allocationMicroGpuHours"], x["usageMicroGpuHours"]) for x in r))' "$TMP/usage.json")
check "usage: $got, want lab 8333 4167" [ "$got" = "lab 8333 4167" ]

# names longer than Kubernetes allows: the line rejected with its place
{
    line "$POD_A" $((T0 * 1000))
    line "${POD_A}x" $((T0 * 1000))
    echo "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\",namespace=\"${NS}x\",pod=\"p\"} 5 $((T0 * 1000))"
} >"$TMP/over.prom"
expect_rc 1 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "sqlite:$TMP/over.db" --at "$T0" "$TMP/over.prom"
expect_in "$TMP/err" "over.prom:2:1: pod name of 254 bytes: Kubernetes allows 253"
expect_in "$TMP/err" "over.prom:3:1: namespace of 64 bytes: Kubernetes allows 63"
expect_in "$TMP/out" "1 device scrapes, 1 new samples, 2 lines rejected"
finish
