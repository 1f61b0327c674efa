#!/usr/bin/env python3
"""replan_bench.py - replanning's drains against the exact minimum, and its speed.

Part 1 (quality): seeded small MIG fleets (one node of H100s) run a layout drawn at
random (not the planner's: instances scattered over the cards, so a repack is worth
something), then the spec changes: a tenant added, one grows by a replica, one is
removed, one's profile changes (1g.10gb -> 2g.20gb). tessera replans with --prefer
fewer-cards (no limit) and with --max-drains 0. An independent exact model, written
here in GNU MathProg and solved by glpsol (GLPK), gives the fewest cards any plan of the
new spec needs and, at the card count tessera chose, the fewest drains (a card is
drained when a running instance of a workload the spec keeps is not at the same card and
start). The model knows only the H100's MIG rules (placements, compute slices, counts,
no overlap) and spread: gpu; it shares no code with tessera.
Part 2 (speed): an unchanged trace fleet (bench/trace_spec.py) replanned against its own
plan at 1,000, 3,000 and 10,000 GPUs (heuristic planner: --time-limit 0), next to
planning it alone in the same run.
Usage: bench/replan_bench.py TESSERA [--quick] [--seed0 S] [--cases N] [--cards 8,10]
                              [--list] [--dump DIR] [--quality-only]
  (glpsol missing: part 1 says so). The default run is seeds 0-9 (--quick: 0-3) of each
change on 4-6 cards. --seed0 S --cases N run seeds S..S+N-1 instead (held-out seeds: 1000
and up never meet the default's); --cards draws each case's card count from that list
(tenants 5-9 scaled by the largest count over 6); --list prints every case above the exact
minimum; --dump DIR writes each case's spec and running plan there.
"""
import argparse, json, math, os, random, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
H = "h100-80gb-sxm"
# profile: (mem units, compute slices, legal starts, max count, workload memory, kv, slices)
PROF = {"1g.10gb": (1, 1, range(7), 7, 7.5, 1.5, 0),
        "2g.20gb": (2, 2, (0, 2, 4), 3, 15, 3, 2),
        "3g.40gb": (4, 3, (0, 4), 2, 28, 8, 0)}
GRID, COMPUTE = 8, 7
GIB = {"1g.10gb": 9.75, "2g.20gb": 19.62, "3g.40gb": 39.5}  # the catalog's, as a plan writes


def tenant(name, prof, reps):
    mem, kv, cs = PROF[prof][4:]
    return ("---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: %s}\nspec:\n"
            "  contract: isolated\n  namespaces: [%s]\n  workloads:\n"
            "  - {name: w, kind: inference, memoryHighWaterGiB: %s, kvCacheGiB: %s, p99Ms: 300,"
            " trust: untrusted, replicas: %d, spread: gpu%s}\n"
            % (name, name, mem, kv, reps, ", computeSlices: %d" % cs if cs else ""))


def fits(card, prof, start):
    size, comp, _, most = PROF[prof][:4]
    if sum(PROF[p][1] for p, _, _ in card) + comp > COMPUTE:
        return False
    if sum(1 for p, _, _ in card if p == prof) >= most:
        return False
    return all(start + size <= s or s + PROF[p][0] <= start for p, s, _ in card)


def scatter(r, work, cards):
    """A random valid layout: each instance on a random card and start with room."""
    layout = [[] for _ in range(cards)]
    for t, prof, reps in sorted(work, key=lambda w: -PROF[w[1]][0]):
        for rep in range(reps):
            opts = [(c, s) for c in range(cards) for s in PROF[prof][2]
                    if fits(layout[c], prof, s) and all(x[2][0] != t for x in layout[c])]
            if not opts:
                return None
            c, s = r.choice(opts)
            layout[c].append((prof, s, (t, rep)))
    return layout


def case(seed, change, sizes=(4, 5, 6)):
    """(old work, new work, running layout, cards) for one seed and change."""
    r = random.Random(seed * 7 + ["add", "grow", "remove", "profile"].index(change) * 1000)
    cards = r.choice(sizes)
    scale = max(1, max(sizes) / 6)
    for _ in range(100):
        work = [("t%d" % i, r.choice(["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]),
                 r.choice([1, 1, 2])) for i in range(r.randint(math.ceil(5 * scale),
                                                                math.ceil(9 * scale)))]
        layout = scatter(r, work, cards)
        if not layout:
            continue
        new = list(work)
        k = r.randrange(len(new))
        if change == "add":
            new.append(("x", r.choice(["1g.10gb", "2g.20gb", "3g.40gb"]), r.choice([1, 2])))
        elif change == "grow":
            new[k] = (new[k][0], new[k][1], new[k][2] + 1)
        elif change == "remove":
            del new[k]
        elif change == "profile":
            ones = [i for i, w in enumerate(new) if w[1] == "1g.10gb"]
            if not ones:
                continue
            k = ones[0]
            new[k] = (new[k][0], "2g.20gb", new[k][2])
        if scatter(random.Random(1), new, cards) is None:
            continue  # the new spec must fit somewhere (first fit, a hint only)
        return work, new, layout, cards
    return None


def fleet(cards):
    return ("apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n"
            "  nodes:\n  - name: n1\n    gpus:\n    - {model: %s, count: %d}\n" % (H, cards))


def running_json(layout):
    gpus = []
    for c, card in enumerate(layout):
        insts = [{"profile": p, "start": s, "size": PROF[p][0], "tenant": t, "workload": "w",
                  "replica": rep, "gpuPart": 0, "memoryGiB": GIB[p]} for p, s, (t, rep) in card]
        gpus.append({"node": "n1", "index": c, "model": H, "mode": "mig" if insts else "free",
                     "instances": insts})
    return {"apiVersion": "tessera.dev/v1alpha1", "kind": "Plan", "gpus": gpus}


def mathprog(new, layout, cards, max_cards, minimise):
    """The exact model: place every instance of new; running instances of unchanged
    workloads may stay; minimise drains (cards used <= max_cards) or cards."""
    prof = {t: p for t, p, _ in new}
    inst = [(t, k) for t, p, n in new for k in range(n)]
    run = {}  # running instance (t, rep) -> (card, start) when its workload is unchanged
    for c, card in enumerate(layout):
        for p, s, (t, rep) in card:
            if t in prof:
                run[(t, rep)] = (c, s, prof[t] == p)
    out = ["set C := 0..%d;" % (cards - 1)]
    xs = []
    for i, (t, k) in enumerate(inst):
        size, comp, starts, _ = PROF[prof[t]][:4]
        for c in range(cards):
            for s in starts:
                xs.append((i, c, s))
    out.append("var x{i in 0..%d, c in C, s in 0..6}, binary;" % (len(inst) - 1))
    out.append("var y{c in C}, binary;\nvar d{c in C}, binary;")
    out.append("minimize obj: %s;" % ("sum{c in C} d[c]" if minimise == "drains" else
                                      "sum{c in C} y[c]"))
    legal = {(i, c, s) for i, c, s in xs}
    for i, (t, k) in enumerate(inst):
        out.append("s.t. one%d: %s = 1;" % (i, " + ".join(
            "x[%d,%d,%d]" % (i, c, s) for c in range(cards) for s in PROF[prof[t]][2])))
        for c in range(cards):
            for s in range(7):
                if (i, c, s) not in legal:
                    out.append("s.t. no%d_%d_%d: x[%d,%d,%d] = 0;" % (i, c, s, i, c, s))
    for c in range(cards):
        for u in range(GRID):
            cover = ["x[%d,%d,%d]" % (i, c, s) for i, (t, k) in enumerate(inst)
                     for s in PROF[prof[t]][2] if s <= u < s + PROF[prof[t]][0]]
            if cover:
                out.append("s.t. mem%d_%d: %s <= y[%d];" % (c, u, " + ".join(cover), c))
        out.append("s.t. cmp%d: %s <= %d;" % (c, " + ".join(
            "%d * x[%d,%d,%d]" % (PROF[prof[t]][1], i, c, s) for i, (t, k) in enumerate(inst)
            for s in PROF[prof[t]][2]), COMPUTE))
        for p in PROF:
            terms = ["x[%d,%d,%d]" % (i, c, s) for i, (t, k) in enumerate(inst) if prof[t] == p
                     for s in PROF[p][2]]
            if terms:
                out.append("s.t. cnt%d_%s: %s <= %d;" % (c, p[:2], " + ".join(terms), PROF[p][3]))
        for t in prof:  # spread: gpu
            terms = ["x[%d,%d,%d]" % (i, c, s) for i, (u, k) in enumerate(inst) if u == t
                     for s in PROF[prof[t]][2]]
            if len(terms) > 1:
                out.append("s.t. spr%d_%s: %s <= 1;" % (c, t, " + ".join(terms)))
    for i, (t, k) in enumerate(inst):
        if (t, k) in run:
            c, s, same = run[(t, k)]
            out.append("s.t. dr%d: d[%d] >= 1 - %s;" % (i, c, "x[%d,%d,%d]" % (i, c, s)
                                                          if same else "0"))
    # running instances beyond what the new spec has: none in these changes
    if max_cards:
        out.append("s.t. budget: sum{c in C} y[c] <= %d;" % max_cards)
    if minimise == "cards":  # the cards are alike: the used ones first (symmetry broken)
        out += ["s.t. sym%d: y[%d] >= y[%d];" % (c, c, c + 1) for c in range(cards - 1)]
    return "\n".join(out) + "\nsolve;\nprintf \"OBJ %d\\n\", obj;\nend;\n"


def glpsol(model, tmp):
    path = os.path.join(tmp, "m.mod")
    open(path, "w").write(model)
    p = subprocess.run(["glpsol", "--math", path, "--tmlim", "300"], capture_output=True, text=True)
    if "INTEGER OPTIMAL SOLUTION FOUND" not in p.stdout:
        return None  # over the time limit: not proven, not used
    for line in p.stdout.splitlines():
        if line.startswith("OBJ "):
            return int(line.split()[1])
    return None


def tessera_replan(tessera, spec, run, *flags):
    """(drains, cards) of the plan printed (exit 0, or 1 with a plan naming what it left
    out), or None when none was."""
    p = subprocess.run([tessera, "plan", "-f", spec, "--current", run, "-o", "json"] + list(flags),
                       capture_output=True, text=True)
    if p.returncode not in (0, 1) or not p.stdout:
        return None
    doc = json.loads(p.stdout)
    return doc["replan"]["drains"], doc["summary"]["gpusUsed"]


def quality(tessera, a, tmp):
    print("### Drains against the exact minimum (GLPK, glpsol)\n")
    if not shutil.which("glpsol"):
        print("SKIPPED: glpsol not installed (scripts/install-deps bench installs glpk-utils)\n")
        return
    print("| change | cases | tessera fewer-cards: drains / cards | exact: fewest cards | "
          "exact: fewest drains at tessera's cards | cases at the minimum | "
          "--max-drains 0: plans given, their cards (drains) |")
    print("|---|---|---|---|---|---|---|")
    seeds = range(a.seed0, a.seed0 + (a.cases or (4 if a.quick else 10)))
    above = []
    for change in ("add", "grow", "remove", "profile"):
        n = td = tc = ec = ed = at_min = z_n = z_c = z_d = 0
        for seed in seeds:
            c = case(seed, change, a.cards)
            if not c:
                continue
            work, new, layout, cards = c
            spec = os.path.join(tmp, "new.yaml")
            run = os.path.join(tmp, "run.json")
            open(spec, "w").write(fleet(cards) + "".join(tenant(*w) for w in new))
            json.dump(running_json(layout), open(run, "w"))
            if a.dump:
                os.makedirs(a.dump, exist_ok=True)
                shutil.copy(spec, os.path.join(a.dump, "%s-%d.yaml" % (change, seed)))
                shutil.copy(run, os.path.join(a.dump, "%s-%d.json" % (change, seed)))
            got = tessera_replan(tessera, spec, run, "--prefer", "fewer-cards")
            zero = tessera_replan(tessera, spec, run, "--max-drains", "0")
            best_cards = glpsol(mathprog(new, layout, cards, 0, "cards"), tmp)
            if not got or best_cards is None:
                print("case %s/%d: no answer (tessera %s, glpsol %s)" % (change, seed, got,
                      best_cards), file=sys.stderr)
                continue
            best_drains = glpsol(mathprog(new, layout, cards, got[1], "drains"), tmp)
            if best_drains is None:
                print("case %s/%d: no proven fewest drains" % (change, seed), file=sys.stderr)
                continue
            if got[0] != best_drains or got[1] != best_cards:
                above.append("%s/%d (%d cards): tessera %d drains / %d cards; exact %d drains "
                             "at %d cards, fewest cards %d" % (change, seed, cards, got[0],
                             got[1], best_drains, got[1], best_cards))
            n += 1
            td += got[0]
            tc += got[1]
            ec += best_cards
            ed += best_drains
            at_min += got[0] == best_drains
            z_n += zero is not None
            z_c += zero[1] if zero else 0
            z_d += zero[0] if zero else 0
        if n:
            zero = ("%d of %d: %.1f (%.1f)" % (z_n, n, z_c / z_n, z_d / z_n) if z_n
                    else "0 of %d" % n)
            print("| %s | %d | %.1f / %.1f | %.1f | %.1f | %d of %d | %s |"
                  % (change, n, td / n, tc / n, ec / n, ed / n, at_min, n, zero))
    print()
    if a.list:
        print("Above the exact minimum: %s\n" % ("; ".join(above) if above else "none"))


def speed(tessera, a, tmp):
    print("### Replanning an unchanged trace fleet against its own plan (--time-limit 0)\n")
    print("| GPUs | plan s | replan s | replan - plan s | drains |")
    print("|---|---|---|---|---|")
    for gpus in ((1000, 3000) if a.quick else (1000, 3000, 10000)):
        spec = os.path.join(tmp, "t%d.yaml" % gpus)
        with open(spec, "w") as f:
            subprocess.run([sys.executable, os.path.join(HERE, "trace_spec.py"), "--gpus",
                            str(gpus)], stdout=f, check=True)
        run = os.path.join(tmp, "t%d.json" % gpus)
        with open(run, "w") as f:
            subprocess.run([tessera, "plan", "-f", spec, "-o", "json", "--time-limit", "0"],
                           stdout=f, check=True)
        t0 = time.perf_counter()
        subprocess.run([tessera, "plan", "-f", spec, "-o", "json", "--time-limit", "0"],
                       stdout=subprocess.DEVNULL, check=True)
        t1 = time.perf_counter()
        p = subprocess.run([tessera, "plan", "-f", spec, "-o", "json", "--time-limit", "0",
                            "--current", run], capture_output=True, text=True, check=True)
        t2 = time.perf_counter()
        drains = json.loads(p.stdout)["replan"]["drains"]
        print("| %d | %.2f | %.2f | %.2f | %d |" % (gpus, t1 - t0, t2 - t1, (t2 - t1) - (t1 - t0),
                                                     drains))
    print()


def main():
    ap = argparse.ArgumentParser(description="replanning's drains against the exact minimum")
    ap.add_argument("tessera")
    ap.add_argument("--quick", action="store_true", help="4 seeds, 1k and 3k GPUs")
    ap.add_argument("--seed0", type=int, default=0, help="the first seed (default 0)")
    ap.add_argument("--cases", type=int, default=0, help="seeds per change (default 10)")
    ap.add_argument("--cards", default="4,5,6", help="card counts to draw from (default 4,5,6)")
    ap.add_argument("--list", action="store_true", help="print each case above the minimum")
    ap.add_argument("--dump", help="write each case's spec and running plan into DIR")
    ap.add_argument("--quality-only", action="store_true", help="no speed rows")
    a, _ = ap.parse_known_args()  # bench/run passes every bench the same flags
    a.cards = tuple(int(x) for x in a.cards.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        quality(a.tessera, a, tmp)
        if not a.quality_only:
            speed(a.tessera, a, tmp)


if __name__ == "__main__":
    main()
