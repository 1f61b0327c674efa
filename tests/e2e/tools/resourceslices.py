#!/usr/bin/python3
"""resourceslices.py PLAN.json - the ResourceSlices (resource.k8s.io/v1) the
NVIDIA DRA driver for GPUs (driver gpu.nvidia.com) would publish for the
fleet of a plan (`tessera plan -o json`) once each node's cards hold the
plan's MIG layout. Prints a v1 List as JSON.

The shape follows the driver's kubelet plugin (NVIDIA/k8s-dra-driver-gpu,
cmd/gpu-kubelet-plugin/deviceinfo.go and mig.go at tag v25.12.0 and its
successor v0.4.0; docs/e2e.md says more):
- one slice per node, its pool named after the node, nodeName set;
- a whole GPU is device gpu-<minor> with attribute type "gpu"; a GPU in MIG
  mode publishes only its MIG devices, named
  gpu-<minor>-mig-<profile without dots>-<GI profile id>-<placement start>,
  type "mig", with parentUUID and profile;
- attributes uuid, productName (as NVML reports it), brand, architecture,
  cudaComputeCapability, driverVersion, cudaDriverVersion (versions);
- capacity memory (bytes) and, for MIG, multiprocessors and one
  memorySlice<i> per memory slice the instance holds.
UUIDs are made up from the node, card and placement, stable across runs."""
import hashlib
import json
import sys

# NVML's product name per catalog model, as nvidia-smi prints it
# (tests/fixtures/nvidia-smi holds real output for each).
PRODUCT = {
    "h100-80gb-sxm": ("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 81559),
}
# GI profile ids and SM counts (`tessera catalog show h100-80gb-sxm`)
PROFILE = {
    "1g.10gb": (19, 16), "1g.10gb+me": (20, 16), "1g.20gb": (15, 26), "2g.20gb": (14, 32),
    "3g.40gb": (9, 60), "4g.40gb": (5, 64), "7g.80gb": (0, 132),
}
DRIVER = "gpu.nvidia.com"


def uuid(prefix, *parts):
    h = hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()
    return "%s-%s-%s-%s-%s-%s" % (prefix, h[:8], h[8:12], h[12:16], h[16:20], h[20:32])


def common(model):
    name, arch, cc, _ = PRODUCT[model]
    return {
        "productName": {"string": name}, "brand": {"string": "Nvidia"},
        "architecture": {"string": arch}, "cudaComputeCapability": {"version": cc},
        "driverVersion": {"version": "570.124.6"}, "cudaDriverVersion": {"version": "12.8.0"},
    }


def devices(node, gpu):
    model, minor = gpu["model"], gpu["index"]
    parent = uuid("GPU", node, minor)
    if gpu["mode"] != "mig":
        attrs = dict(common(model), type={"string": "gpu"}, uuid={"string": parent})
        return [{"name": "gpu-%d" % minor, "attributes": attrs,
                 "capacity": {"memory": {"value": "%dMi" % PRODUCT[model][3]}}}]
    out = []
    for inst in gpu["instances"]:
        gi, sms = PROFILE[inst["profile"]]
        attrs = dict(common(model), type={"string": "mig"}, profile={"string": inst["profile"]},
                     parentUUID={"string": parent},
                     uuid={"string": uuid("MIG", node, minor, inst["start"])})
        cap = {"memory": {"value": "%dMi" % round(inst["memoryGiB"] * 1024)},
               "multiprocessors": {"value": str(sms)}}
        for s in range(inst["start"], inst["start"] + inst["size"]):
            cap["memorySlice%d" % s] = {"value": "1"}
        out.append({"name": "gpu-%d-mig-%s-%d-%d" % (minor, inst["profile"].replace(".", ""), gi,
                                                      inst["start"]),
                    "attributes": attrs, "capacity": cap})
    return out


def main():
    plan = json.load(open(sys.argv[1]))
    nodes = {}
    for gpu in plan["gpus"]:
        nodes.setdefault(gpu["node"], []).extend(devices(gpu["node"], gpu))
    items = [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
              "metadata": {"name": "%s-%s" % (node, DRIVER.replace(".", "-"))},
              "spec": {"driver": DRIVER, "nodeName": node,
                       "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                       "devices": devs}}
             for node, devs in sorted(nodes.items())]
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)


main()
