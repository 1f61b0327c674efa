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
unknownUsageMicroGpuHours), from the pattern in closed form: never from
the file, never from tessera.

--wide W adds W whole A100s of the same pattern (64 + W devices per scrape
time); --extras adds a whole H100 that lists two pods of two tenants at
every scrape (each charged half the card), a whole H100 with no utilisation
metric (its hours in the unknown column), and writes every scrape time
k with k % 10 == 3 after k + 1 (late scrapes).
Usage: gen_history.py --hours H --out FILE [--spec FILE] [--expect FILE]
                      [--start UNIX_MS] [--wide W] [--extras]
                      (--out - streams the history to stdout)
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
# usage names a model by its catalog key with the display name beside it
# (src/catalog/builtin.yaml: productNames -> name, displayName)
CATALOG = {H100: ("h100-80gb-sxm", "NVIDIA H100 80GB SXM5"), A100: ("a100-80gb", "NVIDIA A100 80GB")}
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


def devices(wide=0, extras=False):
    """The 64 devices: dict(node, gpu, uuid, model, profile, gi, share, prof, util), then
    `wide` more whole A100s like the first 56 (so one scrape time lists 64 + wide devices),
    then with extras: a whole H100 listed with two pods of two tenants every scrape (pods:
    each pod charged half the card) and a whole H100 with no utilisation metric (unknown)."""
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
    for w in range(wide):
        out.append(dict(node="wide-node-%d" % (w // 8), gpu=w % 8,
                        uuid="GPU-%08x-0000-4000-8000-%012x" % (1000 + w, 1000 + w),
                        model=A100, profile="", gi=None, share=1000000, prof=False, util=True))
    if extras:
        out.append(dict(node="extra-node", gpu=0, uuid="GPU-shared-0", model=H100, profile="",
                        gi=None, share=500000, prof=False, util=True,
                        pods=[("acme-prod", "sa"), ("globex-ml", "sb")]))
        out.append(dict(node="extra-node", gpu=1, uuid="GPU-unknown-0", model=H100, profile="",
                        gi=None, share=1000000, prof=False, util=False,
                        pods=[("initech-batch", "u")]))
    return out


def switch_at(d, n):
    return (89 * d + 7) % n


def label_text(dev, d, ns, pod=None):
    mig = ',GPU_I_PROFILE="%s",GPU_I_ID="%d"' % (dev["profile"], dev["gi"]) if dev["gi"] else ""
    pod = pod or ('pod-%d' % d if ns else "")
    return ('{gpu="%d",UUID="%s",device="nvidia%d",modelName="%s",Hostname="%s"%s,'
            'container="%s",namespace="%s",pod="%s"}'
            % (dev["gpu"], dev["uuid"], dev["gpu"], dev["model"], dev["node"], mig,
               "main" if ns else "", ns, pod))


def device_lines(dev, d, lab, k, ts):
    p = (k + 3 * d) % 100
    lines = []
    if dev["util"]:
        util = (p + 50) % 100 if dev["prof"] else p
        lines.append("DCGM_FI_DEV_GPU_UTIL%s %d %d" % (lab, util, ts))
    lines.append("DCGM_FI_DEV_FB_USED%s %d %d" % (lab, 1000 + (k * 7 + d) % 70000, ts))
    if dev["prof"]:
        lines.append("DCGM_FI_PROF_GR_ENGINE_ACTIVE%s %d.%02d %d" % (lab, p // 100, p % 100, ts))
    return lines


def write(path, n, start_ms, devs, late):
    """late: scrape times k with k % 10 == 3 are written after k + 1 (a late scrape)."""
    heads = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
             "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
             "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).",
             "# TYPE DCGM_FI_DEV_FB_USED gauge",
             "# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the graphics engine is active.",
             "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge"]
    # labels change only at each device's switch: precompute both texts
    before = [label_text(dev, d, NS[d % 6]) for d, dev in enumerate(devs)]
    after = [label_text(dev, d, NS[(d + 2) % 6]) for d, dev in enumerate(devs)]
    pods = [[label_text(dev, d, ns, pod) for ns, pod in dev.get("pods", [])]
            for d, dev in enumerate(devs)]
    switch = [switch_at(d, n) for d in range(len(devs))]
    order = list(range(n))
    for k in range(n - 1):
        if late and k % 10 == 3:
            order[k], order[k + 1] = order[k + 1], order[k]
    with open(1 if path == "-" else path, "w", buffering=1 << 20) as f:
        f.write("\n".join(heads) + "\n")
        for k in order:
            ts = start_ms + k * STEP_MS
            lines = []
            for d, dev in enumerate(devs):
                for lab in pods[d] or [before[d] if k < switch[d] else after[d]]:
                    lines += device_lines(dev, d, lab, k, ts)
            f.write("\n".join(lines) + "\n")


def cyc(x):
    """sum of j % 100 for 0 <= j < x."""
    return (x // 100) * 4950 + (x % 100) * (x % 100 - 1) // 2


def expected(n, devs):
    """Closed form: per device, N-1 intervals of 15 s, the first s_d billed to
    the first namespace's owner, the rest to the second's; usage weighs each
    interval by p/100 (so 15000 x share x p x 10^4 / 10^6 = 150 x share x p)."""
    alloc, usage, unknown = {}, {}, {}
    for d, dev in enumerate(devs):
        s = min(switch_at(d, n), n - 1)
        spans = ((NS[d % 6], 0, s), (NS[(d + 2) % 6], s, n - 1))
        if "pods" in dev:  # every pod listed, the whole time
            spans = [(ns, 0, n - 1) for ns, _ in dev["pods"]]
        for ns, a, b in spans:
            if b <= a:
                continue
            key = (OWNER.get(ns, "unattributed"), dev["model"], dev["profile"])
            psum = cyc(b + 3 * d) - cyc(a + 3 * d)
            alloc[key] = alloc.get(key, 0) + (b - a) * STEP_MS * dev["share"]
            usage.setdefault(key, 0)
            unknown.setdefault(key, 0)
            if dev["util"] or dev["prof"]:
                usage[key] += 150 * dev["share"] * psum
            else:
                unknown[key] += (b - a) * STEP_MS * dev["share"]
    rows = []
    for key in sorted(alloc):
        model, display = CATALOG[key[1]]
        rows.append({"tenant": key[0], "model": model, "displayName": display,
                     "profile": key[2] or "whole",
                     "allocationMicroGpuHours": (alloc[key] + 1800000) // 3600000,
                     "usageMicroGpuHours": (usage[key] + 1800000) // 3600000,
                     "unknownUsageMicroGpuHours": (unknown[key] + 1800000) // 3600000})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--out", required=True)
    ap.add_argument("--spec", help="also write the tenancy spec naming the tenants")
    ap.add_argument("--expect", help="write the expected usage here, not to stdout")
    ap.add_argument("--start", type=int, default=1767225600000)  # 2026-01-01T00:00:00Z
    ap.add_argument("--wide", type=int, default=0, help="more whole GPUs per scrape time")
    ap.add_argument("--extras", action="store_true",
                    help="a card listing two tenants' pods, a card without utilisation, and "
                    "every tenth scrape time written after the next (late)")
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
    devs = devices(a.wide, a.extras)
    write(a.out, n, a.start, devs, a.extras)
    per_time = sum(len(dev.get("pods", [None])) for dev in devs)
    doc = {"scrapes": n, "devices": per_time, "samples": n * per_time, "rows": expected(n, devs)}
    with open(a.expect or 1, "w", closefd=bool(a.expect)) as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
