#!/usr/bin/python3
"""demo-day.py - a recorded day of dcgm-exporter scrapes for a tessera plan.

Reads `tessera plan -o json` on stdin and writes, for one day at a 15 s
scrape interval, what dcgm-exporter would have served for the plan's cards,
as one Prometheus exposition file with millisecond timestamps (grouped by
scrape time). Used by `make demo` (scripts/demo-meter); synthetic but in
the exporter's real label set (see tests/fixtures/dcgm/).

    demo-day.py --spec SPEC --day 2026-11-02 --out DAY.prom --inventory INV.txt < plan.json

Each MIG instance is a device (GPU UUID + GPU_I_ID); inference instances
carry their tenant's pod (in the workload's namespace from SPEC) all day
with a daily load curve; the fine-tune card
has its pod only at night, idle (no pod) otherwise; the time-sliced guests
on it (the notebooks) have their pod in office hours (08:00-20:00), a series
of their own on the card's labels, as dcgm-exporter reports each pod of a
shared GPU. --inventory writes the
matching NodeInventory JSON (docs/agent.md: GPU and MIG UUIDs, GPU instance
ids and placements), as `tessera agent inventory -o json` would report the
node, for the custody ledger.
"""
import argparse
import datetime
import hashlib
import json
import math
import sys

import yaml

MODEL_NAMES = {"h100-80gb-sxm": "NVIDIA H100 80GB HBM3"}
# NVML's GPU-instance profile IDs on H100 (src/catalog/builtin.yaml) and its
# compute-instance profile IDs by slice count (NVML_COMPUTE_INSTANCE_PROFILE_*)
GI_PROFILE_IDS = {"1g.10gb": 19, "1g.20gb": 15, "2g.20gb": 14, "3g.40gb": 9, "4g.40gb": 5,
                  "7g.80gb": 0}
CI_PROFILE_IDS = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4}


def uuid(kind, *parts):
    h = hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()
    return f"{kind}-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def namespaces_of(spec_path):
    """(tenant, workload) -> the namespace its pods run in."""
    out = {}
    with open(spec_path) as f:
        for doc in yaml.safe_load_all(f):
            if not doc or doc.get("kind") != "Tenant":
                continue
            spec = doc["spec"]
            for w in spec.get("workloads", []):
                out[doc["metadata"]["name"], w["name"]] = w.get("namespace", spec["namespaces"][0])
    return out


def devices(plan, namespaces):
    """One entry per device dcgm-exporter reports: (labels, pod, kind, where)."""
    out = []
    for g in plan["gpus"]:
        gpu_uuid = uuid("GPU", g["node"], g["index"])
        base = {"gpu": str(g["index"]), "UUID": gpu_uuid,
                "pci_bus_id": f"00000000:{0x18 + 0x10 * g['index']:02X}:00.0",
                "device": f"nvidia{g['index']}",
                "modelName": MODEL_NAMES.get(g["model"], g["model"]), "Hostname": g["node"]}
        if g["mode"] == "mig":
            for gi, inst in enumerate(g["instances"], start=1):
                labels = dict(base, GPU_I_PROFILE=inst["profile"], GPU_I_ID=str(gi))
                tenant = inst.get("tenant")
                pod = None
                if tenant:
                    pod = (namespaces[tenant, inst["workload"]], f"{inst['workload']}-{inst['replica']}")
                out.append((labels, pod, "inference", (g, inst, gi)))
        else:
            inst = g["instances"][0] if g["instances"] else {}
            tenant = inst.get("tenant")
            pod = (namespaces[tenant, inst["workload"]], f"{inst['workload']}-0") if tenant else None
            out.append((dict(base), pod, "nightly", (g, None, None)))
            for guest in (i for i in g["instances"][1:] if i.get("guest") and i.get("tenant")):
                pod = (namespaces[guest["tenant"], guest["workload"]],
                       f"{guest['workload']}-{guest['replica']}")
                out.append((dict(base), pod, "office", (g, None, None)))
    return out


def present(kind, hour):
    """Whether the device's pod runs at hour (the office guests: a series only then)."""
    return {"nightly": hour < 6, "office": 8 <= hour < 20}.get(kind, True)


def load(kind, hour):
    if kind == "office":
        return 0.35 if present(kind, hour) else 0.0
    if kind == "nightly":
        return 0.95 if hour < 6 else 0.0
    return 0.25 + 0.6 * max(0.0, math.sin((hour - 6) / 24 * 2 * math.pi))


def label_text(labels):
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def write_day(devs, day, out):
    start = int(datetime.datetime.combine(day, datetime.time(), datetime.timezone.utc).timestamp())
    for t in range(0, 86400, 15):
        ts = (start + t) * 1000
        hour = t / 3600
        for metric in ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED"):
            for labels, pod, kind, _ in devs:
                if kind == "office" and not present(kind, hour):
                    continue
                lab = dict(labels)
                busy = load(kind, hour)
                if pod and present(kind, hour):
                    lab.update(container="main", namespace=pod[0], pod=pod[1])
                value = f"{busy:.6f}" if metric.endswith("ACTIVE") else str(int(1024 + 8000 * busy))
                out.write(f"{metric}{{{label_text(lab)}}} {value} {ts}\n")


def write_inventory(devs, out):
    gpus = {}
    for labels, _, _, (g, inst, gi) in devs:
        card = gpus.setdefault(g["index"], {
            "index": g["index"], "uuid": labels["UUID"], "name": labels["modelName"],
            "pciBusId": labels["pci_bus_id"], "memoryMiB": 81559, "computeMode": "default",
            "migMode": {"current": "enabled" if inst else "disabled",
                        "pending": "enabled" if inst else "disabled"},
            "gpuInstances": [], "profiles": []})
        if inst is not None:
            slices = int(inst["profile"].split("g.")[0])
            card["gpuInstances"].append({
                "id": gi, "profile": inst["profile"], "profileId": GI_PROFILE_IDS[inst["profile"]],
                "computeSlices": slices,
                "placement": {"start": inst["start"], "size": inst["size"]},
                "computeInstances": [{"id": 0, "profile": inst["profile"],
                                      "profileId": CI_PROFILE_IDS[slices], "computeSlices": slices,
                                      "placement": {"start": 0, "size": slices},
                                      "uuid": uuid("MIG", labels["UUID"], gi)}]})
    node = devs[0][0]["Hostname"]
    json.dump({"apiVersion": "tessera.dev/v1alpha1", "kind": "NodeInventory", "node": node,
               "gpus": list(gpus.values())}, out, indent=2, sort_keys=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    ap.add_argument("--day", required=True, type=datetime.date.fromisoformat)
    ap.add_argument("--out", required=True)
    ap.add_argument("--inventory")
    a = ap.parse_args()
    devs = devices(json.load(sys.stdin), namespaces_of(a.spec))
    with open(a.out, "w") as f:
        write_day(devs, a.day, f)
    if a.inventory:
        with open(a.inventory, "w") as f:
            write_inventory(devs, f)


if __name__ == "__main__":
    main()
