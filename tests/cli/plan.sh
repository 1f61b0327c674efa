#!/bin/bash
# plan.sh - `tessera plan` end to end on the worked example, as a user runs it:
# text, JSON (parsed and checked field by field), SVG (parsed as XML and
# rendered to PNG), usage errors, --help on every verb, and valgrind.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
EX=examples/four-h100.yaml

expect_rc 0 "$TESSERA" plan -f $EX --svg "$TMP/fleet.svg"
cp "$TMP/out" "$TMP/plan.txt"
expect_in "$TMP/plan.txt" "GPUs used          4 of 4"
expect_in "$TMP/plan.txt" "naive              7 (one guaranteed GPU per workload)"
expect_in "$TMP/plan.txt" "saving             3 GPUs, 43% less hardware"
expect_in "$TMP/plan.txt" "dedicated          17 (one GPU per replica, times its GPUs)"
expect_in "$TMP/plan.txt" "saving, dedicated  13 GPUs, 76% less hardware"
expect_in "$TMP/plan.txt" "cost               11.60 EUR per hour"  # 4 cards at 2.90
expect_in "$TMP/plan.txt" "lower bound        4 (the plan meets it: optimal)"
expect_in "$TMP/plan.txt" "gpu-node-1 gpu 3  h100-80gb-sxm  whole + time-slicing"
expect_in "$TMP/plan.txt" "R3: untrusted data with a 250 ms p99 needs a hardware boundary"

expect_rc 0 "$TESSERA" plan -f $EX -o json
cp "$TMP/out" "$TMP/plan.json"
if python3 - "$TMP/plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
s = p["summary"]
assert (s["gpusUsed"], s["naiveGpus"], s["lowerBound"]) == (4, 7, 4), s
assert abs(s["savingsPercent"] - 42.9) < 1e-9, s
assert s["dedicatedGpus"] == 17, s  # 2+2+2+2+7+1+1 replicas, one card each
assert abs(s["savingsVsDedicatedPercent"] - 76.5) < 1e-9, s
assert abs(s["costPerHour"] - 4 * 2.90) < 1e-9 and s["currency"] == "EUR", s
assert s["optimal"] is True
rows = {(d["tenant"], d["workload"]): d for d in p["decisions"]}
assert rows[("client-a", "chat-13b")]["profile"] == "3g.40gb"
assert rows[("provider", "finetune")]["mechanism"] == "whole"
assert rows[("platform-dev", "notebooks")]["mechanism"] == "time-slicing"
for d in p["decisions"]:
    assert d["mechanism"] in ("whole", "mig", "mps", "time-slicing", "memory-fraction", "vgpu")
    assert d["reason"].startswith(d["rule"] + ": ")
g = p["gpus"]
sig = lambda c: [(i["profile"], i["start"], i["size"], i["tenant"]) for i in c["instances"]]
assert sig(g[0]) == sig(g[1]) == [("2g.20gb", 0, 2, "client-b"), ("1g.10gb", 2, 1, "client-c"),
                                 ("1g.10gb", 3, 1, "client-d"), ("3g.40gb", 4, 4, "client-a")]
assert [i["replica"] for i in g[0]["instances"]] == [0, 0, 0, 0]
assert [i["replica"] for i in g[1]["instances"]] == [1, 1, 1, 1]
assert sig(g[2]) == [("1g.10gb", k, 1, "provider") for k in range(7)]
assert g[3]["mode"] == "whole" and g[3]["sharing"] == "time-slicing"
assert [i["guest"] for i in g[3]["instances"]] == [False, True]
PY
then ok; else bad "plan JSON content"; fi

# deterministic: same bytes twice
"$TESSERA" plan -f $EX -o json > "$TMP/again.json"
if cmp -s "$TMP/plan.json" "$TMP/again.json"; then ok; else bad "JSON differs between runs"; fi

# the SVG is well-formed XML with one row per card, and renders
if python3 -c "
import sys, xml.etree.ElementTree as ET
t = ET.parse(sys.argv[1]).getroot()
texts = [e.text or '' for e in t.iter('{http://www.w3.org/2000/svg}text')]
assert sum(1 for x in texts if x.startswith('gpu-node-1 gpu ')) == 4, texts
assert any('3g.40gb' == x for x in texts)
" "$TMP/fleet.svg"; then ok; else bad "SVG structure"; fi
if rsvg-convert -o "$TMP/fleet.png" "$TMP/fleet.svg" && [ -s "$TMP/fleet.png" ]; then ok; else
    bad "rsvg-convert could not render the SVG"; fi

# usage errors exit 2 with a message; --help exits 0 on every verb
expect_rc 2 "$TESSERA" plan -f $EX -o xml
expect_in "$TMP/err" "-o must be text, json or yaml"
expect_rc 2 "$TESSERA" plan
expect_in "$TMP/err" "no spec given: use -f FILE"
expect_rc 2 "$TESSERA" plan -f $EX --solver magic
expect_rc 2 "$TESSERA" plan -f $EX --time-limit -1
expect_in "$TMP/err" "--time-limit must be seconds from 0 (no GLPK: the heuristic's layout) to 3600"
expect_rc 2 "$TESSERA" plan -f $EX --time-limit nan
expect_rc 2 "$TESSERA" plan -f $EX --time-limit ""
# --time-limit 0: what its message says, GLPK gets no time: the heuristic's plan
expect_rc 0 "$TESSERA" plan -f $EX --solver heuristic -o json
cp "$TMP/out" "$TMP/heuristic.json"
expect_rc 0 "$TESSERA" plan -f $EX --time-limit 0 -o json
check "--time-limit 0 is not the heuristic's plan" cmp -s "$TMP/out" "$TMP/heuristic.json"
expect_rc 2 "$TESSERA" plan -f $EX --solver exact --time-limit 0
expect_in "$TMP/err" "--solver exact and --time-limit 0 contradict each other"
expect_rc 0 "$TESSERA" plan --help
expect_in "$TMP/out" "0: no GLPK, the heuristic's layout"
expect_rc 2 "$TESSERA" plan -f $EX --bogus
expect_rc 2 "$TESSERA" frobnicate
expect_rc 2 "$TESSERA" plan -f /nonexistent.yaml
expect_in "$TMP/err" "tessera: /nonexistent.yaml: cannot open: No such file or directory"
expect_rc 1 "$TESSERA" plan -f $EX --svg /nonexistent-dir/x.svg
for verb in plan check catalog docs; do
    expect_rc 0 "$TESSERA" $verb --help
    expect_in "$TMP/out" "usage: tessera $verb"
done
expect_rc 0 "$TESSERA" --help
expect_rc 0 "$TESSERA" --version

# valgrind stays clean on the demo (skipped under ASan, which has its own checks)
if command -v valgrind >/dev/null && ! nm "$TESSERA" 2>/dev/null | grep -q __asan_init; then
    expect_rc 0 valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect \
        "$TESSERA" plan -f $EX --solver exact --svg "$TMP/v.svg"
fi
finish
