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
# once; a free model's bound is 0.00, not left out. The adversarial review's
# fleets (stop 42), each optimum enumerated here too:
#   mig-whole-spill.yaml    a workload decide gave a whole card for want of
#                           MIG room has its MIG alternative (bound 7.10);
#   pool-spread-pack.yaml   pools laid out again when first fit fails (5.84);
#   mig-spread-class.yaml, pool-spread-fluid.yaml  the search's answer that
#                           is no layout is ruled out and solved again (7.36,
#                           2.95);
#   trace-100-classes.yaml  the bound of a 100-GPU trace fleet proven (113.80);
# and a trace fleet plans the same beside busy loops (the search is counted).
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

# Exhaustive with shared cards: each workload picks one option (a model and
# its replicas as items); the items of one bin class (a model and how cards
# are shared: MIG slices, a pool of tenants that trust each other) are packed
# by backtracking on as few cards as hold them, a card holding "cap" units, a
# spreading workload's replicas on distinct cards; whole cards are cards
# each. The cheapest choice within the fleet's cards -> cost.
cheapest_packed() {
    python3 - "$@" <<'PY'
import itertools, json, sys
case = json.loads(sys.argv[1])

def bins(items, cap):  # items: (size, owner or None when it may share) -> fewest cards
    items = sorted(items, reverse=True, key=lambda i: i[0])
    for k in range(1, len(items) + 1):
        load, owners = [0] * k, [set() for _ in range(k)]
        def place(i):
            if i == len(items):
                return True
            size, who = items[i]
            for b in range(k):
                if load[b] + size <= cap and (who is None or who not in owners[b]):
                    load[b] += size; owners[b].add(who)
                    if place(i + 1):
                        return True
                    load[b] -= size; owners[b].discard(who)
                if load[b] == 0:
                    break  # empty cards are alike
            return False
        if place(0):
            return k
    return 0

best = None
for pick in itertools.product(*case["options"]):
    classes, used = {}, {}
    for w, opt in enumerate(pick):
        model, cls = opt["model"], opt["class"]
        if cls == "whole":
            used[model] = used.get(model, 0) + opt["replicas"]
            continue
        who = w if opt.get("spread") else None
        c = classes.setdefault((model, cls), [opt["cap"], []])
        c[1] += [(opt["size"], who)] * opt["replicas"]
    for (model, cls), (cap, items) in classes.items():
        used[model] = used.get(model, 0) + bins(items, cap)
    if all(n <= case["cards"][m] for m, n in used.items()):
        cost = sum(case["price"][m] * n for m, n in used.items())
        best = cost if best is None else min(best, cost)
print("%.2f" % best)
PY
}

# mig-whole-spill: w0 3 x 1g.20gb (2 of a card's 8 memory slices) on the h100
# or an a100, or 3 whole l40s; w1 3 x 3g.40gb (4 slices) likewise; t1/w0 one
# MPS card, h100 or l40s (the a100 node runs no MPS). Slices of 2 and 4 pack
# as their sum allows (3g@0 + 1g@4 + 1g@6), compute (3 + 1 + 1 of 7) too.
spill_best=$(cheapest_packed '{"cards": {"h100": 1, "l40s": 4, "a100": 2},
  "price": {"h100": 2.51, "l40s": 1.43, "a100": 1.58},
  "options": [
    [{"model": "h100", "class": "mig", "cap": 8, "size": 2, "replicas": 3},
     {"model": "a100", "class": "mig", "cap": 8, "size": 2, "replicas": 3},
     {"model": "l40s", "class": "whole", "replicas": 3}],
    [{"model": "h100", "class": "mig", "cap": 8, "size": 4, "replicas": 3},
     {"model": "a100", "class": "mig", "cap": 8, "size": 4, "replicas": 3},
     {"model": "l40s", "class": "whole", "replicas": 3}],
    [{"model": "h100", "class": "mps-t1", "cap": 80, "size": 20, "replicas": 1},
     {"model": "l40s", "class": "mps-t1", "cap": 48, "size": 20, "replicas": 1}]]}')
check "mig-whole-spill: enumeration gives 7.10 (the fixture's note)" test "$spill_best" = 7.10
# pool-spread-pack: every workload on either a100; the three best-effort ones
# time-slice in one pool (their tenants trust each other), t1/w0 is MPS;
# t1/w0 and t2/w0 spread over cards.
ts() { echo "{\"model\": \"$1\", \"class\": \"ts\", \"cap\": $2, \"size\": $3, \"replicas\": 2, \"spread\": $4}"; }
mps() { echo "{\"model\": \"$1\", \"class\": \"mps\", \"cap\": $2, \"size\": 5, \"replicas\": 2, \"spread\": true}"; }
pack_best=$(cheapest_packed "{\"cards\": {\"a80\": 4, \"a40\": 4}, \"price\": {\"a80\": 1.93, \"a40\": 1.46},
  \"options\": [[$(ts a80 80 12 false), $(ts a40 40 12 false)], [$(ts a80 80 20 false), $(ts a40 40 20 false)],
                [$(mps a80 80), $(mps a40 40)], [$(ts a80 80 4 true), $(ts a40 40 4 true)]]}")
check "pool-spread-pack: enumeration gives 5.84 (the fixture's note)" test "$pack_best" = 5.84
# mig-spread-class: MIG memory slices of 8 per card on either a100 (compute
# and placements left out: a relaxation, so its minimum is at most the
# optimum); a whole card each replica is the other alternative of a MIG
# workload. t0/w0 and t1/w0 spread.
mig() { echo "{\"model\": \"$1\", \"class\": \"mig\", \"cap\": 8, \"size\": $2, \"replicas\": $3, \"spread\": $4}"; }
whole() { echo "{\"model\": \"$1\", \"class\": \"whole\", \"replicas\": $2}"; }
class_best=$(cheapest_packed "{\"cards\": {\"a80\": 3, \"a40\": 2}, \"price\": {\"a80\": 2.77, \"a40\": 0.91},
  \"options\": [[$(mig a80 2 2 true), $(mig a40 4 2 true), $(whole a80 2), $(whole a40 2)],
                [$(mig a80 2 2 true), $(mig a40 4 2 true), $(whole a80 2), $(whole a40 2)],
                [$(mig a80 1 3 false), $(mig a40 2 3 false), $(whole a80 3), $(whole a40 3)],
                [$(mig a80 4 2 false), $(mig a40 8 2 false), $(whole a80 2), $(whole a40 2)],
                [$(whole a80 1), $(whole a40 1)]]}")
check "mig-spread-class: enumeration gives 7.36 (the fixture's note)" test "$class_best" = 7.36
# pool-spread-fluid: t0's time-slicing pool (memory caps) and t1's MPS card
# on l40s (45 GiB), l4 (22.5) or a30 (23.7); t0/w1 spreads.
tsl() { echo "{\"model\": \"$1\", \"class\": \"ts\", \"cap\": $2, \"size\": $3, \"replicas\": 3, \"spread\": $4}"; }
mps1() { echo "{\"model\": \"$1\", \"class\": \"mps\", \"cap\": $2, \"size\": 4, \"replicas\": 1}"; }
fluid_best=$(cheapest_packed "{\"cards\": {\"l40s\": 3, \"l4\": 4, \"a30\": 4}, \"price\": {\"l40s\": 1.31, \"l4\": 0.41, \"a30\": 0.86},
  \"options\": [[$(tsl l40s 45 8 false), $(tsl l4 22.5 8 false), $(tsl a30 23.7 8 false)],
                [$(tsl l40s 45 15 true), $(tsl l4 22.5 15 true), $(tsl a30 23.7 15 true)],
                [$(mps1 l40s 45), $(mps1 l4 22.5), $(mps1 a30 23.7)]]}")
check "pool-spread-fluid: enumeration gives 2.95 (the fixture's note)" test "$fluid_best" = 2.95

# trace-100-classes: the 100-GPU trace fleet at load 0.8 (seed 3). Counted
# here, not by tessera: 80.00 for the 56 whole cards on the 16 a30, 4 l40s,
# 32 a100 and 4 h100; every other card an h200 (3.70: 4 MIG slots, 140.4 GiB
# of guests) or one more card at 2.90 (a training pushed onto an h100) with
# an a100's room (units: 1g.20gb 1, 3g.40gb 2, 4 a card; 80 GiB of guests).
# 10 small and 8 large MIG workloads, 590.5 GiB of guests as a fluid (a
# relaxation); the least N, H that hold them.
trace_best=$(python3 - <<'PY'
best = None
for H in range(17):
    for N in range(29):
        for hm in range(H + 1):
            for nm in range(N + 1):
                for bh in range(min(8, 4 * hm) + 1):
                    sh = min(10, 4 * hm - bh)
                    if 2 * (8 - bh) + (10 - sh) <= 4 * nm and \
                            140.4 * (H - hm) + 80.0 * (N - nm) >= 590.5:
                        cost = 80.0 + 2.9 * N + 3.7 * H
                        best = cost if best is None else min(best, cost)
print("%.2f" % best)
PY
)
check "trace-100-classes: counting gives 113.80 (the fixture's note)" test "$trace_best" = 113.80

summary() { # FILE -> "cost bound gap"
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]
print("%.2f %.2f %.1f" % (s["costPerHour"], s["costLowerBound"], s["costGapPercent"]))' "$1"
}

for c in swap:$swap_best packs:$packs_best mig-whole-spill:$spill_best pool-spread-pack:$pack_best \
         trace-100-classes:$trace_best mig-spread-class:$class_best pool-spread-fluid:$fluid_best; do
    name=${c%%:*} best=${c#*:}
    expect_rc 0 "$TESSERA" plan -f $fx/$name.yaml -o json
    read -r cost bound gap < <(summary "$TMP/out")
    check "$name: plan costs the enumerated minimum $best (got $cost)" test "$cost" = "$best"
    check "$name: cost bound $bound is at most $best" python3 -c "assert $bound <= $best + 1e-9"
    check "$name: gap $gap is (cost - bound) / bound" \
        python3 -c "assert abs($gap - round(100 * ($cost - $bound) / $bound, 1)) < 0.051"
done
# alike workloads that decide put on different models are one class in the
# bound's program (their alternatives in the fleet's order): GLPK proves the
# optimum; with a class per decide's model the bound stayed at the LP, 110.32
expect_rc 0 "$TESSERA" plan -f $fx/trace-100-classes.yaml -o json
read -r cost bound gap < <(summary "$TMP/out")
check "trace-100-classes: bound $bound is the counted optimum $trace_best" test "$bound" = "$trace_best"

# decide's models alone (no GLPK): the dearer layouts the fix replaces
expect_rc 0 "$TESSERA" plan --time-limit 0 -f $fx/swap.yaml -o json
read -r cost bound gap < <(summary "$TMP/out")
check "swap without GLPK: 1.10 + 2 x 1.60 = 4.30 (got $cost)" test "$cost" = 4.30
expect_rc 0 "$TESSERA" plan --time-limit 0 -f $fx/packs.yaml -o json
read -r cost bound gap < <(summary "$TMP/out")
check "packs without GLPK: one a100 = 1.60 (got $cost)" test "$cost" = 1.60

# the cost bound is below the plan decide's models alone lay out (8.38: w1 on
# whole l40s, t1/w0 on the h100) and below the plan with w0 pinned to the
# h100 (7.10), which was under the old bound of 7.30
expect_rc 0 "$TESSERA" plan --solver heuristic -f $fx/mig-whole-spill.yaml -o json
read -r cost bound gap < <(summary "$TMP/out")
check "mig-whole-spill without GLPK: 8.38 (got $cost)" test "$cost" = 8.38
check "mig-whole-spill: bound $bound at most $spill_best" python3 -c "assert $bound <= $spill_best + 1e-9"
python3 - $fx/mig-whole-spill.yaml "$TMP/pinned.yaml" <<'PY'
import sys
s = open(sys.argv[1]).read()
old = "{name: w0, kind: batch, memoryHighWaterGiB: 18, replicas: 3, spread: none}"
assert old in s
open(sys.argv[2], "w").write(s.replace(old, old[:-1] + ", gpuModel: h100-80gb-sxm}"))
PY
expect_rc 0 "$TESSERA" plan --solver heuristic -f "$TMP/pinned.yaml" -o json
read -r cost bound gap < <(summary "$TMP/out")
check "mig-whole-spill, w0 pinned to the h100: 7.10 (got $cost)" test "$cost" = 7.10
# the solver line claims the lower bound only when the cost meets the cost bound
expect_rc 0 "$TESSERA" plan --solver heuristic -f $fx/pool-spread-pack.yaml
expect_in "$TMP/out" "cost               7.72 EUR per hour"
expect_in "$TMP/out" "solver             heuristic (the plan meets the card lower bound, its cost is above the cost lower bound)"
expect_rc 0 "$TESSERA" plan -f $fx/pool-spread-pack.yaml
expect_in "$TMP/out" "solver             heuristic (the plan meets the lower bound)"
# every workload pinned to the a100-40gb: worst fit and first fit decreasing
# both leave no card for the second spread 4 GiB replica; spread clients
# first pack 20 + 12 + 4 on each of two cards (it was "does not fit")
python3 - $fx/pool-spread-pack.yaml "$TMP/all40.yaml" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
s, n = re.subn(r"(spread: (none|gpu))\}", r"\1, gpuModel: a100-40gb}", s)
assert n == 4, n
open(sys.argv[2], "w").write(s)
PY
expect_rc 0 "$TESSERA" plan -f "$TMP/all40.yaml" -o json
read -r cost bound gap < <(summary "$TMP/out")
check "pool-spread-pack on the a100-40gb alone: 4 x 1.46 = 5.84 (got $cost)" test "$cost" = 5.84

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

# the cost search's work is counted, not timed: a trace fleet whose search
# runs for most of its budget (1,000 GPUs, load 0.8, seed 5: it planned 655
# cards on a quiet machine and 664 beside other builds while the search
# stopped at 0.5 s of wall clock) plans the same beside two busy loops; the
# wall clock is only a ceiling, the plan's --time-limit, here 60 s, out of
# reach of a busy test machine (10 s, the default, is not at load 12)
python3 bench/trace_spec.py --gpus 1000 --load 0.8 --seed 5 >"$TMP/busy.yaml"
expect_rc 0 "$TESSERA" plan -f "$TMP/busy.yaml" -o json --time-limit 60
cp "$TMP/out" "$TMP/alone.json"
for _ in 1 2; do (while :; do :; done) & done
expect_rc 0 "$TESSERA" plan -f "$TMP/busy.yaml" -o json --time-limit 60
kill $(jobs -p) 2>/dev/null
wait 2>/dev/null
check "the same plan beside two busy loops" cmp -s "$TMP/alone.json" "$TMP/out"

# the search is told what its models' layout showed and solved again: trace
# fleets at load 0.8, seed 3. At 1,000 GPUs its first answer runs out of
# a30 cards, then lays pool groups out a card over each. With the big
# guest groups' cuts and their LP-rounded layouts, the plan within 1% of
# the bound at 1,000 GPUs (stop 42: 3.5%; 2.8% against this bound, raised
# by GLPK's Gomory cuts). At 10,000 GPUs the program is too large for the
# search: the kept search (the LP's whole choices kept, the rest searched
# depth first, its pool groups cut at its answers) within 1% (0.8%; the
# LP rounded: 1.2%). Load 0.7, seed 3 at 1,000 GPUs and load 0.8, seed 2
# at 3,000: the kept search's answer laid out before the full search's,
# within 1% (0.7% and 0.8%; the full search alone: 1.2% and 1.2%). 100
# GPUs at load 0.8, seed 1: the bound's branch and bound with GLPK's
# Gomory and MIR cuts reaches 115.58 against the optimum 115.90 (stop 43:
# 112.94, 2.6%). Load 0.7, where the cheap models fill up (stop 47): the
# kept search's answer breaks the cuts of its pool groups and no
# depth-first search finds one that keeps them; the answer's
# neighbourhood is searched instead, and laid out in full where the quick
# layout fails: 10,000 GPUs, seed 3, 0.99% (stop 46: 1.56%); 3,000 GPUs,
# seed 2, 0.96% (1.46%). At load 0.72, seed 6, 10,000 GPUs, no depth-first
# search found a first answer until it is given room to round the full
# models' pools up: 1.05% (1.45%; 1.012 guards it, the aim is 1%).
# 10,000 GPUs in the plain build only (the sanitized one takes minutes).
for case in 1000:0.8:3:1.01 10000:0.8:3:1.01 1000:0.7:3:1.01 3000:0.8:2:1.01 100:0.8:1:1.01 \
    10000:0.7:3:1.01 3000:0.7:2:1.01 10000:0.72:6:1.012; do
    IFS=: read -r gpus load seed within <<<"$case"
    if [ "$gpus" = 10000 ] && ldd "$TESSERA" | grep -q libasan; then
        echo "10,000-GPU trace: skipped in the sanitized build"
        continue
    fi
    python3 bench/trace_spec.py --gpus "$gpus" --load "$load" --seed "$seed" >"$TMP/t$gpus.yaml"
    expect_rc 0 "$TESSERA" plan -f "$TMP/t$gpus.yaml" -o json --time-limit 60
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]
assert s["costPerHour"] <= s["costLowerBound"] * float(sys.argv[2]), s' "$TMP/out" "$within" &&
        ok || bad "$gpus-GPU trace at load $load, seed $seed: cost within $within of the bound"
done
finish
