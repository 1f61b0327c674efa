#!/bin/bash
# render_vm.sh - a VM gets exactly the device the plan gives it (issue 30).
# A MIG instance reaches a VM only as a MIG-backed vGPU, which needs a
# licensed node; without one the plan gives the VM whole A30 cards and
# render names the PCI pass-through device of that card. On a licensed node
# the plan gives a MIG-backed vGPU and render names its mediated type. On a
# licensed node without MIG (an L40S) a vGPU would be a time-sliced type the
# size of the whole card, which tessera does not name: the plan says whole
# (pass-through) and render gives the PCI device (before: the plan said vgpu
# and render passed the card through). Expected values by hand, from
# src/catalog/builtin.yaml (NVIDIA's PCI device IDs and display names): A30
# 20B7 "NVIDIA A30 24GB" -> nvidia.com/NVIDIA_A30_24GB, selector 10DE:20B7;
# L40S 26B9 "NVIDIA L40S 48GB" -> nvidia.com/NVIDIA_L40S_48GB; a 5 GiB VM on
# a licensed A30 takes 1g.6gb -> vGPU type "NVIDIA A30-1-6C", resource
# nvidia.com/NVIDIA_A30-1-6C. A VM that asks for isolation: mig or
# time-slicing is refused, and isolation: vgpu where only a whole-card vGPU
# could be given (exit 2, located). Needs TESSERA, TESSERA_SRC.
. "$(dirname "$0")/../lib.sh"
T() { "$TESSERA" "$@"; }

# vm_spec FILE MODEL LICENCE-LINE: a node of 2 MODEL cards, lab's VM (2 replicas)
vm_spec() {
    cat >"$1" <<YAML
apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: f}
spec:
  nodes:
  - name: node-1
$3    gpus:
    - {model: $2, count: 2}
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
}

# device CASE MECH PROFILE MODE RESOURCE PCI MDEV: CASE.yaml plans lab's two
# replicas at MECH/PROFILE on cards of MODE; both VMs name RESOURCE, and
# KubeVirt permits exactly the PCI selector PCI and the vGPU type MDEV ("" none)
device() {
    expect_rc 0 T plan -f "$TMP/$1.yaml" -o json
    cp "$TMP/out" "$TMP/$1.json"
    expect_rc 0 T render -f "$TMP/$1.yaml" --out-dir "$TMP/$1"
    /usr/bin/python3 - "$TMP/$1.json" "$TMP/$1" "${@:2}" <<'PY' && ok || bad "$1: VM device as planned"
import json, os, sys, yaml
plan, d, mech, profile, mode, res, pci, mdev = json.load(open(sys.argv[1])), *sys.argv[2:]
row = [r for r in plan["decisions"] if r["tenant"] == "lab"][0]
assert (row["mechanism"], row.get("profile") or "") == (mech, profile), row
cards = [g for g in plan["gpus"] if any(i["tenant"] == "lab" for i in g["instances"])]
assert all(g["mode"] == mode for g in cards), cards
vms = [v for v in yaml.safe_load_all(open(os.path.join(d, "tenants", "lab", "virtualmachines.yaml"))) if v]
names = [g["deviceName"] for v in vms for g in v["spec"]["template"]["spec"]["domain"]["devices"]["gpus"]]
assert names == [res] * 2, names
kv = [x for x in yaml.safe_load_all(open(os.path.join(d, "cluster", "kubevirt-permitted-host-devices.yaml"))) if x][0]
phd = kv["spec"]["configuration"]["permittedHostDevices"]
want_pci = [{"pciVendorSelector": pci, "resourceName": res}] if pci else []
want_mdev = [{"mdevNameSelector": mdev, "resourceName": res}] if mdev else []
assert (phd.get("pciHostDevices") or []) == want_pci, phd
assert (phd.get("mediatedDevices") or []) == want_mdev, phd
PY
}

vm_spec "$TMP/a30.yaml" a30 ""
device a30 whole "" whole nvidia.com/NVIDIA_A30_24GB 10DE:20B7 ""
vm_spec "$TMP/a30-lic.yaml" a30 "    vgpuLicensed: true
"
device a30-lic vgpu 1g.6gb mig "nvidia.com/NVIDIA_A30-1-6C" "" "NVIDIA A30-1-6C"
vm_spec "$TMP/l40s-lic.yaml" l40s "    vgpuLicensed: true
"
device l40s-lic whole "" whole nvidia.com/NVIDIA_L40S_48GB 10DE:26B9 ""
expect_in "$TMP/l40s-lic.json" "(a vGPU is MIG-backed here; without MIG it would be the whole card): the whole GPU is passed through"

# a VM asking for a MIG instance or a pool share: refused, located; and a
# vGPU where only a whole-card one could be given
sed 's/replicas: 2}/replicas: 2, isolation: mig}/' "$TMP/a30.yaml" >"$TMP/vm-mig.yaml"
expect_rc 2 T plan -f "$TMP/vm-mig.yaml"
expect_in "$TMP/err" "vm-mig.yaml:17:5: Tenant/lab.spec.workloads[0]: isolation: mig cannot be given to a VM"
sed 's/replicas: 2}/replicas: 2, isolation: vgpu}/' "$TMP/l40s-lic.yaml" >"$TMP/vm-vgpu.yaml"
expect_rc 2 T plan -f "$TMP/vm-vgpu.yaml"
expect_in "$TMP/err" "vm-vgpu.yaml:18:5: Tenant/lab.spec.workloads[0]: isolation: vgpu was requested but no vGPU-licensed node has a MIG card with a profile that holds 5 GiB"
finish
