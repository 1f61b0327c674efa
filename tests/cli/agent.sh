#!/usr/bin/env bash
# agent.sh - `tessera agent` end to end against the stand-in NVML
# (tests/standin/nvml, built as $(dirname $TESSERA)/standin/libnvidia-ml.so.1)
# over tests/fixtures/agent/h100-mixed.state (two H100 80GB HBM3, mixed
# geometries): inventory text and JSON (checked with python3); catalog
# import of the JSON against the import of the real nvidia-smi -L/-lgip/
# -lgipp of that board; plan --current with a differing and a matching
# node; ledger record --inventory -f SPEC then who; apply --dry-run (state
# byte-identical), apply (then inventory matches the plan), a matching card
# never gets a mutating call, processes refuse, an injected failure rolls
# back, MIG mode disabled is reported, a pending MIG mode change refused, an
# invalid placement and an overlapping target refused before any change,
# apply --dry-run from a NodeInventory file; the missing library message; bad
# plans (JSON path), unknown node, another GPU model. Needs TESSERA,
# TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

fx="$TESSERA_SRC/tests/fixtures"
smi="$fx/nvidia-smi"
spec="$fx/agent/spec.yaml"
use_standin_nvml
A() { "$TESSERA" agent "$@"; }
reset() { reset_standin_nvml; }

# inventory, text and JSON
expect_rc 0 A inventory --node gpu-node-1
expect_in "$TMP/out" "GPU 0: NVIDIA H100 80GB HBM3 (GPU-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0)"
expect_in "$TMP/out" "GI 5  2g.20gb      ID 14 2 slices  at 4:2"
expect_in "$TMP/out" "MIG-1f4a2b3c-0013-5a6b-8c7d-0e1f2a3b4c13"
expect_rc 0 A inventory --node gpu-node-1 -o json
cp "$TMP/out" "$TMP/inv.json"
python3 - "$TMP/inv.json" <<'PY' && ok || bad "inventory json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["apiVersion"] == "tessera.dev/v1alpha1" and d["kind"] == "NodeInventory", d
assert d["node"] == "gpu-node-1" and len(d["gpus"]) == 2
g = d["gpus"][0]
assert g["index"] == 0 and g["memoryMiB"] == 81559 and g["pciBusId"] == "00000000:1B:00.0"
assert g["migMode"] == {"current": "enabled", "pending": "enabled"} and g["computeMode"] == "default"
gis = [(x["profile"], x["profileId"], x["placement"]["start"], x["placement"]["size"]) for x in g["gpuInstances"]]
assert gis == [("3g.40gb", 9, 0, 4), ("2g.20gb", 14, 4, 2), ("1g.10gb", 19, 6, 1)], gis
ci = g["gpuInstances"][0]["computeInstances"]
assert [(c["profileId"], c["computeSlices"], c["uuid"]) for c in ci] == [(2, 3, "MIG-1f4a2b3c-0001-5a6b-8c7d-0e1f2a3b4c01")], ci
p = {x["id"]: x for x in g["profiles"]}
assert sorted(p) == [0, 5, 9, 14, 15, 19, 20], sorted(p)
assert [(q["start"], q["size"]) for q in p[15]["placements"]] == [(0, 2), (2, 2), (4, 2), (6, 2)]
assert p[0]["sms"] == 132 and p[19]["maxCount"] == 7 and p[20]["name"] == "1g.10gb+me"
PY

# catalog import: the JSON gives the GpuModel of the real nvidia-smi output
# (only the card memory differs: NVML's 81559 MiB vs the largest profile)
expect_rc 0 "$TESSERA" catalog import "$TMP/inv.json"
grep -v '^#' "$TMP/out" | grep -v '^  memoryGiB:' >"$TMP/from-inv.yaml"
expect_in "$TMP/out" "  memoryGiB: 79.65"
expect_rc 0 "$TESSERA" catalog import "$smi/h100-80gb-hbm3_L.txt" "$smi/h100-80gb-hbm3_mig-lgip.txt" \
    "$smi/h100-80gb-hbm3_mig-lgipp.txt"
grep -v '^#' "$TMP/out" | grep -v '^  memoryGiB:' >"$TMP/from-smi.yaml"
if diff "$TMP/from-smi.yaml" "$TMP/from-inv.yaml"; then ok; else bad "import differs"; fi

# plan --current: node differs on GPU 0 (2g.20gb where the plan has 1g.20gb)
expect_rc 0 "$TESSERA" plan -f "$spec" --current "$TMP/inv.json"
expect_in "$TMP/out" "gpu-node-1 GPU 0 (h100-80gb-sxm): reconfigure"
expect_in "$TMP/out" "destroy GPU instance 5 (2g.20gb at 4:2)"
expect_in "$TMP/out" "create 1g.20gb (profile ID 15) at 4:2"
expect_in "$TMP/out" "Cards: 1 keep, 1 reconfigure (1 destroy, 1 create)"
expect_rc 0 "$TESSERA" plan -f "$spec" --current "$TMP/inv.json" -o json
python3 - "$TMP/out" <<'PY' && ok || bad "plan --current json"
import json, sys
r = json.load(open(sys.argv[1]))["reconfiguration"]
assert r["counts"] == {"keep": 1, "reconfigure": 1, "operator": 0, "unknown": 0, "destroy": 1, "create": 1}, r
c = r["cards"][0]
assert [s["action"] for s in c["steps"]] == ["drain", "destroy", "create"], c
assert c["steps"][2] == {"action": "create", "profile": "1g.20gb", "profileId": 15, "start": 4, "size": 2}
PY
expect_rc 2 "$TESSERA" plan -f "$spec" --current "$spec"
expect_in "$TMP/err" "agent/spec.yaml:1:1: invalid JSON"

# ledger record --inventory: the tenant comes from the plan's assignment
db="sqlite:$TMP/l.db"
expect_rc 0 "$TESSERA" ledger record --db "$db" --inventory "$TMP/inv.json" -f "$spec" \
    --at 2026-11-30T10:00:00Z
expect_in "$TMP/out" "MIG-1f4a2b3c-0001-5a6b-8c7d-0e1f2a3b4c01 -> alpha"
expect_in "$TMP/out" "MIG-1f4a2b3c-0005-5a6b-8c7d-0e1f2a3b4c05 -> unassigned"
expect_rc 0 "$TESSERA" ledger who --db "$db" --instance MIG-1f4a2b3c-0013-5a6b-8c7d-0e1f2a3b4c13 \
    --at 2026-11-30T10:00:01Z
expect_in "$TMP/out" "tenant:        gamma"
expect_in "$TMP/out" "source:        inventory"

# apply --dry-run changes nothing, byte for byte
"$TESSERA" plan -f "$spec" -o json >"$TMP/plan.json"
expect_rc 0 A apply --plan "$TMP/plan.json" --node gpu-node-1 --dry-run
expect_in "$TMP/out" "GPU 0: reconfigure (dry run: nothing changed)"
cmp -s "$TMP/node.state" "$fx/agent/h100-mixed.state" && ok || bad "dry run changed the state"
[ ! -s "$TMP/calls.log" ] && ok || bad "dry run made NVML mutating calls"

# a plan where GPU 1 (MIG, matching) must stay untouched while GPU 0 changes
python3 - "$TMP/plan.json" "$TMP/plan2.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
g1 = [g for g in p["gpus"] if g["index"] == 1][0]
g1["mode"] = "mig"
g1["instances"] = [{"profile": n, "start": s, "size": z, "tenant": None, "workload": None}
                   for n, s, z in [("4g.40gb", 0, 4), ("1g.10gb", 4, 1), ("1g.10gb", 5, 1)]]
json.dump(p, open(sys.argv[2], "w"))
PY
expect_rc 0 A apply --plan "$TMP/plan2.json" --node gpu-node-1
expect_in "$TMP/out" "done, verified: GPU 0 holds 3g.40gb at 0:4, 1g.20gb at 4:2, 1g.10gb at 6:1"
expect_in "$TMP/out" "GPU 1: keep (matches the plan; not touched)"
grep -q 'gpu=1' "$TMP/calls.log" && bad "GPU 1 got a mutating call" || ok
[ "$(wc -l <"$TMP/calls.log")" -eq 4 ] && ok || bad "want 4 mutating calls: $(cat "$TMP/calls.log")"
expect_rc 0 "$TESSERA" plan -f "$spec" --current <(A inventory --node gpu-node-1 -o json)
expect_in "$TMP/out" "Cards: 2 keep, 0 reconfigure"

# processes running: refused, named
reset
echo 'proc;gpu=0;pid=4242;name=python3' >>"$TMP/node.state"
expect_rc 1 A apply --plan "$TMP/plan.json" --node gpu-node-1
expect_in "$TMP/out" "refused: 1 process running on GPU 0: pid 4242 (python3)"
[ ! -s "$TMP/calls.log" ] && ok || bad "refused apply made mutating calls"

# injected failure on the 1st create: rolled back to the previous geometry
reset
TESSERA_STANDIN_NVML_FAIL_CREATE=1 expect_rc 1 A apply --plan "$TMP/plan.json" --node gpu-node-1
expect_in "$TMP/out" "failed: nvmlDeviceCreateGpuInstanceWithPlacement on GPU 0: Unknown Error (NVML error 999)"
expect_in "$TMP/out" "rollback: recreated 2g.20gb at 4:2"
expect_in "$TMP/out" "GPU 0 is left with: 3g.40gb at 0:4, 2g.20gb at 4:2, 1g.10gb at 6:1"
expect_in "$TMP/out" "the previous geometry is restored"
expect_in "$TMP/err" "1 card of node gpu-node-1 not brought to the plan"

# MIG mode disabled on GPU 0: reported, nothing changed
reset
sed -i '0,/mig=1;pending=1/s//mig=0;pending=0/' "$TMP/node.state"
expect_rc 1 A apply --plan "$TMP/plan.json" --node gpu-node-1
expect_in "$TMP/out" "MIG mode is disabled (pending disabled): an operator must enable it"
[ ! -s "$TMP/calls.log" ] && ok || bad "MIG-disabled apply made mutating calls"

# MIG mode enabled with disable pending (-mig 0 run, reset outstanding):
# refused, nothing changed (the work would be lost at the reset)
reset
sed -i '0,/mig=1;pending=1/s//mig=1;pending=0/' "$TMP/node.state"
expect_rc 1 A apply --plan "$TMP/plan.json" --node gpu-node-1
expect_in "$TMP/out" "GPU 0: cannot apply: MIG mode change pending (current enabled, pending disabled)"
[ ! -s "$TMP/calls.log" ] && ok || bad "pending-mode apply made mutating calls"

# the whole target checked against the card's own placement list before
# anything changes: 3g.40gb at slice 2 (the card lists 0 and 4), and a new
# 1g.10gb at 3 overlapping the kept 3g.40gb at 0:4
reset
geometry() {
    python3 - "$TMP/plan.json" "$2" "$1" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
g0 = [g for g in p["gpus"] if g["index"] == 0][0]
g0["instances"] = [{"profile": n, "start": s, "size": z, "tenant": None, "workload": None}
                   for n, s, z in json.loads(sys.argv[3])]
json.dump(p, open(sys.argv[2], "w"))
PY
}
geometry '[["3g.40gb", 2, 4], ["1g.10gb", 6, 1]]' "$TMP/badplace.json"
expect_rc 2 A apply --plan "$TMP/badplace.json" --node gpu-node-1
expect_in "$TMP/err" "GPU 0 cannot hold 3g.40gb at 2:4: its placements for 3g.40gb are 0:4, 4:4; nothing was changed"
[ ! -s "$TMP/calls.log" ] && ok || bad "invalid placement made mutating calls: $(cat "$TMP/calls.log")"
geometry '[["3g.40gb", 0, 4], ["1g.10gb", 3, 1], ["1g.10gb", 6, 1]]' "$TMP/overlap.json"
expect_rc 2 A apply --plan "$TMP/overlap.json" --node gpu-node-1
expect_in "$TMP/err" "GPU 0: 1g.10gb at 3:1 would overlap 3g.40gb at 0:4 (kept); nothing was changed"
[ ! -s "$TMP/calls.log" ] && ok || bad "overlapping target made mutating calls"
cmp -s "$TMP/node.state" "$fx/agent/h100-mixed.state" && ok || bad "refused targets changed the state"

# --dry-run from a NodeInventory file: no NVML needed, same steps and checks
TESSERA_NVML_LIBRARY="$TMP/none.so" expect_rc 0 A apply --plan "$TMP/plan.json" --dry-run \
    --inventory "$TMP/inv.json"
expect_in "$TMP/out" "GPU 0: reconfigure (dry run: nothing changed)"
expect_in "$TMP/out" "create 1g.20gb (profile ID 15) at 4:2"
expect_in "$TMP/out" "GPU 1: keep (matches the plan; not touched)"
TESSERA_NVML_LIBRARY="$TMP/none.so" expect_rc 2 A apply --plan "$TMP/badplace.json" --dry-run \
    --inventory "$TMP/inv.json"
expect_in "$TMP/err" "GPU 0 cannot hold 3g.40gb at 2:4"
expect_rc 2 A apply --plan "$TMP/plan.json" --inventory "$TMP/inv.json" --node gpu-node-1
expect_in "$TMP/err" "--inventory is for --dry-run"
printf '{"apiVersion": "tessera.dev/v1alpha1", "kind": "NodeInventory", "node": 7}' >"$TMP/badinv.json"
expect_rc 2 A apply --plan "$TMP/plan.json" --dry-run --inventory "$TMP/badinv.json"
expect_in "$TMP/err" "badinv.json"
expect_in "$TMP/err" "node"
python3 - "$TMP/inv.json" "$TMP/pending.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["gpus"][0]["migMode"]["pending"] = "disabled"
json.dump(d, open(sys.argv[2], "w"))
PY
TESSERA_NVML_LIBRARY="$TMP/none.so" expect_rc 1 A apply --plan "$TMP/plan.json" --dry-run \
    --inventory "$TMP/pending.json"
expect_in "$TMP/out" "GPU 0: cannot apply: MIG mode change pending"

# bad inputs
reset
printf '{"kind": "Plan", "gpus": [{"node": "gpu-node-1", "index": 0, "model": "h100-80gb-sxm", "mode": "mig", "instances": [{"profile": "3g.40gb", "start": "0", "size": 4}]}]}' >"$TMP/bad.json"
expect_rc 2 A apply --plan "$TMP/bad.json" --node gpu-node-1
expect_in "$TMP/err" "gpus[0].instances[0].start: expected an integer"
printf '{"kind": "Plan", "gpus": [' >"$TMP/trunc.json"
expect_rc 2 A apply --plan "$TMP/trunc.json" --node gpu-node-1
expect_in "$TMP/err" "trunc.json:1:"
expect_rc 2 A apply --plan "$TMP/plan.json" --node no-such-node
expect_in "$TMP/err" "the plan has no GPU on node 'no-such-node'"
sed 's/h100-80gb-sxm/a100-40gb/g' "$TMP/plan.json" >"$TMP/a100.json"
expect_rc 2 A apply --plan "$TMP/a100.json" --node gpu-node-1
expect_in "$TMP/err" "the plan puts a a100-40gb on GPU 0 of node gpu-node-1, but the card is 'NVIDIA H100 80GB HBM3' (h100-80gb-sxm)"
expect_rc 2 A apply --plan "$TMP/plan.json"
expect_rc 2 A frobnicate
cmp -s "$TMP/node.state" "$fx/agent/h100-mixed.state" && ok || bad "bad inputs changed the state"

# no library: how to get one
if ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1 '; then   # a GPU node has the real one
    TESSERA_NVML_LIBRARY= expect_rc 1 A inventory
    expect_in "$TMP/err" "libnvidia-ml.so.1 not found: install the NVIDIA driver"
fi
TESSERA_NVML_LIBRARY="$TMP/none.so" expect_rc 1 A inventory
expect_in "$TMP/err" "TESSERA_NVML_LIBRARY=$TMP/none.so cannot be loaded"
finish
