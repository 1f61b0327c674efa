# 30-dra.sh - DRA end to end on the worked example: the node gpu-node-1
# simulated by KWOK, its ResourceSlice shaped as the NVIDIA DRA driver
# publishes the plan's MIG layout (tools/resourceslices.py), every tenant pod
# created through the API server (and the webhook of 20-webhook.sh) with its
# rendered ResourceClaimTemplate, and the real scheduler's DRA allocator
# choosing the device. Needs 10-apply.sh's rendered tree and the webhook.

"$TESSERA" plan -f "$TESSERA_SRC/examples/four-h100.yaml" -o json >"$TMP/plan.json" || bad "plan -o json"
kwok_node gpu-node-1 '{"nvidia.com/gpu.present": "true"}'
# deploy/'s node agent comes to the GPU node, at the node-critical priority
agent_priority() {
    [ "$(kc -n tessera-system get pods -l app.kubernetes.io/name=tessera-agent \
        -o jsonpath='{.items[0].spec.nodeName}/{.items[0].spec.priority}')" = gpu-node-1/2000001000 ]
}
cp_wait 60 "the agent DaemonSet put no pod on gpu-node-1 at system-node-critical" agent_priority
ok
"$E2E/tools/resourceslices.py" "$TMP/plan.json" >"$TMP/slices.json"
kc apply --server-side -f "$TMP/slices.json" >/dev/null || bad "ResourceSlices refused"

# tenant_pod NS NAME TEMPLATE: a pod whose container uses one claim made
# from the namespace's ResourceClaimTemplate TEMPLATE
tenant_pod() {
    cat <<EOF
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "$2", "namespace": "$1"},
 "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "$3"}],
          "containers": [{"name": "c", "image": "registry.e2e.invalid/model:1",
                          "resources": {"claims": [{"name": "gpu"}]}}]}}
EOF
}

# One pod per planned replica of every workload with a claim template.
/usr/bin/python3 - "$TMP/plan.json" "$TMP/render-four-h100" >"$TMP/replicas" <<'PY'
import glob, json, sys, yaml
plan = json.load(open(sys.argv[1]))
templates = {}
for f in glob.glob(sys.argv[2] + "/tenants/*/claimtemplates.yaml"):
    for o in yaml.safe_load_all(open(f)):
        if o:
            templates[(o["metadata"]["labels"]["tessera.dev/tenant"], o["metadata"]["name"])] = o["metadata"]["namespace"]
for g in plan["gpus"]:
    for i in g["instances"]:
        ns = templates.get((i["tenant"], i["workload"]))
        if ns and not i["guest"]:
            profile = i["profile"] or "gpu"
            print(ns, i["workload"], g["node"], profile)
PY
check "the plan has replicas with claim templates" [ -s "$TMP/replicas" ]
n=0
while read -r ns workload node profile; do
    n=$((n + 1))
    tenant_pod "$ns" "$workload-$n" "$workload" | kc create -f - >"$TMP/create.out" 2>&1 ||
        { bad "$ns/$workload-$n refused"; cat "$TMP/create.out"; }
done <"$TMP/replicas"

# wait until every pod is bound (the scheduler allocated its claim)
bound() {
    [ "$(kc get pods -A -l '!e2e' -o jsonpath='{range .items[?(@.spec.resourceClaims)]}{.spec.nodeName}{"\n"}{end}' |
        grep -c .)" -ge "$n" ]
}
cp_wait 60 "the scheduler did not bind every tenant pod" bound

# each pod's claim holds a device of its planned profile on its planned node
kc get resourceclaims -A -o json >"$TMP/claims.json"
kc get pods -A -o json >"$TMP/pods.json"
if /usr/bin/python3 - "$TMP/replicas" "$TMP/claims.json" "$TMP/pods.json" >"$TMP/dra.out" 2>&1 <<'PY'
import json, sys
want = {}
for line in open(sys.argv[1]):
    ns, workload, node, profile = line.split()
    want.setdefault((ns, workload), []).append((node, profile.replace(".", "")))
claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in json.load(open(sys.argv[2]))["items"]}
got, devices = {}, []
for p in json.load(open(sys.argv[3]))["items"]:
    if not p["spec"].get("resourceClaims"):
        continue
    ns = p["metadata"]["namespace"]
    name = [s["resourceClaimName"] for s in p["status"]["resourceClaimStatuses"]][0]
    res = claims[(ns, name)]["status"]["allocation"]["devices"]["results"]
    assert len(res) == 1 and res[0]["driver"] == "gpu.nvidia.com", res
    dev = res[0]["device"]
    devices.append(dev)
    assert res[0]["pool"] == p["spec"]["nodeName"], (res, p["spec"]["nodeName"])
    workload = p["metadata"]["name"].rsplit("-", 1)[0]
    # gpu-0-mig-3g40gb-9-4 -> 3g40gb; gpu-3 -> gpu
    kind = dev.split("-")[3] if "-mig-" in dev else "gpu"
    got.setdefault((ns, workload), []).append((p["spec"]["nodeName"], kind))
    print("%s/%s: %s" % (ns, p["metadata"]["name"], dev))
assert len(devices) == len(set(devices)), "a device allocated twice: %s" % devices
for k in want:
    assert sorted(got.get(k, [])) == sorted(want[k]), (k, "planned", want[k], "got", got.get(k))
print("%d pods, devices %s" % (len(devices), " ".join(sorted(devices))))
PY
then ok; cat "$TMP/dra.out"; else bad "DRA allocation differs from the plan"; cat "$TMP/dra.out"; fi

# another tenant's DeviceClass: client-c asking for client-a's 3g.40gb
cat >"$TMP/steal.json" <<'EOF'
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
 "metadata": {"name": "steal", "namespace": "client-c-prod"},
 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
   "deviceClassName": "tessera-h100-80gb-sxm-mig-3g.40gb", "allocationMode": "ExactCount", "count": 1}}]}}}
EOF
if kc create -f "$TMP/steal.json" >"$TMP/steal.out" 2>&1; then
    bad "client-c created a claim on client-a's DeviceClass"
else
    expect_in "$TMP/steal.out" "denied"
    echo "e2e: the claim on another tenant's class: $(head -c 300 "$TMP/steal.out")"
fi

# a full tenant: a third chat-13b replica (the plan has two) gets no device
tenant_pod client-a-prod chat-13b-extra chat-13b | kc create -f - >"$TMP/extra.out" 2>&1
sleep 5
node=$(kc -n client-a-prod get pod chat-13b-extra -o jsonpath='{.spec.nodeName}' 2>/dev/null)
check "a full tenant's extra pod is not scheduled (node '$node')" [ -z "$node" ]
kc -n client-a-prod describe pod chat-13b-extra >"$TMP/extra.describe" 2>&1
if grep -iE "exceeded quota|cannot allocate|insufficient|denied" "$TMP/extra.describe" "$TMP/extra.out" |
    head -2 | cut -c1-300 | sed 's/^/e2e: the full tenant: /' | grep .; then ok; else
    bad "a full tenant's extra pod: no reason given"; tail -8 "$TMP/extra.describe"; fi
