#!/usr/bin/env bash
# plan_current_check.sh - `tessera plan --current RUNNING.json`: the running
# plan is checked against the fleet and the catalog as a new plan is, before
# anything is planned. Each corruption (made here from a good plan of the
# worked example with python3) exits 2, writes nothing (no stdout, no SVG)
# and names its JSON path, the card (node, GPU index) and the instance:
# overlapping instances, an illegal start, an unknown node, a GPU index past
# the node's count, a card listed twice, a model the fleet does not have
# there, an unknown model, an unknown profile, a size not the profile's, an
# instance past the card, too many instances of a profile, an unknown mode,
# a free card holding instances, a MIG profile off MIG, memory and MPS
# shares over the card, a replica part twice, a tenant without workload,
# fields of the wrong type; and numbers or flags no plan writes (issue 30:
# "validated exactly like a new one"): a mode the node does not allow (vGPU
# without a licence), a MIG instance's memory not its profile's, an unknown
# or contradicting "sharing", a guest on a MIG card, a client reserving no
# memory, a later GPU part off a whole card, without the part before it or
# on another node than it,
# the canary naming a tenant or off MIG, an instance of no tenant that is
# not the canary. Several corruptions are reported in one run.
# Good plans (every example, and a replan's own output) pass. Needs
# TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"
cd "$TESSERA_SRC"
T() { "$TESSERA" "$@"; }
spec=examples/four-h100.yaml

expect_rc 0 T plan -f $spec -o json
cp "$TMP/out" "$TMP/good.json"

# corrupt NAME PYTHON: $TMP/NAME.json is the good plan with PYTHON applied to p
corrupt() {
    python3 - "$TMP/good.json" "$TMP/$1.json" "$2" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
g = p["gpus"]
exec(sys.argv[3])
json.dump(p, open(sys.argv[2], "w"))
PY
}

# refused NAME TEXT...: replanning against NAME.json exits 2, writes nothing,
# and its errors hold each TEXT
refused() {
    local name=$1
    shift
    rm -f "$TMP/pic.svg"
    expect_rc 2 T plan -f $spec --current "$TMP/$name.json" -o json --svg "$TMP/pic.svg"
    check "$name: something written" test ! -s "$TMP/out" -a ! -e "$TMP/pic.svg"
    for text in "$@"; do expect_in "$TMP/err" "$text"; done
}

# the good plan, a replan's own output and every example's plan pass
expect_rc 0 T plan -f $spec --current "$TMP/good.json" -o json
cp "$TMP/out" "$TMP/replanned.json"
expect_rc 0 T plan -f $spec --current "$TMP/replanned.json"
for ex in examples/*.yaml; do
    "$TESSERA" plan -f "$ex" -o json >"$TMP/ex.json" 2>/dev/null || continue
    expect_rc 0 T plan -f "$ex" --current "$TMP/ex.json"
done

# MIG geometry: gpus[0] holds 2g.20gb@0, 1g.10gb@2, 1g.10gb@3, 3g.40gb@4
corrupt overlap 'g[0]["instances"][2]["start"] = 2'
refused overlap "gpus[0].instances[2]: running plan: node gpu-node-1 GPU 0, 1g.10gb at 2:1 (client-d/summarise-7b-awq r0): overlaps 1g.10gb at 2:1 (client-c/support-7b-int8 r0) (gpus[0].instances[1])"
corrupt start 'g[0]["instances"][3]["start"] = 2; g[0]["instances"][0]["profile"] = "1g.10gb"; g[0]["instances"][0]["size"] = 1; del g[0]["instances"][1:3]'
refused start "gpus[0].instances[1]: running plan: node gpu-node-1 GPU 0, 3g.40gb at 2:4" \
    "3g.40gb cannot start at unit 2 on a h100-80gb-sxm (its starts: 0, 4)"
corrupt profile 'g[0]["instances"][3]["profile"] = "5g.50gb"'
refused profile "gpus[0].instances[3]" "a h100-80gb-sxm has no MIG profile '5g.50gb'"
corrupt size 'g[0]["instances"][3]["size"] = 3'
refused size "gpus[0].instances[3]" "size 3, but 3g.40gb takes 4 units"
corrupt outside 'g[0]["instances"][3]["start"] = 6'
refused outside "gpus[0].instances[3]" "runs past the card's 8 units (4 from unit 6)"
corrupt count 'g[2]["instances"].append(dict(g[2]["instances"][0], start=7, replica=9))'
refused count "gpus[2]: running plan: node gpu-node-1 GPU 2: 8 instances of 1g.10gb; a h100-80gb-sxm holds at most 7"

# where the card is: node, index, model, once
corrupt node 'g[1]["node"] = "gpu-node-9"'
refused node "gpus[1]: running plan: node gpu-node-9 GPU 1: the fleet has no node 'gpu-node-9'"
corrupt index 'g[3]["index"] = 7'
refused index "gpus[3]: running plan: node gpu-node-1 GPU 7: node gpu-node-1 has 4 GPUs in the fleet (indexes 0 to 3), no GPU 7"
corrupt twice 'g.append(dict(g[1]))'
refused twice "gpus[4]: running plan: node gpu-node-1 GPU 1: the card is listed twice (first at gpus[1])"
corrupt model 'g[0]["model"] = "h100-80gb-pcie"'
refused model "gpus[0]: running plan: node gpu-node-1 GPU 0: the running plan has a h100-80gb-pcie here, but the fleet's card is a h100-80gb-sxm"
corrupt nomodel 'g[0]["model"] = "z9000"'
refused nomodel "gpus[0]: running plan: node gpu-node-1 GPU 0: model 'z9000' is not in the catalog"

# modes and shared cards: gpus[3] is the whole card of provider/finetune with a guest
corrupt mode 'g[3]["mode"] = "shared"'
refused mode "gpus[3]" "mode 'shared' is not one of free, mig, whole"
corrupt free 'g[3]["mode"] = "free"'
refused free "gpus[3]: running plan: node gpu-node-1 GPU 3: a free card holds 2 instances"
corrupt offmig 'g[3]["instances"][0].update(profile="7g.80gb", start=0, size=8)'
refused offmig "gpus[3].instances[0]" "a MIG profile on a card in whole mode"
corrupt memory 'g[3]["mode"] = "mps"; g[3]["instances"][1]["guest"] = False'
refused memory "gpus[3]: running plan: node gpu-node-1 GPU 3: its instances reserve 95.60 GiB; a h100-80gb-sxm has"
corrupt sm 'g[3]["mode"] = "mps"; g[3]["instances"] = [dict(g[3]["instances"][1], guest=False, smPercent=60, replica=r) for r in (0, 1)]'
refused sm "gpus[3]: running plan: node gpu-node-1 GPU 3: its MPS shares add up to 120%"

# who: each replica part once, tenant and workload together, typed fields
corrupt dup 'g[1]["instances"][3]["replica"] = 0'
refused dup "gpus[1].instances[3]: running plan: node gpu-node-1 GPU 1, 3g.40gb at 4:4 (client-a/chat-13b r0): this replica part is also at gpus[0].instances[3]"
corrupt half 'g[0]["instances"][0]["workload"] = None'
refused half "gpus[0].instances[0]" "tenant and workload must both be set, or both null"
corrupt rtype 'g[0]["instances"][0]["replica"] = "0"'
refused rtype "gpus[0].instances[0].replica: expected an integer from 0 to"
corrupt rneg 'g[0]["instances"][0]["replica"] = -1'
refused rneg "gpus[0].instances[0].replica: expected an integer from 0 to"
corrupt gtype 'g[3]["instances"][1]["guest"] = "yes"'
refused gtype "gpus[3].instances[1].guest: expected true or false"
corrupt mtype 'g[3]["instances"][0]["memoryGiB"] = -5'
refused mtype "gpus[3].instances[0].memoryGiB: expected a number from 0 to"

# numbers and flags a plan never writes; gpus[3] is a whole card (provider/
# finetune) with a best-effort guest (sharing time-slicing) on gpu-node-1,
# which has mps: true and no vGPU licence
corrupt vgpu 'g[3].update(mode="vgpu", sharing="none", instances=g[3]["instances"][:1])'
refused vgpu "gpus[3]: running plan: node gpu-node-1 GPU 3: mode vgpu on node gpu-node-1: vGPU needs a node with vgpuLicensed: true"
corrupt migmem 'g[1]["instances"][0]["memoryGiB"] = 5000'
refused migmem "gpus[1].instances[0]: running plan: node gpu-node-1 GPU 1, 2g.20gb at 0:2 (client-b/code-7b r1): memoryGiB 5000.00, but a 2g.20gb instance has 19.62 GiB"
corrupt migmem3 'g[0]["instances"][3]["memoryGiB"] = 3'
refused migmem3 "gpus[0].instances[3]" "memoryGiB 3.00, but a 3g.40gb instance has 39.50 GiB"
corrupt sharing 'g[1]["sharing"] = "weird"'
refused sharing "gpus[1]: running plan: node gpu-node-1 GPU 1: sharing 'weird' is not none or time-slicing"
corrupt sharenone 'g[3]["sharing"] = "none"'
refused sharenone "gpus[3]: running plan: node gpu-node-1 GPU 3: best-effort guests ride this whole card, but sharing is 'none'"
corrupt sharemig 'g[0]["sharing"] = "time-slicing"'
refused sharemig "gpus[0]: running plan: node gpu-node-1 GPU 0: sharing time-slicing is for a whole card with best-effort guests"
corrupt guestmig 'g[0]["instances"][1]["guest"] = True'
refused guestmig "gpus[0].instances[1]" "a best-effort guest rides a whole or time-slicing card, not one in mig mode"
corrupt nomem 'g[3]["instances"][0]["memoryGiB"] = 0'
refused nomem "gpus[3].instances[0]: running plan: node gpu-node-1 GPU 3, provider/finetune r0: reserves no memory (memoryGiB 0.00)"
corrupt partmig 'g[0]["instances"][0]["gpuPart"] = 1'
refused partmig "gpus[0].instances[0]" "gpuPart 1: only whole cards hold the later GPUs of a replica" \
    "gpuPart 1, but client-b/code-7b r0 has no gpuPart 0"
corrupt partgap 'g[3]["instances"][0]["gpuPart"] = 2'
refused partgap "gpus[3].instances[0]" "gpuPart 2, but provider/finetune r0 has no gpuPart 1"
corrupt canary 'g[2]["instances"][0]["canary"] = True'
refused canary "gpus[2].instances[0]" "the canary slice names no tenant"
corrupt canarywhole 'g[3]["instances"].append(dict(g[3]["instances"][1], tenant=None, workload=None, guest=False, canary=True))'
refused canarywhole "gpus[3].instances[2]" "the canary slice is a MIG instance, not on a card in whole mode"
corrupt nobody 'g[2]["instances"][0].update(tenant=None, workload=None)'
refused nobody "gpus[2].instances[0]" "names no tenant and is not the canary slice"

# a replica of 2 whole GPUs (one pod) split over two nodes: a plan never
# does that, and the keep plan would keep it (before: exit 0)
cat >"$TMP/two.yaml" <<'YAML'
apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: f}
spec:
  nodes:
  - {name: n1, gpus: [{model: h100-80gb-sxm, count: 2}]}
  - {name: n2, gpus: [{model: h100-80gb-sxm, count: 2}]}
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: a}
spec:
  contract: dedicated
  namespaces: [a]
  workloads:
  - {name: train, kind: training, memoryHighWaterGiB: 60, gpus: 2}
YAML
expect_rc 0 T plan -f "$TMP/two.yaml" -o json
python3 - "$TMP/out" "$TMP/split.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
g = {(c["node"], c["index"]): c for c in p["gpus"]}
assert g[("n1", 0)]["instances"][0]["gpuPart"] == 0 and g[("n1", 1)]["instances"][0]["gpuPart"] == 1, p["gpus"]
g[("n2", 0)]["instances"], g[("n1", 1)]["instances"] = g[("n1", 1)]["instances"], []
g[("n2", 0)]["mode"], g[("n1", 1)]["mode"] = "whole", "free"
json.dump(p, open(sys.argv[2], "w"))
PY
expect_rc 2 T plan -f "$TMP/two.yaml" --current "$TMP/split.json"
expect_in "$TMP/err" "gpus[2].instances[0]: running plan: node n2 GPU 0, a/train r0 (a later GPU part): gpuPart 1 is on node n2, gpuPart 0 of the same replica on node n1: a replica's GPUs are one pod's, on one node"

# several corruptions: every one reported in one run
corrupt many 'g[0]["model"] = "h100-80gb-pcie"; g[0]["instances"][2]["start"] = 2; g[1]["node"] = "gpu-node-9"; g[3]["index"] = 7; g[2]["instances"][6]["start"] = 9'
refused many "gpus[0]: " "gpus[0].instances[2]" "gpus[1]: " "gpus[3]: " "gpus[2].instances[6]"
finish
