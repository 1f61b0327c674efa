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

--pools: the family of small priced pools instead (bench/RESULTS.md, "A bound above
the optimum"): 2-3 best-effort tenants, each pair trusting each other or not (both
ways), 4-15 best-effort guests of 4.5-23.5 GiB, two card models of a100-80gb / l40s /
a30 at random prices, 16 cards of each (more than the guests: the fleet never binds).
A guest may run on each model where decide gives it the mechanism it gives it unpinned
(asked of `tessera plan --time-limit 0` with every workload pinned by gpuModel: decide's
rules, not the cost program; a 23.5 GiB guest is a whole card on an a30 alone), at the
cap decided there. The exact optimum is then a bin packing with two card prices: a
time-sliced card holds guests whose caps add up to at most its memory, of tenants that
trust each other pairwise; a whole card holds its guest alone. It is found by brute
force here (`pool_optimum`: a search over what is left to place, each card filled to a
maximal set of what is left, memoised), sharing nothing with tessera's cost program.
Usage: bench/cost_bench.py TESSERA [--quick] [--cases N] [--pools] [--seed0 S] [--cases-out DIR]
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


# ---- --pools: best-effort guests of tenants with or without mutual trust ----

POOL_MODELS = ["a100-80gb", "l40s", "a30"]
POOL_SIZES = [4.5, 6.5, 9, 13, 19, 23.5]


def pool_case(seed):
    """(models [(name, price)], tenants [name], trust {(a, b)}, guests [(tenant, GiB)])"""
    r = random.Random(seed)
    models = [(m, "%.2f" % r.uniform(0.5, 3.0)) for m in r.sample(POOL_MODELS, 2)]
    tenants = ["d%d" % i for i in range(r.choice([2, 3]))]
    trust = set()
    for i in range(len(tenants)):
        for j in range(i + 1, len(tenants)):
            if r.random() < 0.5:
                trust |= {(tenants[i], tenants[j]), (tenants[j], tenants[i])}
    guests = [(r.choice(tenants), r.choice(POOL_SIZES)) for _ in range(r.randint(4, 15))]
    return models, tenants, trust, guests


def pool_spec(models, tenants, trust, guests, pin=None):
    """The spec; pin: every workload's gpuModel (decide on that model alone)."""
    out = ["apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n  nodes:"]
    out += ["  - {name: n%d, gpus: [{model: %s, count: 16}]}" % (k, m)
            for k, (m, _) in enumerate(models)]
    out.append("---\napiVersion: tessera.dev/v1alpha1\nkind: PriceBook\nmetadata: {name: p}\n"
               "spec:\n  currency: USD\n  prices:")
    out += ["  - {model: %s, perGpuHour: \"%s\"}" % mp for mp in models]
    present = [t for t in tenants if any(g[0] == t for g in guests)]
    for t in present:
        trusts = [u for u in present if (t, u) in trust]
        out.append("---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: %s}\n"
                   "spec:\n  contract: best-effort\n  namespaces: [%s]%s\n  workloads:"
                   % (t, t, "\n  trusts: [%s]" % ", ".join(trusts) if trusts else ""))
        out += ["  - {name: w%d, kind: batch, bestEffort: true, memoryHighWaterGiB: %g%s}"
                % (i, g, ", gpuModel: %s" % pin if pin else "")
                for i, (_, g) in enumerate([g for g in guests if g[0] == t])]
    return "\n".join(out) + "\n"


def decisions(tessera, path):
    """{(tenant, workload): (model, mechanism, cap)} of `tessera plan --time-limit 0`
    (decide's own answers, no cost program), or None."""
    p = subprocess.run([tessera, "plan", "-f", path, "-o", "json", "--time-limit", "0"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None
    return dict(((d["tenant"], d["workload"]), (d["gpuModel"], d["mechanism"], d["capGiB"]))
                for d in json.loads(p.stdout)["decisions"])


def pool_options(tessera, tmp, seed, case):
    """Per guest, in spec order: (tenant, mechanism, {model: cap}), the models where decide
    gives it the mechanism it gives it unpinned (as a whole card: any cap); None when a
    decision is missing or neither time-slicing nor a whole card."""
    models, tenants, trust, guests = case
    own, on = None, {}
    for pin in [None] + [m for m, _ in models]:
        path = os.path.join(tmp, "pools-%d-%s.yaml" % (seed, pin or "own"))
        open(path, "w").write(pool_spec(models, tenants, trust, guests, pin))
        got = decisions(tessera, path)
        if pin is None:
            own = got
        elif got is not None:
            on[pin] = got
    if own is None:
        return None
    out = []
    for t in tenants:
        for i in range(sum(1 for g in guests if g[0] == t)):
            key = (t, "w%d" % i)
            if key not in own or own[key][1] not in ("time-slicing", "whole"):
                return None
            mech = own[key][1]
            caps = dict((m, d[key][2]) for m, d in on.items()
                        if key in d and d[key][1] == mech and d[key][0] == m)
            caps[own[key][0]] = own[key][2]
            out.append((t, mech, caps))
    return out


def pool_optimum(models, trust, options, cat):
    """The least price of cards holding every guest (options: pool_options). A whole
    card's guest takes its cheapest model alone. A time-sliced card of a model holds
    guests allowed there whose caps add up to at most its memory, of tenants that trust
    each other. A state is how many guests of each kind (tenant, caps) are left; its
    first kind's next guest goes on some card, with a maximal set of what is left beside
    it on that model (a card filled less is never cheaper: what is left costs no more
    with fewer guests)."""
    price = dict((m, float(p)) for m, p in models)
    fixed = sum(min(price[m] for m in caps) for _, mech, caps in options if mech == "whole")
    shared = [(t, tuple(sorted(caps.items()))) for t, mech, caps in options if mech != "whole"]
    kinds = sorted(set(shared), key=lambda k: (-max(c for _, c in k[1]), k))
    start = tuple(sum(1 for g in shared if g == k) for k in kinds)

    def ok(a, b):
        return a == b or (a, b) in trust

    def cards(state, model):
        """Every maximal set (counts per kind) of state holding one of its first
        kind, on a time-sliced card of model."""
        mem = cat[model]["memory"]
        cap = [dict(k[1]).get(model) for k in kinds]
        first = next(i for i, n in enumerate(state) if n)
        if cap[first] is None or cap[first] > mem + 1e-9:
            return []
        found = []

        def grow(i, take, used, who):
            if i == len(kinds):
                # maximal: no kind left with room, trust and a guest to spare
                for j, k in enumerate(kinds):
                    if cap[j] is not None and take[j] < state[j] and \
                            used + cap[j] <= mem + 1e-9 and all(ok(k[0], w) for w in who):
                        return
                found.append(tuple(take))
                return
            lo = 1 if i == first else 0
            hi = 0
            if cap[i] is not None and all(ok(kinds[i][0], w) for w in who):
                hi = min(state[i], int((mem - used) / cap[i] + 1e-9))
            for n in range(hi, lo - 1, -1):
                take[i] = n
                grow(i + 1, take, used + n * (cap[i] or 0), who | ({kinds[i][0]} if n else set()))
            take[i] = 0

        grow(first, [0] * len(kinds), 0.0, set())
        return found

    memo = {}

    def best(state):
        if not any(state):
            return 0.0
        if state in memo:
            return memo[state]
        v = math.inf
        for model in price:
            for take in cards(state, model):
                v = min(v, price[model] + best(tuple(a - b for a, b in zip(state, take))))
        memo[state] = v
        return v

    return fixed + best(start)


def pools_main(tessera, n, seed0, keep):
    cat = catalog()
    print("| seed | models and prices | tenants (trust) | guests | before /h | tessera /h | "
          "cost bound /h | optimum /h | tessera / optimum | bound <= optimum |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rat, at_opt, bound_at, bad_bound, before_opt, none, skipped = [], 0, 0, 0, 0, 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(seed0, seed0 + n):
            case = pool_case(seed)
            models, tenants, trust, guests = case
            spec = os.path.join(keep or tmp, "pools-%d.yaml" % seed)
            open(spec, "w").write(pool_spec(models, tenants, trust, guests))
            before, _ = plan(tessera, spec, 0)
            after, _ = plan(tessera, spec, 10)
            opts = pool_options(tessera, tmp, seed, case)
            if opts is None:
                skipped += 1
                print("| %d | (a guest decide gives neither time-slicing nor a whole card) |" % seed)
                continue
            best = pool_optimum(models, trust, opts, cat)
            if after is None:
                none += 1
                print("| %d | tessera: no layout; optimum %.2f |" % (seed, best))
                continue
            cost, bound = after["costPerHour"], after["costLowerBound"]
            r = cost / best
            rat.append(r)
            at_opt += abs(cost - best) < 1e-6
            before_opt += before is not None and abs(before["costPerHour"] - best) < 1e-6
            ok_bound = bound is not None and bound <= best + 1e-6
            bad_bound += not ok_bound
            bound_at += ok_bound and abs(bound - best) < 1e-6
            pairs = sorted("%s-%s" % (a[1:], b[1:]) for a, b in trust if a < b)
            print("| %d | %s | %d (%s) | %d | %s | %.2f | %.2f | %.2f | %.3f | %s |"
                  % (seed, " ".join("%s %s" % mp for mp in models), len(tenants),
                     " ".join(pairs) or "none", len(guests),
                     "%.2f" % before["costPerHour"] if before else "no layout", cost,
                     bound if bound is not None else -1, best, r,
                     "yes" if ok_bound else "**no**"))
            sys.stdout.flush()
    if rat:
        print("\n%d cases (seeds %d-%d): tessera at the optimum in %d (before, decide's models: "
              "%d); plan / optimum worst %.3f, mean %.4f; bound at the optimum in %d, above it "
              "in %d; %d without a layout, %d skipped"
              % (len(rat), seed0, seed0 + n - 1, at_opt, before_opt, max(rat),
                 sum(rat) / len(rat), bound_at, bad_bound, none, skipped))


def main():
    tessera = sys.argv[1]
    if "--pools" in sys.argv:
        arg = lambda k, d: int(sys.argv[sys.argv.index(k) + 1]) if k in sys.argv else d
        keep = sys.argv[sys.argv.index("--cases-out") + 1] if "--cases-out" in sys.argv else None
        return pools_main(tessera, arg("--cases", 20 if "--quick" in sys.argv else 150),
                          arg("--seed0", 0), keep)
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
