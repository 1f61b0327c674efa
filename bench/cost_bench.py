#!/usr/bin/env python3
"""cost_bench.py - the cost objective on small priced fleets, against an independent exact ILP.

A seeded generator writes small fleets of 2-4 card models with a PriceBook, and workloads
that are whole GPUs (training, 1 or 2 GPUs a replica on one node) or MIG instances behind a
hardware boundary (untrusted inference: the smallest profile that holds the need on a
MIG-capable model, a whole card on one that is not). For each, `tessera plan` runs with
decide's one-at-a-time models (--time-limit 0, "before") and with the cost objective
(default), and this script writes its own placement ILP in CPLEX LP format and solves it
with `glpsol` (GLPK's command-line solver, a separate program from tessera's library
calls): a binary per card (used, MIG or whole), per replica and node, per replica and
card, per MIG instance and legal start; grid units cover at most once, compute slices
within the card, each workload on one model, a multi-GPU replica on one node, a
workload's replicas on distinct cards (the spec's default spread: gpu). Nothing of
tessera's cost program (classes, configurations, pool groups) is reused, so the exact
optimum checks both tessera's plan (is it the cheapest?) and its LP bound (is it at most
the optimum?).
Usage: bench/cost_bench.py TESSERA [--quick] [--cases N]
"""
import json, math, os, random, re, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402  (the catalog's models, one timed plan run)
MODELS = [("a30", "0.80"), ("l40s", "1.10"), ("a100-80gb", "1.60"), ("h100-80gb-sxm", "2.90")]


def catalog():
    """name -> {memory, grid, slices, mig, profiles: [(name, GiB, units, compute, starts)]}"""
    out = {}
    for name, doc, num in benchlib.catalog_docs():
        profs = [(p.group(1), float(p.group(3)), int(p.group(6)), int(p.group(2)),
                  [int(s) for s in p.group(5).split(",")])
                 for p in re.finditer(benchlib.PROFILE_RE, doc)]
        out[name] = {"memory": num("memoryGiB", 0), "grid": int(num("migGrid", 8)),
                     "slices": int(num("computeSlices", 7)), "mig": "\n  mig: true" in doc,
                     "profiles": [p for p in profs if "+" not in p[0]]}
    return out


def make_case(seed):
    r = random.Random(seed)
    models = r.sample(MODELS, r.choice([2, 3, 4]))
    nodes = [(m, r.choice([1, 2, 3, 4])) for m, _ in models]
    work = []
    for i in range(r.choice([3, 4, 5, 6])):
        if r.random() < 0.5:
            gpus = r.choice([1, 1, 2])
            work.append({"name": "t%d" % i, "whole": True, "gpus": gpus,
                         "mem": r.choice([16, 20, 22]) * gpus, "replicas": r.choice([1, 1, 2])})
        else:
            work.append({"name": "m%d" % i, "whole": False, "gpus": 1,
                         "mem": r.choice([5, 9, 18]), "replicas": r.choice([1, 2, 3])})
    return models, nodes, work


def spec_text(models, nodes, work):
    out = ["apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n  nodes:"]
    for k, (m, n) in enumerate(nodes):
        out.append("  - {name: n%d, gpus: [{model: %s, count: %d}]}" % (k, m, n))
    out.append("---\napiVersion: tessera.dev/v1alpha1\nkind: PriceBook\nmetadata: {name: p}\n"
               "spec:\n  currency: USD\n  prices:")
    out += ["  - {model: %s, perGpuHour: \"%s\"}" % mp for mp in models]
    out.append("---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: t}\n"
               "spec:\n  contract: isolated\n  namespaces: [t]\n  workloads:")
    for w in work:
        if w["whole"]:
            out.append("  - {name: %s, kind: training, gpus: %d, memoryHighWaterGiB: %d, "
                       "replicas: %d}" % (w["name"], w["gpus"], w["mem"], w["replicas"]))
        else:
            out.append("  - {name: %s, kind: inference, memoryHighWaterGiB: %d, p99Ms: 100, "
                       "trust: untrusted, replicas: %d}" % (w["name"], w["mem"], w["replicas"]))
    return "\n".join(out) + "\n"


def options(w, model, cat):
    """How w runs on model: ("whole", cards a replica) or ("mig", units, compute, starts)."""
    c = cat[model]
    if not w["whole"] and c["mig"]:
        fit = [p for p in c["profiles"] if p[1] >= w["mem"]]
        if fit:
            p = min(fit, key=lambda p: (p[2], p[3]))
            return ("mig", p[2], p[3], p[4])
    n = max(w["gpus"], math.ceil(w["mem"] / c["memory"] - 1e-9))
    if n > w["gpus"] and w["gpus"] == 1:
        return None
    return ("whole", n)


def exact_lp(models, nodes, work, cat):
    price = dict((m, float(p)) for m, p in models)
    cards = [(k, m) for k, (m, n) in enumerate(nodes) for _ in range(n)]
    obj, cons, bins = [], [], []
    def var(name):
        bins.append(name)
        return name
    for c, (k, m) in enumerate(cards):
        obj.append("%g %s" % (price[m], var("used_%d" % c)))
        var("mig_%d" % c)
        cons.append("mig_%d - used_%d <= 0" % (c, c))
    hold = {c: [] for c in range(len(cards))}   # whole-card terms per card
    units = {}                                  # (card, unit) -> MIG terms
    comp = {c: [] for c in range(len(cards))}
    apart = {}                                  # (workload, card) -> its MIG instances
    for wi, w in enumerate(work):
        pick = []
        for m, _ in models:
            o = options(w, m, cat)
            if o is None:
                continue
            x = var("x_%d_%s" % (wi, re.sub(r"\W", "_", m)))
            pick.append(x)
            for rep in range(w["replicas"]):
                on = []
                if o[0] == "mig":
                    for c, (k, cm) in enumerate(cards):
                        if cm != m:
                            continue
                        for s in o[3]:
                            v = var("v_%d_%d_%d_%d" % (wi, rep, c, s))
                            on.append(v)
                            apart.setdefault((wi, c), []).append(v)
                            cons.append("%s - mig_%d <= 0" % (v, c))
                            comp[c].append("%d %s" % (o[2], v))
                            for g in range(s, s + o[1]):
                                units.setdefault((c, g), []).append(v)
                else:
                    for k, (nm, _) in enumerate(nodes):
                        if nm != m:
                            continue
                        u = var("u_%d_%d_%d" % (wi, rep, k))
                        on.append(u)
                        here = []
                        for c, (ck, _) in enumerate(cards):
                            if ck == k:
                                wc = var("wc_%d_%d_%d" % (wi, rep, c))
                                here.append(wc)
                                hold[c].append(wc)
                        cons.append(" + ".join(here) + " - %d %s = 0" % (o[1], u))
                cons.append((" + ".join(on) if on else "0 " + x) + " - %s = 0" % x)
        if not pick:
            return None
        cons.append(" + ".join(pick) + " = 1")
    for c in range(len(cards)):
        cons.append(" + ".join(hold[c] + ["mig_%d" % c]) + " - used_%d <= 0" % c)
        if comp[c]:
            cons.append(" + ".join(comp[c]) + " <= %d" % cat[cards[c][1]]["slices"])
    for terms in list(units.values()) + list(apart.values()):
        cons.append(" + ".join(terms) + " <= 1")
    lines = ["Minimize", " obj: " + " + ".join(obj), "Subject To"]
    lines += [" c%d: %s" % (i, t) for i, t in enumerate(cons)]
    lines += ["Binary"] + [" " + b for b in bins] + ["End"]
    return "\n".join(lines) + "\n"


def glpsol(path, limit):
    out = path + ".out"
    t0 = time.perf_counter()
    p = subprocess.run(["glpsol", "--lp", path, "--tmlim", str(limit), "-o", out],
                       capture_output=True, text=True)
    dt = time.perf_counter() - t0
    text = open(out).read() if os.path.exists(out) else ""
    m = re.search(r"Objective:\s+obj = ([0-9.eE+-]+)", text)
    status = re.search(r"Status:\s+(\S+)", text)
    if p.returncode != 0 or not m or not status or "INTEGER OPTIMAL" not in text:
        return None, dt
    return float(m.group(1)), dt


def plan(tessera, path, limit):
    return benchlib.plan_summary([tessera, "plan", "-f", path, "-o", "json"]
                                 + (["--time-limit", "0"] if limit == 0 else []))


def main():
    tessera = sys.argv[1]
    n = 6 if "--quick" in sys.argv else 20
    if "--cases" in sys.argv:
        n = int(sys.argv[sys.argv.index("--cases") + 1])
    cat = catalog()
    print("| seed | models | cards | workloads | before /h (--time-limit 0) | tessera /h | cost bound /h | gap % | "
          "exact /h (glpsol) | tessera / exact | bound <= exact | tessera s | glpsol s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    tot = {"none": 0, "false_none": 0, "cases": 0, "opt": 0, "before_opt": 0, "before_fail": 0, "over": [], "bad_bound": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(n):
            models, nodes, work = make_case(seed)
            spec = os.path.join(tmp, "s%d.yaml" % seed)
            open(spec, "w").write(spec_text(models, nodes, work))
            before, _ = plan(tessera, spec, 0)
            after, dt = plan(tessera, spec, 10)
            lp = exact_lp(models, nodes, work, cat)
            best, gt = None, 0.0
            if lp is not None:
                open(spec + ".lp", "w").write(lp)
                best, gt = glpsol(spec + ".lp", 60)
            if after is None:
                tot["none"] += 1
                tot["false_none"] += best is not None
                print("| %d | %d | %d | %d | tessera: no layout; exact: %s |" % (
                    seed, len(models), sum(k for _, k in nodes), len(work),
                    "none" if best is None else "%.2f" % best))
                continue
            if best is None:
                print("| %d | (glpsol found no proven optimum) |" % seed)
                continue
            cost, bound = after["costPerHour"], after["costLowerBound"]
            ok_bound = bound is not None and bound <= best + 1e-6
            tot["cases"] += 1
            tot["opt"] += abs(cost - best) < 1e-6
            tot["before_opt"] += before is not None and abs(before["costPerHour"] - best) < 1e-6
            tot["before_fail"] += before is None
            tot["over"].append(cost / best - 1)
            tot["bad_bound"] += not ok_bound
            print("| %d | %d | %d | %d | %s | %.2f | %.2f | %.1f | %.2f | %.3f | %s | %.2f | %.2f |"
                  % (seed, len(models), sum(k for _, k in nodes), len(work),
                     "%.2f" % before["costPerHour"] if before else "no layout", cost, bound if bound is not None else -1,
                     after["costGapPercent"] or 0, best, cost / best,
                     "yes" if ok_bound else "**no**", dt, gt))
            sys.stdout.flush()
    if tot["cases"]:
        print("\n%d cases: tessera at the exact optimum in %d (before: %d, and %d without a "
              "layout); worst %.1f%% over, mean %.1f%%; bound above the optimum in %d"
              % (tot["cases"], tot["opt"], tot["before_opt"], tot["before_fail"],
                 100 * max(tot["over"]), 100 * sum(tot["over"]) / len(tot["over"]),
                 tot["bad_bound"]))
    print("%d fleets where tessera finds no layout: %d of them have one by the exact model"
          % (tot["none"], tot["false_none"]))


if __name__ == "__main__":
    main()
