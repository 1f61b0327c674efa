#!/usr/bin/env python3
"""trace_spec.py - a tessera spec whose workloads are drawn from the Alibaba GPU trace.

Reads GPU pods (name,num_gpu,gpu_milli,qos: bench/fixtures/openb_gpu_pods.csv, reduced
from the 2023 "openb" trace; origin in bench/fixtures/README.md) and writes, on stdout, a Fleet of
GPUS cards in 8-card nodes of mixed models, a PriceBook, and tenants holding pods drawn
at random (seeded, with replacement) until their GPU demand reaches LOAD of the fleet.

The mapping from a pod to a workload (bench/RESULTS.md, "Planner on trace-derived fleets", explains it):
  num_gpu > 1, or gpu_milli = 1000   -> whole GPUs: kind training, gpus: num_gpu
  gpu_milli < 1000, QoS LS           -> latency-sensitive: p99Ms 100 and memory
                                        gpu_milli/1000 x 40 GiB; half of the LS tenants
                                        are outside clients (contract isolated: MIG),
                                        half internal teams (shared-trusted: MPS)
  gpu_milli < 1000, QoS BE           -> bestEffort (time-slicing guest), same memory;
                                        its tenant and one internal team trust each other
  Burstable / Guaranteed             -> as LS (the trace has them only as whole GPUs)
Usage: trace_spec.py --gpus N [--seed S] [--load F] [--workloads W | --all] [--trace CSV]
--workloads W draws exactly W pods instead of filling LOAD of the fleet; --all takes every
pod once, in trace order. A malformed trace row exits 2 naming FILE:LINE.
"""
import argparse, csv, os, random, sys

# (catalog model, share of the fleet's cards, price per GPU-hour)
MODELS = [("a100-80gb", 0.30, "1.60"), ("h100-80gb-sxm", 0.30, "2.90"),
          ("h200-141gb", 0.15, "3.70"), ("a30", 0.15, "0.80"), ("l40s", 0.10, "1.10")]
PER_NODE = 8
PER_TENANT = 100   # workloads per tenant (the spec allows 1,000)
FRACTION_BASE_GIB = 40.0   # gpu_milli is a share of a 40 GiB card

def die(msg):
    """Bad input: the message on stderr, exit 2 (as tessera does)."""
    sys.stderr.write("trace_spec.py: %s\n" % msg)
    sys.exit(2)

def read_pods(path):
    """GPU pods of the trace; a malformed row exits 2 naming FILE:LINE and the field."""
    pods = []
    with open(path) as f:
        rows = csv.DictReader(f)
        for need in ("num_gpu", "gpu_milli", "qos"):
            if need not in (rows.fieldnames or []):
                die("%s:1: no '%s' column" % (path, need))
        for row in rows:
            try:
                n, milli = int(row["num_gpu"]), int(row["gpu_milli"])
            except (TypeError, ValueError):
                die("%s:%d: num_gpu and gpu_milli must be integers, got %r and %r"
                         % (path, rows.line_num, row["num_gpu"], row["gpu_milli"]))
            if n < 0 or milli < 0 or milli > 1000:
                die("%s:%d: num_gpu must be >= 0 and gpu_milli in 0..1000"
                         % (path, rows.line_num))
            if n > 0:
                pods.append((n, milli, row["qos"]))
    return pods

def pod_gpus(pod):
    n, milli, _ = pod
    return n if n > 1 or milli >= 1000 else milli / 1000.0

def classify(pod):
    n, milli, qos = pod
    if n > 1 or milli >= 1000:
        return "whole"
    return "be" if qos == "BE" else "ls"

def fleet(gpus):
    nodes = -(-gpus // PER_NODE)
    out = ["apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: trace}\nspec:\n"
           "  nodes:"]
    plan, acc = [], 0.0
    for m, share, _ in MODELS:   # nodes per model, rounding carried so they add up
        acc += share * nodes
        plan.append((m, round(acc) - sum(k for _, k in plan)))
    left = gpus
    for m, k in plan:
        for _ in range(k):
            c = min(PER_NODE, left)
            if c <= 0:
                break
            out.append("  - {name: n%d, gpus: [{model: %s, count: %d}], cudaVersion: \"12.8\"}"
                       % (gpus - left, m, c))
            left -= c
    out.append("---\napiVersion: tessera.dev/v1alpha1\nkind: PriceBook\nmetadata: {name: list}\n"
               "spec:\n  currency: USD\n  prices:")
    out += ["  - {model: %s, perGpuHour: \"%s\"}" % (m, p) for m, _, p in MODELS]
    return out

def workload(i, pod):
    n, milli, _ = pod
    kind = classify(pod)
    if kind == "whole":
        return "  - {name: w%d, kind: training, gpus: %d, memoryHighWaterGiB: %d}" % (
            i, n, 20 * n)
    mem = max(0.5, round(milli / 1000.0 * FRACTION_BASE_GIB * 2) / 2)
    if kind == "be":
        return "  - {name: w%d, kind: batch, bestEffort: true, memoryHighWaterGiB: %g}" % (i, mem)
    return "  - {name: w%d, kind: inference, p99Ms: 100, memoryHighWaterGiB: %g}" % (i, mem)

def tenant(name, contract, trust, workloads, trusts=None):
    out = ["---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: %s}\nspec:\n"
           "  contract: %s\n  namespaces: [%s]" % (name, contract, name)]
    if trusts:
        out.append("  trusts: [%s]" % trusts)
    out.append("  workloads:")
    for w in workloads:
        out.append(w if not trust else w[:-1] + ", trust: %s}" % trust)
    return out

def tenants(drawn):
    """Whole and LS pods by turns to clients (isolated) and teams (shared-trusted);
    BE pods to dev tenants, dev-K trusting team-K."""
    groups = {"client": [], "team": [], "dev": []}
    for i, pod in enumerate(drawn):
        kind = classify(pod)
        who = "dev" if kind == "be" else ("client", "team")[(i // PER_TENANT) % 2]
        groups[who].append(workload(i, pod))
    out = []
    chunks = {k: [v[j:j + PER_TENANT] for j in range(0, len(v), PER_TENANT)]
              for k, v in groups.items()}
    for k, ws in enumerate(chunks["client"]):
        out += tenant("client-%d" % k, "isolated", "untrusted", ws)
    nteams = len(chunks["team"])
    for k, ws in enumerate(chunks["team"]):
        devs = [d for d in range(len(chunks["dev"])) if nteams and d % nteams == k]
        out += tenant("team-%d" % k, "shared-trusted", "trusted", ws,
                      ", ".join("dev-%d" % d for d in devs))
    for k, ws in enumerate(chunks["dev"]):
        out += tenant("dev-%d" % k, "best-effort", None, ws,
                      "team-%d" % (k % nteams) if nteams else None)
    return out

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--load", type=float, default=0.55)
    ap.add_argument("--workloads", type=int, default=0)
    ap.add_argument("--all", action="store_true", help="every pod once, in trace order")
    ap.add_argument("--trace", default=os.path.join(here, "fixtures", "openb_gpu_pods.csv"))
    a = ap.parse_args()
    if a.gpus < 1 or not 0 < a.load <= 1 or a.workloads < 0:
        ap.error("--gpus must be at least 1, --load in (0, 1], --workloads at least 0")
    pods = read_pods(a.trace)
    if not pods:
        ap.error("%s: no GPU pods" % a.trace)
    r = random.Random(a.seed)
    drawn, demand = [p for p in pods if p[0] <= PER_NODE] if a.all else [], 0.0
    while not a.all and (len(drawn) < a.workloads if a.workloads else demand < a.load * a.gpus):
        pod = r.choice(pods)
        if pod[0] > PER_NODE:
            continue
        drawn.append(pod)
        demand += pod_gpus(pod)
    sys.stdout.write("\n".join(fleet(a.gpus) + tenants(drawn)) + "\n")

if __name__ == "__main__":
    main()
