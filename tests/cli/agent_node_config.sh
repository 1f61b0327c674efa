#!/usr/bin/env bash
# agent_node_config.sh - the node agent's per-node config: `tessera render`
# writes nodes/NODE/agent.json (a NodeConfig) and cluster/agent-nodes.yaml
# (ConfigMap tessera-agent-nodes, key NODE.json, listed in cluster/'s
# kustomization), both checked here against `tessera plan -o json` read with
# python3 (each planned card of the node: index, model, mode, instances);
# `agent apply --node-config` (node from the file) gives the same steps as
# `apply --plan --node` and changes the stand-in node to the plan;
# `agent watch --node-config` reconciles from it; a NodeConfig without its
# node, of another kind or with a bad card is refused naming the place; the
# examples' renders carry one NodeConfig per node with cards; a fleet whose
# NodeConfigs exceed one ConfigMap is refused.
# Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

fx="$TESSERA_SRC/tests/fixtures"
spec="$fx/agent/spec.yaml"
use_standin_nvml
A() { "$TESSERA" agent "$@"; }

"$TESSERA" plan -f "$spec" -o json >"$TMP/plan.json"
expect_rc 0 "$TESSERA" render -f "$spec" --out-dir "$TMP/rendered"
cfg="$TMP/rendered/nodes/gpu-node-1/agent.json"
check "render wrote $cfg" test -s "$cfg"

# the NodeConfig and the ConfigMap say what the plan says about the node
pycheck() { # DESC ARGS... (python on stdin)
    local desc=$1
    shift
    if python3 - "$@" >"$TMP/py.out" 2>&1; then ok; else bad "$desc: $(cat "$TMP/py.out")"; fi
}
pycheck "NodeConfig and ConfigMap agree with the plan" "$TMP/plan.json" "$TMP/rendered" <<'PY'
import json, os, sys, yaml
plan, out = json.load(open(sys.argv[1])), sys.argv[2]
want = {}
for g in plan["gpus"]:
    insts = [{k: i[k] for k in ("profile", "start", "size", "tenant", "workload")}
             for i in g["instances"]]
    want.setdefault(g["node"], []).append(
        {"index": g["index"], "model": g["model"], "mode": g["mode"], "instances": insts})
assert want, "the plan has no cards"
cm = list(yaml.safe_load_all(open(os.path.join(out, "cluster", "agent-nodes.yaml"))))
assert len(cm) == 1 and cm[0]["kind"] == "ConfigMap", cm
md = cm[0]["metadata"]
assert (md["name"], md["namespace"]) == ("tessera-agent-nodes", "tessera-system"), md
assert sorted(cm[0]["data"]) == sorted(n + ".json" for n in want), sorted(cm[0]["data"])
for node, gpus in want.items():
    doc = json.load(open(os.path.join(out, "nodes", node, "agent.json")))
    assert doc == {"apiVersion": "tessera.dev/v1alpha1", "kind": "NodeConfig", "node": node,
                   "gpus": gpus}, (node, doc)
    assert json.loads(cm[0]["data"][node + ".json"]) == doc, node
k = yaml.safe_load(open(os.path.join(out, "cluster", "kustomization.yaml")))
assert "agent-nodes.yaml" in k["resources"], k
PY

# apply from the NodeConfig: the node comes from the file; same steps as the plan
expect_rc 0 A apply --plan "$TMP/plan.json" --node gpu-node-1 --dry-run
cp "$TMP/out" "$TMP/dry-plan.txt"
expect_rc 0 A apply --node-config "$cfg" --dry-run
check "NodeConfig dry run differs from the plan's" cmp -s "$TMP/out" "$TMP/dry-plan.txt"
expect_in "$TMP/out" "GPU 0: reconfigure (dry run: nothing changed)"
: >"$TMP/calls.log"
expect_rc 0 A apply --node-config "$cfg"
expect_in "$TMP/out" "done, verified: GPU 0 holds 3g.40gb at 0:4, 1g.20gb at 4:2, 1g.10gb at 6:1"
expect_rc 0 "$TESSERA" plan -f "$spec" --current <(A inventory --node gpu-node-1 -o json)
expect_in "$TMP/out" "Cards: 2 keep, 0 reconfigure"
expect_rc 2 A apply --node-config "$cfg" --node gpu-node-2
expect_in "$TMP/err" "the plan has no GPU on node 'gpu-node-2'"
expect_rc 2 A apply --node-config "$cfg" --plan "$TMP/plan.json"
expect_in "$TMP/err" "apply takes --plan or --node-config, not both"

# watch from the NodeConfig: back on the fixture's geometry, it reconciles
cp "$fx/agent/h100-mixed.state" "$TMP/node.state"
"$TESSERA" agent watch --node gpu-node-1 --node-config "$cfg" --interval-ms 50 2>"$TMP/watch.log" &
WPID=$!
for _ in $(seq 300); do
    grep -q "msg=reconcile node=gpu-node-1 result=ok" "$TMP/watch.log" && break
    sleep 0.1
done
kill -TERM "$WPID"
wait "$WPID" && ok || bad "watch did not exit 0 on SIGTERM"
expect_in "$TMP/watch.log" "msg=reconcile node=gpu-node-1 result=ok kept=1 changed=1 busy=0"

# hostile NodeConfigs: refused, the place named
bad_cfg() { # PYTHON-EDIT EXPECTED-MESSAGE
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $1; json.dump(d, open(sys.argv[2],'w'))" \
        "$cfg" "$TMP/bad.json"
    expect_rc 2 A apply --node-config "$TMP/bad.json" --dry-run --node gpu-node-1
    expect_in "$TMP/err" "$2"
}
bad_cfg 'del d["node"]' "bad.json: node: missing"
bad_cfg 'd["kind"] = "Nodeconfig"' "expected Plan (tessera plan -o json) or NodeConfig"
bad_cfg 'd["gpus"][1]["index"] = -1' "bad.json: gpus[1].index"
bad_cfg 'd["gpus"][0]["instances"][0]["start"] = "0"' "bad.json: gpus[0].instances[0].start"

# a fleet whose NodeConfigs exceed the 1 MiB of one ConfigMap (2000 nodes of
# eight cards: about 1.2 MB): refused, nothing written
python3 - "$spec" "$TMP/big.yaml" <<'PY'
import sys
src = open(sys.argv[1]).read()
nodes = "".join("  - name: gpu-node-%d\n    gpus:\n    - {model: h100-80gb-sxm, count: 8}\n" % i
                for i in range(2000))
open(sys.argv[2], "w").write("apiVersion: tessera.dev/v1alpha1\nkind: Fleet\n"
                             "metadata: {name: big}\nspec:\n  nodes:\n" + nodes +
                             src[src.index("---"):])
PY
expect_rc 2 "$TESSERA" render -f "$TMP/big.yaml" --out-dir "$TMP/big"
expect_in "$TMP/err" "cluster/agent-nodes.yaml: the NodeConfigs of 2000 nodes take"
expect_in "$TMP/err" "over the 1048576 bytes a ConfigMap holds"
check "a refused render wrote nothing" test ! -e "$TMP/big"

# every example: one NodeConfig per node with planned cards
for ex in "$TESSERA_SRC"/examples/*.yaml; do
    rm -rf "$TMP/ex"
    expect_rc 0 "$TESSERA" render -f "$ex" --out-dir "$TMP/ex"
    "$TESSERA" plan -f "$ex" -o json >"$TMP/ex-plan.json"
    pycheck "$(basename "$ex"): one NodeConfig per planned node" "$TMP/ex-plan.json" "$TMP/ex" <<'PY'
import json, os, sys
plan, out = json.load(open(sys.argv[1])), sys.argv[2]
nodes = sorted({g["node"] for g in plan["gpus"]})
have = sorted(n for n in os.listdir(os.path.join(out, "nodes"))
              if os.path.exists(os.path.join(out, "nodes", n, "agent.json")))
assert nodes == have, (nodes, have)
PY
done

finish
