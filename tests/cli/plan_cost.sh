#!/usr/bin/env bash
# plan_cost.sh - cost as the planner's objective with a PriceBook (issue 30).
# Two priced fleets where choosing each workload's card model one at a time
# (decide's cheapest share first) is wrong (tests/fixtures/plan-cost/):
#   swap.yaml   the first workload takes the cheap cards the second needed;
#   packs.yaml  one replica looks cheaper on the A100 by its share but takes a
#               whole card either way, and the A30 card costs half.
# The cheapest layout is computed here by enumerating every choice of model
# per workload (whole cards and one MIG instance: the count of cards each
# choice needs is known), not taken from tessera's output; the plan must
# cost exactly that, its lower bound must not exceed it, and with
# --time-limit 0 (no GLPK: decide's models) the old, dearer plan is still
# what comes out. Text, JSON and SVG carry cost, bound and gap. A PriceBook
# names its models as the catalog does (any case, or the display name), each
# once; a free model's bound is 0.00, not left out.
# Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"
cd "$TESSERA_SRC"
fx=tests/fixtures/plan-cost

# Exhaustive: options[w] = [(model, cards)], cards[model], prices -> min cost.
cheapest() {
    python3 - "$@" <<'PY'
import itertools, json, sys
case = json.loads(sys.argv[1])
best = None
for pick in itertools.product(*case["options"]):
    used = {}
    for model, n in pick:
        used[model] = used.get(model, 0) + n
    if all(used[m] <= case["cards"][m] for m in used):
        cost = sum(case["price"][m] * n for m, n in pick)
        best = cost if best is None else min(best, cost)
print("%.2f" % best)
PY
}

# swap: small (40 GiB whole) on l40s or a100 (1 card); pair (2 GPUs of 60
# GiB) on 2 l40s (one node holds both) or 2 a100s.
swap_best=$(cheapest '{"options": [[["l40s",1],["a100",1]], [["l40s",2],["a100",2]]],
                      "cards": {"l40s": 2, "a100": 2}, "price": {"l40s": 1.10, "a100": 1.60}}')
check "swap: enumeration gives 3.80 (the fixture's note)" test "$swap_best" = 3.80
# packs: one 9 GiB MIG replica: one a30 (2g.12gb) or one a100 (1g.10gb).
packs_best=$(cheapest '{"options": [[["a30",1],["a100",1]]], "cards": {"a30": 1, "a100": 1},
                       "price": {"a30": 0.80, "a100": 1.60}}')
check "packs: enumeration gives 0.80" test "$packs_best" = 0.80

summary() { # FILE -> "cost bound gap"
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]
print("%.2f %.2f %.1f" % (s["costPerHour"], s["costLowerBound"], s["costGapPercent"]))' "$1"
}

for c in swap:$swap_best packs:$packs_best; do
    name=${c%%:*} best=${c#*:}
    expect_rc 0 "$TESSERA" plan -f $fx/$name.yaml -o json
    read -r cost bound gap < <(summary "$TMP/out")
    check "$name: plan costs the enumerated minimum $best (got $cost)" test "$cost" = "$best"
    check "$name: cost bound $bound is at most $best" python3 -c "assert $bound <= $best + 1e-9"
    check "$name: gap $gap is (cost - bound) / bound" \
        python3 -c "assert abs($gap - round(100 * ($cost - $bound) / $bound, 1)) < 0.051"
done

# decide's models alone (no GLPK): the dearer layouts the fix replaces
expect_rc 0 "$TESSERA" plan --time-limit 0 -f $fx/swap.yaml -o json
read -r cost bound gap < <(summary "$TMP/out")
check "swap without GLPK: 1.10 + 2 x 1.60 = 4.30 (got $cost)" test "$cost" = 4.30
expect_rc 0 "$TESSERA" plan --time-limit 0 -f $fx/packs.yaml -o json
read -r cost bound gap < <(summary "$TMP/out")
check "packs without GLPK: one a100 = 1.60 (got $cost)" test "$cost" = 1.60

# where the workloads went, and the reason says why
expect_rc 0 "$TESSERA" plan -f $fx/swap.yaml -o json
python3 - "$TMP/out" <<'PY' && ok || bad "swap: pair on the l40s pair, small on an a100"
import json, sys
p = json.load(open(sys.argv[1]))
model = {d["workload"]: (d["gpuModel"], d["gpus"]) for d in p["decisions"]}
assert model == {"small": ("a100-80gb", 1), "pair": ("l40s", 2)}, model
reason = {d["workload"]: d["reason"] for d in p["decisions"]}
assert "chosen for the fleet's least cost" in reason["small"], reason
PY

# the text summary and the SVG say cost, bound and gap
expect_rc 0 "$TESSERA" plan -f $fx/packs.yaml
expect_in "$TMP/out" "cost               0.80 USD per hour"
expect_in "$TMP/out" "cost lower bound   0.80 USD per hour (gap 0.0%"
expect_rc 0 "$TESSERA" plan -f $fx/swap.yaml --svg "$TMP/swap.svg"
expect_in "$TMP/swap.svg" "cost 3.80 USD per hour, lower bound 3.80 (gap 0.0%)"

# without a PriceBook: no cost, no bound (null in the JSON)
python3 -c 'import sys; docs = open(sys.argv[1]).read().split("---\n")
print("---\n".join(d for d in docs if "kind: PriceBook" not in d), end="")' \
    $fx/swap.yaml >"$TMP/unpriced.yaml"
expect_rc 0 "$TESSERA" plan -f "$TMP/unpriced.yaml" -o json
python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]
assert s["costPerHour"] is None and s["costLowerBound"] is None and s["costGapPercent"] is None, s' \
    "$TMP/out" && ok || bad "unpriced: cost fields null"

# a PriceBook names a model as the fleet and the catalog do, in any case or by
# its display name: "L40S" prices the l40s (before: accepted, and the plan
# had no cost at all); the same model priced twice under two names is refused
# at the second entry; a free model (price 0) still gets its bound, 0.00
priced_l40s() {
    cat <<YAML
apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: f}
spec:
  nodes:
  - {name: n1, gpus: [{model: l40s, count: 2}, {model: a30, count: 2}]}
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: t}
spec:
  contract: shared-trusted
  namespaces: [t]
  workloads:
  - {name: w, kind: batch, memoryHighWaterGiB: 20, gpuModel: l40s}
---
apiVersion: tessera.dev/v1alpha1
kind: PriceBook
metadata: {name: p}
spec:
  currency: EUR
  prices:
$1
YAML
}
priced_l40s '  - {model: L40S, perGpuHour: "1.10"}
  - {model: a30, perGpuHour: "0.50"}' >"$TMP/upper.yaml"
expect_rc 0 "$TESSERA" plan -f "$TMP/upper.yaml"
expect_in "$TMP/out" "cost               1.10 EUR per hour"
expect_in "$TMP/out" "cost lower bound   1.10 EUR per hour (gap 0.0%"
priced_l40s '  - {model: NVIDIA L40S 48GB, perGpuHour: "1.10"}
  - {model: a30, perGpuHour: "0.50"}' >"$TMP/display.yaml"
expect_rc 0 "$TESSERA" plan -f "$TMP/display.yaml"
expect_in "$TMP/out" "cost               1.10 EUR per hour"
priced_l40s '  - {model: L40S, perGpuHour: "1.10"}
  - {model: a30, perGpuHour: "0.50"}
  - {model: l40s, perGpuHour: "2.00"}' >"$TMP/twice.yaml"
expect_rc 2 "$TESSERA" plan -f "$TMP/twice.yaml"
expect_in "$TMP/err" "twice.yaml:25:5: PriceBook/p.spec.prices[2]: 'l40s' names l40s, priced already as 'L40S' (line 23)"
priced_l40s '  - {model: l40s, perGpuHour: "0"}
  - {model: a30, perGpuHour: "0.50"}' >"$TMP/free.yaml"
expect_rc 0 "$TESSERA" plan -f "$TMP/free.yaml" -o json
python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]
assert (s["costPerHour"], s["costLowerBound"], s["costGapPercent"]) == (0, 0, 0), s' \
    "$TMP/out" && ok || bad "free model: cost 0, bound 0, gap 0"
finish
