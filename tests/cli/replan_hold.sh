#!/usr/bin/env bash
# replan_hold.sh - --max-drains 0 when a running workload's memory grew past
# its MIG slice, or its new decision cannot keep it in place at all (issue
# 30: "--max-drains 0 always succeeds by keeping what runs"). Running plans are written here by hand; every figure is counted in
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
#   I. the fleet cannot hold the grown spec at all: one H100, full (a
#      1g.10gb at 0, d 1g.10gb at 1, c 1g.20gb at 2, b 3g.40gb at 4: 8
#      memory units of 8), and a grows from 9 to 30 GiB: 3g.40gb, 4 units,
#      so a, b, c, d need 4 + 4 + 2 + 1 = 11 units. The plan of what fits
#      leaves a out. --max-drains 0: a's instance kept byte for byte, held at
#      1g.10gb, 0 drains, no step, a named (kept 1, 1g.10gb, 3g.40gb), exit
#      1. Without a limit (and with --max-drains 1) a's instance is
#      destroyed and its pod evicted: 1 drain (card 0), b, c, d kept where
#      they run, a named, exit 1. Before: destroyed in wave 0, 0 drains
#      reported, --max-drains 0 included.
#   J. I, and x (new, 1g.10gb) asks for a's slot: --max-drains 0 keeps the
#      card as it runs and names a (held) and x (no free slice), 0 drains;
#      without a limit x takes slot 0 and a's pod is evicted: 1 drain.
#   K-O. --max-drains 0 keeps any running workload its new decision cannot
#      keep in place, as it runs (every instance byte for byte, its smPercent
#      too), 0 drains, no step, and names it (kept, keptMode, newMode; exit
#      1); without a limit each drains 1 card, as before:
#   K. a runs 1g.10gb at 0 on card 0 beside b (1g.10gb at 1); the spec now
#      asks isolation: mps for a (MIG to MPS).
#   L. a runs an MPS client (9 GiB, 15%) on card 0, b one on card 1; the
#      spec now asks isolation: mig for a (MPS to MIG).
#   M. one card, MPS clients t/a and t/b (30 GiB, 40% each); a grows to 60
#      GiB: 60 + 30 > 79.6, and the plan of what fits takes a and leaves b
#      out. Both kept at 30 GiB: a named (its 60 GiB not applied), b named
#      (does not fit the fleet now); without a limit b is stopped (exit 1).
#   N. two cards, whole-card training jobs a and b; a now asks gpus: 2: the
#      plan of what fits gives a both cards and leaves b out. Both kept on
#      their one card each and named; without a limit b is stopped (exit 1).
#   O. a, 2 replicas of 18 GiB (1g.20gb), runs r0 at 1g.10gb (card 0) and
#      r1 at 1g.20gb (card 1): two profiles. Both kept, a named (kept 2).
#   P. M on a time-slicing card (best-effort t/a and its guest t/b, 30 GiB
#      each; a grows to 60 GiB): both kept, both named.
# Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"
T() { "$TESSERA" "$@"; }
cd "$TMP"
export PYTHONPATH="$TESSERA_SRC/tests/tools${PYTHONPATH:+:$PYTHONPATH}"

python3 - <<'PY'
from plan_fixture import fleet, one_inference, mig, card, plan
a = lambda t, start, rep=0: mig(t, "1g.10gb", start, rep)
open("f-new.yaml", "w").write(fleet(2) + one_inference("a", 16, 2) + one_inference("b", 7.5, 1.5))
plan("f-run.json", [card(0, "mig", [a("a", 0), a("b", 1)]), card(1, "free", [])])
open("g-new.yaml", "w").write(fleet(2) + one_inference("a", 16, 2, 3) +
                              one_inference("b", 7.5, 1.5))
open("h-new.yaml", "w").write(fleet(2) + one_inference("a", 7.5, 1.5) +
                              one_inference("b", 7.5, 1.5))
plan("h-run.json", [card(0, "mig", [mig("a", "1g.20gb", 2), a("b", 1)]), card(1, "free", [])])
plan("g-run.json", [card(0, "mig", [a("a", 0), a("b", 1)]), card(1, "mig", [a("a", 0, 1)])])
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

# held_once CASE NEW RUN NEWPROFILE: --max-drains 0 keeps a/w's one running
# 1g.10gb instance of RUN as it runs (every instance of RUN byte for byte),
# 0 drains, no step, no "still drains" note, exit 1; a/w named once (stderr,
# text, replan.unplaced: kept 1 at 1g.10gb, NEWPROFILE not placed), its one
# decision row at 1g.10gb saying so, the chosen point at 0 drains, 1 held.
held_once() {
    local c=$1 new=$2 run=$3 prof=$4
    local named="kept at its running profile 1g.10gb; its new size $prof is not placed"
    expect_rc 1 T plan -f "$new" --current "$run" --max-drains 0 -o json
    cp "$TMP/out" "$c.json"
    check "$c: every running instance kept as it runs" kept "$run" "$c.json"
    expect_in "$TMP/err" "not placed: a/w, 1 replica: $named"
    check "$c: a named once on stderr" test "$(grep -c 'not placed: a/w' "$TMP/err")" -eq 1
    python3 - "$c.json" "$prof" <<'PY' && ok || bad "$c: 0 drains, no step, a named once, held"
import json, sys
p = json.load(open(sys.argv[1]))
r = p["replan"]
assert r["drains"] == 0 and r["steps"] == [], r
assert "still drains" not in (r["note"] or ""), r["note"]
u = r["unplaced"]
assert [(x["tenant"], x["replicas"], x["kept"], x["keptProfile"], x["newProfile"]) for x in u] == \
       [("a", 1, 1, "1g.10gb", sys.argv[2])], u
d = [x for x in p["decisions"] if x["tenant"] == "a"]
assert len(d) == 1 and d[0]["profile"] == "1g.10gb", d
assert "kept at its running profile 1g.10gb" in d[0]["reason"], d
chosen = [x for x in r["points"] if x["chosen"]]
assert len(chosen) == 1 and chosen[0]["drains"] == 0 and chosen[0]["held"] == 1, chosen
PY
    expect_rc 1 T plan -f "$new" --current "$run" --max-drains 0
    expect_in "$TMP/out" "a/w: 1 replica: $named"
    expect_in "$TMP/out" "drained 0"
}

# ---- F: one workload grows past its slice ----------------------------------
held_once F f-new.yaml f-run.json 1g.20gb
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

# ---- I, J: the fleet cannot hold the grown spec at all --------------------------
python3 - <<'PY'
from plan_fixture import fleet, one_inference, mig, card, plan
plan("i-run.json", [card(0, "mig", [mig("a", "1g.10gb", 0), mig("d", "1g.10gb", 1),
                                    mig("c", "1g.20gb", 2), mig("b", "3g.40gb", 4)])])
i = (fleet(1) + one_inference("a", 28, 2) + one_inference("b", 28, 2) +
     one_inference("c", 16, 2) + one_inference("d", 7.5, 1.5))
open("i-new.yaml", "w").write(i)
open("j-new.yaml", "w").write(i + one_inference("x", 7.5, 1.5))
PY
held_once I i-new.yaml i-run.json 3g.40gb
# no limit, and --max-drains 1: a's instance destroyed, its pod evicted: 1 drain
for lim in "" "--max-drains 1"; do
    expect_rc 1 T plan -f i-new.yaml --current i-run.json $lim -o json
    python3 - i-run.json "$TMP/out" <<'PY' && ok || bad "I: a stops, 1 drain, with ${lim:-no limit}"
import json, sys
old, p = (json.load(open(f)) for f in sys.argv[1:])
r = p["replan"]
assert r["drains"] == 1, r
steps = [(s["wave"], s["action"], s["index"], s["tenants"], s["why"]) for s in r["steps"]]
assert steps == [(1, "cordon", 0, None, None), (1, "drain", 0, "a/w r0", None),
                 (1, "destroy", 0, "a/w r0",
                  "left out: the fleet cannot hold it now; see not placed"),
                 (1, "uncordon", 0, None, None)], steps
place = lambda i: (i["tenant"], i["profile"], i["start"])
now = sorted(place(i) for g in p["gpus"] for i in g["instances"])
assert now == sorted(place(i) for g in old["gpus"] for i in g["instances"] if i["tenant"] != "a"), now
assert [(x["tenant"], x["replicas"], x["kept"]) for x in r["unplaced"]] == [("a", 1, 0)], r
chosen = [x for x in r["points"] if x["chosen"]]
assert len(chosen) == 1 and chosen[0]["drains"] == 1, chosen
PY
    expect_in "$TMP/err" "not placed: a/w, 1 replica"
done
expect_rc 1 T plan -f i-new.yaml --current i-run.json
expect_in "$TMP/out" "drained 1"

# J: x, new, asks for a's slot
expect_rc 1 T plan -f j-new.yaml --current i-run.json --max-drains 0 -o json
cp "$TMP/out" j1.json
check "J: the full card kept as it runs" kept i-run.json j1.json
python3 - j1.json <<'PY' && ok || bad "J: 0 drains, a held and x named"
import json, sys
r = json.load(open(sys.argv[1]))["replan"]
assert r["drains"] == 0 and r["steps"] == [], r
assert sorted((x["tenant"], x["replicas"], x["kept"], x["newProfile"]) for x in r["unplaced"]) == \
       [("a", 1, 1, "3g.40gb"), ("x", 1, 0, None)], r["unplaced"]
PY
expect_rc 1 T plan -f j-new.yaml --current i-run.json -o json
python3 - "$TMP/out" <<'PY' && ok || bad "J: no limit, x takes slot 0, 1 drain"
import json, sys
p = json.load(open(sys.argv[1]))
r = p["replan"]
assert r["drains"] == 1, r
x = [(i["profile"], i["start"]) for g in p["gpus"] for i in g["instances"] if i["tenant"] == "x"]
assert x == [("1g.10gb", 0)], x
assert [s["tenants"] for s in r["steps"] if s["action"] == "drain"] == ["a/w r0"], r["steps"]
PY
# ---- K-O: kept as it runs (another mechanism, size or profiles; left out) ----
python3 - <<'PY'
from plan_fixture import fleet, tenant, inference as inf, training as job, inst, mig, mps, card, plan
shared = lambda t, works, contract="shared-trusted": tenant(t, works, contract, "trusted")
m10 = lambda t, start: mig(t, "1g.10gb", start)
open("k-new.yaml", "w").write(fleet(2, True) +
                              shared("a", [("w", inf(7.5, 1.5, ", isolation: mps"))]) +
                              shared("b", [("w", inf(7.5, 1.5, ", isolation: mig"))]))
plan("k-run.json", [card(0, "mig", [m10("a", 0), m10("b", 1)]), card(1, "free", [])])
open("l-new.yaml", "w").write(fleet(2, True) +
                              shared("a", [("w", inf(7.5, 1.5, ", isolation: mig"))]) +
                              shared("b", [("w", inf(7.5, 1.5, ", isolation: mps"))]))
plan("l-run.json", [card(0, "mps", [mps("a")]), card(1, "mps", [mps("b")])])
open("m-new.yaml", "w").write(fleet(1, True) + shared("t", [("a", inf(58, 2, ", isolation: mps")),
                                                            ("b", inf(28, 2, ", isolation: mps"))]))
plan("m-run.json", [card(0, "mps", [mps("t", "a", 30, 40), mps("t", "b", 30, 40)])])
open("n-new.yaml", "w").write(fleet(2, True) + shared("a", [("w", job(", gpus: 2"))]) +
                              shared("b", [("w", job())]))
plan("n-run.json", [card(0, "whole", [inst("a", mem=79.6, sm=100)]),
                    card(1, "whole", [inst("b", mem=79.6, sm=100)])])
open("o-new.yaml", "w").write(fleet(2, True) +
                              tenant("a", [("w", inf(16, 2, ", replicas: 2"))]))
open("p-new.yaml", "w").write(
    fleet(1, True) + shared("t", [(w, "kind: dev, memoryHighWaterGiB: %d, kvCacheGiB: 0" % m)
                                  for w, m in (("a", 60), ("b", 30))], "best-effort"))
plan("p-run.json", [card(0, "time-slicing", [inst("t", "a", mem=30), dict(inst("t", "b", mem=30),
                                                                          guest=True)])])
plan("o-run.json", [card(0, "mig", [m10("a", 0)]), card(1, "mig", [mig("a", "1g.20gb", 0, 1)])])
PY

# as_runs CASE RUN NAMED RC: --max-drains 0 keeps every instance of
# CASE-run.json as it runs (smPercent too), 0 drains, no step, no "still
# drains" note, exit 1, and names NAMED ("tenant/workload:kept:keptMode:
# newMode ..."), each kept as it runs (reason, decision row); without a
# limit 1 drain, exit RC, as before.
as_runs() {
    local c=$1 named=$2 rc=$3
    expect_rc 1 T plan -f "$c-new.yaml" --current "$c-run.json" --max-drains 0 -o json
    cp "$TMP/out" "$c-0.json"
    check "$c: every running instance kept as it runs" kept "$c-run.json" "$c-0.json"
    expect_in "$TMP/err" "kept as it runs ("
    python3 - "$c-run.json" "$c-0.json" "$named" <<'PY' && ok || bad "$c: 0 drains, named as kept"
import json, sys
old, p = (json.load(open(f)) for f in sys.argv[1:3])
r = p["replan"]
assert r["drains"] == 0 and r["steps"] == [], r
assert "still drains" not in (r["note"] or ""), r["note"]
sm = lambda q: sorted((i["tenant"], i["workload"], i["smPercent"]) for g in q["gpus"]
                      for i in g["instances"])
assert sm(old) == sm(p), (sm(old), sm(p))
u = sorted("%s/%s:%d:%s:%s" % (x["tenant"], x["workload"], x["kept"], x["keptMode"], x["newMode"])
           for x in r["unplaced"])
assert u == sorted(sys.argv[3].split()), u
assert all(x["reason"].startswith("kept as it runs (") for x in r["unplaced"]), r["unplaced"]
for x in r["unplaced"]:
    d = [y for y in p["decisions"] if (y["tenant"], y["workload"]) == (x["tenant"], x["workload"])]
    assert len(d) == 1 and d[0]["mechanism"] == x["keptMode"], d
    assert "kept as it runs" in d[0]["reason"], d
chosen = [x for x in r["points"] if x["chosen"]]
assert len(chosen) == 1 and chosen[0]["drains"] == 0, chosen
assert p["summary"]["reservedUnusedGiB"] >= 0, p["summary"]  # a client kept under its need
PY
    expect_rc 1 T plan -f "$c-new.yaml" --current "$c-run.json" --max-drains 0
    expect_in "$TMP/out" "drained 0"
    expect_rc "$rc" T plan -f "$c-new.yaml" --current "$c-run.json" -o json
    check "$c: no limit, 1 drain as before" python3 -c '
import json, sys; r = json.load(open(sys.argv[1]))["replan"]; assert r["drains"] == 1, r' "$TMP/out"
}
as_runs k "a/w:1:mig:mps" 0
expect_in k-0.json "its new placement mps 9.00 GiB on h100-80gb-sxm is not applied"
as_runs l "a/w:1:mps:mig" 0
expect_in l-0.json "kept as it runs (mps 9.00 GiB on h100-80gb-sxm); its new placement mig 1g.10gb"
as_runs m "t/a:1:mps:mps t/b:1:mps:mps" 1
expect_in m-0.json "kept as it runs (mps 30.00 GiB on h100-80gb-sxm); its new placement mps 60.00 GiB"
expect_in m-0.json "its new placement mps 30.00 GiB on h100-80gb-sxm does not fit the fleet now"
as_runs n "a/w:1:whole:whole b/w:1:whole:whole" 1
expect_in n-0.json "kept as it runs (whole on h100-80gb-sxm); its new placement whole, 2 GPUs a replica, on"
as_runs o "a/w:2:mig:mig" 0
as_runs p "t/a:1:time-slicing:time-slicing t/b:1:time-slicing:time-slicing" 1
finish
