#!/usr/bin/env python3
"""plan_bench.py - the planner's speed and quality, side by side with its baselines.

For fleets of growing size, a seeded generator writes a spec of MIG inference
workloads (random profiles, 1-3 replicas, some spread across GPUs), then runs
`tessera plan` with the heuristic and with GLPK (exact, time limit), and reports
GPUs used against the lower bound and the naive layout, and wall time.
Usage: bench/plan_bench.py TESSERA [--quick]
"""
import json, random, subprocess, sys, tempfile, time, os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402  (one timed plan run)

PROFILES = [(9, 1), (19, 1), (18, 2), (38, 3), (38, 4)]   # (GiB, compute slices) on H100 80GB

def make_spec(seed, workloads, cards, nodes):
    r = random.Random(seed)
    per = cards // nodes
    out = ["apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: bench}\nspec:\n  nodes:"]
    for n in range(nodes):
        out.append("  - {name: node-%d, gpus: [{model: h100-80gb-sxm, count: %d}]}" % (n, per))
    out.append("---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: t}\n"
               "spec:\n  contract: isolated\n  namespaces: [t]\n  workloads:")
    for i in range(workloads):
        mem, cs = r.choice(PROFILES)
        out.append("  - {name: w%d, kind: inference, memoryHighWaterGiB: %d, p99Ms: 100, "
                   "computeSlices: %d, replicas: %d, spread: %s}"
                   % (i, mem, cs, r.choice([1, 1, 2, 3]), r.choice(["gpu", "none"])))
    return "\n".join(out) + "\n"

def run(tessera, path, solver, limit):
    return benchlib.plan_summary([tessera, "plan", "-f", path, "-o", "json", "--solver", solver,
                                  "--time-limit", str(limit)])

def main():
    tessera = sys.argv[1]
    quick = "--quick" in sys.argv
    sizes = [(8, 16, 1), (32, 64, 2), (96, 192, 4), (256, 512, 8), (1000, 3200, 400)]
    if quick:
        sizes = sizes[:2]
    seeds = range(3 if quick else 5)
    print("| workloads | cards | seeds | naive | lower bound | heuristic GPUs | heuristic s | "
          "GLPK GPUs | GLPK s | heuristic / bound |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for workloads, cards, nodes in sizes:
            tot = {"naive": 0, "lb": 0, "h": 0, "e": 0, "ht": 0.0, "et": 0.0, "efail": 0,
                   "skipped": 0}
            for seed in seeds:
                path = os.path.join(tmp, "s.yaml")
                open(path, "w").write(make_spec(seed, workloads, cards, nodes))
                h, ht = run(tessera, path, "heuristic", 10)
                e, et = run(tessera, path, "exact", 10)
                if h is None:
                    print("heuristic failed on seed %d" % seed, file=sys.stderr)
                    continue
                tot["naive"] += h["naiveGpus"]; tot["lb"] += h["lowerBound"]
                tot["h"] += h["gpusUsed"]; tot["ht"] += ht; tot["et"] += et
                if e is None:
                    tot["efail"] += 1; tot["e"] += h["gpusUsed"]
                else:
                    tot["e"] += e["gpusUsed"]
                    tot["skipped"] += "too large" in e["solver"]
            n = len(seeds)
            print("| %d | %d | %d | %.1f | %.1f | %.1f | %.3f | %.1f%s | %.2f | %.3f |" % (
                workloads, cards, n, tot["naive"] / n, tot["lb"] / n, tot["h"] / n, tot["ht"] / n,
                tot["e"] / n, (" (%d no answer)" % tot["efail"] if tot["efail"] else "") +
                (" (GLPK skipped %d: over 40,000 variables)" % tot["skipped"]
                 if tot["skipped"] else ""),
                tot["et"] / n, tot["h"] / max(tot["lb"], 1)))

if __name__ == "__main__":
    main()
