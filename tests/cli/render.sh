#!/bin/bash
# labels: slow
# render.sh - `tessera render` end to end on the worked example and on
# examples/mixed-fleet.yaml, in the three device-API modes: every object
# validated against the real Kubernetes 1.35, Kueue and KubeVirt schemas
# (tests/tools/validate_k8s.py); deterministic, timestamp-free trees; the
# golden checks of the worked example (quotas equal the plan's entitlements,
# MIG geometry and placements, the whole fine-tune card, time-slicing dev,
# MIG production claims); MPS, memory fractions, VMs and a non-MIG node; the
# refusals (foreign files, MPS and time-slicing on one node for the device
# plugin); incremental and atomic rewrites; and the node script run for real
# against tests/tools/fake-nvidia-smi.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
PY=/usr/bin/python3 # Debian's, with python3-yaml and python3-jsonschema
EX=examples/four-h100.yaml
MIX=examples/mixed-fleet.yaml
VALIDATE="$PY tests/tools/validate_k8s.py"
MODES="dra device-plugin both"

# lib.sh's expect_rc, plus: a sanitizer report fails the check even when the
# exit code matches (under the ASan build an expected 1 could hide one).
expect_rc() {
    want=$1
    shift
    "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    if [ "$got" -eq "$want" ] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$TMP/err"; then
        ok
    else
        bad "$* exited $got, expected $want"
        head -5 "$TMP/err"
    fi
}

# validate DIR: every object of DIR against its schema, as DIR is now: a copy
# is queued and validate_all judges every copy in one python3 at the end (the
# schemas take a second to load). A tree byte for byte the same as one queued
# before (each example renders again below, in the modes above) is not copied
# again: it gets that copy's verdict (the same bytes, the same validator).
VALIDATED=() SAME_AS=() TREE_SUM=()
validate() {
    local n=${#VALIDATED[@]} m sum
    VALIDATED+=("$1")
    sum=$(cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r md5sum -- | md5sum)
    for ((m = 0; m < n; m++)); do
        if [ "${TREE_SUM[m]}" = "$sum" ] && diff -r "$1" "$TMP/validate/$m" >/dev/null 2>&1; then
            SAME_AS[n]=$m
            return
        fi
    done
    TREE_SUM[n]=$sum
    mkdir -p "$TMP/validate" && cp -r "$1" "$TMP/validate/$n"
}
validate_all() {
    local line n m verdict=()
    $VALIDATE "$TMP"/validate/* >"$TMP/val" 2>&1
    while IFS= read -r line; do
        [[ $line == "validate_k8s: $TMP/validate/"* ]] || continue
        n=${line#"validate_k8s: $TMP/validate/"} && n=${n%%:*}
        verdict[n]=$line
    done <"$TMP/val"
    for ((n = 0; n < ${#VALIDATED[@]}; n++)); do
        m=${SAME_AS[n]:-$n}
        line=${verdict[m]}
        if [ -z "$line" ]; then
            bad "validate_k8s did not judge ${VALIDATED[n]} ($TMP/validate/$m)"
        elif [[ $line == *"; 0 errors" ]]; then ok; else
            bad "validate_k8s ${VALIDATED[n]}: ${line##*; }"
            grep -v '^validate_k8s: ' "$TMP/val" | head -30
        fi
    done
}
# pycheck NAME ARGS... <<'PY': run the Python check on stdin with ARGS
pycheck() {
    local name=$1
    shift
    if $PY - "$@" >"$TMP/py" 2>&1; then ok; else bad "$name"; head -30 "$TMP/py"; fi
}
# same_tree A B: byte-identical trees
same_tree() {
    if diff -r "$1" "$2" >"$TMP/diff" 2>&1; then ok; else bad "$1 and $2 differ"; head -20 "$TMP/diff"; fi
}
# snapshot DIR: path, inode, mtime (ns) and checksum of every file (one
# md5sum for all of them, its sums in the order of the sorted list)
snapshot() {
    (cd "$1" && find . -type f -printf '%P %i %T@\n' | sort >"$TMP/snapshot.list" &&
        cut -d' ' -f1 "$TMP/snapshot.list" | xargs -r -d '\n' md5sum -- | cut -c1-32 |
        paste -d' ' "$TMP/snapshot.list" -)
}
# expect_not FILE TEXT: FILE does not contain TEXT
expect_not() {
    if grep -qF -- "$2" "$1"; then bad "'$2' found in $1"; else ok; fi
}

# ---- the validator itself: strict schemas reject broken documents, accept real ones ----
expect_rc 0 $VALIDATE --self-test
expect_in "$TMP/out" "0 failed"
expect_rc 0 $VALIDATE --examples tests/fixtures/schemas/examples
expect_in "$TMP/out" "; 0 errors"

# ---- the worked example in each mode ----
expect_rc 0 "$TESSERA" plan -f $EX -o json
cp "$TMP/out" "$TMP/plan-ex.json"
for mode in $MODES; do
    D=$TMP/ex-$mode
    expect_rc 0 "$TESSERA" render -f $EX --out-dir "$D" --device-api $mode -v
    expect_in "$TMP/out" "$D/kustomization.yaml"
    validate "$D"
    # deterministic: again, a second later, in another time zone
    sleep 1.05
    TZ=Pacific/Kiritimati expect_rc 0 "$TESSERA" render -f $EX --out-dir "$D-again" --device-api $mode
    same_tree "$D" "$D-again"
    if grep -rEq '[12][0-9]{3}-[01][0-9]-[0-3][0-9]|[0-2][0-9]:[0-5][0-9]:[0-5][0-9]' "$D"; then
        bad "timestamp in $D"; grep -rE '[12][0-9]{3}-[01][0-9]-[0-3][0-9]|[0-2][0-9]:[0-5][0-9]:[0-5][0-9]' "$D" | head -3
    else ok; fi
    # no bare `!` tags (libyaml's non-specific tag on quoted multi-line strings)
    if grep -rEq '(: |- )! ' "$D" --include='*.yaml'; then bad "bare ! tag in $D"; else ok; fi
done

# Quotas, limits and queues equal what the plan entitles each namespace to,
# computed here from the spec and `tessera plan -o json`: per class (DRA) or
# device-plugin resource, replicas x devices; 0 for every other resource of
# the render, for every resource the device plugin advertises on the fleet,
# and for the driver's own classes.
quota_check() { # SPEC PLAN DIR MODE
    pycheck "quota of $3" "$@" <<'PY'
import glob, json, math, os, re, sys, yaml
spec, planf, d, mode = sys.argv[1:5]
docs = [x for x in yaml.safe_load_all(open(spec)) if x]
tenants = {x["metadata"]["name"]: x["spec"] for x in docs if x["kind"] == "Tenant"}
plan = json.load(open(planf))

def workload(t, w):
    return next(x for x in tenants[t].get("workloads", []) if x["name"] == w)

def qty(v):
    m = re.match(r"^([0-9.]+)(Ki|Mi|Gi|Ti)?$", str(v))
    assert m, "bad quantity %r" % v
    return float(m.group(1)) * {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[m.group(2)]

dra, dp, dp_one = {}, {}, {}
classes, plugin = set(), set()
for r in plan["decisions"]:
    t = r["tenant"]
    w = workload(t, r["workload"])
    ns = w.get("namespace", tenants[t]["namespaces"][0])
    if r["mechanism"] == "vgpu" or w.get("vm") or tenants[t]["contract"] == "vm":
        continue  # VMs request KubeVirt devices, counted from the VMs below
    prof = r["profile"]
    cls = "tessera-%s-%s" % (r["gpuModel"], "mig-" + prof if prof else r["mechanism"])
    classes.add(cls)
    dra[(ns, cls)] = dra.get((ns, cls), 0) + (1 if prof else r["gpus"]) * r["replicas"]
    if prof:
        res, each = "nvidia.com/mig-" + prof, 1
    elif r["mechanism"] == "whole":
        res, each = "nvidia.com/gpu", r["gpus"]
    elif r["mechanism"] == "memory-fraction":
        res, each = "nvidia.com/gpu.memory", r["capGiB"] * 2**30
    else:
        res, each = "nvidia.com/gpu.shared", 1
    plugin.add(res)
    dp[(ns, res)] = dp.get((ns, res), 0) + each * r["replicas"]
    dp_one[(ns, res)] = max(dp_one.get((ns, res), 0), each)
# what the device plugin advertises anyway: whole and shared GPUs, every MIG
# profile on a card (canary slices and VM-backed instances included)
plugin |= {"nvidia.com/gpu", "nvidia.com/gpu.shared"}
for g in plan["gpus"]:
    plugin |= {"nvidia.com/mig-" + i["profile"] for i in g["instances"] if i["profile"]}
for f in glob.glob(os.path.join(d, "tenants/*/virtualmachines.yaml")):
    for vm in yaml.safe_load_all(open(f)):
        ns = vm["metadata"]["namespace"]
        for g in vm["spec"]["template"]["spec"]["domain"]["devices"]["gpus"]:
            plugin.add(g["deviceName"])
            dp[(ns, g["deviceName"])] = dp.get((ns, g["deviceName"]), 0) + 1
            dp_one[(ns, g["deviceName"])] = len(vm["spec"]["template"]["spec"]["domain"]["devices"]["gpus"])

checked = 0
for t, ts in tenants.items():
    objs = list(yaml.safe_load_all(open(os.path.join(d, "tenants", t, "quota.yaml"))))
    queues = []
    if os.path.exists(os.path.join(d, "tenants", t, "kueue.yaml")):
        queues = list(yaml.safe_load_all(open(os.path.join(d, "tenants", t, "kueue.yaml"))))
    for ns in ts["namespaces"]:
        want = {}
        if mode in ("dra", "both"):
            for c in classes:
                want[c + ".deviceclass.resource.k8s.io/devices"] = dra.get((ns, c), 0)
            want["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] = 0
            want["mig.nvidia.com.deviceclass.resource.k8s.io/devices"] = 0
        for r in plugin:
            want["requests." + r] = dp.get((ns, r), 0)
        rq = [o for o in objs if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == ns
              and o["metadata"]["name"] == "tessera-gpus"]
        assert len(rq) == 1, (t, ns, "one ResourceQuota of GPUs")
        # no pod of a PriorityClass outside the contract's: 0 pods over the others
        pq = [o for o in objs if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == ns
              and o["metadata"]["name"] == "tessera-priority-classes"]
        assert len(pq) == 1, (t, ns, "one ResourceQuota of priority classes")
        allowed = (ts.get("podSecurity") or {}).get("priorityClasses") or []
        want_exprs = [{"scopeName": "PriorityClass", "operator": "Exists"}]
        if allowed:
            want_exprs.append({"scopeName": "PriorityClass", "operator": "NotIn", "values": allowed})
        assert pq[0]["spec"] == {"hard": {"pods": "0"}, "scopeSelector": {"matchExpressions": want_exprs}}, (t, ns, pq[0]["spec"])
        hard = rq[0]["spec"]["hard"]
        assert set(hard) == set(want), (t, ns, sorted(set(hard) ^ set(want)))
        for k, v in want.items():
            assert abs(qty(hard[k]) - v) < 1, (t, ns, k, hard[k], v)
        lr = [o for o in objs if o["kind"] == "LimitRange" and o["metadata"]["namespace"] == ns]
        assert len(lr) == 1, (t, ns, "one LimitRange")
        mx = lr[0]["spec"]["limits"][0]["max"]
        assert set(mx) == plugin, (t, ns, sorted(set(mx) ^ plugin))
        # a default of 0, or the API server defaults every container to the max
        for k in ("default", "defaultRequest"):
            dflt = lr[0]["spec"]["limits"][0][k]
            assert set(dflt) == plugin and all(qty(v) == 0 for v in dflt.values()), (t, ns, k, dflt)
        for r in plugin:
            assert abs(qty(mx[r]) - dp_one.get((ns, r), 0)) < 1, (t, ns, r, mx[r])
        # Kueue: the namespace's ClusterQueue holds the same numbers
        nominal = {}
        for q in queues:
            if q["kind"] == "ClusterQueue" and q["metadata"]["name"] == ns:
                for g in q["spec"]["resourceGroups"]:
                    for fl in g["flavors"]:
                        for res in fl["resources"]:
                            nominal[res["name"]] = nominal.get(res["name"], 0) + qty(res["nominalQuota"])
        want_q = {}
        if mode in ("dra", "both"):
            want_q.update({"tessera.dev/" + c: n for (n_, c), n in dra.items() if n_ == ns and n})
        if mode in ("device-plugin", "both"):
            want_q.update({r: n for (n_, r), n in dp.items() if n_ == ns and n and r.startswith("nvidia.com/")
                           and (r.startswith("nvidia.com/mig-") or r in ("nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/gpu.memory"))})
        assert set(nominal) == set(want_q), (t, ns, "queue", sorted(set(nominal) ^ set(want_q)))
        for k, v in want_q.items():
            assert abs(nominal[k] - v) < 1, (t, ns, "queue", k, nominal[k], v)
        checked += 1
assert checked == sum(len(ts["namespaces"]) for ts in tenants.values())
print("quotas of", checked, "namespaces as planned")
PY
}
for mode in $MODES; do quota_check $EX "$TMP/plan-ex.json" "$TMP/ex-$mode" $mode; done

# The worked example's geometry, placements, the whole card, the dev and
# production claims.
for mode in $MODES; do
    pycheck "worked example golden checks ($mode)" "$TMP/plan-ex.json" "$TMP/ex-$mode" $mode <<'PY'
import json, os, re, sys, yaml
planf, d, mode = sys.argv[1:4]
plan = json.load(open(planf))
ids = {"1g.10gb": 19, "2g.20gb": 14, "3g.40gb": 9}  # H100 80GB profile IDs (nvidia-smi mig -lgip)
node = os.path.join(d, "nodes", "gpu-node-1")

# mig-parted: cards 0 and 1 hold 3g.40gb + 2g.20gb + 1g.10gb x2, card 2 seven 1g.10gb, card 3 whole
mp = yaml.safe_load(open(os.path.join(node, "mig-parted.yaml")))
entries = mp["mig-configs"]["tessera-gpu-node-1"]
by_dev = {tuple(e["devices"]): e for e in entries}
assert by_dev[(0, 1)] == {"devices": [0, 1], "mig-enabled": True,
                          "mig-devices": {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}}, by_dev
assert by_dev[(2,)]["mig-devices"] == {"1g.10gb": 7}
assert by_dev[(3,)] == {"devices": [3], "mig-enabled": False}, "the fine-tune card is whole"
cm = yaml.safe_load(open(os.path.join(d, "cluster", "mig-parted-config.yaml")))
assert yaml.safe_load(cm["data"]["config.yaml"]) == mp
# the placement script creates each instance at its planned placement
script = open(os.path.join(node, "create-mig-instances.sh")).read()
cards = {int(g): set(l.split()) for g, l in re.findall(r'^card (\d+) "([^"]*)"$', script, re.M)}
want = {}
for g in plan["gpus"]:
    if g["mode"] == "mig":
        want[g["index"]] = {"%d:%d:%d" % (ids[i["profile"]], i["start"], i["size"]) for i in g["instances"]}
assert cards == want, (cards, want)
assert cards[0] == cards[1] == {"9:4:4", "14:0:2", "19:2:1", "19:3:1"}, cards
assert 3 not in cards
# the node ConfigMap carries the same files
ncm = yaml.safe_load(open(os.path.join(node, "node-config.yaml")))
assert ncm["data"]["create-mig-instances.sh"] == script

if mode in ("dra", "both"):
    claims = {}
    for t in os.listdir(os.path.join(d, "tenants")):
        f = os.path.join(d, "tenants", t, "claimtemplates.yaml")
        if os.path.exists(f):
            for o in yaml.safe_load_all(open(f)):
                claims[(t, o["metadata"]["name"])] = o
    classes = {o["metadata"]["name"]: o for o in yaml.safe_load_all(open(os.path.join(d, "cluster", "deviceclasses.yaml")))}
    def params(c):
        cfg = c["spec"]["spec"]["devices"]["config"]
        assert len(cfg) == 1 and cfg[0]["requests"] == ["gpu"] and cfg[0]["opaque"]["driver"] == "gpu.nvidia.com"
        return cfg[0]["opaque"]["parameters"]
    def cls(c):
        return c["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"]
    rows = {(r["tenant"], r["workload"]): r for r in plan["decisions"]}
    # every production claim is MIG, of the planned profile
    for t in ("client-a", "client-b", "client-c", "client-d"):
        mine = [c for (tt, _), c in claims.items() if tt == t]
        assert len(mine) == 1, t
        c = mine[0]
        prof = rows[(t, c["metadata"]["name"])]["profile"]
        # no claim-level config (Kueue's DRA integration refuses one): a MIG
        # device is not shared, the driver's default
        assert "config" not in c["spec"]["spec"]["devices"], c
        assert cls(c) == "tessera-h100-80gb-sxm-mig-" + prof, cls(c)
        expr = classes[cls(c)]["spec"]["selectors"][0]["cel"]["expression"]
        assert ".type == 'mig'" in expr and ".profile == '%s'" % prof in expr, expr
    # the fine-tune gets a whole card, exclusively
    ft = claims[("provider", "finetune")]
    assert cls(ft) == "tessera-h100-80gb-sxm-whole" and "config" not in ft["spec"]["spec"]["devices"]
    assert ".type == 'gpu'" in classes[cls(ft)]["spec"]["selectors"][0]["cel"]["expression"]
    assert "config" not in classes[cls(ft)]["spec"]
    # the dev workload time-slices its card
    nb = claims[("platform-dev", "notebooks")]
    assert cls(nb) == "tessera-h100-80gb-sxm-time-slicing", cls(nb)
    assert "config" not in nb["spec"]["spec"]["devices"], nb
    assert classes[cls(nb)]["spec"]["config"][0]["opaque"]["parameters"]["sharing"]["strategy"] == "TimeSlicing"
if mode in ("device-plugin", "both"):
    dpc = yaml.safe_load(open(os.path.join(d, "cluster", "device-plugin-config.yaml")))
    cfg = yaml.safe_load(dpc["data"]["tessera-gpu-node-1"])
    assert cfg["flags"]["migStrategy"] == "mixed"
    ts = cfg["sharing"]["timeSlicing"]
    assert "mps" not in cfg["sharing"] and ts["renameByDefault"] is True
    assert ts["resources"] == [{"name": "nvidia.com/gpu", "replicas": 2}], ts
    labels = open(os.path.join(node, "labels.sh")).read()
    assert "nvidia.com/device-plugin.config=tessera-gpu-node-1" in labels
print("ok")
PY
done

# ---- the mixed fleet: MPS, memory fractions, a VM tenant, a non-MIG node ----
expect_rc 0 "$TESSERA" plan -f $MIX -o json
cp "$TMP/out" "$TMP/plan-mix.json"
pycheck "mixed-fleet plan uses every mechanism" "$TMP/plan-mix.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
mech = {d["mechanism"] for d in p["decisions"]}
assert mech == {"mig", "vgpu", "mps", "memory-fraction", "time-slicing"}, mech
enf = sorted(d["enforcement"] for d in p["decisions"] if d["mechanism"] == "memory-fraction")
assert enf == ["driver", "shim"], enf
assert any(g["model"] == "l40s" for g in p["gpus"])
PY
for mode in $MODES; do
    D=$TMP/mix-$mode
    expect_rc 0 "$TESSERA" render -f $MIX --out-dir "$D" --device-api $mode
    validate "$D"
    expect_rc 0 "$TESSERA" render -f $MIX --out-dir "$D-again" --device-api $mode
    same_tree "$D" "$D-again"
    quota_check $MIX "$TMP/plan-mix.json" "$D" $mode
    pycheck "mixed-fleet checks ($mode)" "$TMP/plan-mix.json" "$D" $mode <<'PY'
import json, os, sys, yaml
planf, d, mode = sys.argv[1:4]
plan = json.load(open(planf))
def load(*p):
    return [o for o in yaml.safe_load_all(open(os.path.join(d, *p))) if o]
def gi(v):
    return float(v[:-2]) * (1 if v.endswith("Gi") else 1 / 1024.0)
rows = {(r["tenant"], r["workload"]): r for r in plan["decisions"]}
if mode in ("dra", "both"):
    claims = {(t, o["metadata"]["name"]): o for t in os.listdir(os.path.join(d, "tenants"))
              if os.path.exists(os.path.join(d, "tenants", t, "claimtemplates.yaml"))
              for o in load("tenants", t, "claimtemplates.yaml")}
    n_mps = n_frac = 0
    for key, r in rows.items():
        if r["mechanism"] in ("mps", "memory-fraction"):
            c = claims[key]
            dev = c["spec"]["spec"]["devices"]
            if r["mechanism"] == "mps":  # MPS: per-client SM share and pinned-memory cap
                sharing = dev["config"][0]["opaque"]["parameters"]["sharing"]
                assert sharing["strategy"] == "MPS", sharing
                mps = sharing["mpsConfig"]
                assert mps["defaultActiveThreadPercentage"] == r["smPercent"] > 0, (mps, r)
                assert abs(gi(mps["defaultPinnedDeviceMemoryLimit"]) - r["capGiB"]) < 1e-6, (mps, r)
                assert dev["requests"][0]["exactly"]["deviceClassName"].endswith("-mps")
                n_mps += 1
            else:  # fraction: memory requested as consumable capacity
                # the class time-slices; the claim has no config (Kueue counts it)
                assert "config" not in dev, dev
                mem = dev["requests"][0]["exactly"]["capacity"]["requests"]["memory"]
                assert abs(gi(mem) - r["capGiB"]) < 1e-6, (mem, r)
                assert dev["requests"][0]["exactly"]["deviceClassName"].endswith("-memory-fraction")
                n_frac += 1
    assert n_mps == 2 and n_frac == 2, (n_mps, n_frac)
    assert not any(t == "lab" for t, _ in claims), "VMs get no claim templates"
# the VM tenant: VirtualMachines with GPU devices the KubeVirt snippet permits
vms = load("tenants", "lab", "virtualmachines.yaml")
assert len(vms) == rows[("lab", "workstation")]["replicas"]
names = {g["deviceName"] for vm in vms for g in vm["spec"]["template"]["spec"]["domain"]["devices"]["gpus"]}
assert names and all(n.startswith("nvidia.com/") for n in names), names
kv = load("cluster", "kubevirt-permitted-host-devices.yaml")[0]
phd = kv["spec"]["configuration"]["permittedHostDevices"]
permitted = {x["resourceName"] for k in ("pciHostDevices", "mediatedDevices") for x in phd.get(k, [])}
assert names <= permitted, (names, permitted)
assert "virtualmachines.yaml" in load("tenants", "lab", "kustomization.yaml")[0]["resources"]
# the L40S and L4 nodes: no MIG, so no mig-parted entry anywhere
mp = yaml.safe_load(load("cluster", "mig-parted-config.yaml")[0]["data"]["config.yaml"])
assert set(mp["mig-configs"]) == {"tessera-gpu-h100"}, mp["mig-configs"].keys()
for n in ("gpu-l40s", "gpu-l4"):
    files = set(os.listdir(os.path.join(d, "nodes", n)))
    assert "mig-parted.yaml" not in files and "create-mig-instances.sh" not in files, files
    cmd = [l for l in open(os.path.join(d, "nodes", n, "labels.sh")) if not l.startswith("#")]
    assert "mig" not in "".join(cmd), cmd
    assert "mig-parted.yaml" not in load("nodes", n, "node-config.yaml")[0]["data"]
# the MIG node: tessera's agent partitions it, the GPU operator's mig-manager is taken off
lab = open(os.path.join(d, "nodes", "gpu-h100", "labels.sh")).read()
assert "nvidia.com/gpu.deploy.mig-manager=false nvidia.com/mig.config-" in lab, lab
# MPS needs EXCLUSIVE_PROCESS on the MPS card, and only there
mps_cards = [g["index"] for g in plan["gpus"] if g["node"] == "gpu-h100" and g["mode"] == "mps"]
prep = open(os.path.join(d, "nodes", "gpu-h100", "prep-mps.sh")).read()
assert [l for l in prep.splitlines() if l.startswith("nvidia-smi")] == \
    ["nvidia-smi -i %d -c EXCLUSIVE_PROCESS" % i for i in mps_cards], prep
if mode in ("device-plugin", "both"):
    data = load("cluster", "device-plugin-config.yaml")[0]["data"]
    assert set(yaml.safe_load(data["tessera-gpu-h100"])["sharing"]) == {"mps"}
    assert set(yaml.safe_load(data["tessera-gpu-l40s"])["sharing"]) == {"timeSlicing"}
print("ok")
PY
done

# Every example, present and future, renders and validates in every mode (the
# device plugin may refuse a node that mixes MPS and time-slicing, no more).
for ex in examples/*.yaml; do
    for mode in $MODES; do
        D=$TMP/all-$(basename "$ex" .yaml)-$mode
        "$TESSERA" render -f "$ex" --out-dir "$D" --device-api $mode >"$TMP/out" 2>"$TMP/err"
        rc=$?
        if [ $rc -eq 0 ]; then
            validate "$D"
        elif [ $rc -eq 1 ] && [ $mode != dra ] && grep -q "time-sliced and MPS cards" "$TMP/err"; then
            ok
        else
            bad "render $ex --device-api $mode exited $rc"; head -3 "$TMP/err"
        fi
    done
done

# The device plugin applies one sharing strategy per node: MPS next to
# time-slicing on one node is refused there (DRA handles it per claim).
cat >"$TMP/clash.yaml" <<'EOF'
apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: clash}
spec:
  nodes:
  - name: gpu-a
    gpus: [{model: l40s, count: 2}]
    cudaVersion: "12.8"
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: svc}
spec:
  contract: shared-trusted
  namespaces: [svc]
  workloads:
  - {name: api, kind: inference, memoryHighWaterGiB: 10, p99Ms: 50}
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: dev}
spec:
  contract: best-effort
  namespaces: [dev]
  workloads:
  - {name: nb, kind: dev, memoryHighWaterGiB: 8, bestEffort: true}
EOF
expect_rc 1 "$TESSERA" render -f "$TMP/clash.yaml" --out-dir "$TMP/clash-dp" --device-api device-plugin
expect_in "$TMP/err" "node gpu-a has time-sliced and MPS cards"
expect_in "$TMP/err" "--device-api dra"
if [ -e "$TMP/clash-dp" ]; then bad "a refused render left $TMP/clash-dp"; else ok; fi
expect_rc 1 "$TESSERA" render -f "$TMP/clash.yaml" --out-dir "$TMP/clash-both" --device-api both
expect_rc 0 "$TESSERA" render -f "$TMP/clash.yaml" --out-dir "$TMP/clash-dra"
validate "$TMP/clash-dra"

# ---- writing: refusals, incremental rewrites, atomicity ----
O=$TMP/busy
mkdir -p "$O"
echo "my notes" >"$O/notes.txt"
expect_rc 2 "$TESSERA" render -f $EX --out-dir "$O"
expect_in "$TMP/err" "holds files tessera did not write (notes.txt)"
expect_in "$TMP/err" "--force"
if [ "$(cat "$O/notes.txt")" = "my notes" ] && [ ! -e "$O/kustomization.yaml" ]; then ok; else
    bad "a refused render touched $O"; fi
expect_rc 0 "$TESSERA" render -f $EX --out-dir "$O" --force
if [ ! -e "$O/notes.txt" ] && [ -e "$O/kustomization.yaml" ]; then ok; else bad "--force did not replace $O"; fi
expect_rc 0 "$TESSERA" render -f $EX --out-dir "$O" # its own tree: no --force needed
echo x >"$O/tenants/client-a/extra.yaml"
expect_rc 2 "$TESSERA" render -f $EX --out-dir "$O"
expect_in "$TMP/err" "tenants/client-a/extra.yaml"
echo x >"$TMP/plainfile"
expect_rc 2 "$TESSERA" render -f $EX --out-dir "$TMP/plainfile"
expect_in "$TMP/err" "exists and is not a folder"

# Re-rendering after a spec change (one tenant's replicas) rewrites exactly
# the files whose bytes change; the others keep inode and mtime.
sed 's/    replicas: 7$/    replicas: 6/' $EX >"$TMP/ex-6.yaml"
if ! cmp -s $EX "$TMP/ex-6.yaml"; then ok; else bad "the spec edit did not apply"; fi
I=$TMP/inc
expect_rc 0 "$TESSERA" render -f $EX --out-dir "$I"
expect_rc 0 "$TESSERA" render -f "$TMP/ex-6.yaml" --out-dir "$TMP/fresh-6"
snapshot "$I" >"$TMP/before"
sleep 1.05
expect_rc 0 "$TESSERA" render -f "$TMP/ex-6.yaml" --out-dir "$I"
snapshot "$I" >"$TMP/after"
same_tree "$I" "$TMP/fresh-6"
pycheck "only changed files are rewritten" "$TMP/before" "$TMP/after" <<'PY'
import sys
def rows(f):
    return {l.split()[0]: l.split()[1:] for l in open(f)}
b, a = rows(sys.argv[1]), rows(sys.argv[2])
assert set(a) == set(b), set(a) ^ set(b)
changed = sorted(p for p in a if a[p][2] != b[p][2])
for p in a:
    if p in changed:
        assert a[p][0] != b[p][0], ("rewritten in place", p)
    else:
        assert a[p][:2] == b[p][:2], ("touched though unchanged", p, b[p], a[p])
must = {"tenants/provider/quota.yaml", "tenants/provider/kueue.yaml", "nodes/gpu-node-1/mig-parted.yaml",
        "nodes/gpu-node-1/create-mig-instances.sh", "cluster/mig-parted-config.yaml", "README.md"}
assert must <= set(changed), (must - set(changed), changed)
assert not any(p.startswith("tenants/client-") for p in changed), changed
print(len(changed), "of", len(a), "files rewritten:", " ".join(changed))
PY

# A failure half-way leaves the previous tree intact: a spec that cannot be
# planned, and a write that fails (file size limit) after some files were written.
snapshot "$I" >"$TMP/before"
sed 's/    bestEffort: true/    bestEffort: true\n    replicas: 2/' $EX >"$TMP/ex-unplannable.yaml"
expect_rc 1 "$TESSERA" render -f "$TMP/ex-unplannable.yaml" --out-dir "$I"
expect_in "$TMP/err" "no h100-80gb-sxm card left"
snapshot "$I" >"$TMP/after"
if cmp -s "$TMP/before" "$TMP/after"; then ok; else bad "a failed plan changed $I"; fi
# the file size limit: below the largest file the re-render must rewrite
big=0
for f in $(cd "$TMP/ex-dra" && find . -type f); do
    if ! cmp -s "$TMP/ex-dra/$f" "$TMP/fresh-6/$f"; then
        s=$(stat -c %s "$TMP/ex-dra/$f")
        [ "$s" -gt $big ] && big=$s
    fi
done
limit=$(((big - 1) / 1024))
(trap '' XFSZ; ulimit -f $limit; exec "$TESSERA" render -f $EX --out-dir "$I") >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && ! grep -qE 'Sanitizer|runtime error:' "$TMP/err"; then ok; else
    bad "render under a $limit KiB file limit exited $rc, expected 1"; head -5 "$TMP/err"; fi
expect_in "$TMP/err" "cannot write: File too large"
snapshot "$I" >"$TMP/after"
if cmp -s "$TMP/before" "$TMP/after"; then ok; else bad "a failed write changed $I"; diff "$TMP/before" "$TMP/after" | head; fi
same_tree "$I" "$TMP/fresh-6"
if ls -d "$TMP"/*.tmp-* "$TMP"/*.old-* >/dev/null 2>&1; then bad "temporary folders left: $(ls -d "$TMP"/*.tmp-* "$TMP"/*.old-* 2>/dev/null)"; else ok; fi

# ---- usage ----
expect_rc 0 "$TESSERA" render --help
expect_in "$TMP/out" "usage: tessera render"
expect_in "$TMP/out" "--device-api"
expect_rc 2 "$TESSERA" render -f $EX
expect_in "$TMP/err" "no output folder: use --out-dir DIR"
# -o DIR: the old spelling, accepted for one release with a notice on stderr;
# the tree it writes is the one --out-dir writes
expect_rc 0 "$TESSERA" render -f $EX -o "$TMP/old-o"
expect_in "$TMP/err" "-o/--output DIR is deprecated and goes in the next release: use --out-dir DIR"
expect_rc 0 "$TESSERA" render -f $EX --out-dir "$TMP/new-o"
check "--out-dir printed a deprecation notice" [ ! -s "$TMP/err" ]
check "-o DIR and --out-dir DIR wrote different trees" diff -r "$TMP/old-o" "$TMP/new-o"
expect_rc 0 "$TESSERA" render -f $EX --output "$TMP/old-output"
expect_in "$TMP/err" "deprecated"
expect_rc 2 "$TESSERA" render --out-dir "$TMP/x"
expect_rc 2 "$TESSERA" render -f $EX --out-dir "$TMP/x" --device-api cuda
expect_in "$TMP/err" "--device-api must be dra, device-plugin or both"
expect_rc 2 "$TESSERA" render -f $EX --out-dir "$TMP/x" --bogus
expect_rc 2 "$TESSERA" render -f $EX --out-dir "$TMP/x" stray
expect_rc 2 "$TESSERA" render -f /nonexistent.yaml --out-dir "$TMP/x"
expect_in "$TMP/err" "tessera: /nonexistent.yaml: cannot open"
if [ -e "$TMP/x" ]; then bad "a usage error wrote $TMP/x"; else ok; fi

# ---- the node scripts, run against a stand-in for nvidia-smi ----
mkdir -p "$TMP/bin"
ln -s "$TESSERA_SRC/tests/tools/fake-nvidia-smi" "$TMP/bin/nvidia-smi"
export PATH="$TMP/bin:$PATH"
# fresh_gpus N [MIG]: a new fake machine with N H100 80GB cards
fresh_gpus() {
    export FAKE_NVIDIA_SMI_STATE=$TMP/smi-$RANDOM FAKE_NVIDIA_SMI_GPUS=$1 FAKE_NVIDIA_SMI_MIG=${2:-Enabled}
}
# the fake reproduces real outputs (tests/fixtures/nvidia-smi, an H100 80GB)
REAL=tests/fixtures/nvidia-smi/h100-pcie-80gb_nvidia-smi-mig-lgip-lgipp-lgi-L.txt
fresh_gpus 1
expect_rc 0 nvidia-smi mig -lgipp
same_tree "$TMP/out" tests/fixtures/nvidia-smi/h100-80gb-hbm3_mig-lgipp.txt
expect_rc 6 nvidia-smi mig -i 0 -lgi
expect_in "$TMP/out" "No GPU instances found: Not Found"
expect_rc 0 nvidia-smi mig -cgi 9:4,19:0,19:1,19:2 -C
sed -n '/mig -cgi 9,19,19,19 -C$/,/^$/p' $REAL | sed '1d;$d' >"$TMP/real-cgi"
same_tree "$TMP/out" "$TMP/real-cgi"
expect_rc 0 nvidia-smi mig -lgi
sed -n '/nvidia-smi mig -lgi$/,/^$/p' $REAL | sed '1d;$d' >"$TMP/real-lgi"
same_tree "$TMP/out" "$TMP/real-lgi"
cp "$FAKE_NVIDIA_SMI_STATE" "$TMP/smi-before"
expect_rc 255 nvidia-smi mig -i 0 -cgi 14:2 -C # overlaps the 1g.10gb at 2
expect_in "$TMP/out" "Insufficient Resources"
expect_rc 255 nvidia-smi mig -i 0 -cgi 19:7 -C # not a placement of 1g.10gb
expect_rc 255 nvidia-smi mig -i 0 -dgi         # compute instances still there
expect_in "$TMP/out" "In use by another client"
same_tree "$FAKE_NVIDIA_SMI_STATE" "$TMP/smi-before"

# the worked example's script on a fresh 4-card node: exactly the planned instances
S=$TMP/ex-dra/nodes/gpu-node-1/create-mig-instances.sh
# cards_now: each card's GPU instances as sorted "id:start:size", from nvidia-smi mig -lgi
cards_now() {
    for g in 0 1 2 3; do
        echo "$g: $(nvidia-smi mig -i $g -lgi | awk '$3 == "MIG" { print $5 ":" $7 }' | sort | tr '\n' ' ')"
    done
}
fresh_gpus 4
expect_rc 0 bash "$S"
expect_in "$TMP/out" "GPU 0: created 14:0:2 19:2:1 19:3:1 9:4:4"
cards_now >"$TMP/cards"
printf '%s\n' "0: 14:0:2 19:2:1 19:3:1 9:4:4 " "1: 14:0:2 19:2:1 19:3:1 9:4:4 " \
    "2: 19:0:1 19:1:1 19:2:1 19:3:1 19:4:1 19:5:1 19:6:1 " "3: " >"$TMP/cards-want"
same_tree "$TMP/cards" "$TMP/cards-want"
# a second run changes nothing
cp "$FAKE_NVIDIA_SMI_STATE" "$TMP/smi-planned"
n=$(wc -l <"$FAKE_NVIDIA_SMI_STATE.log")
expect_rc 0 bash "$S"
expect_in "$TMP/out" "GPU 2: already as planned"
if [ "$(grep -c "already as planned" "$TMP/out")" = 3 ]; then ok; else bad "not every card already as planned"; fi
if tail -n +$((n + 1)) "$FAKE_NVIDIA_SMI_STATE.log" | grep -Eq -- '-cgi|-dci|-dgi'; then
    bad "a second run changed the board"; else ok; fi
same_tree "$FAKE_NVIDIA_SMI_STATE" "$TMP/smi-planned"
# a card with another geometry is refused without --drain ...
nvidia-smi mig -i 0 -dci >/dev/null && nvidia-smi mig -i 0 -dgi >/dev/null &&
    nvidia-smi mig -i 0 -cgi 0:0 -C >/dev/null
cp "$FAKE_NVIDIA_SMI_STATE" "$TMP/smi-other"
expect_rc 1 bash "$S"
expect_in "$TMP/err" "GPU 0 holds other instances (0:0:8); drain it and rerun with --drain"
same_tree "$FAKE_NVIDIA_SMI_STATE" "$TMP/smi-other"
# ... and with --drain while a process still uses it
echo "proc 0 4242" >>"$FAKE_NVIDIA_SMI_STATE"
cp "$FAKE_NVIDIA_SMI_STATE" "$TMP/smi-busy"
expect_rc 1 bash "$S" --drain
expect_in "$TMP/err" "GPU 0: processes still use it; drain the node first"
same_tree "$FAKE_NVIDIA_SMI_STATE" "$TMP/smi-busy"
# --dry-run changes nothing, and says what it would do
cp "$TMP/smi-other" "$FAKE_NVIDIA_SMI_STATE"
expect_rc 0 bash "$S" --drain --dry-run
expect_in "$TMP/out" "would run: nvidia-smi mig -i 0 -dgi"
expect_in "$TMP/out" "would run: nvidia-smi mig -i 0 -cgi 9:4 -C"
expect_in "$TMP/out" "GPU 0: would create 14:0:2 19:2:1 19:3:1 9:4:4"
expect_not "$TMP/out" "GPU 0: created"
same_tree "$FAKE_NVIDIA_SMI_STATE" "$TMP/smi-other"
# with --drain and no process the card is rebuilt; the others are left alone
expect_rc 0 bash "$S" --drain
expect_in "$TMP/out" "GPU 0: created 14:0:2 19:2:1 19:3:1 9:4:4"
expect_in "$TMP/out" "GPU 1: already as planned"
cards_now >"$TMP/cards"
same_tree "$TMP/cards" "$TMP/cards-want"
grep -v '^gi 0 ' "$TMP/smi-planned" >"$TMP/smi-planned-rest"
grep -v '^gi 0 ' "$FAKE_NVIDIA_SMI_STATE" >"$TMP/smi-now-rest"
same_tree "$TMP/smi-now-rest" "$TMP/smi-planned-rest"
# a dry run on a fresh node creates nothing; MIG mode off is refused; bad usage
fresh_gpus 4
expect_rc 0 bash "$S" --dry-run
expect_in "$TMP/out" "would run: nvidia-smi mig -i 2 -cgi 19:6 -C"
expect_rc 6 nvidia-smi mig -i 0 -lgi
fresh_gpus 4 Disabled
expect_rc 1 bash "$S"
expect_in "$TMP/err" "GPU 0: MIG mode is not enabled"
expect_rc 2 bash "$S" --bogus

# the mixed fleet's H100 node: MIG layout and MPS prep
fresh_gpus 3
expect_rc 0 bash "$TMP/mix-dra/nodes/gpu-h100/create-mig-instances.sh"
cards_now 2>/dev/null | head -3 >"$TMP/cards"
printf '%s\n' "0: 15:0:2 19:2:1 " "1: 15:0:2 " "2: " >"$TMP/cards-want"
same_tree "$TMP/cards" "$TMP/cards-want"
expect_rc 0 bash "$TMP/mix-dra/nodes/gpu-h100/prep-mps.sh"
expect_rc 0 nvidia-smi --query-gpu=compute_mode --format=csv,noheader
printf '%s\n' Default Default Exclusive_Process >"$TMP/modes-want"
same_tree "$TMP/out" "$TMP/modes-want"

# Pod Security labels on every tenant namespace: the level, or privileged
# where the contract needs more (host paths, capabilities, the shim, VMs)
pss() { # SPEC DIR -> "tenant enforce warn" per namespace
    "$TESSERA" render -f "$1" --out-dir "$2" --force >/dev/null
    $PY - "$2" <<'PY'
import glob, sys, yaml
for f in sorted(glob.glob(sys.argv[1] + "/tenants/*/namespaces.yaml")):
    for d in yaml.safe_load_all(open(f)):
        l = d["metadata"]["labels"]
        print(l["tessera.dev/tenant"], l.get("pod-security.kubernetes.io/enforce"),
              l.get("pod-security.kubernetes.io/warn"))
PY
}
pss $EX "$TMP/pss-ex" >"$TMP/pss"
expect_in "$TMP/pss" "client-a baseline baseline"
expect_in "$TMP/pss" "platform-dev privileged baseline" # time-slicing: the shim's host path
[ "$(grep -c ' None' "$TMP/pss")" = 0 ] && ok || bad "a tenant namespace without the label"
pss tests/fixtures/admission/sharing/spec.yaml "$TMP/pss-sharing" >"$TMP/pss"
expect_in "$TMP/pss" "vault restricted restricted"
expect_in "$TMP/pss" "trainer privileged baseline" # podSecurity names host paths
expect_in "$TMP/pss" "lab privileged baseline"     # KubeVirt launchers
validate "$TMP/pss-sharing"

validate_all
finish
