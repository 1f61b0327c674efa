#!/usr/bin/env bash
# replan_hold.sh - --max-drains 0 when a running workload's memory grew past
# its MIG slice (issue 30: "--max-drains 0 always succeeds by keeping what
# runs"). Running plans are written here by hand; every figure is counted in
# the comments, not read from tessera:
#   F. a (1g.10gb at 0 on card 0, beside b's 1g.10gb at 1) grows from 9 to
#      18 GiB: its decision is now 1g.20gb (2 units). --max-drains 0 keeps
#      its instance byte for byte (same card, start, profile), 0 drains, no
#      step, and names it: kept at its running profile 1g.10gb, its new
#      size 1g.20gb not placed (stderr, text, replan.unplaced; exit 1, as
#      for new work left out). Without a limit it grows: 1 drain (card 0).
#   G. the same with 2 running replicas (cards 0 and 1) growing to 3: both
#      kept at 1g.10gb, none grown or added, 3 replicas named, 0 drains.
#   H. a shrinks from 18 to 9 GiB while it runs 1g.20gb at 2: --max-drains 0
#      keeps the larger instance (it holds the need: nothing named, exit 0,
#      0 drains); without a limit it shrinks (1 drain).
# Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"
T() { "$TESSERA" "$@"; }
cd "$TMP"

python3 - <<'PY'
import json
H = "h100-80gb-sxm"
def tenant(t, mem, kv, reps=1, spread="none"):
    return ("---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: %s}\nspec:\n"
            "  contract: isolated\n  namespaces: [%s]\n  workloads:\n"
            "  - {name: w, kind: inference, memoryHighWaterGiB: %s, kvCacheGiB: %s, p99Ms: 300,"
            " trust: untrusted, replicas: %d, spread: %s}\n" % (t, t, mem, kv, reps, spread))
fleet = ("apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n"
         "  nodes:\n  - name: n1\n    gpus:\n    - {model: %s, count: 2}\n" % H)
def inst(t, start, replica=0):
    return {"profile": "1g.10gb", "start": start, "size": 1, "tenant": t, "workload": "w",
            "replica": replica, "gpuPart": 0, "memoryGiB": 9.75, "smPercent": 0, "guest": False,
            "canary": False}
def card(i, mode, insts):
    return {"node": "n1", "index": i, "model": H, "mode": mode, "instances": insts}
def plan(name, gpus):
    json.dump({"apiVersion": "tessera.dev/v1alpha1", "kind": "Plan", "gpus": gpus},
              open(name, "w"), indent=1)
open("f-new.yaml", "w").write(fleet + tenant("a", 16, 2) + tenant("b", 7.5, 1.5))
plan("f-run.json", [card(0, "mig", [inst("a", 0), inst("b", 1)]), card(1, "free", [])])
open("g-new.yaml", "w").write(fleet + tenant("a", 16, 2, 3) + tenant("b", 7.5, 1.5))
open("h-new.yaml", "w").write(fleet + tenant("a", 7.5, 1.5) + tenant("b", 7.5, 1.5))
plan("h-run.json", [card(0, "mig", [dict(inst("a", 2), profile="1g.20gb", size=2,
                                         memoryGiB=19.62), inst("b", 1)]), card(1, "free", [])])
plan("g-run.json", [card(0, "mig", [inst("a", 0), inst("b", 1)]),
                    card(1, "mig", [inst("a", 0, 1)])])
PY

# kept RUN NEW: every running instance is in the new plan exactly as it ran
kept() {
    python3 - "$1" "$2" <<'PY'
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:])
keys = ("profile", "start", "size", "tenant", "workload", "replica", "gpuPart", "memoryGiB")
place = lambda g, i: (g["node"], g["index"], g["model"], g["mode"]) + tuple(i[k] for k in keys)
run = sorted(place(g, i) for g in old["gpus"] for i in g["instances"])
now = sorted(place(g, i) for g in new["gpus"] for i in g["instances"])
assert run == now, (run, now)
PY
}

# ---- F: one workload grows past its slice ----------------------------------
expect_rc 1 T plan -f f-new.yaml --current f-run.json --max-drains 0 -o json
cp "$TMP/out" f1.json
check "F: the instance kept as it runs" kept f-run.json f1.json
expect_in "$TMP/err" "not placed: a/w, 1 replica: kept at its running profile 1g.10gb; its new size 1g.20gb is not placed"
python3 - f1.json <<'PY' && ok || bad "F: 0 drains, no step, a named"
import json, sys
p = json.load(open(sys.argv[1]))
r = p["replan"]
assert r["drains"] == 0 and r["steps"] == [], r
assert "still drains" not in (r["note"] or ""), r["note"]
u = r["unplaced"]
assert [(x["tenant"], x["replicas"], x["kept"], x["keptProfile"], x["newProfile"]) for x in u] == \
       [("a", 1, 1, "1g.10gb", "1g.20gb")], u
d = [x for x in p["decisions"] if x["tenant"] == "a"][0]
assert d["profile"] == "1g.10gb" and "kept at its running profile 1g.10gb" in d["reason"], d
chosen = [x for x in r["points"] if x["chosen"]]
assert len(chosen) == 1 and chosen[0]["drains"] == 0 and chosen[0]["held"] == 1, chosen
PY
expect_rc 1 T plan -f f-new.yaml --current f-run.json --max-drains 0
expect_in "$TMP/out" "a/w: 1 replica: kept at its running profile 1g.10gb; its new size 1g.20gb is not placed"
expect_in "$TMP/out" "drained 0"
# no limit, and --max-drains 1: it grows (1 drain, card 0), as before
for lim in "" "--max-drains 1"; do
    expect_rc 0 T plan -f f-new.yaml --current f-run.json $lim -o json
    python3 - "$TMP/out" <<'PY' && ok || bad "F: grows with ${lim:-no limit}"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["replan"]["drains"] == 1 and p["replan"]["unplaced"] == [], p["replan"]
a = [i for g in p["gpus"] for i in g["instances"] if i["tenant"] == "a"]
assert [i["profile"] for i in a] == ["1g.20gb"], a
PY
done

# ---- G: two running replicas grow, and one more is asked for -----------------
expect_rc 1 T plan -f g-new.yaml --current g-run.json --max-drains 0 -o json
cp "$TMP/out" g1.json
check "G: both instances kept as they run" kept g-run.json g1.json
expect_in "$TMP/err" "not placed: a/w, 3 replicas: kept 2 at its running profile 1g.10gb; its new size 1g.20gb is not placed"
python3 - g1.json <<'PY' && ok || bad "G: 0 drains, a named"
import json, sys
r = json.load(open(sys.argv[1]))["replan"]
assert r["drains"] == 0 and r["steps"] == [], r
assert [(x["replicas"], x["kept"]) for x in r["unplaced"]] == [(3, 2)], r["unplaced"]
PY

# ---- H: a running workload shrinks ---------------------------------------------
expect_rc 0 T plan -f h-new.yaml --current h-run.json --max-drains 0 -o json
cp "$TMP/out" h1.json
check "H: the larger instance kept as it runs" kept h-run.json h1.json
python3 - h1.json <<'PY' && ok || bad "H: 0 drains, nothing named"
import json, sys
r = json.load(open(sys.argv[1]))["replan"]
assert r["drains"] == 0 and r["steps"] == [] and r["unplaced"] == [], r
PY
expect_rc 0 T plan -f h-new.yaml --current h-run.json -o json
check "H: no limit, it shrinks" python3 -c '
import json, sys; r = json.load(open(sys.argv[1]))["replan"]; assert r["drains"] == 1, r' "$TMP/out"
finish
