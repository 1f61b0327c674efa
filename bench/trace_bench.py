#!/usr/bin/env python3
"""trace_bench.py - the planner on trace-derived fleets, side by side with its baselines.

For fleets of 100, 1,000, 3,000 and 10,000 GPUs (mixed A100/H100/H200/A30/L40S), one
spec each from bench/trace_spec.py (Alibaba 2023 GPU pods; load 0.55, seed 1 unless
--load/--seed say otherwise), runs
`tessera plan -o json` once and reports, in one table: cards and cost per hour used,
the lower bound the planner reports, a first-fit-decreasing baseline packed here from
the planner's own decisions, wall and CPU time, and peak RSS (wait4's ru_maxrss of
the tessera process). Also writes an SVG of cards used against the bound.
Usage: bench/trace_bench.py TESSERA [--quick] [--svg FILE] [--sizes N,N,...]
                             [--load F] [--seed N]
"""
import argparse, json, os, re, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import trace_spec  # noqa: E402  (the generator: its models and prices)
import benchlib  # noqa: E402  (the catalog's models)

PRICES = {m: float(p) for m, _, p in trace_spec.MODELS}


def catalog():
    """name -> {memory, grid, slices, profiles: name -> (units, compute, max, starts)}"""
    out = {}
    for name, doc, num in benchlib.catalog_docs():
        profs = {p.group(1): (int(p.group(6)), int(p.group(2)), int(p.group(4)),
                              [int(s) for s in p.group(5).split(",")])
                 for p in re.finditer(benchlib.PROFILE_RE, doc)}
        out[name] = {"memory": num("memoryGiB", 0), "grid": int(num("migGrid", 8)),
                     "slices": int(num("computeSlices", 7)), "profiles": profs}
    return out


# ---- first-fit decreasing: every replica in decreasing size, onto the first card of
# its decided model that takes it, else a new card; MIG at the first legal free start
# (no re-layout), MPS one server per tenant, other pools and guests within a tenant.

def mig_fits(card, prof, model):
    units, compute, most, starts = prof
    if card["compute"] + compute > model["slices"] or card["count"].get(id(prof), 0) >= most:
        return None
    for s in starts:
        if not any(card["used"][s:s + units]):
            return s
    return None


def ffd(decisions, cat):
    items = []
    for d in decisions:
        model = cat[d["gpuModel"]]
        for _ in range(d["replicas"]):
            if d["mechanism"] in ("whole", "vgpu") and not d["profile"]:
                items += [(1.0, d, None)] * d["gpus"]
            elif d["profile"]:
                p = model["profiles"][d["profile"]]
                items.append((max(p[0] / model["grid"], p[1] / model["slices"]), d, p))
            else:
                items.append((d["capGiB"] / model["memory"], d, None))
    items.sort(key=lambda x: -x[0])
    cards = {}
    for size, d, prof in items:
        model = cat[d["gpuModel"]]
        key = (d["gpuModel"], d["mechanism"], None if d["mechanism"] in ("whole", "mig") else
               d["tenant"])
        open_ = cards.setdefault(key, [])
        if d["mechanism"] in ("whole", "vgpu") and not prof:
            open_.append(None)
            continue
        for card in open_:
            if place(card, d, prof, model):
                break
        else:
            card = {"used": [0] * model["grid"], "count": {}, "compute": 0, "mem": 0.0, "sm": 0,
                    "clients": 0}
            open_.append(card)
            if not place(card, d, prof, model):
                raise SystemExit("FFD: %s/%s does not fit an empty card" % (d["tenant"],
                                                                          d["workload"]))
    used = {m: 0 for m in cat}
    for (m, _, _), cs in cards.items():
        used[m] += len(cs)
    return sum(used.values()), sum(PRICES.get(m, 0) * n for m, n in used.items())


def place(card, d, prof, model):
    if prof:
        s = mig_fits(card, prof, model)
        if s is None:
            return False
        card["used"][s:s + prof[0]] = [1] * prof[0]
        card["count"][id(prof)] = card["count"].get(id(prof), 0) + 1
        card["compute"] += prof[1]
        return True
    if card["mem"] + d["capGiB"] > model["memory"] + 1e-9:
        return False
    if d["mechanism"] == "mps" and (card["sm"] + d["smPercent"] > 100 or card["clients"] >= 64):
        return False
    card["mem"] += d["capGiB"]
    card["sm"] += d["smPercent"]
    card["clients"] += 1
    return True


# ---- running tessera ----

def run_plan(tessera, spec):
    out = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    proc = subprocess.Popen([tessera, "plan", "-f", spec, "-o", "json"], stdout=out,
                            stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit("tessera plan failed (%d) on %s: %s" % (proc.returncode, spec, err[:400]))
    out.seek(0)
    return json.load(out), wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def svg(rows, path):
    """Cards used by tessera and by FFD, each divided by the lower bound (1.0 = the
    bound), one pair of bars per fleet, the card counts written above them."""
    w, h, pad = 640, 360, 50
    top = max(max(r["used"], r["ffd"]) / max(r["bound"], 1) for r in rows) * 1.05
    base = 0.9
    bw = (w - 2 * pad) / len(rows)
    y = lambda v: h - pad - (h - 2 * pad) * (v - base) / (top - base)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (w, h),
           '<text x="%d" y="20" font-size="13">tessera plan on Alibaba-trace fleets: cards used '
           '/ lower bound</text>' % pad,
           '<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999" stroke-dasharray="4"/>'
           % (pad, y(1.0), w - pad, y(1.0)),
           '<text x="4" y="%.1f" fill="#666">bound</text>' % (y(1.0) + 4)]
    for i, r in enumerate(rows):
        x = pad + i * bw
        for k, (key, colour) in enumerate((("used", "#2a6"), ("ffd", "#c63"))):
            v = r[key] / max(r["bound"], 1)
            out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' % (
                x + 10 + k * (bw - 20) / 2, y(v), (bw - 20) / 2 - 3, h - pad - y(v), colour))
            out.append('<text x="%.1f" y="%.1f" font-size="9">%.3f (%d)</text>' % (
                x + 10 + k * (bw - 20) / 2, y(v) - 3, v, r[key]))
        out.append('<text x="%.1f" y="%d">%d GPUs</text><text x="%.1f" y="%d">bound %d</text>'
                   % (x + 12, h - pad + 14, r["gpus"], x + 12, h - pad + 27, r["bound"]))
    for k, (name, colour) in enumerate((("tessera", "#2a6"), ("first-fit decreasing", "#c63"))):
        out.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">'
                   '%s</text>' % (pad + k * 150, h - 12, colour, pad + 14 + k * 150, h - 3, name))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tessera")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--svg", default=os.path.join("build", "plan-trace.svg"))
    ap.add_argument("--sizes", default="100,1000,3000,10000")
    ap.add_argument("--load", default="0.55")
    ap.add_argument("--seed", default="1")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")][:2 if a.quick else None]
    cat = catalog()
    print("| GPUs | workloads | cards used | cost/h | lower bound | used / bound | cost bound/h | "
          "cost gap % | FFD cards | FFD cost/h | wall s | CPU s | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            spec = os.path.join(tmp, "fleet-%d.yaml" % n)
            with open(spec, "w") as f:
                subprocess.run([sys.executable, os.path.join(HERE, "trace_spec.py"), "--gpus",
                                str(n), "--load", a.load, "--seed", a.seed], stdout=f, check=True)
            plan, wall, cpu, rss = run_plan(a.tessera, spec)
            s = plan["summary"]
            fcards, fcost = ffd(plan["decisions"], cat)
            rows.append({"gpus": n, "used": s["gpusUsed"], "bound": s["lowerBound"],
                         "ffd": fcards})
            print("| %d | %d | %d | %.2f | %d | %.3f | %.2f | %.1f | %d | %.2f | %.2f | %.2f | %.0f |" % (
                n, len(plan["decisions"]), s["gpusUsed"], s.get("costPerHour", -1),
                s["lowerBound"], s["gpusUsed"] / max(s["lowerBound"], 1),
                s.get("costLowerBound") or -1, s.get("costGapPercent") or 0, fcards, fcost, wall,
                cpu, rss))
            sys.stdout.flush()
    os.makedirs(os.path.dirname(os.path.abspath(a.svg)), exist_ok=True)
    svg(rows, a.svg)
    print("\nSVG: %s" % a.svg)


if __name__ == "__main__":
    main()
