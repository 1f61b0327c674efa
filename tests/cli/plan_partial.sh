#!/bin/bash
# plan_partial.sh - a fleet too small for the spec (the worked example on one
# card instead of four): `tessera plan` still says why on stderr (file:line:col)
# and exits 1, and prints the partial plan: what fits, laid out within the
# fleet, and each workload that does not with a reason; every workload of the
# spec (read here from the YAML) is in exactly one of the two. Text and JSON.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
sed 's/count: 4}/count: 1}/' examples/four-h100.yaml >"$TMP/small.yaml"
check "the fixture did not shrink the fleet" grep -q 'count: 1}' "$TMP/small.yaml"

expect_rc 1 "$TESSERA" plan -f "$TMP/small.yaml"
expect_in "$TMP/err" "$TMP/small.yaml:30:5: Tenant/client-a.spec.workloads[0]: cannot place"
expect_in "$TMP/out" "PARTIAL PLAN: the fleet holds"
expect_in "$TMP/out" "Does not fit:"
cp "$TMP/out" "$TMP/partial.txt"

expect_rc 1 "$TESSERA" plan -f "$TMP/small.yaml" -o json
if /usr/bin/python3 - "$TMP/small.yaml" "$TMP/out" "$TMP/partial.txt" <<'PY'; then ok; else bad "partial plan"; fi
import json, sys, yaml
spec = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
want = {(d["metadata"]["name"], w["name"]) for d in spec if d["kind"] == "Tenant"
        for w in d["spec"].get("workloads", [])}
fleet = sum(g["count"] for d in spec if d["kind"] == "Fleet"
            for n in d["spec"]["nodes"] for g in n["gpus"])
plan = json.load(open(sys.argv[2]))
placed = {(r["tenant"], r["workload"]) for r in plan["decisions"]}
left = {(u["tenant"], u["workload"]) for u in plan["unplaced"]}
problems = []
if placed & left:
    problems.append(f"both placed and unplaced: {placed & left}")
if placed | left != want:
    problems.append(f"missing: {want - (placed | left)}, unknown: {(placed | left) - want}")
if not placed or not left:
    problems.append(f"placed {len(placed)}, unplaced {len(left)}: expected some of each")
if len(plan["gpus"]) > fleet:
    problems.append(f"{len(plan['gpus'])} cards used, the fleet has {fleet}")
owners = {(i["tenant"], i["workload"]) for g in plan["gpus"] for i in g["instances"]
          if i.get("tenant")}
if owners - placed:
    problems.append(f"instances of unplaced workloads: {owners - placed}")
if any(not u["reason"] for u in plan["unplaced"]):
    problems.append("an unplaced workload without a reason")
text = open(sys.argv[3]).read().split("Does not fit:")[1]
for t, w in left:
    if f"  {t}/{w} (" not in text:
        problems.append(f"text: {t}/{w} not listed as not fitting")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
PY
# a fleet that holds it all prints no partial plan
expect_rc 0 "$TESSERA" plan -f examples/four-h100.yaml
if grep -q "PARTIAL" "$TMP/out"; then bad "a full plan says PARTIAL"; else ok; fi
finish
