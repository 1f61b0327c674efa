#!/usr/bin/env python3
"""meter_tenants.py - a fleet of many tenants for the invoice benchmark
(bench/meter_bench.sh; python3 standard library only).

Writes a spec (--spec-dir: fleet.yaml with a Fleet and a PriceBook in EUR for
the H100 and the A100, tenants-N.yaml with TENANTS Tenants t0000, t0001, ...
each with one namespace of its name, 500 a file: a file holds at most 1,000
documents) and
one exposition (--out) of HOURS hours at 15 s for GPUS whole GPUs (half H100
80GB HBM3, half A100-SXM4-80GB), each sample with its millisecond timestamp,
grouped by scrape time. Device d runs tenant (d + GPUS x h) % TENANTS in
hour h, so every tenant is billed when GPUS x HOURS >= TENANTS. Its
DCGM_FI_DEV_GPU_UTIL at scrape k is (k + 3 d) % 100.
Usage: meter_tenants.py --tenants N --gpus G --hours H --out FILE --spec-dir DIR
                        [--start UNIX_MS]
"""
import argparse

STEP_MS = 15000
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"


def spec(folder, tenants):
    with open(folder + "/fleet.yaml", "w") as f:
        f.write("apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: tenants}\n"
                "spec:\n  nodes: [{name: spec-node, gpus: [{model: h100-80gb-sxm, count: 1}]}]\n"
                "---\napiVersion: tessera.dev/v1alpha1\nkind: PriceBook\nmetadata: {name: p}\n"
                "spec:\n  currency: EUR\n  prices: [{model: h100-80gb-sxm, perGpuHour: \"2.90\"},"
                " {model: a100-80gb, perGpuHour: \"1.85\"}]\n")
    for first in range(0, tenants, 500):
        with open("%s/tenants-%d.yaml" % (folder, first // 500), "w") as f:
            for t in range(first, min(first + 500, tenants)):
                f.write("---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\n"
                        "metadata: {name: t%04d}\nspec:\n  contract: shared-trusted\n"
                        "  namespaces: [t%04d]\n" % (t, t))


def history(path, tenants, gpus, hours, start):
    labels = []
    for d in range(gpus):
        model = H100 if d < gpus // 2 else A100
        labels.append(('{gpu="%d",UUID="GPU-%08x-0000-4000-8000-%012x",device="nvidia%d",'
                       'modelName="%s",Hostname="node-%d",container="main",namespace="%%s",'
                       'pod="p-%d"}') % (d % 8, d, d, d % 8, model, d // 8, d))
    n = int(hours * 3600000 // STEP_MS)
    with open(path, "w", buffering=1 << 20) as f:
        f.write("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n")
        for k in range(n):
            ts = start + k * STEP_MS
            h = k * STEP_MS // 3600000
            f.write("".join("DCGM_FI_DEV_GPU_UTIL%s %d %d\n"
                            % (labels[d] % ("t%04d" % ((d + gpus * h) % tenants)),
                               (k + 3 * d) % 100, ts) for d in range(gpus)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tenants", type=int, default=1000)
    ap.add_argument("--gpus", type=int, default=512)
    ap.add_argument("--hours", type=float, default=2)
    ap.add_argument("--start", type=int, default=1767225600000)  # 2026-01-01T00:00:00Z
    ap.add_argument("--out", required=True)
    ap.add_argument("--spec-dir", required=True)
    a = ap.parse_args()
    spec(a.spec_dir, a.tenants)
    history(a.out, a.tenants, a.gpus, a.hours, a.start)


if __name__ == "__main__":
    main()
