#!/usr/bin/env bash
# plan_pool_trust.sh - best-effort time-slicing pools packed and bounded per
# trust group (issue 30). tests/fixtures/plan/guests-trust.yaml: two tenants
# that do not trust each other, 100 and 35 guests of 7-10 sizes; no card may
# hold both. The fewest cards is 29 + 13 = 42 (each tenant's configuration
# program solved by glpsol outside tessera, the fixture's note). Before, the
# planner packed the guests as one class of 135 types (too many
# configurations to list: first-fit, 43 cards) and bounded them by their
# memory together (40 cards, gap 7.5%); now alike guests are one type and each
# trust group is its own class: the plan uses 42 and proves it.
# Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"
cd "$TESSERA_SRC"
fx=tests/fixtures/plan/guests-trust.yaml

expect_rc 0 "$TESSERA" plan -f $fx -o json
cp "$TMP/out" "$TMP/plan.json"
got=$(python3 - "$TMP/plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
s = p["summary"]
cards, mixed, over, placed = 0, 0, 0, 0
for g in p["gpus"]:
    if not g["instances"]:
        continue
    cards += 1
    mixed += len({i["tenant"] for i in g["instances"]}) > 1
    over += sum(i["memoryGiB"] for i in g["instances"]) > 80 + 1e-9
    placed += len(g["instances"])
print(cards, s["gpusUsed"], s["lowerBound"], s["optimal"], "%.2f" % (s["costLowerBound"]),
      "%.1f" % s["costGapPercent"], mixed, over, placed)
PY
)
want="42 42 42 True 67.20 0.0 0 0 135"
check "cards, used, bound, optimal, cost bound, gap, mixed cards, over-full, placed: want '$want', got '$got'" \
    test "$got" = "$want"

# The bound does not depend on the packing: the heuristic alone (no GLPK)
# reports the same 42 as its bound, never more than the optimum.
expect_rc 0 "$TESSERA" plan -f $fx -o json --solver heuristic
check "heuristic: bound 42" test "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["lowerBound"])' "$TMP/out")" = 42

finish
