#!/usr/bin/env bash
# plan_spread_pools.sh - false "cannot place" (issue 30, the adversary's
# finding 07, and three found by tests/tools/place_check.py): pools and
# guests spread across nodes of different sizes, beside whole jobs and MIG
# (finding 09, guests on two cards, is plan-cost/pool-spread-pack.yaml),
# and on 20 cards a guest spread by node behind MPS clients. Each
# fixture (tests/fixtures/plan/, its feasible layout written in its header)
# must plan with exit 0, and the layout is checked by place_check.py, which
# shares nothing with src/plan: every replica placed once, caps and SM
# shares within the card, only trusting tenants (one MPS server per tenant)
# on a card, replicas on distinct cards or nodes as asked. Then 40 random
# tiny specs of these shapes: tessera places every one the brute force
# finds feasible, validly. A spec that does not fit still names what is
# left out. Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"
cd "$TESSERA_SRC"
fx=tests/fixtures/plan
check=tests/tools/place_check.py

for f in $fx/spread-pools-*.yaml; do
    expect_rc 0 "$TESSERA" plan -f "$f" -o json
    expect_rc 0 python3 $check --tessera "$TESSERA" --spec "$f"
    expect_in "$TMP/out" "feasible, placed, layout valid"
done

# random tiny specs, seeded: no feasible one refused, no layout invalid
expect_rc 0 python3 $check --tessera "$TESSERA" --count 40 --seed 7
expect_in "$TMP/out" "false_refusal=0 invalid=0"

# four replicas spread by node on three nodes: t1/w is left out, t0 placed
sed 's/memoryHighWaterGiB: 35, replicas: 3/memoryHighWaterGiB: 35, replicas: 4/' \
    $fx/spread-pools-small-node.yaml >"$TMP/nofit.yaml"
expect_rc 1 "$TESSERA" plan -f "$TMP/nofit.yaml" -o json
python3 - "$TMP/out" <<'PY' && ok || bad "unplaced names t1/w alone"
import json, sys
p = json.load(open(sys.argv[1]))
assert [(u["tenant"], u["workload"]) for u in p["unplaced"]] == [("t1", "w")], p["unplaced"]
placed = sorted((i["tenant"], i["replica"]) for g in p["gpus"] for i in g["instances"])
assert placed == [("t0", 0), ("t0", 1)], placed
PY
finish
