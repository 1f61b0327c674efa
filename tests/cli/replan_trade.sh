#!/usr/bin/env bash
# replan_trade.sh - replanning as a trade of drains for cards (issue 30),
# on small fleets whose running plans are written here by hand, so every
# expected figure is counted by hand in the comments, not read from tessera:
#   A. one drain saves a card: --max-drains 1 --prefer fewer-cards gives the
#      fewest cards there are at the fewest drains for them, and the Pareto
#      points are reported (text and JSON); without a PriceBook, lower cost
#      is fewer cards;
#   B. a price change: --max-drains 0 keeps the running layout (exit 0);
#      --prefer lower-cost takes the cheaper cards and their drains;
#   C. a pure scale-down drains nothing;
#   D. a pool that grows gets the room on its card, no drain;
#   E. a node removed from the fleet: teardown steps, its drains counted,
#      --max-drains 0 still succeeds (a removed node's drains are forced);
#      a node the fleet still has, or that runs nothing, is bad input (exit 2);
#   F. two cards repacked together: no card can be emptied into the others'
#      free space as they are laid out, but one emptied with another laid out
#      again saves a card at 2 drains, where the fresh plan drains 3.
#      Its point is named for both: "keep, 1 card emptied, 1 re-laid"
#      (text and JSON), where A's, which lays out no card again, is not;
#   G. new work placed after emptying: a workload grows from 1g.10gb to
#      2g.20gb; the keep plan puts the new 2g.20gb in the first free slot,
#      the one a card's 3g.40gb needs to be emptied with 1 drain; placed
#      after the emptying instead, 1 drain, where the parent drains 2.
#   H. three cards interlocked by spread: no card empties alone, and the
#      search's repacks (largest first into one card) find none either; the
#      exact re-layout (reconf/relay.c) empties one and lays out another at 2
#      drains, where the parent's fresh plan drains 3.
#   I. new work that fits only by moving running work, so no keep plan: the
#      fresh plan's MIG cards laid out again give 1 drain on 4 cards beside
#      the fresh plan's 4 drains on 3, and --prefer fewer-drains takes it
#      (the parent: only the fresh plan, 4 drains).
# Drains are also counted from the two plans' JSON (a card is drained when a
# running instance of a workload the spec keeps is not at the same place).
# Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"
T() { "$TESSERA" "$@"; }
cd "$TMP"

python3 - <<'PY'
import json
H = "h100-80gb-sxm"
def fleet(nodes, extra=""):
    s = "apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n  nodes:\n"
    for name, gpus in nodes:
        s += "  - name: %s\n    mps: true\n    gpus:\n%s" % (name, "".join(
            "    - {model: %s, count: %d}\n" % g for g in gpus))
    return s + extra
def mig(t, reps=1, spread="none", mem=7.5, kv=1.5):
    return ("---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: %s}\nspec:\n"
            "  contract: isolated\n  namespaces: [%s]\n  workloads:\n"
            "  - {name: w, kind: inference, memoryHighWaterGiB: %s, kvCacheGiB: %s, p99Ms: 300,"
            " trust: untrusted, replicas: %d, spread: %s}\n" % (t, t, mem, kv, reps, spread))
def mps(t, reps):
    return ("---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: %s}\nspec:\n"
            "  contract: shared-trusted\n  namespaces: [%s]\n  workloads:\n"
            "  - {name: w, kind: inference, memoryHighWaterGiB: 10, p99Ms: 100, replicas: %d,"
            " spread: none}\n" % (t, t, reps))
def prices(a100, h100):
    return ("---\napiVersion: tessera.dev/v1alpha1\nkind: PriceBook\nmetadata: {name: p}\nspec:\n"
            "  currency: EUR\n  prices:\n  - {model: a100-80gb, perGpuHour: \"%s\"}\n"
            "  - {model: %s, perGpuHour: \"%s\"}\n" % (a100, H, h100))
def inst(t, start, profile="1g.10gb", size=1, replica=0):
    return {"profile": profile, "start": start, "size": size, "tenant": t, "workload": "w",
            "replica": replica, "gpuPart": 0, "memoryGiB": 9.75, "smPercent": 0, "guest": False,
            "canary": False}
def card(node, i, mode, insts, model=H):
    return {"node": node, "index": i, "model": model, "mode": mode, "instances": insts}
def plan(name, gpus):
    json.dump({"apiVersion": "tessera.dev/v1alpha1", "kind": "Plan", "gpus": gpus},
              open(name, "w"), indent=1)
def write(name, text):
    open(name, "w").write(text)

# A: 9 single-replica 1g.10gb tenants run three to a card on cards 0-2 (card
# 3 free); x signs up with 2 more. 11 instances of 1g.10gb, 7 to a card: 2
# cards at least; the 3 running cards each hold running work, so 2 cards
# means emptying one: 1 drain at least. Keeping all: 3 cards, 0 drains.
a = fleet([("n1", [(H, 4)])]) + "".join(mig("t%d" % i) for i in range(1, 10))
write("a-new.yaml", a + mig("x", 2))
plan("a-run.json", [card("n1", c, "mig", [inst("t%d" % (3 * c + k + 1), k) for k in range(3)])
                    for c in range(3)] + [card("n1", 3, "free", [])])

# B: three 3g.40gb tenants run on two A100s (t1, t2 on card 0, t3 on card 1);
# the prices swap (A100 3.00, H100 1.00). Keeping: 2 A100s = 6.00 EUR/h, 0
# drains; the cheapest layout: 2 H100s = 2.00 EUR/h, both A100 cards drained.
b = lambda pa, ph: (fleet([("n1", [("a100-80gb", 2), (H, 2)])], prices(pa, ph)) +
                    "".join(mig(t, mem=28, kv=8) for t in ("t1", "t2", "t3")))
write("b-new.yaml", b("3.00", "1.00"))
g40 = lambda t, s: dict(inst(t, s, "3g.40gb", 4), memoryGiB=39.25)
plan("b-run.json", [card("n1", 0, "mig", [g40("t1", 0), g40("t2", 4)], "a100-80gb"),
                    card("n1", 1, "mig", [g40("t3", 0)], "a100-80gb"),
                    card("n1", 0 + 2, "free", []), card("n1", 3, "free", [])])

# C: a runs 3 replicas (spread gpu) on cards 0-2 next to b's 2; a scales
# down to 2: one of a's instances is destroyed, nothing drained.
c = lambda reps: fleet([("n1", [(H, 3)])]) + mig("a", reps, "gpu") + mig("b", 2, "gpu")
write("c-new.yaml", c(2))
plan("c-run.json", [card("n1", 0, "mig", [inst("a", 0, replica=0), inst("b", 1, replica=0)]),
                    card("n1", 1, "mig", [inst("a", 0, replica=1), inst("b", 1, replica=1)]),
                    card("n1", 2, "mig", [inst("a", 0, replica=2)])])

# D: the MPS pool p (10 GiB, 15% of the SMs a client) grows from 1 to 2
# replicas (spread none) next to six 1g.10gb tenants on two MIG cards; its
# card has room (20 GiB of 80, 30% of 100): 0 drains, the new client on it.
d = lambda reps: (fleet([("n1", [(H, 4)])]) + "".join(mig("t%d" % i) for i in range(1, 7)) +
                  mps("p", reps))
write("d-new.yaml", d(2))
plan("d-run.json", [card("n1", c, "mig", [inst("t%d" % (3 * c + k + 1), k) for k in range(3)])
                    for c in range(2)] +
     [card("n1", 2, "mps", [dict(inst("p", 0), profile=None, start=None, size=None,
                                 memoryGiB=10, smPercent=15)]), card("n1", 3, "free", [])])

# E: n2 (cards 0 and 1 run p's two MPS clients) leaves the fleet; n1 has
# a's 3 MIG replicas on cards 0-2 and two free cards. p's clients move to
# n1's free cards: 2 drains, both on n2; nothing on n1 is disturbed.
e = fleet([("n1", [(H, 5)])]) + mig("a", 3, "gpu") + mps("p", 2)
write("e-new.yaml", e)
pc = lambda r: dict(inst("p", 0, replica=r), profile=None, start=None, size=None, memoryGiB=10,
                    smPercent=15)
plan("e-run.json", [card("n1", i, "mig", [inst("a", 0, replica=i)]) for i in range(3)] +
     [card("n1", 3, "free", []), card("n1", 4, "free", []),
      card("n2", 0, "mps", [pc(0)]), card("n2", 1, "mps", [pc(1)])])
PY
# the JSON plans above name start/size null off MIG: drop those keys
python3 - *.json <<'PY'
import json, sys
for f in sys.argv[1:]:
    p = json.load(open(f))
    for g in p["gpus"]:
        for i in g["instances"]:
            for k in ("profile", "start", "size"):
                if i.get(k) is None and g["mode"] != "mig":
                    i.pop(k, None)
                    if k == "profile":
                        i[k] = None
    json.dump(p, open(f, "w"))
PY

# drained RUN NEW: cards drained counted from the two plans
drained() {
    python3 - "$1" "$2" <<'PY'
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:])
live = {(x["tenant"], x["workload"]) for x in new["decisions"]}
want = {}
for x in new["decisions"]:
    want[(x["tenant"], x["workload"])] = x["replicas"]
place = lambda g, i: (g["node"], g["index"], i["tenant"], i["workload"], i.get("profile"),
                      i.get("start"), g["mode"])
kept = {place(g, i) for g in new["gpus"] for i in g["instances"]}
moved = [place(g, i) for g in old["gpus"] for i in g["instances"]
         if (i["tenant"], i["workload"]) in live and place(g, i) not in kept]
# a scale-down's surplus is not a move: per workload, running minus kept
# beyond what the new plan holds is dropped
from collections import Counter
run = Counter((i["tenant"], i["workload"]) for g in old["gpus"] for i in g["instances"])
now = Counter((i["tenant"], i["workload"]) for g in new["gpus"] for i in g["instances"])
surplus = {k: max(0, run[k] - now[k]) for k in run}
cards = set()
for m in moved:
    k = (m[2], m[3])
    if surplus.get(k, 0) > 0:
        surplus[k] -= 1
        continue
    cards.add((m[0], m[1]))
print(len(cards))
PY
}
# cards_and_drains CASE RUNNING NEW CARDS DRAINS: NEW uses CARDS cards and
# drains DRAINS, counted from the two plans (the fewest for CARDS, by the
# case's comment) and as it reports
cards_and_drains() {
    local cards drains
    cards=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["summary"]["gpusUsed"])' "$3")
    drains=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["replan"]["drains"])' "$3")
    check "$1: $4 cards" test "$cards" = "$4"
    check "$1: $5 drains (the fewest for $4 cards)" test "$(drained "$2" "$3")" = "$5"
    check "$1: $5 drains reported" test "$drains" = "$5"
}

# ---- A: one drain saves a card -------------------------------------------
expect_rc 0 T plan -f a-new.yaml --current a-run.json --max-drains 1 --prefer fewer-cards -o json
cp "$TMP/out" a1.json
check "A: 2 cards" test "$(python3 -c 'import json;print(json.load(open("a1.json"))["summary"]["gpusUsed"])')" = 2
check "A: 1 drain" test "$(drained a-run.json a1.json)" = 1
python3 - a1.json <<'PY' && ok || bad "A: points"
import json, sys
r = json.load(open(sys.argv[1]))["replan"]
assert r["drains"] == 1 and r["maxDrains"] == 1 and r["prefer"] == "fewer-cards", r
pts = {(p["drains"], p["cards"]) for p in r["points"] if p["pareto"]}
assert (0, 3) in pts and (1, 2) in pts, r["points"]
chosen = [p for p in r["points"] if p["chosen"]]
assert len(chosen) == 1 and (chosen[0]["drains"], chosen[0]["cards"]) == (1, 2), chosen
assert all(p["refused"] for p in r["points"] if p["drains"] > 1), r["points"]
PY
# no limit, fewer cards: still 1 drain for the 2 cards (not the fresh plan's more)
expect_rc 0 T plan -f a-new.yaml --current a-run.json --prefer fewer-cards -o json
cp "$TMP/out" a2.json
check "A: no limit, 1 drain" test "$(drained a-run.json a2.json)" = 1
# fewest drains: all kept, 3 cards, 0 drains; the text names the points
expect_rc 0 T plan -f a-new.yaml --current a-run.json --max-drains 0
expect_in "$TMP/out" "GPUs used          3 of 4"
expect_in "$TMP/out" "*  0 drains,   3 cards: keep"
expect_in "$TMP/out" "+  1 drain ,   2 cards: keep, 1 card emptied (refused: it drains 1 card, over --max-drains 0)"
# a card budget: at most 2 cards, fewest drains: 1
expect_rc 0 T plan -f a-new.yaml --current a-run.json --max-cards 2 -o json
cp "$TMP/out" a3.json
check "A: --max-cards 2, 1 drain" test "$(drained a-run.json a3.json)" = 1
expect_rc 1 T plan -f a-new.yaml --current a-run.json --max-cards 1
expect_in "$TMP/err" "over --max-cards 1"
# lower cost without a PriceBook: cost is the cards, so 2 cards at 1 drain,
# as fewer-cards (before: the 3 cards the fewest drains keep)
expect_rc 0 T plan -f a-new.yaml --current a-run.json --prefer lower-cost -o json
cp "$TMP/out" a4.json
check "A: lower-cost unpriced, 2 cards" test "$(python3 -c 'import json;print(json.load(open("a4.json"))["summary"]["gpusUsed"])')" = 2
check "A: lower-cost unpriced, 1 drain" test "$(drained a-run.json a4.json)" = 1
# a cost budget without a PriceBook: every plan refused, saying why
expect_rc 1 T plan -f a-new.yaml --current a-run.json --max-cost 10
expect_in "$TMP/err" "--max-cost needs a PriceBook price"

# ---- B: a price change -----------------------------------------------------
expect_rc 0 T plan -f b-new.yaml --current b-run.json --max-drains 0 -o json
cp "$TMP/out" b1.json
python3 - b-run.json b1.json <<'PY' && ok || bad "B: kept after a price change"
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:])
place = lambda g, i: (g["node"], g["index"], g["model"], i["tenant"], i["profile"], i["start"])
assert {place(g, i) for g in old["gpus"] for i in g["instances"]} == \
       {place(g, i) for g in new["gpus"] for i in g["instances"]}, new["gpus"]
assert new["replan"]["drains"] == 0 and new["replan"]["steps"] == []
assert abs(new["summary"]["costPerHour"] - 6.00) < 1e-9, new["summary"]
assert all(d["gpuModel"] == "a100-80gb" for d in new["decisions"]), new["decisions"]
PY
check "B: 0 drains" test "$(drained b-run.json b1.json)" = 0
expect_rc 0 T plan -f b-new.yaml --current b-run.json --prefer lower-cost -o json
cp "$TMP/out" b2.json
python3 - b2.json <<'PY' && ok || bad "B: lower cost"
import json, sys
p = json.load(open(sys.argv[1]))
assert abs(p["summary"]["costPerHour"] - 2.00) < 1e-9, p["summary"]
assert p["replan"]["drains"] == 2, p["replan"]["drains"]
PY
check "B: lower cost drains both A100s" test "$(drained b-run.json b2.json)" = 2
# a cost budget of 5.00 EUR/h: the kept layout (6.00) is over it, the H100s (2.00) not
expect_rc 0 T plan -f b-new.yaml --current b-run.json --max-cost 5 -o json
cp "$TMP/out" b3.json
check "B: --max-cost 5 moves to the H100s" test "$(drained b-run.json b3.json)" = 2

# ---- C: a pure scale-down ----------------------------------------------------
expect_rc 0 T plan -f c-new.yaml --current c-run.json --max-drains 0 -o json
cp "$TMP/out" c1.json
python3 - c1.json <<'PY' && ok || bad "C: scale-down"
import json, sys
p = json.load(open(sys.argv[1]))
r = p["replan"]
assert r["drains"] == 0, r
acts = [(s["action"], s["tenants"].split(" r")[0]) for s in r["steps"]]
assert acts == [("destroy", "a/w")], r["steps"]
assert "no longer has" in r["steps"][0]["why"], r["steps"][0]
assert sum(i["tenant"] == "a" for g in p["gpus"] for i in g["instances"]) == 2
PY
check "C: 0 drains" test "$(drained c-run.json c1.json)" = 0

# ---- D: a pool that grows ------------------------------------------------------
expect_rc 0 T plan -f d-new.yaml --current d-run.json --max-drains 0 -o json
cp "$TMP/out" d1.json
python3 - d1.json <<'PY' && ok || bad "D: pool growth"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["replan"]["drains"] == 0, p["replan"]
pool = [g for g in p["gpus"] if any(i["tenant"] == "p" for i in g["instances"])]
assert len(pool) == 1 and pool[0]["index"] == 2 and len(pool[0]["instances"]) == 2, pool
assert [s["action"] for s in p["replan"]["steps"]] == ["create"], p["replan"]["steps"]
PY
check "D: 0 drains" test "$(drained d-run.json d1.json)" = 0

# ---- E: a node leaves the fleet --------------------------------------------------
expect_rc 2 T plan -f e-new.yaml --current e-run.json
expect_in "$TMP/err" "the fleet has no node 'n2' (a node that left the fleet: --removed-node n2)"
expect_rc 0 T plan -f e-new.yaml --current e-run.json --removed-node n2 --max-drains 0 -o json
cp "$TMP/out" e1.json
python3 - e1.json <<'PY' && ok || bad "E: teardown"
import json, sys
r = json.load(open(sys.argv[1]))["replan"]
assert r["drains"] == 2 and r["removedDrains"] == 2, r
n2 = [(s["index"], s["action"]) for s in r["steps"] if s["node"] == "n2"]
assert n2 == [(0, "cordon"), (0, "drain"), (0, "destroy"), (1, "cordon"), (1, "drain"),
              (1, "destroy")], n2
n1 = [s["action"] for s in r["steps"] if s["node"] == "n1"]
assert n1 == ["create", "create"], n1
assert all(s["wave"] == 0 for s in r["steps"] if s["node"] == "n1"), r["steps"]
PY
expect_rc 2 T plan -f e-new.yaml --current e-run.json --removed-node n1
expect_in "$TMP/err" "--removed-node n1: the fleet still has node n1"
expect_rc 2 T plan -f e-new.yaml --current e-run.json --removed-node n2 --removed-node n9
expect_in "$TMP/err" "--removed-node n9: the running plan has no card on node n9"
expect_rc 2 T plan -f e-new.yaml --max-cards 0 --current e-run.json
expect_in "$TMP/err" "--max-cards must be a whole number from 1 to"
expect_rc 2 T plan -f e-new.yaml --max-cost abc --current e-run.json
expect_in "$TMP/err" "--max-cost must be a price per hour above 0"
# ---- F: two cards repacked together ------------------------------------------------
# Three H100s each run a 3g.40gb and a 1g.10gb (nothing changes in the spec):
# card 0 a 3g@0 b 1g@5, card 1 c 3g@4 d 1g@1, card 2 e 3g@0 f 1g@5. Compute
# 3*3 + 3*1 = 12 <= 14 and memory 3*4 + 3 = 15 <= 16: 2 cards hold them (two
# 3g at 0 and 4 on one, the other 3g and the three 1g on the other). Every
# card holds running work, so 2 cards drain 1 at least; a 3g needs slots 0-3
# or 4-7 free, and every card keeps a 1g in the other half, so no card's 3g
# fits another card as it is: 1 drain cannot do it. Card 0 kept as it runs, c
# and e together on card 1 (so d moves off it), d and f into card 0's slots 4
# and 6: 2 drains. Before: the fresh plan, 3 drains.
PYTHONPATH="$TESSERA_SRC/tests/tools" python3 - <<'PY'
from plan_fixture import fleet, one_inference, mig, card, plan
open("f-new.yaml", "w").write(fleet(3) + "".join(one_inference(n, 28, 8) for n in "ace") +
                              "".join(one_inference(n, 7.5, 1.5) for n in "bdf"))
halves = [(("a", 0), ("b", 5)), (("c", 4), ("d", 1)), (("e", 0), ("f", 5))]
plan("f-run.json", [card(i, "mig", [mig(big[0], "3g.40gb", big[1]), mig(one[0], "1g.10gb", one[1])])
                    for i, (big, one) in enumerate(halves)])
PY
expect_rc 0 T plan -f f-new.yaml --current f-run.json --prefer fewer-cards -o json
cp "$TMP/out" f1.json
cards_and_drains F f-run.json f1.json 2 2
expect_rc 0 T plan -f f-new.yaml --current f-run.json --max-drains 2 --prefer fewer-cards
expect_in "$TMP/out" "GPUs used          2 of 3"
expect_in "$TMP/out" "*  2 drains,   2 cards: keep, 1 card emptied, 1 re-laid"
expect_in "$TMP/out" "running placements kept, new work in free space, 1 card emptied into the others, 1 re-laid"
# the label counts what was done, read here from the two plans: of the 2
# cards drained, one holds nothing now (emptied), the other holds instances
# laid out again
python3 - f-run.json f1.json <<'PY' && ok || bad "F: its point names the card laid out again"
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:])
chosen = [x for x in new["replan"]["points"] if x["chosen"]]
assert [x["how"] for x in chosen] == ["keep, 1 card emptied, 1 re-laid"], chosen
now = {(g["node"], g["index"]): {(i["tenant"], i["profile"], i["start"]) for i in g["instances"]}
       for g in new["gpus"]}
drained = [k for k in ((g["node"], g["index"]) for g in old["gpus"])
           if any((i["tenant"], i["profile"], i["start"]) not in now.get(k, set())
                  for g in old["gpus"] if (g["node"], g["index"]) == k for i in g["instances"])]
assert sorted(bool(now.get(k)) for k in drained) == [False, True], (drained, now)
PY
# A's plan empties one card into the others and lays none out again
python3 - a2.json <<'PY' && ok || bad "A: its point names no card laid out again"
import json, sys
p = json.load(open(sys.argv[1]))
assert [x["how"] for x in p["replan"]["points"] if x["chosen"]] == ["keep, 1 card emptied"]
PY

# ---- G: new work placed after emptying ------------------------------------------------
# Three H100s: card 0 a 2g@0 b 1g@2; card 1 p 1g@1 c 3g@4; card 2 d 1g@3 e 3g@4.
# p grows to 2g.20gb: its running 1g.10gb cannot stay, so card 1 is drained
# whatever the plan. Units 2+1+2+4+1+4 = 14 <= 16 and compute 2+1+2+3+1+3 =
# 12 <= 14: 2 cards hold them, and 1 cannot (14 > 8). 2 cards drain card 1
# at least, and 1 is enough: c 3g into card 0's free 4-7 (compute 2+1+3 = 6),
# p's 2g into card 2's free 0-1 (compute 1+3+2 = 6), card 1 emptied. The keep
# plan puts p's 2g first, at card 0's first free 2g start (4), so c fits no
# card as they stand: before, emptying card 0 as well, 2 drains.
PYTHONPATH="$TESSERA_SRC/tests/tools" python3 - <<'PY'
from plan_fixture import fleet, tenant, inference, one_inference, mig, card, plan
two_slices = lambda n: tenant(n, [("w", inference(15, 3, ", replicas: 1, spread: none, "
                                                  "computeSlices: 2"))])
open("g-new.yaml", "w").write(fleet(3) + two_slices("a") + two_slices("p") +
                              one_inference("c", 28, 8) + one_inference("e", 28, 8) +
                              one_inference("b", 7.5, 1.5) + one_inference("d", 7.5, 1.5))
cards = [[("a", "2g.20gb", 0), ("b", "1g.10gb", 2)], [("p", "1g.10gb", 1), ("c", "3g.40gb", 4)],
         [("d", "1g.10gb", 3), ("e", "3g.40gb", 4)]]
plan("g-run.json", [card(i, "mig", [mig(*x) for x in c]) for i, c in enumerate(cards)])
PY
expect_rc 0 T plan -f g-new.yaml --current g-run.json --prefer fewer-cards -o json
cp "$TMP/out" g1.json
check "G: 2 cards" test "$(python3 -c 'import json;print(json.load(open("g1.json"))["summary"]["gpusUsed"])')" = 2
check "G: 1 drain (the fewest for 2 cards)" test "$(drained g-run.json g1.json)" = 1
python3 - g1.json <<'PY' && ok || bad "G: c moved to card 0, p's 2g.20gb beside d and e"
import json, sys
p = json.load(open(sys.argv[1]))
at = {i["tenant"]: (g["index"], i["profile"], i["start"]) for g in p["gpus"] for i in g["instances"]}
assert p["replan"]["drains"] == 1, p["replan"]
assert at["a"] == (0, "2g.20gb", 0) and at["b"] == (0, "1g.10gb", 2), at
assert at["d"] == (2, "1g.10gb", 3) and at["e"] == (2, "3g.40gb", 4), at
assert at["c"][:2] == (0, "3g.40gb") and at["p"][:2] == (2, "2g.20gb"), at
PY
# ---- H: an exact re-layout --------------------------------------------------------------
# Three H100s (7 compute slices, memory units 0-7): card 0 t2 2g@0 t3 3g@4;
# card 1 t1 1g@3; card 2 t0 2g@0 t1 1g@3 t4 1g@6. t1 has 2 replicas, spread
# gpu; new tenant x, a 2g.20gb with 2 replicas, spread gpu. Compute: four 2g
# (t0 t2 x x) 8 + t3's 3g 3 + three 1g 3 = 14 = 2 cards x 7, so 2 cards hold
# it only full, and every card runs work: 2 cards drain 1 at least. 1 drain
# cannot do it (the other two cards kept as they run, taking work in their
# free units):
#   card 1 emptied: card 0 has 2 compute free, card 2 3; an x on each, and
#     t1's moved replica not beside t1 on card 2, so on card 0: 2 + 1 > 2;
#   card 0 emptied: t3's 3g fits only card 1's 4-7; then card 1 has 0-2
#     free (one 2g) and card 2 one 2g at 4: 2 places for t2 and both x;
#   card 2 emptied: t1's replica must go to card 0 (t1 runs on card 1), and
#     with t4 fills card 0's 2 free compute, so t0 and both x go to card 1,
#     two x on one card.
# 2 drains do it: card 0 emptied, card 1 keeps t1 at 3 and takes x 2g@0, t4
# 1g@2, t3 3g@4 (2+1+1+3 = 7); card 2 laid out again keeps t0 2g@0 and takes
# x 2g and t2 2g, its t1 at 6 (2+2+2+1 = 7). Before: the fresh plan, 3 drains.
PYTHONPATH="$TESSERA_SRC/tests/tools" python3 - <<'PY'
from plan_fixture import fleet, tenant, inference, one_inference, mig, card, plan
two = lambda n, reps: tenant(n, [("w", inference(15, 3, ", replicas: %d, spread: gpu, "
                                                 "computeSlices: 2" % reps))])
open("h-new.yaml", "w").write(fleet(3) + two("t0", 1) + two("t2", 1) + two("x", 2) +
                              one_inference("t3", 28, 8) + one_inference("t4", 7.5, 1.5) +
                              one_inference("t1", 7.5, 1.5, 2, "gpu"))
cards = [[("t2", "2g.20gb", 0), ("t3", "3g.40gb", 4)], [("t1", "1g.10gb", 3, 1)],
         [("t0", "2g.20gb", 0), ("t1", "1g.10gb", 3), ("t4", "1g.10gb", 6)]]
plan("h-run.json", [card(i, "mig", [mig(*x) for x in c]) for i, c in enumerate(cards)])
PY
expect_rc 0 T plan -f h-new.yaml --current h-run.json --prefer fewer-cards -o json
cp "$TMP/out" h1.json
cards_and_drains H h-run.json h1.json 2 2
expect_rc 0 T plan -f h-new.yaml --current h-run.json --max-drains 2 --prefer fewer-cards
expect_in "$TMP/out" "*  2 drains,   2 cards: keep, 1 card emptied, 1 re-laid"
expect_rc 0 T plan -f h-new.yaml --current h-run.json --max-drains 1 --prefer fewer-cards
expect_in "$TMP/out" "GPUs used          3 of 3"
# ---- I: new work that fits only by moving running work -----------------------------------
# Four H100s, all running: card 0 t1 1g@0 t3 1g@1 t6 2g@4; card 1 t5 3g@0
# t2 3g@4; card 2 t2 3g@0 t0 2g@4 t1 1g@6; card 3 t3 1g@0 t0 2g@2 t4 1g@4.
# t0, t1, t2, t3 run 2 replicas, spread gpu; t3 grows to 3. Its third
# replica may not join cards 0 or 3 (t3 runs there); card 1 has no free
# unit, card 2 only unit 7, where no 1g.10gb starts. So no plan keeps
# every card (no keep plan), and 1 drain is the fewest: e.g. card 2's t1
# 1g moves to card 3 (free units 1, 5-7; t1 is not on card 3), card 3 only
# gains an instance, and t3's replica takes card 2's unit 6.
PYTHONPATH="$TESSERA_SRC/tests/tools" python3 - <<'PY'
from plan_fixture import fleet, tenant, inference, one_inference, mig, card, plan
two = lambda n, reps: tenant(n, [("w", inference(15, 3, ", replicas: %d, spread: gpu, "
                                                 "computeSlices: 2" % reps))])
open("i-new.yaml", "w").write(fleet(4) + two("t0", 2) + two("t6", 1) +
                              one_inference("t1", 7.5, 1.5, 2, "gpu") +
                              one_inference("t3", 7.5, 1.5, 3, "gpu") +
                              one_inference("t4", 7.5, 1.5) + one_inference("t5", 28, 8) +
                              one_inference("t2", 28, 8, 2, "gpu"))
cards = [[("t1", "1g.10gb", 0, 1), ("t3", "1g.10gb", 1), ("t6", "2g.20gb", 4)],
         [("t5", "3g.40gb", 0), ("t2", "3g.40gb", 4)],
         [("t2", "3g.40gb", 0, 1), ("t0", "2g.20gb", 4, 1), ("t1", "1g.10gb", 6)],
         [("t3", "1g.10gb", 0, 1), ("t0", "2g.20gb", 2), ("t4", "1g.10gb", 4)]]
plan("i-run.json", [card(i, "mig", [mig(*x) for x in c]) for i, c in enumerate(cards)])
PY
expect_rc 0 T plan -f i-new.yaml --current i-run.json --prefer fewer-drains -o json
cp "$TMP/out" i1.json
check "I: 1 drain (the fewest)" test "$(drained i-run.json i1.json)" = 1
python3 - i1.json <<'PY' && ok || bad "I: t3's third replica on card 1 or 2, on its own card"
import json, sys
p = json.load(open(sys.argv[1]))
r = p["replan"]
assert r["drains"] == 1 and p["summary"]["gpusUsed"] == 4, r
assert [x["how"] for x in r["points"] if x["chosen"]] == ["keep, 1 re-laid"], r["points"]
t3 = [g["index"] for g in p["gpus"] for i in g["instances"] if i["tenant"] == "t3"]
assert sorted(t3)[:1] == [0] and 3 in t3 and len(set(t3)) == 3 and set(t3) & {1, 2}, t3
PY
expect_rc 0 T plan -f i-new.yaml --current i-run.json --max-drains 1
expect_in "$TMP/out" "Replanning (running placements kept, 1 card laid out again for the new work)"
finish
