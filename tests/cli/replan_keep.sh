#!/usr/bin/env bash
# replan_keep.sh - the keep plan keeps what runs as it runs, whatever the
# mechanism, and a chosen plan never breaks the limits (issue 30). Running
# plans are written here by hand; every figure is counted in the comments,
# not read from tessera:
#   A. a price change moves three MPS clients' decision from a100-80gb to
#      l40s; they run on one a100 with the a100's SM shares: 26/80 = 32.5%
#      -> 35, 19/80 = 23.75% -> 25 (rounded up to 5), 35 + 25 + 25 = 85. The
#      keep plan pins them to the a100 with those shares (not the l40s
#      ones, which add up past 100%): a valid point of 0 drains, 1 card,
#      chosen; --max-drains 0 exits 0, names nothing; each decision row's
#      smPercent and model is its instance's.
#   B. a best-effort tenant's time-slicing workloads a and b (32 GiB each)
#      share one a100 as "guest" (a) and "share" (b): the plan labels the
#      other one the guest. A guest flag on a time-sliced card is a label,
#      the pods run the same: fresh and keep drain 0 cards. With a price
#      change (l40s cheaper), --max-drains 0 and --max-drains 1 keep both
#      where they run: 0 drains, exit 0.
#   C. four MPS clients of 19 GiB run on one a100 (4 x 19 = 76 of 80 GiB,
#      4 x 25% = 100%); each grows to 21 GiB (26.25% -> 30%): 4 x 21 = 84 GiB
#      and 120% no longer fit, 3 x 21 = 63 GiB and 90% do. The keep plan
#      keeps 3 where they run and moves 1 to the free a100: 1 drain, 1
#      instance evicted, 2 cards, valid (not "fails verification");
#      --max-drains 1 takes it (exit 0); --max-drains 0 keeps all 4 as they
#      run (19 GiB, 25%), 0 drains, names the 4 (exit 1).
#   D. a training job of 100 GiB runs as one replica of 2 whole a100s
#      (2 x 80 >= 100); a price change makes 1 h200 (141 GiB) cheaper. The
#      keep plan pins it to the a100 with 2 GPUs a replica: 0 drains,
#      chosen; --max-drains 0 exits 0; its decision row says 2 GPUs on
#      a100-80gb.
#   E. memory fractions a and b (20 GiB each) run on an a100 of a node with
#      CUDA 13.2; a price change decides them on the l40s, whose node runs
#      13.4: enforced by the driver there. Pinned to the a100, where the
#      driver cannot enforce a fraction (13.2 < 13.4), they are enforced by
#      tessera's shim: the keep plan keeps both, 0 drains, chosen;
#      --max-drains 0 exits 0, rows a100-80gb, enforcement shim.
#   F. an untrusted inference workload (4 GiB) runs a 1g.10gb MIG instance
#      at 0 on an h100; with l4s cheap (0.50 against 2.90) its decision is a
#      whole l4 (not MIG-capable): another model and another mechanism. The
#      keep plan keeps it on the h100 as decide has it there (1g.10gb, the
#      cost objective's alternative): 0 drains, chosen; --max-drains 0 exits
#      0, its row mig 1g.10gb on h100-80gb-sxm, nothing named.
# Every replan here: the chosen point is within --max-drains (drains less
# the removed node's) and --max-cards; a "keep, no drain" point has 0
# drains; each card's MPS shares add up to 100% at most and its memory caps
# to its memory (a100-80gb and h100-80gb-sxm 80 GiB, l40s 48, h200-141gb 141, l4 24).
# Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"
T() { "$TESSERA" "$@"; }
cd "$TMP"

python3 - <<'PY'
import json

def fleet(nodes, mps=True, cuda=None):
    s = ("apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n"
         "  nodes:\n")
    for name, model, count in nodes:
        s += "  - name: %s\n" % name + ("    mps: true\n" if mps else "")
        s += '    cudaVersion: "%s"\n' % cuda[name] if cuda else ""
        s += "    gpus:\n    - {model: %s, count: %d}\n" % (model, count)
    return s

def tenant(name, contract, works):
    return ("---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: %s}\n"
            "spec:\n  contract: %s\n  namespaces: [%s]\n  workloads:\n" % (name, contract, name)
            + "".join("  - {name: %s, %s}\n" % w for w in works))

def prices(p):
    return ("---\napiVersion: tessera.dev/v1alpha1\nkind: PriceBook\nmetadata: {name: p}\n"
            "spec:\n  currency: EUR\n  prices:\n" +
            "".join('  - {model: %s, perGpuHour: "%s"}\n' % x for x in p))

def inst(t, w, mem, sm=0, guest=False, rep=0, part=0):
    return {"profile": None, "start": None, "size": None, "tenant": t, "workload": w,
            "replica": rep, "gpuPart": part, "memoryGiB": mem, "smPercent": sm,
            "guest": guest, "canary": False}

def card(node, i, model, mode, insts):
    return {"node": node, "index": i, "model": model, "mode": mode, "instances": insts}

def plan(path, gpus):
    with open(path, "w") as f:
        json.dump({"apiVersion": "tessera.dev/v1alpha1", "kind": "Plan", "gpus": gpus}, f)

A100, L40S, H200 = "a100-80gb", "l40s", "h200-141gb"
inf = lambda mem: "kind: inference, p99Ms: 100, memoryHighWaterGiB: %s" % mem
free = lambda node, i, model: card(node, i, model, "free", [])

# A: MPS on the a100, the l40s cheaper now
open("a.yaml", "w").write(fleet([("n1", A100, 2), ("n2", L40S, 3)]) +
    tenant("team", "shared-trusted", [("w1", inf(26)), ("w2", inf(19)), ("w3", inf(19))]) +
    prices([(A100, "3.20"), (L40S, "1.10")]))
plan("a.json", [card("n1", 0, A100, "mps", [inst("team", "w1", 26, 35),
                                            inst("team", "w2", 19, 25),
                                            inst("team", "w3", 19, 25)]),
                free("n1", 1, A100), free("n2", 0, L40S), free("n2", 1, L40S),
                free("n2", 2, L40S)])

# B: time-slicing guest and share, labels the other way round
ts = lambda: tenant("dev", "best-effort", [("a", "kind: dev, memoryHighWaterGiB: 32"),
                                           ("b", "kind: dev, memoryHighWaterGiB: 32")])
open("b.yaml", "w").write(fleet([("n1", A100, 2)]) + ts())
open("b-price.yaml", "w").write(fleet([("n1", A100, 2), ("n2", L40S, 2)]) + ts() +
                                prices([(A100, "3.20"), (L40S, "1.10")]))
plan("b.json", [card("n1", 0, A100, "time-slicing", [inst("dev", "a", 32, guest=True),
                                                     inst("dev", "b", 32)]),
                free("n1", 1, A100)])
plan("b-price.json", [card("n1", 0, A100, "time-slicing", [inst("dev", "a", 32, guest=True),
                                                           inst("dev", "b", 32)]),
                      free("n1", 1, A100), free("n2", 0, L40S), free("n2", 1, L40S)])

# C: four MPS clients grow from 19 to 21 GiB
open("c.yaml", "w").write(fleet([("n1", A100, 2)]) +
    tenant("t", "shared-trusted", [("w%d" % i, inf(21)) for i in range(1, 5)]))
plan("c.json", [card("n1", 0, A100, "mps", [inst("t", "w%d" % i, 19, 25) for i in range(1, 5)]),
                free("n1", 1, A100)])

# D: 2 whole a100s a replica, 1 h200 cheaper now
open("d.yaml", "w").write(fleet([("n1", A100, 2), ("n2", H200, 1)]) +
    tenant("ml", "isolated", [("train", "kind: training, trust: untrusted, "
                                        "memoryHighWaterGiB: 100")]) +
    prices([(A100, "2.00"), (H200, "3.00")]))
plan("d.json", [card("n1", 0, A100, "whole", [inst("ml", "train", 80)]),
                card("n1", 1, A100, "whole", [inst("ml", "train", 80, part=1)]),
                free("n2", 0, H200)])

# E: memory fractions on an a100 whose node's driver cannot enforce them
open("e.yaml", "w").write(fleet([("n1", A100, 2), ("n2", L40S, 2)], mps=False,
                                cuda={"n1": "13.2", "n2": "13.4"}) +
    tenant("lab", "shared-trusted", [("a", "kind: batch, memoryHighWaterGiB: 20"),
                                     ("b", "kind: batch, memoryHighWaterGiB: 20")]) +
    prices([(A100, "3.20"), (L40S, "1.10")]))
plan("e.json", [card("n1", 0, A100, "memory-fraction", [inst("lab", "a", 20),
                                                        inst("lab", "b", 20)]),
                free("n1", 1, A100), free("n2", 0, L40S), free("n2", 1, L40S)])

# F: MIG on the h100, a whole l4 cheaper now
H100, L4 = "h100-80gb-sxm", "l4"
open("f.yaml", "w").write(fleet([("n1", H100, 1), ("n2", L4, 2)], mps=False) +
    tenant("a", "isolated", [("w", "kind: inference, trust: untrusted, p99Ms: 300, "
                                   "memoryHighWaterGiB: 4")]) +
    prices([(H100, "2.90"), (L4, "0.50")]))
mig = dict(inst("a", "w", 9.75), profile="1g.10gb", start=0, size=1)
plan("f.json", [card("n1", 0, H100, "mig", [mig]), free("n2", 0, L4), free("n2", 1, L4)])
PY

# limits OUT MAXDRAINS [MAXCARDS]: the chosen point is within the limits,
# a "keep, no drain" point drains nothing, the cards hold their shares and
# memory caps.
limits() {
    python3 - "$@" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
maxd = int(sys.argv[2]); maxc = int(sys.argv[3]) if len(sys.argv) > 3 else -1
r = p["replan"]
chosen = [x for x in r["points"] if x["chosen"]]
assert len(chosen) == 1, r["points"]
c = chosen[0]
assert c["drains"] == r["drains"], (c, r["drains"])
assert maxd < 0 or c["drains"] - c.get("removedDrains", 0) <= maxd, (c, maxd)
assert maxc < 0 or c["cards"] <= maxc, (c, maxc)
for x in r["points"]:
    if x["how"] == "keep, no drain":
        assert x["drains"] - x.get("removedDrains", 0) == 0, x
memory = {"a100-80gb": 80, "l40s": 48, "h200-141gb": 141, "h100-80gb-sxm": 80, "l4": 24}
for g in p["gpus"]:
    sm = sum(i["smPercent"] for i in g["instances"]) if g["mode"] == "mps" else 0
    mem = sum(i["memoryGiB"] for i in g["instances"]
              if not (g["mode"] == "whole" and i["guest"]))
    assert sm <= 100 and mem <= memory[g["model"]] + 1e-6, g
PY
}

# field OUT EXPR: print a Python expression of the JSON p and its replan r.
field() {
    python3 -c "import json,sys; p=json.load(open(sys.argv[1])); r=p['replan']; print($2)" "$1"
}

# A: the MPS clients pinned to the a100 with its shares
expect_rc 0 T plan -f a.yaml --current a.json -o json
cp "$TMP/out" a-out.json
check "A: limits" limits a-out.json -1
check "A: keep is a point at 0 drains, 1 card" \
    test "$(field a-out.json "[(x['drains'], x['cards']) for x in r['points'] if x['how'] == 'keep']")" = "[(0, 1)]"
check "A: the keep plan verifies" test "$(field a-out.json "'fails verification' in (r['note'] or '')")" = False
check "A: 0 drains chosen" test "$(field a-out.json "r['drains']")" = 0
expect_rc 0 T plan -f a.yaml --current a.json --max-drains 0 -o json
cp "$TMP/out" a0.json
check "A --max-drains 0: limits" limits a0.json 0
check "A --max-drains 0: nothing named" test "$(field a0.json "len(r.get('unplaced') or [])")" = 0
check "A: rows are the a100's shares" \
    test "$(field a0.json "sorted((d['workload'], d['gpuModel'], d['smPercent']) for d in p['decisions'])")" \
    = "[('w1', 'a100-80gb', 35), ('w2', 'a100-80gb', 25), ('w3', 'a100-80gb', 25)]"
check "A: instances run the a100's shares" \
    test "$(field a0.json "sorted((i['workload'], g['model'], i['smPercent']) for g in p['gpus'] for i in g['instances'])")" \
    = "[('w1', 'a100-80gb', 35), ('w2', 'a100-80gb', 25), ('w3', 'a100-80gb', 25)]"

# B: a guest and a share, labelled the other way round
expect_rc 0 T plan -f b.yaml --current b.json -o json
cp "$TMP/out" b-out.json
check "B: limits" limits b-out.json -1
check "B: fresh and keep drain nothing" \
    test "$(field b-out.json "sorted(set((x['how'], x['drains']) for x in r['points'] if x['how'] in ('fresh', 'keep')))")" \
    = "[('fresh', 0), ('keep', 0)]"
for n in 0 1; do
    expect_rc 0 T plan -f b-price.yaml --current b-price.json --max-drains $n -o json
    cp "$TMP/out" b$n.json
    check "B price --max-drains $n: limits" limits b$n.json $n
    check "B price --max-drains $n: 0 drains" test "$(field b$n.json "r['drains']")" = 0
    check "B price --max-drains $n: both stay on the a100" \
        test "$(field b$n.json "sorted((i['workload'], g['node'], g['index']) for g in p['gpus'] for i in g['instances'])")" \
        = "[('a', 'n1', 0), ('b', 'n1', 0)]"
done

# C: four MPS clients grow; three stay, one moves
expect_rc 0 T plan -f c.yaml --current c.json -o json
cp "$TMP/out" c-out.json
check "C: limits" limits c-out.json -1
check "C: the keep plan verifies" test "$(field c-out.json "'fails verification' in (r['note'] or '')")" = False
check "C: keep: 1 drain, 2 cards" \
    test "$(field c-out.json "[(x['drains'], x['cards']) for x in r['points'] if x['how'] == 'keep']")" = "[(1, 2)]"
check "C: 1 drain chosen, 1 instance evicted" \
    test "$(field c-out.json "(r['drains'], sum(s['action'] == 'destroy' for s in r['steps']))")" = "(1, 1)"
check "C: 3 clients stay on card 0" \
    test "$(field c-out.json "sorted(len(g['instances']) for g in p['gpus'] if g['instances'])")" = "[1, 3]"
expect_rc 0 T plan -f c.yaml --current c.json --max-drains 1 -o json
cp "$TMP/out" c1.json
check "C --max-drains 1: limits" limits c1.json 1
expect_rc 1 T plan -f c.yaml --current c.json --max-drains 0 -o json
cp "$TMP/out" c0.json
check "C --max-drains 0: limits" limits c0.json 0
check "C --max-drains 0: 0 drains, the 4 named" \
    test "$(field c0.json "(r['drains'], len(r['unplaced']))")" = "(0, 4)"
check "C --max-drains 0: all 4 as they run" \
    test "$(field c0.json "sorted((i['memoryGiB'], i['smPercent']) for g in p['gpus'] for i in g['instances'])")" \
    = "[(19.0, 25), (19.0, 25), (19.0, 25), (19.0, 25)]"

# D: 2 whole a100s a replica, pinned there
expect_rc 0 T plan -f d.yaml --current d.json -o json
cp "$TMP/out" d-out.json
check "D: limits" limits d-out.json -1
check "D: keep is a point at 0 drains" \
    test "$(field d-out.json "[x['drains'] for x in r['points'] if x['how'] == 'keep']")" = "[0]"
expect_rc 0 T plan -f d.yaml --current d.json --max-drains 0 -o json
cp "$TMP/out" d0.json
check "D --max-drains 0: limits" limits d0.json 0
check "D --max-drains 0: 2 whole a100s, nothing named" \
    test "$(field d0.json "([(d['gpuModel'], d['gpus']) for d in p['decisions']], len(r.get('unplaced') or []))")" \
    = "([('a100-80gb', 2)], 0)"

# pinned CASE WHAT EXPR EXPECTED: the keep plan of CASE.yaml against CASE.json
# is a point at 0 drains and chosen; --max-drains 0 exits 0, and EXPR of
# its JSON is EXPECTED (not "want": expect_rc sets that one).
pinned() {
    local c=$1 what=$2 expr=$3 expected=$4
    expect_rc 0 T plan -f $c.yaml --current $c.json -o json
    cp "$TMP/out" $c-out.json
    check "$c: limits" limits $c-out.json -1
    check "$c: keep is a point at 0 drains, chosen" \
        test "$(field $c-out.json "[(x['drains'], x['chosen']) for x in r['points'] if x['how'] == 'keep']")" = "[(0, True)]"
    expect_rc 0 T plan -f $c.yaml --current $c.json --max-drains 0 -o json
    cp "$TMP/out" ${c}0.json
    check "$c --max-drains 0: limits" limits ${c}0.json 0
    check "$c --max-drains 0: $what" test "$(field ${c}0.json "$expr")" = "$expected"
}

# E: fractions pinned to the a100, enforced by the shim there
pinned e "a100, the shim, nothing named" \
    "(sorted(set((d['gpuModel'], d['enforcement']) for d in p['decisions'])), len(r.get('unplaced') or []))" \
    "([('a100-80gb', 'shim')], 0)"

# F: kept on the h100 at 1g.10gb, decide's decision there
pinned f "mig 1g.10gb on the h100, nothing named" \
    "([(d['mechanism'], d['profile'], d['gpuModel']) for d in p['decisions']], len(r.get('unplaced') or []))" \
    "([('mig', '1g.10gb', 'h100-80gb-sxm')], 0)"

finish
