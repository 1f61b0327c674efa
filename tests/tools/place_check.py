#!/usr/bin/env python3
"""place_check.py - an independent check of `tessera plan`'s "cannot place".

Random tiny specs (seeded; at most 9 cards of one model on 1-4 nodes) of the
shapes the false refusals of issue 30 had: MPS pools and best-effort
time-slicing (guests) with `spread: none|gpu|node`, tenants that trust each
other or not, multi-GPU whole jobs. For each, tessera's own decisions (its
`-o json`: mechanism, capGiB, smPercent, gpus) are read from a plan of the
same tenants on a fleet made large, and a brute force, sharing nothing with
src/plan, says whether any assignment of replicas to cards exists under the
rules:
  - a whole replica of g GPUs takes g cards of one node, alone;
  - a pool card holds one mechanism: MPS clients of one tenant (one MPS
    server per tenant), SM shares <= 100%; time-slicing or memory-fraction
    clients of tenants that trust each other pairwise;
  - the caps on a card add up to no more than its memory;
  - `spread: gpu`: a workload's replicas on distinct cards; `spread: node`:
    on distinct nodes;
  - (only in --spec files) a MIG instance of a small profile on a card of
    MIG instances, at most 7 a card, its geometry not checked.
Then tessera's exit code is compared with "feasible", and when it places,
its layout is checked against the same rules.

  place_check.py --tessera build/tessera --count 300 --seed 1 [--keep DIR]
  place_check.py --tessera build/tessera --spec FILE...

With --spec, each FILE (a spec of the same shape: one card model, tenants
with workloads of kind inference, batch or training) is checked alone: it
must be feasible, tessera must place it (exit 0), and its layout must keep
the rules. The spec is read with PyYAML, not by tessera.

Prints the counts; exit 1 when tessera refuses a feasible spec or gives an
invalid layout.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

MODELS = {"h100-80gb-sxm": 79.6, "a100-40gb": 40.0}
MPS_MAX_CLIENTS = 48


# ---- specs ----

def gen(rng, max_cards=9):
    model = "h100-80gb-sxm" if rng.random() < 0.75 else "a100-40gb"
    big = MODELS[model] > 50
    nodes, total = [], 0
    scale = max(1, max_cards // 9)
    for i in range(rng.randint(1, 4)):
        c = rng.randint(1, 3 * scale)
        if total + c > max_cards:
            break
        nodes.append(c)
        total += c
    ntenants = rng.randint(2, 3)
    tenants = []
    for t in range(ntenants):
        wls = []
        for w in range(rng.choice([1, 1, 2])):
            kind = rng.choice(["mps", "ts", "ts", "whole"] if total >= 3 else ["mps", "ts"])
            spread = rng.choice(["none", "gpu", "node"])
            if kind == "whole":
                mem = 40 if big else 20
                wls.append(dict(kind="training", mem=mem, replicas=1,
                                spread=spread, gpus=2))
            elif kind == "mps":
                mem = rng.choice([5, 10, 18, 30] if big else [4, 8, 12])
                wls.append(dict(kind="inference", mem=mem, replicas=rng.randint(1, 3 * scale),
                                spread=spread, gpus=1))
            else:
                mem = rng.choice([4, 10, 12, 18, 20, 30, 35, 60] if big else [4, 8, 12, 20])
                wls.append(dict(kind="batch", mem=mem, replicas=rng.randint(1, 3 * scale),
                                spread=spread, gpus=1))
        tenants.append(wls)
    trust = set()
    for a in range(ntenants):
        for b in range(a + 1, ntenants):
            if rng.random() < 0.5:
                trust.add((a, b))
    return dict(model=model, nodes=nodes, tenants=tenants, trust=trust)


def yaml_of(s, extra_nodes=0):
    out = ["apiVersion: tessera.dev/v1alpha1", "kind: Fleet", "metadata: {name: f}", "spec:",
           "  nodes:"]
    for i, c in enumerate(s["nodes"] + [8] * extra_nodes):
        out += [f"  - name: n{i}", f"    gpus: [{{model: {s['model']}, count: {c}}}]"]
    for t, wls in enumerate(s["tenants"]):
        trusts = [f"t{b}" for b in range(len(s["tenants"]))
                  if (min(t, b), max(t, b)) in s["trust"]]
        out += ["---", "apiVersion: tessera.dev/v1alpha1", "kind: Tenant",
                f"metadata: {{name: t{t}}}", "spec:", "  contract: shared-trusted",
                f"  namespaces: [t{t}]"]
        if trusts:
            out.append(f"  trusts: [{', '.join(trusts)}]")
        out.append("  workloads:")
        for w, wl in enumerate(wls):
            extra = {"inference": "p99Ms: 50, ", "batch": "bestEffort: true, "}.get(wl["kind"], "")
            out.append(f"  - {{name: w{w}, kind: {wl['kind']}, {extra}memoryHighWaterGiB: "
                       f"{wl['mem']}, replicas: {wl['replicas']}, spread: {wl['spread']}, "
                       f"gpus: {wl['gpus']}}}")
    return "\n".join(out) + "\n"


def spec_of(path):
    """A spec file back into gen()'s form (names t0.., w0.., n0..)."""
    import yaml
    docs = list(yaml.safe_load_all(open(path)))
    fleet = next(d for d in docs if d["kind"] == "Fleet")
    nodes = [n["gpus"][0]["count"] for n in fleet["spec"]["nodes"]]
    node_names = [n["name"] for n in fleet["spec"]["nodes"]]
    model = fleet["spec"]["nodes"][0]["gpus"][0]["model"]
    tdocs = [d for d in docs if d["kind"] == "Tenant"]
    names = [d["metadata"]["name"] for d in tdocs]
    tenants, trust = [], set()
    for t, d in enumerate(tdocs):
        wls = []
        for w, wl in enumerate(d["spec"]["workloads"]):
            wls.append(dict(name=wl["name"], kind=wl["kind"], mem=wl["memoryHighWaterGiB"],
                            replicas=wl.get("replicas", 1), spread=wl.get("spread", "none"),
                            gpus=wl.get("gpus", 1), best_effort=wl.get("bestEffort", False)))
        tenants.append(wls)
        for o in d["spec"].get("trusts", []):
            b = names.index(o)
            if names[t] in tdocs[b]["spec"].get("trusts", []):
                trust.add((min(t, b), max(t, b)))
    return dict(model=model, nodes=nodes, tenants=tenants, trust=trust, names=names,
                node_names=node_names)


def check_files(exe, paths):
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            s = spec_of(path)
            rc, plan = tessera(exe, open(path).read(), tmp)
            if rc != 0 or not plan:
                print(f"{path}: tessera exit {rc}")
                bad += 1
                continue
            p = Problem(s, plan["decisions"])
            why = "" if p.feasible() else "the brute force finds no layout"
            why = why or check_layout(p, plan)
            print(f"{path}: {why or 'feasible, placed, layout valid'}")
            bad += why != ""
    return 1 if bad else 0


def tessera(exe, text, tmp):
    path = os.path.join(tmp, "spec.yaml")
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([exe, "plan", "-f", path, "-o", "json"], capture_output=True, text=True)
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError:
        return r.returncode, None


# ---- the brute force ----

class Problem:
    max_steps = 2_000_000

    def __init__(self, s, decisions):
        self.cap = MODELS[s["model"]]
        self.card_node = [n for n, c in enumerate(s["nodes"]) for _ in range(c)]
        self.nodes = s["nodes"]
        self.node_names = s.get("node_names", [f"n{i}" for i in range(len(s["nodes"]))])
        self.trust = s["trust"]
        self.rows = []  # (tenant, workload, mech, cap, sm, gpus, replicas, spread)
        for d in decisions:
            t = s["names"].index(d["tenant"]) if "names" in s else int(d["tenant"][1:])
            w = next(i for i, wl in enumerate(s["tenants"][t])
                     if wl.get("name", f"w{i}") == d["workload"])
            wl = s["tenants"][t][w]
            self.rows.append(dict(t=t, w=w, name=f"{d['tenant']}/{d['workload']}", mech=d["mechanism"], cap=d["capGiB"],
                                  sm=d["smPercent"], gpus=d["gpus"], n=d["replicas"],
                                  spread=wl["spread"]))

    def trusts(self, a, b):
        return a == b or (min(a, b), max(a, b)) in self.trust

    def share_ok(self, card, row):
        """May a client of row join card (a list of (row index)) as far as
        mechanism, trust, memory and SM shares go?"""
        r = self.rows[row]
        if r["mech"] == "mig":  # only in --spec files: small instances, any tenants
            return all(self.rows[o]["mech"] == "mig" for o in card) and len(card) < 7
        if not card:
            return r["cap"] <= self.cap + 1e-9 and (r["mech"] != "mps" or r["sm"] <= 100)
        first = self.rows[card[0]]
        if first["mech"] in ("whole", "vgpu") or first["mech"] != r["mech"]:
            return False
        for o in card:
            if not self.trusts(self.rows[o]["t"], r["t"]):
                return False
            if r["mech"] == "mps" and self.rows[o]["t"] != r["t"]:
                return False
        if sum(self.rows[o]["cap"] for o in card) + r["cap"] > self.cap + 1e-9:
            return False
        if r["mech"] == "mps" and (sum(self.rows[o]["sm"] for o in card) + r["sm"] > 100 or
                                   len(card) + 1 > MPS_MAX_CLIENTS):
            return False
        return True

    def spread_ok(self, cards, c, row):
        sp = self.rows[row]["spread"]
        if sp == "gpu" or sp == "node":
            if row in cards[c]:
                return False
        if sp == "node":
            for k, n in enumerate(self.card_node):
                if n == self.card_node[c] and row in cards[k]:
                    return False
        return True

    def feasible(self):
        whole, pool = [], []
        for i, r in enumerate(self.rows):
            for k in range(r["n"]):
                (whole if r["mech"] in ("whole", "vgpu") else pool).append(i)
        whole.sort(key=lambda i: -self.rows[i]["gpus"])
        pool.sort(key=lambda i: (-self.rows[i]["cap"], i))
        cards = [[] for _ in self.card_node]
        self.steps = 0
        try:
            return self._whole(cards, whole, 0, pool)
        except TimeoutError:
            return None  # undecided: more than max_steps

    def _whole(self, cards, items, k, pool):
        if k == len(items):
            return self._pool(cards, pool, 0)
        row = items[k]
        r = self.rows[row]
        for n in range(len(self.nodes)):
            free = [c for c, cn in enumerate(self.card_node) if cn == n and not cards[c]]
            if len(free) < r["gpus"]:
                continue
            if r["spread"] == "node" and any(row in cards[c] for c, cn in
                                             enumerate(self.card_node) if cn == n):
                continue
            for c in free[:r["gpus"]]:
                cards[c].append(row)
            ok = self._whole(cards, items, k + 1, pool)
            for c in free[:r["gpus"]]:
                cards[c].pop()
            if ok:
                return True
        return False

    def _pool(self, cards, items, k):
        self.steps += 1
        if self.steps > self.max_steps:
            raise TimeoutError
        if k == len(items):
            return True
        row = items[k]
        lo = 0  # replicas of one row: nondecreasing cards (they are interchangeable)
        if k > 0 and items[k - 1] == row:
            lo = self._last
        tried_empty = set()
        for c in range(lo, len(cards)):
            if not cards[c]:
                if self.card_node[c] in tried_empty:
                    continue  # empty cards of one node are alike
                tried_empty.add(self.card_node[c])
            if not self.share_ok(cards[c], row) or not self.spread_ok(cards, c, row):
                continue
            cards[c].append(row)
            saved = getattr(self, "_last", 0)
            self._last = c
            ok = self._pool(cards, items, k + 1)
            self._last = saved
            cards[c].pop()
            if ok:
                return True
        return False


def check_layout(p, plan):
    """tessera's layout against the rules: '' when valid, else why."""
    key = {r["name"]: i for i, r in enumerate(p.rows)}
    pos = {}
    node_names = {}
    idx = 0
    for n, c in enumerate(p.nodes):
        for k in range(c):
            node_names[(p.node_names[n], k)] = idx
            idx += 1
    cards = [[] for _ in p.card_node]
    seen = {}
    for g in plan["gpus"]:
        c = node_names[(g["node"], g["index"])]
        for inst in g["instances"]:
            row = key[f"{inst['tenant']}/{inst['workload']}"]
            r = p.rows[row]
            if r["mech"] in ("whole", "vgpu"):
                if cards[c]:
                    return f"whole card {g['node']}/{g['index']} shared"
                cards[c].append(row)
                seen.setdefault((row, inst["replica"]), set()).add(p.card_node[c])
                continue
            if not p.share_ok(cards[c], row):
                return f"{inst['tenant']}/{inst['workload']} may not share {g['node']}/{g['index']}"
            if not p.spread_ok(cards, c, row):
                return f"{inst['tenant']}/{inst['workload']} breaks spread on {g['node']}"
            cards[c].append(row)
            pos.setdefault(row, 0)
            pos[row] += 1
    for (row, rep), ns in seen.items():
        if len(ns) != 1:
            return f"whole replica r{rep} spans nodes"
    for row, r in enumerate(p.rows):
        if r["mech"] in ("whole", "vgpu"):
            reps = {rep for (x, rep) in seen if x == row}
            if len(reps) != r["n"]:
                return f"{r['name']}: {len(reps)} of {r['n']} replicas"
            if r["spread"] == "node":
                nodes = [next(iter(seen[(row, rep)])) for rep in reps]
                if len(set(nodes)) != len(nodes):
                    return f"{r['name']}: whole replicas share a node"
        elif pos.get(row, 0) != r["n"]:
            return f"{r['name']}: {pos.get(row, 0)} of {r['n']} replicas"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--spec", nargs="+", help="check these spec files alone")
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="write each disagreeing spec here")
    ap.add_argument("--max-cards", type=int, default=9,
                    help="cards in a fleet at most (9: the tiny fleets; more: nodes and "
                         "replicas scaled, the brute force may leave some undecided)")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    if a.spec:
        return check_files(a.tessera, a.spec)
    rng = random.Random(a.seed)
    counts = dict(specs=0, feasible=0, placed=0, false_refusal=0, invalid=0, infeasible_ok=0, undecided=0)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.count):
            s = gen(rng, a.max_cards)
            rc, big = tessera(a.tessera, yaml_of(s, extra_nodes=6), tmp)
            if rc != 0 or not big:
                continue  # not plannable even on a large fleet: not this check's shape
            text = yaml_of(s)
            p = Problem(s, big["decisions"])
            feasible = p.feasible()
            if feasible is None:
                counts["undecided"] += 1
                continue
            rc, plan = tessera(a.tessera, text, tmp)
            counts["specs"] += 1
            counts["feasible"] += feasible
            why = ""
            if rc == 0:
                counts["placed"] += 1
                why = check_layout(p, plan)
                if why:
                    counts["invalid"] += 1
            elif feasible:
                counts["false_refusal"] += 1
                why = "feasible, refused"
            else:
                counts["infeasible_ok"] += 1
            if why:
                bad += 1
                if a.v:
                    print(f"spec {i}: {why}", file=sys.stderr)
                if a.keep:
                    os.makedirs(a.keep, exist_ok=True)
                    with open(os.path.join(a.keep, f"spec-{a.seed}-{i}.yaml"), "w") as f:
                        f.write(f"# place_check.py seed {a.seed} spec {i}: {why}\n" + text)
    print(" ".join(f"{k}={v}" for k, v in counts.items()))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
