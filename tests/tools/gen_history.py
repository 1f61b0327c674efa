#!/usr/bin/env python3
"""gen_history.py - a long recorded dcgm-exporter history for the metering
crash test and benchmark (python3 standard library only).

Writes ONE Prometheus text exposition holding every scrape of HOURS hours at
15 s for 64 devices: 56 whole GPUs (28 H100 80GB HBM3, 28 A100-SXM4-80GB)
and 8 MIG instances (two H100 cards as 3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb),
each sample with its Prometheus millisecond timestamp, grouped by scrape
time. Series: DCGM_FI_DEV_GPU_UTIL (whole GPUs), DCGM_FI_DEV_FB_USED (all),
DCGM_FI_PROF_GR_ENGINE_ACTIVE (MIG instances and every other whole GPU).

Namespaces: acme-prod, acme-dev (tenant acme), globex-ml (globex),
initech-batch (initech), scratch (no tenant) and "" (no pod: no tenant).
Device d runs namespace NS[d % 6] until scrape s_d = (89 d + 7) % N, then
NS[(d + 2) % 6]. Its engine-active percentage at scrape k is
p = (k + 3 d) % 100; a GPU that reports both GPU_UTIL and the profiling
metric reports GPU_UTIL = (p + 50) % 100, which the meter must ignore.

Prints on stdout the usage every tessera must compute (tessera usage -o json
rows: tenant, model, profile, allocationMicroGpuHours, usageMicroGpuHours,
unknownUsageMicroGpuHours: 0, every sample has a known utilisation),
from the pattern in closed form: never from the file, never from tessera.
Usage: gen_history.py --hours H --out FILE [--spec FILE] [--expect FILE]
                      [--start UNIX_MS]   (--out - streams the history to stdout)
"""
import argparse
import json
import sys

STEP_MS = 15000
NS = ["acme-prod", "acme-dev", "globex-ml", "initech-batch", "scratch", ""]
OWNER = {"acme-prod": "acme", "acme-dev": "acme", "globex-ml": "globex",
         "initech-batch": "initech"}
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
MIG = [("3g.40gb", 1, 500000), ("2g.20gb", 5, 250000), ("1g.10gb", 13, 125000),
       ("1g.10gb", 14, 125000)]  # profile, GPU instance id, share of the card (memory slices / 8)

SPEC = """apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: history}
spec:
  nodes: [{name: spec-node, gpus: [{model: h100-80gb-sxm, count: 1}]}]
"""
TENANT = """---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: %s}
spec:
  contract: shared-trusted
  namespaces: [%s]
"""


def devices():
    """The 64 devices: dict(node, gpu, uuid, model, profile, gi, share, prof, util)."""
    out = []
    for g in range(56):
        out.append(dict(node="hist-node-%d" % (g // 8), gpu=g % 8,
                        uuid="GPU-%08x-0000-4000-8000-%012x" % (g, g),
                        model=H100 if g < 28 else A100, profile="", gi=None, share=1000000,
                        prof=g % 2 == 0, util=True))
    for c in range(2):
        for profile, gi, share in MIG:
            out.append(dict(node="hist-node-7", gpu=c, uuid="GPU-%08x-0000-4000-8000-%012x"
                            % (100 + c, 100 + c), model=H100, profile=profile, gi=gi,
                            share=share, prof=True, util=False))
    return out


def switch_at(d, n):
    return (89 * d + 7) % n


def label_text(dev, d, ns):
    mig = ',GPU_I_PROFILE="%s",GPU_I_ID="%d"' % (dev["profile"], dev["gi"]) if dev["gi"] else ""
    pod = 'pod-%d' % d if ns else ""
    return ('{gpu="%d",UUID="%s",device="nvidia%d",modelName="%s",Hostname="%s"%s,'
            'container="%s",namespace="%s",pod="%s"}'
            % (dev["gpu"], dev["uuid"], dev["gpu"], dev["model"], dev["node"], mig,
               "main" if ns else "", ns, pod))


def write(path, n, start_ms):
    devs = devices()
    heads = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
             "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
             "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).",
             "# TYPE DCGM_FI_DEV_FB_USED gauge",
             "# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the graphics engine is active.",
             "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge"]
    # labels change only at each device's switch: precompute both texts
    before = [label_text(dev, d, NS[d % 6]) for d, dev in enumerate(devs)]
    after = [label_text(dev, d, NS[(d + 2) % 6]) for d, dev in enumerate(devs)]
    switch = [switch_at(d, n) for d in range(len(devs))]
    with open(1 if path == "-" else path, "w", buffering=1 << 20) as f:
        f.write("\n".join(heads) + "\n")
        for k in range(n):
            ts = start_ms + k * STEP_MS
            lines = []
            for d, dev in enumerate(devs):
                lab = before[d] if k < switch[d] else after[d]
                p = (k + 3 * d) % 100
                if dev["util"]:
                    lines.append("DCGM_FI_DEV_GPU_UTIL%s %d %d" %
                                 (lab, (p + 50) % 100 if dev["prof"] else p, ts))
                lines.append("DCGM_FI_DEV_FB_USED%s %d %d" % (lab, 1000 + (k * 7 + d) % 70000, ts))
                if dev["prof"]:
                    lines.append("DCGM_FI_PROF_GR_ENGINE_ACTIVE%s %d.%02d %d" %
                                 (lab, p // 100, p % 100, ts))
            f.write("\n".join(lines) + "\n")


def cyc(x):
    """sum of j % 100 for 0 <= j < x."""
    return (x // 100) * 4950 + (x % 100) * (x % 100 - 1) // 2


def expected(n):
    """Closed form: per device, N-1 intervals of 15 s, the first s_d billed to
    the first namespace's owner, the rest to the second's; usage weighs each
    interval by p/100 (so 15000 x share x p x 10^4 / 10^6 = 150 x share x p)."""
    alloc, usage = {}, {}
    for d, dev in enumerate(devices()):
        s = min(switch_at(d, n), n - 1)
        for ns, a, b in ((NS[d % 6], 0, s), (NS[(d + 2) % 6], s, n - 1)):
            if b <= a:
                continue
            key = (OWNER.get(ns, "unattributed"), dev["model"], dev["profile"])
            psum = cyc(b + 3 * d) - cyc(a + 3 * d)
            alloc[key] = alloc.get(key, 0) + (b - a) * STEP_MS * dev["share"]
            usage[key] = usage.get(key, 0) + 150 * dev["share"] * psum
    rows = []
    for key in sorted(alloc):
        rows.append({"tenant": key[0], "model": key[1], "profile": key[2],
                     "allocationMicroGpuHours": (alloc[key] + 1800000) // 3600000,
                     "usageMicroGpuHours": (usage[key] + 1800000) // 3600000,
                     "unknownUsageMicroGpuHours": 0})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--out", required=True)
    ap.add_argument("--spec", help="also write the tenancy spec naming the tenants")
    ap.add_argument("--expect", help="write the expected usage here, not to stdout")
    ap.add_argument("--start", type=int, default=1767225600000)  # 2026-01-01T00:00:00Z
    a = ap.parse_args()
    n = int(a.hours * 3600 * 1000 // STEP_MS)
    if n < 2:
        sys.exit("gen_history.py: --hours too small")
    if a.out == "-" and not a.expect:
        sys.exit("gen_history.py: --out - needs --expect FILE")
    if a.spec:
        with open(a.spec, "w") as f:
            f.write(SPEC)
            for t, nss in (("acme", "acme-prod, acme-dev"), ("globex", "globex-ml"),
                           ("initech", "initech-batch")):
                f.write(TENANT % (t, nss))
    write(a.out, n, a.start)
    doc = {"scrapes": n, "devices": 64, "samples": n * 64, "rows": expected(n)}
    with open(a.expect or 1, "w", closefd=bool(a.expect)) as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
