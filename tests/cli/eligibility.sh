#!/bin/bash
# eligibility.sh - node eligibility end to end (issue 12): a fleet of H100
# nodes on CUDA 12.2 and 13.4 and one vGPU-licensed node. The memory
# fraction placed on the 12.2 node is enforced by tessera's shim, so render
# writes its limit; the VM's vGPU lands on the licensed node; the plan's
# JSON says so.
. "$(dirname "$0")/../lib.sh"
cat >"$TMP/mixed.yaml" <<'YAML'
apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: mixed}
spec:
  nodes:
  - name: old
    cudaVersion: "12.2"
    gpus: [{model: h100-80gb-sxm, count: 1}]
  - name: new
    cudaVersion: "13.4"
    gpus: [{model: h100-80gb-sxm, count: 1}]
  - name: lic
    cudaVersion: "13.4"
    vgpuLicensed: true
    gpus: [{model: h100-80gb-sxm, count: 1}]
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: batchco}
spec:
  contract: shared-trusted
  namespaces: [batchco]
  workloads:
  - {name: crunch, kind: batch, memoryHighWaterGiB: 30, replicas: 2}
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: vmco}
spec:
  contract: vm
  namespaces: [vmco]
  workloads:
  - {name: desk, kind: inference, memoryHighWaterGiB: 15}
YAML

expect_rc 0 "$TESSERA" plan -f "$TMP/mixed.yaml" -o json
cp "$TMP/out" "$TMP/plan.json"
/usr/bin/python3 - "$TMP/plan.json" <<'PY' && ok || bad "plan JSON: placements break node eligibility"
import json, sys
p = json.load(open(sys.argv[1]))
d = {x["workload"]: x for x in p["decisions"]}
assert d["crunch"]["mechanism"] == "memory-fraction", d["crunch"]
assert d["crunch"]["enforcement"] == "shim", d["crunch"]
assert d["desk"]["mechanism"] == "vgpu", d["desk"]
nodes = {}
for g in p["gpus"]:
    for i in g["instances"]:
        nodes.setdefault(i["workload"], set()).add(g["node"])
assert nodes["desk"] == {"lic"}, nodes
assert "old" in nodes["crunch"], nodes  # a fraction does sit on the CUDA 12.2 node
PY

expect_rc 0 "$TESSERA" render -f "$TMP/mixed.yaml" --out-dir "$TMP/out-tree"
LIMITS="$TMP/out-tree/tenants/batchco/cuda-limits.yaml"
check "render wrote no shim limit for the fraction on the CUDA 12.2 node" test -f "$LIMITS"
[ -f "$LIMITS" ] && expect_in "$LIMITS" "memoryLimit = 30Gi"
finish
