# 40-kueue.sh - Kueue's own controller (the release tests/e2e/kueue pins) admits
# the tenants' Jobs through the queues, cohorts and quotas tessera rendered for
# the worked example: a tenant over its quota is held in its LocalQueue with
# Kueue's reason; a tenant may borrow idle quota that another tenant lends;
# the lender reclaims it; an SLA tenant's idle quota (lendingLimit 0) is never
# lent. Kueue counts DRA claims through the Configuration fragment render
# writes (deviceClassMappings). Needs 10-apply.sh's rendered tree and Kueue's
# CRDs, and 20-webhook.sh's webhook (it sees every Job and pod).

kueue_dir=$(cd "$E2E/kueue" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
render=$TMP/render-four-h100

# Kueue's install (its config/default) without its Deployment: the controller
# runs here, behind a Service without selector whose endpoint is this host
# (webhook and CRD conversion calls go to endpoints); its metrics and
# visibility APIs are not used.
"$CP_BIN/kubectl" kustomize "$kueue_dir/config/default" >"$TMP/kueue-install.yaml" ||
    bad "kustomize Kueue's config/default"
/usr/bin/python3 - "$TMP/kueue-install.yaml" "$CP_HOST_IP" >"$TMP/kueue-objects.json" <<'PY' ||
import json, sys, yaml
skip = {"Deployment", "APIService"}
items = []
for o in yaml.safe_load_all(open(sys.argv[1])):
    if not o or o["kind"] in skip:
        continue
    if o["kind"] == "Service":
        if o["metadata"]["name"] != "kueue-webhook-service":
            continue
        del o["spec"]["selector"]
        items.append({"apiVersion": "v1", "kind": "Endpoints",
                      "metadata": {"name": o["metadata"]["name"], "namespace": "kueue-system"},
                      "subsets": [{"addresses": [{"ip": sys.argv[2]}],
                                   "ports": [{"port": 9443}]}]})
    items.append(o)
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
PY
    bad "Kueue's objects"
kc apply --server-side --force-conflicts -f "$TMP/kueue-objects.json" >"$TMP/kueue-apply.out" 2>&1 ||
    { bad "Kueue's install"; tail "$TMP/kueue-apply.out"; }

# Kueue's Configuration: its release default, only batch/job, no leader
# election, ports of this test, with render's fragment merged in as
# cluster/kueue-configuration-fragment.yaml asks
/usr/bin/python3 - "$TMP/kueue-install.yaml" "$render/cluster/kueue-configuration-fragment.yaml" \
    "$CP_DIR/kueue-certs" "$(free_port)" "$(free_port)" >"$CP_DIR/kueue-config.yaml" <<'PY' ||
import sys, yaml
docs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
cm = next(o for o in docs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "kueue-manager-config")
cfg = yaml.safe_load(cm["data"]["controller_manager_config.yaml"])
cfg.update(yaml.safe_load(open(sys.argv[2])))
cfg["leaderElection"] = {"leaderElect": False}
cfg["health"] = {"healthProbeBindAddress": "127.0.0.1:" + sys.argv[4]}
cfg["metrics"] = {"bindAddress": "127.0.0.1:" + sys.argv[5]}
cfg["webhook"] = {"port": 9443, "certDir": sys.argv[3]}
cfg["internalCertManagement"] = {"enable": True}
cfg["integrations"] = {"frameworks": ["batch/job"]}
yaml.safe_dump(cfg, sys.stdout)
PY
    bad "Kueue's configuration"
KUEUE_HEALTH=$(/usr/bin/python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["health"]["healthProbeBindAddress"])' \
    "$CP_DIR/kueue-config.yaml")
# the kubelet's part for a pod's Secret volume: Kueue's webhook certificate
# (the Secret its cert rotator writes) as files in its certDir, kept current;
# the rotator reports ready only once the files match the Secret
mkdir -p "$CP_DIR/kueue-certs"
cat >"$CP_DIR/kueue-secret-volume.sh" <<'SH'
#!/bin/bash
while sleep 0.5; do
    "$CP_BIN/kubectl" -n kueue-system get secret kueue-webhook-server-cert -o json 2>/dev/null |
        /usr/bin/python3 -c '
import base64, json, os, sys
d = json.load(sys.stdin).get("data") or {}
for k, v in d.items():
    p = os.path.join(sys.argv[1], k)
    b = base64.b64decode(v)
    if not os.path.exists(p) or open(p, "rb").read() != b:
        open(p + ".new", "wb").write(b)
        os.rename(p + ".new", p)' "$CERT_DIR"
done
SH
CERT_DIR=$CP_DIR/kueue-certs CP_BIN=$CP_BIN cp_daemon kueue-secret-volume bash "$CP_DIR/kueue-secret-volume.sh"
cp_daemon kueue "$CP_BIN/kueue" --config "$CP_DIR/kueue-config.yaml" --kubeconfig "$KUBECONFIG" \
    --feature-gates DynamicResourceAllocation=true --visibility-server-port "$(free_port)"
cp_wait 120 "Kueue never became ready" curl -sf "http://$KUEUE_HEALTH/readyz"
# its webhooks serve (certificates made and injected by Kueue itself)
kueue_webhook() {
    kc apply --dry-run=server -f - >/dev/null 2>&1 <<EOF
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: probe, namespace: client-a-prod}
spec: {clusterQueue: client-a-prod}
EOF
}
cp_wait 90 "the API server never reached Kueue's webhooks" kueue_webhook
ok
kueue_active() {
    [ "$(kc get clusterqueue client-a-prod -o jsonpath='{.status.conditions[?(@.type=="Active")].status}')" = True ]
}
cp_wait 60 "ClusterQueue client-a-prod not active: $(kc get clusterqueue client-a-prod -o yaml 2>&1 | tail -8)" kueue_active
ok

# quota NAME FIELD: a ClusterQueue's rendered FIELD (nominalQuota,
# lendingLimit, borrowingLimit; "none" when absent) for its one resource
quota() {
    /usr/bin/python3 - "$render" "$1" "$2" <<'PY'
import glob, sys, yaml
for f in glob.glob(sys.argv[1] + "/tenants/*/kueue.yaml"):
    for o in yaml.safe_load_all(open(f)):
        if o and o["kind"] == "ClusterQueue" and o["metadata"]["name"] == sys.argv[2]:
            (r,) = [r for g in o["spec"]["resourceGroups"] for fl in g["flavors"] for r in fl["resources"]]
            print(r.get(sys.argv[3], "none"))
PY
}

# submit NS TEMPLATE N PREFIX: N one-pod Jobs in NS's LocalQueue, each pod
# with one claim from the rendered ResourceClaimTemplate TEMPLATE; created
# running (suspend false): Kueue's webhook must suspend them
submit() {
    local i
    for i in $(seq "$3"); do
        kc create -f - >/dev/null <<EOF || bad "Job $1/$4-$i refused"
apiVersion: batch/v1
kind: Job
metadata:
  name: $4-$i
  namespace: $1
  labels: {kueue.x-k8s.io/queue-name: default}
spec:
  template:
    spec:
      restartPolicy: Never
      resourceClaims: [{name: gpu, resourceClaimTemplateName: $2}]
      containers:
      - name: c
        image: registry.e2e.invalid/model:1
        resources: {claims: [{name: gpu}]}
EOF
    done
}

# workloads NS PREFIX: "ADMITTED PENDING" among the Workloads of Jobs PREFIX-*
workloads() {
    kc -n "$1" get workloads -o json | /usr/bin/python3 -c '
import json, sys
prefix = sys.argv[1] + "-" if sys.argv[1] else ""
adm = pend = 0
for w in json.load(sys.stdin)["items"]:
    owners = [o["name"] for o in w["metadata"].get("ownerReferences", [])]
    if not any(o.startswith(prefix) for o in owners):
        continue
    c = {x["type"]: x["status"] for x in w.get("status", {}).get("conditions", [])}
    if c.get("Admitted") == "True":
        adm += 1
    elif c.get("QuotaReserved") != "True":
        pend += 1
print(adm, pend)' "$2"
}

# settle NS PREFIX WANT WHAT: wait (60 s) until workloads NS PREFIX prints WANT
settled() { [ "$(workloads "$1" "$2")" = "$3" ]; }
settle() {
    if eventually 60 settled "$1" "$2" "$3"; then ok; else
        bad "$4: admitted/pending $(workloads "$1" "$2"), want $3"
        kc -n "$1" get workloads -o wide 2>&1 | head -12
    fi
}

# borrowed CQ: what ClusterQueue CQ borrows now (Kueue's own status)
borrowed() {
    kc get clusterqueue "$1" -o jsonpath='{.status.flavorsReservation[0].resources[0].borrowed}'
}

# 1. Over quota, held: client-a-prod's 3g.40gb quota is its own (nobody else
# has that profile, lendingLimit 0); one Job more than the quota waits.
na=$(quota client-a-prod nominalQuota)
check "client-a-prod has a rendered quota ($na)" [ "$na" -gt 0 ]
submit client-a-prod chat-13b $((na + 1)) over
settle client-a-prod over "$na 1" "client-a-prod over its quota"
kc -n client-a-prod get workloads -o json | /usr/bin/python3 -c '
import json, sys
for w in json.load(sys.stdin)["items"]:
    for c in w["status"].get("conditions", []):
        if c["type"] == "QuotaReserved" and c["status"] == "False":
            print(c["message"])' >"$TMP/kueue-why"
expect_in "$TMP/kueue-why" "insufficient unused quota for $(quota client-a-prod name)"
# the held Job is suspended (Kueue's webhook), so it has made no pod. Which
# Job Kueue holds is its choice (Jobs created in the same second tie on
# their creation time: a fresh make check saw the last one run a pod, so
# another was held): the one whose Workload reserved no quota
held=$(kc -n client-a-prod get workloads -o json | /usr/bin/python3 -c '
import json, sys
for w in json.load(sys.stdin)["items"]:
    c = {x["type"]: x["status"] for x in w.get("status", {}).get("conditions", [])}
    if c.get("QuotaReserved") != "True":
        print(" ".join(o["name"] for o in w["metadata"].get("ownerReferences", [])))')
check "one Job is held ($held)" [ "$(echo "$held" | wc -w)" -eq 1 ]
check "the held Job runs no pod" [ "$(kc -n client-a-prod get pods -l "batch.kubernetes.io/job-name=$held" -o name | wc -l)" -eq 0 ]
# Kueue unsuspends a Job once its Workload is admitted: wait for it
jobs_running() {
    kc -n client-a-prod get jobs -o jsonpath='{range .items[*]}{.spec.suspend}{"\n"}{end}' | grep -c false
}
unsuspended_as_admitted() { [ "$(jobs_running)" -eq "$na" ]; }
if eventually 30 unsuspended_as_admitted; then ok; else
    bad "$(jobs_running) Jobs unsuspended, $na admitted"; fi

# 2. Borrowing: client-c-prod (1g.10gb, SLA: lends nothing, may borrow) runs
# one Job more than its quota on the provider's idle 1g.10gb quota, which the
# provider lends (no lendingLimit).
nc=$(quota client-c-prod nominalQuota)
check "client-c-prod may borrow (borrowingLimit $(quota client-c-prod borrowingLimit))" \
    [ "$(quota client-c-prod borrowingLimit)" = none ]
check "platform-embedding lends (lendingLimit $(quota platform-embedding lendingLimit))" \
    [ "$(quota platform-embedding lendingLimit)" = none ]
submit client-c-prod support-7b-int8 $((nc + 1)) burst
settle client-c-prod burst "$((nc + 1)) 0" "client-c-prod borrowing the provider's idle quota"
# Kueue writes the ClusterQueue's status after it admits: wait for it
borrows_one() { [ "$(borrowed client-c-prod)" = 1 ]; }
if eventually 30 borrows_one; then ok; else bad "client-c-prod borrows $(borrowed client-c-prod), not 1"; fi

# 3. Lending ends when the lender needs its quota: the provider's Jobs up to
# its own quota are all admitted, client-c-prod's borrowed Job is preempted
# back to the queue, and client-c-prod keeps its own quota.
np=$(quota platform-embedding nominalQuota)
submit platform-embedding embedding $np reclaim
settle platform-embedding reclaim "$np 0" "the provider reclaiming its lent quota"
settle client-c-prod burst "$nc 1" "client-c-prod after the provider reclaimed"

# 4. An SLA tenant's idle quota is never lent: client-d-prod (1g.10gb,
# lendingLimit 0) runs nothing, and still the provider's next Job waits.
check "client-d-prod lends nothing (lendingLimit $(quota client-d-prod lendingLimit))" \
    [ "$(quota client-d-prod lendingLimit)" = 0 ]
submit platform-embedding embedding 1 extra
settle platform-embedding extra "0 1" "the provider beyond its quota beside client-d-prod's idle quota"
check "client-d-prod's quota is unused" [ "$(workloads client-d-prod '')" = "0 0" ]
