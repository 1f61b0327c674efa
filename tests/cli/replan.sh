#!/usr/bin/env bash
# replan.sh - `tessera plan --current PLAN.json` end to end, and the
# replanning part of `make demo` (scripts/demo-replan): the worked example
# on a node with a fifth H100, client-x added with two 3g.40gb replicas.
# Checked against numbers read from the two plans' JSON here (python3), not
# from what the steps say: the running instances that leave their place sit
# on one card, client-a keeps one replica in place, and the JSON steps are
# cordon, drain, destroy, create, uncordon for that card; an unchanged spec
# has no step; a removed client's instances are destroyed without a drain;
# --max-drains 0 keeps running work and names what does not fit (exit 1),
# a workload grown past the fleet included; bad flags and bad
# plan JSON exit 2 naming the flag or the JSON path. Needs TESSERA,
# TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"
cd "$TESSERA_SRC"
T() { "$TESSERA" "$@"; }

expect_rc 0 scripts/demo-replan "$TESSERA" "$TMP/demo"
d="$TMP/demo/replan"
expect_in "$TMP/out" "cards kept 3, changed 2, drained 1"
expect_in "$TMP/out" "[wave 1] drain gpu-node-1 GPU 0 evicts client-a/chat-13b r0"
# --max-drains 0: running work kept, the replica of client-x that needs a
# drain named (the five cards hold one free card and no free 3g.40gb slice)
expect_in "$TMP/out" "tessera: replan: not placed: client-x/chat-x, 1 replica"

# JSON: the plan, its steps, and the drains counted from the two plans
expect_rc 0 T plan -f "$d/five-h100.yaml" -f "$d/client-x.yaml" --current "$d/running.json" -o json
python3 - "$d/running.json" "$TMP/out" <<'PY' && ok || bad "replan json"
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:])
live = {(x["tenant"], x["workload"]) for x in new["decisions"]}
place = lambda g, i: (g["node"], g["index"], i["tenant"], i["workload"], i["profile"], i["start"])
kept = {place(g, i) for g in new["gpus"] for i in g["instances"]}
moved = [place(g, i) for g in old["gpus"] for i in g["instances"]
         if (i["tenant"], i["workload"]) in live and place(g, i) not in kept]
cards = {(m[0], m[1]) for m in moved}
assert cards == {("gpu-node-1", 0)}, moved
a = [i for g in new["gpus"] for i in g["instances"] if i["workload"] == "chat-13b"]
assert len(a) == 2 and len(moved) == 1, (a, moved)
x = sorted(g["index"] for g in new["gpus"] for i in g["instances"] if i["tenant"] == "client-x")
assert len(x) == 2 and x[0] != x[1], x
r = new["replan"]
assert r["drains"] == len(cards) and r["maxDrains"] is None and r["prefer"] == "fewer-drains", r
w1 = [s["action"] for s in r["steps"] if s["wave"] == 1]
assert w1 == ["cordon", "drain", "destroy", "create", "uncordon"], w1
assert all(s["index"] == 0 for s in r["steps"] if s["wave"] == 1), r["steps"]
assert [s["step"] for s in r["steps"]] == list(range(1, len(r["steps"]) + 1))
assert new["summary"]["gpusUsed"] == 5
PY

# unchanged spec: no step
expect_rc 0 T plan -f examples/four-h100.yaml -o json
cp "$TMP/out" "$TMP/w4.json"
expect_rc 0 T plan -f examples/four-h100.yaml --current "$TMP/w4.json"
expect_in "$TMP/out" "no step: every card keeps what it runs"
expect_in "$TMP/out" "cards kept 4, changed 0, drained 0"

# a client removed: its two instances destroyed, nothing drained
python3 - examples/four-h100.yaml "$TMP/no-c.yaml" <<'PY'
import sys
docs = open(sys.argv[1]).read().split("\n---\n")
open(sys.argv[2], "w").write("\n---\n".join(d for d in docs if "{name: client-c}" not in d))
PY
expect_rc 0 T plan -f "$TMP/no-c.yaml" --current "$TMP/w4.json" -o json
python3 - "$TMP/out" <<'PY' && ok || bad "remove client json"
import json, sys
r = json.load(open(sys.argv[1]))["replan"]
acts = [(s["action"], s["tenants"], s["why"]) for s in r["steps"]]
assert acts == [("destroy", "client-c/support-7b-int8 r%d" % k, "removed from the spec")
                for k in (0, 1)], acts
assert r["drains"] == 0 and r["cardsChanged"] == 2, r
PY

# --max-drains 0 where placing everything needs a drain: the plan keeps every
# running instance, places one replica of client-x on the free card, names
# the other (stderr and replan.unplaced) and exits 1
expect_rc 1 T plan -f "$d/five-h100.yaml" -f "$d/client-x.yaml" --current "$d/running.json" \
    --max-drains 0 -o json
expect_in "$TMP/err" "not placed: client-x/chat-x, 1 replica"
python3 - "$d/running.json" "$TMP/out" <<'PY' && ok || bad "max-drains 0 json"
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:])
place = lambda g, i: (g["node"], g["index"], i["tenant"], i["workload"], i["profile"], i["start"])
kept = {place(g, i) for g in new["gpus"] for i in g["instances"]}
assert all(place(g, i) in kept for g in old["gpus"] for i in g["instances"]), "a running one moved"
r = new["replan"]
assert r["drains"] == 0 and [s["action"] for s in r["steps"]] == ["create"], r["steps"]
assert [(u["tenant"], u["workload"], u["replicas"]) for u in r["unplaced"]] == \
    [("client-x", "chat-x", 1)], r["unplaced"]
x = [i for g in new["gpus"] for i in g["instances"] if i["tenant"] == "client-x"]
assert len(x) == 1, x
PY
# A spec the fleet cannot hold whole: client-c grows past its 1g.10gb, and
# the four cards hold every other workload, not client-c at 1g.20gb. Every
# other running instance stays where it runs and client-c is named (stderr,
# replan.unplaced; exit 1). Before, nothing was printed and the error blamed
# provider/finetune, which runs. With --max-drains 0 client-c's two running
# instances stay too, held at 1g.10gb (its new size 1g.20gb named, no
# step, 0 drains); without a limit they are destroyed, and their pods
# evicted: a drain each, on cards 0 and 1 (2 drains; before, they were
# destroyed in wave 0 and "0 drains" reported).
sed 's/memoryHighWaterGiB: 7.5/memoryHighWaterGiB: 12/' examples/four-h100.yaml >"$TMP/grown.yaml"
for limit in --max-drains=0 --prefer=fewer-drains; do
    expect_rc 1 T plan -f "$TMP/grown.yaml" --current "$TMP/w4.json" "$limit" -o json
    expect_in "$TMP/err" "not placed: client-c/support-7b-int8, 2 replicas"
    python3 - "$TMP/w4.json" "$TMP/out" "$limit" <<'PY' && ok || bad "grown past the fleet ($limit)"
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:3])
held = sys.argv[3] == "--max-drains=0"
place = lambda g, i: (g["node"], g["index"], i["tenant"], i["workload"], i["profile"], i["start"])
kept = {place(g, i) for g in new["gpus"] for i in g["instances"]}
others = [place(g, i) for g in old["gpus"] for i in g["instances"] if i["tenant"] != "client-c"]
assert len(others) >= 5 and all(p in kept for p in others), "a running one moved"
c = [place(g, i) for g in old["gpus"] for i in g["instances"] if i["tenant"] == "client-c"]
assert len(c) == 2 and all((p in kept) == held for p in c), (c, kept)
r = new["replan"]
u = [(x["tenant"], x["workload"], x["replicas"], x["kept"], x["keptProfile"], x["newProfile"])
     for x in r["unplaced"]]
if held:
    assert r["drains"] == 0 and r["steps"] == [], r
    assert u == [("client-c", "support-7b-int8", 2, 2, "1g.10gb", "1g.20gb")], u
else:
    assert r["drains"] == 2, r
    assert u == [("client-c", "support-7b-int8", 2, 0, None, None)], u
    assert {(s["action"], s["why"]) for s in r["steps"]} == \
        {("cordon", None), ("drain", None), ("uncordon", None),
         ("destroy", "left out: the fleet cannot hold it now; see not placed")}, r["steps"]
    drained = sorted(s["index"] for s in r["steps"] if s["action"] == "drain")
    assert drained == sorted({p[1] for p in c}), (drained, c)
PY
done

# --prefer fewer-cards on the same change: the fresh plan's drains, within a limit of 3
expect_rc 0 T plan -f "$d/five-h100.yaml" -f "$d/client-x.yaml" --current "$d/running.json" \
    --prefer fewer-cards --max-drains 1
expect_in "$TMP/out" "not \"fresh\": it drains 3 cards, over --max-drains 1"

# bad usage and bad input
expect_rc 2 T plan -f examples/four-h100.yaml --current "$TMP/w4.json" --max-drains -1
expect_in "$TMP/err" "--max-drains must be a whole number from 0 to"
expect_rc 2 T plan -f examples/four-h100.yaml --current "$TMP/w4.json" --max-drains 2x
expect_rc 2 T plan -f examples/four-h100.yaml --current "$TMP/w4.json" --prefer fewer
expect_in "$TMP/err" "--prefer must be fewer-drains, fewer-cards or lower-cost"
expect_rc 2 T plan -f examples/four-h100.yaml --max-drains 1
expect_in "$TMP/err" "--max-drains, --max-cards, --max-cost, --prefer and --removed-node need --current PLAN.json"
expect_rc 2 T plan -f examples/four-h100.yaml --current "$TMP/w4.json" --current "$TMP/w4.json"
expect_in "$TMP/err" "--current takes one plan"
python3 - "$TMP/w4.json" "$TMP/bad.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
del p["gpus"][1]["instances"][2]["start"]
json.dump(p, open(sys.argv[2], "w"))
PY
expect_rc 2 T plan -f examples/four-h100.yaml --current "$TMP/bad.json"
expect_in "$TMP/err" "gpus[1].instances[2]"
expect_in "$TMP/err" "start"
finish
