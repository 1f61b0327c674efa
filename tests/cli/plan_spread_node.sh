#!/usr/bin/env bash
# plan_spread_node.sh - a false "cannot place" (issue 30): an MPS pool whose
# replicas spread across nodes, multi-GPU whole replicas and MIG on two nodes
# (tests/fixtures/plan-spread-node/fits.yaml). It fits, and the plan says
# so: the pool's replicas on distinct nodes, each training replica on one
# node (checked from the JSON here, not from the planner's words). With one
# more MIG replica it does not fit, and the workload left out is named as
# the one that does not fit: its reason says which placed workload it
# pushes out, at its own place in the YAML. Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"
cd "$TESSERA_SRC"
fits=tests/fixtures/plan-spread-node/fits.yaml

expect_rc 0 "$TESSERA" plan -f $fits -o json
python3 - "$TMP/out" <<'PY' && ok || bad "spread-node layout"
import json, sys
p = json.load(open(sys.argv[1]))
where = {}
for g in p["gpus"]:
    for i in g["instances"]:
        where.setdefault((i["workload"], i["replica"]), set()).add(g["node"])
assert p["summary"]["gpusUsed"] == 8, p["summary"]
embed = [where[("embed", r)] for r in (0, 1)]
assert all(len(n) == 1 for n in embed) and embed[0] != embed[1], embed
assert all(len(where[("big", r)]) == 1 for r in (0, 1)), where
assert len(where) == 6, where
PY

# one more MIG replica: no layout; mig/chat is what does not fit
sed 's/trust: untrusted, replicas: 2}/trust: untrusted, replicas: 3}/' $fits >"$TMP/nofit.yaml"
expect_rc 1 "$TESSERA" plan -f "$TMP/nofit.yaml" -o json
python3 - "$TMP/out" <<'PY' && ok || bad "unplaced names the workload left out"
import json, sys
p = json.load(open(sys.argv[1]))
u = p["unplaced"]
assert [(x["tenant"], x["workload"]) for x in u] == [("mig", "chat")], u
assert u[0]["reason"].startswith("with it, Tenant/pool.spec.workloads[0] (placed before it) "
                                  "no longer fits: "), u
placed = {i["workload"] for g in p["gpus"] for i in g["instances"]}
assert placed == {"embed", "big"}, placed
PY
expect_rc 1 "$TESSERA" plan -f "$TMP/nofit.yaml"
expect_in "$TMP/out" "mig/chat (3 replicas, mig): with it, Tenant/pool.spec.workloads[0]"
finish
