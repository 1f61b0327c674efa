#!/bin/bash
# render_vm.sh - a VM on a node without a vGPU licence gets exactly the
# device the plan gives it (issue 30). A MIG instance reaches a VM only as a
# MIG-backed vGPU, which needs a licensed node; without one the plan gives
# the VM whole A30 cards and render names the PCI pass-through device of
# that card. Expected values by hand: the A30's PCI device ID is 20B7
# (NVIDIA's, src/catalog/builtin.yaml), its display name "NVIDIA A30 24GB",
# so the KubeVirt resource is nvidia.com/NVIDIA_A30_24GB with selector
# 10DE:20B7 and no mediated device; before the fix the plan said a 1g.6gb
# MIG instance and render gave the VM the vGPU type NVIDIA_A30-1-6C. A VM
# that asks for isolation: mig or time-slicing is refused (exit 2, located).
# Needs TESSERA, TESSERA_SRC.
. "$(dirname "$0")/../lib.sh"
T() { "$TESSERA" "$@"; }
cat >"$TMP/vm.yaml" <<'YAML'
apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: f}
spec:
  nodes:
  - name: a30-node
    gpus:
    - {model: a30, count: 2}
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: lab}
spec:
  contract: vm
  namespaces: [lab-vms]
  workloads:
  - {name: desk, kind: inference, memoryHighWaterGiB: 5, replicas: 2}
YAML

expect_rc 0 T plan -f "$TMP/vm.yaml" -o json
cp "$TMP/out" "$TMP/plan.json"
expect_rc 0 T render -f "$TMP/vm.yaml" --out-dir "$TMP/tree"
/usr/bin/python3 - "$TMP/plan.json" "$TMP/tree" <<'PY' && ok || bad "VM device as planned"
import json, os, sys, yaml
plan = json.load(open(sys.argv[1]))
d = sys.argv[2]
row = [r for r in plan["decisions"] if r["tenant"] == "lab"][0]
assert row["mechanism"] == "whole" and not row.get("profile"), row
cards = [g for g in plan["gpus"] if any(i["tenant"] == "lab" for i in g["instances"])]
assert sorted(g["index"] for g in cards) == [0, 1] and all(g["mode"] == "whole" for g in cards), cards
vms = list(yaml.safe_load_all(open(os.path.join(d, "tenants", "lab", "virtualmachines.yaml"))))
vms = [v for v in vms if v]
assert len(vms) == 2, len(vms)
names = [g["deviceName"] for v in vms for g in v["spec"]["template"]["spec"]["domain"]["devices"]["gpus"]]
assert names == ["nvidia.com/NVIDIA_A30_24GB"] * 2, names
kv = [x for x in yaml.safe_load_all(open(os.path.join(d, "cluster", "kubevirt-permitted-host-devices.yaml"))) if x][0]
phd = kv["spec"]["configuration"]["permittedHostDevices"]
assert phd.get("pciHostDevices") == [{"pciVendorSelector": "10DE:20B7",
                                      "resourceName": "nvidia.com/NVIDIA_A30_24GB"}], phd
assert not phd.get("mediatedDevices"), phd
PY

# a VM asking for a MIG instance or a pool share: refused, located
sed 's/replicas: 2}/replicas: 2, isolation: mig}/' "$TMP/vm.yaml" >"$TMP/vm-mig.yaml"
expect_rc 2 T plan -f "$TMP/vm-mig.yaml"
expect_in "$TMP/err" "vm-mig.yaml:17:5: Tenant/lab.spec.workloads[0]: isolation: mig cannot be given to a VM"
finish
