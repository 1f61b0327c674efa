# 20-webhook.sh - the webhook registered with the real API server as deploy/
# registers it, its caBundle from `tessera cert`: tenant pods get the
# webhook's verdicts and the API server's Pod Security verdicts; the
# namespace selector, failurePolicy: Fail and timeoutSeconds behave as
# docs/webhook.md says while the webhook is stopped or hung. The API server
# presents its client certificate to the webhook (cluster.sh's
# AdmissionConfiguration) and the webhook, with --admission-client-ca as
# deploy/components/admission-client-auth gives it, keeps those reviews'
# denials as their tenant's; a review posted to it directly is answered but
# kept as nobody's; `tessera console --denials-from` lists the kept ones.
# Needs 10-apply.sh's objects (deploy/ and the worked example's tenants).

# The webhook runs here, not in a simulated pod: the Service loses its
# selector and its endpoint is this test's host address (the API server routes
# webhook calls to endpoints, --enable-aggregator-routing).
WH_PORT=8443
# wh_route_here: the Service without selector, its one endpoint this host;
# the slices the EndpointSlice controller made for deploy/'s pods (KWOK's,
# unreachable) go, and the route waits until the API server's only endpoint
# is this host (a stale one makes calls fail at once, at random)
wh_route_here() {
    kc -n tessera-system patch service tessera-webhook --type json \
        -p '[{"op":"remove","path":"/spec/selector"}]' >/dev/null 2>&1
    kc apply -f - >"$TMP/ep.out" 2>&1 <<EOF || { bad "webhook endpoints"; cat "$TMP/ep.out"; }
apiVersion: v1
kind: Endpoints
metadata: {name: tessera-webhook, namespace: tessera-system}
subsets:
- addresses: [{ip: $CP_HOST_IP}]
  ports: [{name: https, port: $WH_PORT}]
EOF
    kc -n tessera-system delete endpointslices --wait=false -l \
        kubernetes.io/service-name=tessera-webhook,endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io \
        >/dev/null 2>&1
    cp_wait 30 "the webhook's endpoints are not this host's alone" wh_routed_here
}
wh_routed_here() {
    [ "$(kc -n tessera-system get endpointslices -l kubernetes.io/service-name=tessera-webhook \
        -o jsonpath='{range .items[*].endpoints[*]}{.addresses[0]}{"\n"}{end}' | sort -u)" = "$CP_HOST_IP" ]
}
wh_route_here

# the certificate and caBundle exactly as docs/webhook.md installs them
"$TESSERA" cert --dir "$TMP/wh-tls" >"$TMP/cert.yaml" || bad "tessera cert"
kc apply --server-side --field-manager=tessera-cert -f "$TMP/cert.yaml" >/dev/null || bad "cert apply"

# wh_start: the webhook as deploy/ runs it with deploy/components/
# admission-client-auth (its own log in $CP_DIR/webhook.log): the API server's
# client certificate is cluster.sh's webhook-client, signed by the e2e CA; the
# probes, /metrics and /denials on $WH_HEALTH. It stays up for the later
# scenarios and stops with the control plane
wh_start() {
    WH_HEALTH=127.0.0.1:$(free_port)
    cp_daemon webhook "$TESSERA" serve -f "$TESSERA_SRC/examples/four-h100.yaml" \
        --tls-cert "$TMP/wh-tls/tls.crt" --tls-key "$TMP/wh-tls/tls.key" \
        --listen "$CP_HOST_IP:$WH_PORT" --health-listen "$WH_HEALTH" \
        --shim-path /opt/tessera/lib/libtessera-cuda.so --reserve-for "$CP_HOST_IP/32" \
        --admission-client-ca "$CP_DIR/pki/ca.crt" --admission-client kube-apiserver-webhook-client
    WH_PID=${CP_PIDS[-1]}
    cp_wait 20 "tessera serve did not listen" bash -c "echo >/dev/tcp/$CP_HOST_IP/$WH_PORT"
}
wh_stop() { kill "$WH_PID" 2>/dev/null; wait "$WH_PID" 2>/dev/null; }

# pod NS NAME [SECURITY-CONTEXT-JSON]: a pod manifest on stdout
pod() {
    cat <<EOF
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "$2", "namespace": "$1"},
 "spec": {"containers": [{"name": "c", "image": "registry.e2e.invalid/app:1"
   ${3:+, \"securityContext\": $3}}]}}
EOF
}

# create WANT NS NAME [SC] [TEXT]: create the pod; WANT is allowed or denied;
# a denial must contain TEXT.
create() {
    local want=$1 ns=$2 name=$3 sc=${4:-} text=${5:-}
    if pod "$ns" "$name" "$sc" | kc create -f - >"$TMP/create.out" 2>&1; then
        kc -n "$ns" delete pod "$name" --wait=false >/dev/null 2>&1
        [ "$want" = allowed ] && ok || bad "$ns/$name was allowed, expected denied ($text)"
    else
        if [ "$want" = denied ] && grep -qF -- "$text" "$TMP/create.out"; then ok; else
            bad "$ns/$name: expected $want${text:+ with '$text'}, got:"; cat "$TMP/create.out"; fi
    fi
}

# probe: a plain tenant pod, created in a dry run, is allowed
probe() { pod client-a-prod probe | kc create --dry-run=server -f -; }

# wh_metric NAME: its value on the webhook's /metrics (the probes' port)
wh_metric() { curl -sf "http://$WH_HEALTH/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# wh_denials FILE: the webhook's recent denials (GET /denials, the probes' port)
wh_denials() { curl -sf "http://$WH_HEALTH/denials" >"$1"; }

wh_start
# the API server must reach it through the Service before the verdicts count
cp_wait 30 "the API server never reached the webhook" probe

create allowed client-a-prod plain
# a container that asks for no GPU gets none: the rendered LimitRange defaults
# every GPU resource to 0 (the API server would default the limit to the max)
pod client-a-prod plain | kc create --dry-run=server -o json -f - >"$TMP/plain.json"
check "a plain tenant container gets no GPU by default" /usr/bin/python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["spec"]["containers"][0]
gpu = {k: v for k, v in c.get("resources", {}).get("limits", {}).items()
       if k.startswith("nvidia.com/") and v not in ("0", "0Gi")}
assert not gpu, gpu' "$TMP/plain.json"
# the webhook's verdict: a privileged container (baseline forbids it too; here
# the namespace is privileged for the shim, so only the webhook stands)
create denied platform-dev priv '{"privileged": true}' 'admission webhook "validate.tessera.dev" denied'
# that review came from the API server with its client certificate: the
# webhook keeps the denial as platform-dev's
wh_denials "$TMP/denials-1.json" || bad "GET /denials of the webhook"
FIRST_DENIAL=$(/usr/bin/python3 -c '
import json, sys
d = [x for x in json.load(open(sys.argv[1]))["denials"]
     if x["namespace"] == "platform-dev" and x["kind"] == "Pod" and x["rule"] == "escape-hatch/privileged"]
assert len(d) == 1 and d[0]["tenant"] == "platform-dev", d
print(d[0]["uid"])' "$TMP/denials-1.json")
check "the API server's review: its denial kept as tenant platform-dev's" [ -n "$FIRST_DENIAL" ]
check "and counted as platform-dev's on /metrics" [ "$(wh_metric \
    'tessera_admission_tenant_denials_total{tenant="platform-dev",rule="escape-hatch/privileged"}')" = 1 ]
# the whole Pod Security floor there, not only privilege: seccomp Unconfined
create denied platform-dev unconfined '{"seccompProfile": {"type": "Unconfined"}}' \
    'seccompProfile.type "Unconfined"'
# a priority class the contract does not name (it would preempt other tenants)
echo '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "prio", "namespace": "client-a-prod"},
 "spec": {"priorityClassName": "system-node-critical",
          "containers": [{"name": "c", "image": "registry.e2e.invalid/app:1"}]}}' >"$TMP/prio.json"
if kc create -f "$TMP/prio.json" >"$TMP/prio.out" 2>&1; then bad "system-node-critical was allowed"
else expect_in "$TMP/prio.out" "uses priorityClassName \"system-node-critical\""; fi
# the shim's limit file is not the tenant's to edit (it holds the ClusterRole edit)
cm_limits() { kc -n platform-dev get configmap tessera-cuda-limits-notebooks -o jsonpath='{.data.cuda-limits}'; }
before=$(cm_limits)
if kc -n platform-dev patch configmap tessera-cuda-limits-notebooks --type merge \
    -p '{"data": {"cuda-limits": "version = 1\nmemoryLimit = 80Gi\n"}}' >"$TMP/cm.out" 2>&1; then
    bad "the shim's limit file was rewritten"
else expect_in "$TMP/cm.out" "holds a limit file other than"; fi
check "the limit file is unchanged" [ -n "$before" -a "$(cm_limits)" = "$before" ]
if kc -n platform-dev create configmap app-settings --from-literal=memoryLimit=80Gi >"$TMP/cm2.out" 2>&1
then ok; else bad "an application's ConfigMap in a tenant namespace was refused"; cat "$TMP/cm2.out"; fi
# the API server's Pod Security verdict in a baseline namespace
create denied client-a-prod priv '{"privileged": true}' 'violates PodSecurity "baseline'
# a namespace without the tenant label is not sent to the webhook at all
kc create namespace e2e-outside >/dev/null 2>&1
create allowed e2e-outside plain
# a namespace with the label that no Tenant lists: unknown means deny
kc create namespace e2e-stray >/dev/null 2>&1
kc label namespace e2e-stray tessera.dev/tenant=nobody >/dev/null
create denied e2e-stray plain '' 'denied the request'

# a review posted to the webhook directly (anyone who reaches its port could),
# without the API server's client certificate, naming client-b's namespace: it
# is answered (denied), but kept and counted as nobody's
unauth0=$(wh_metric tessera_admission_unauthenticated_total)
cat >"$TMP/forged.json" <<EOF
{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
 "request": {"uid": "e2e-forged-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
  "resource": {"group": "", "version": "v1", "resource": "pods"},
  "namespace": "client-b-prod", "operation": "CREATE", "name": "forged",
  "userInfo": {"username": "e2e"},
  "object": $(pod client-b-prod forged '{"privileged": true}')}}
EOF
if curl -sk --max-time 10 -H 'Content-Type: application/json' --data-binary @"$TMP/forged.json" \
    "https://$CP_HOST_IP:$WH_PORT/validate" >"$TMP/forged.out"; then ok; else bad "POST /validate directly"; fi
check "the direct review is answered: denied" /usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["response"]
assert r["uid"] == "e2e-forged-1" and r["allowed"] is False, r' "$TMP/forged.out"
wh_denials "$TMP/denials-2.json" || bad "GET /denials of the webhook"
check "the direct review is not among the denials" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["denials"]
assert d and not [x for x in d if x["uid"] == "e2e-forged-1" or x["namespace"] == "client-b-prod"], d
' "$TMP/denials-2.json"
unauth1=$(wh_metric tessera_admission_unauthenticated_total)
check "tessera_admission_unauthenticated_total counted it ($unauth0 -> $unauth1)" \
    [ -n "$unauth0" -a "$unauth1" = "$((unauth0 + 1))" ]
check "no tenant series for client-b" sh -c "! curl -sf 'http://$WH_HEALTH/metrics' | grep -q 'tenant=\"client-b\"'"

# the console, a process of its own, reads the webhook's denials
# (--denials-from, the probes' port) for its API: an operator's token lists
# the API server's first denial; client-b's token sees none of its own
op=$("$TESSERA" token new --operator) && tb=$("$TESSERA" token new --tenant client-b) ||
    bad "tessera token new"
printf '%s\n%s\n' "${op#*$'\n'}" "${tb#*$'\n'}" >"$TMP/console-tokens"
CON_PORT=$(free_port) CON_HEALTH=127.0.0.1:$(free_port)
cp_daemon console "$TESSERA" console -f "$TESSERA_SRC/examples/four-h100.yaml" \
    --tls-cert "$TMP/wh-tls/tls.crt" --tls-key "$TMP/wh-tls/tls.key" \
    --listen "127.0.0.1:$CON_PORT" --health-listen "$CON_HEALTH" \
    --tokens "$TMP/console-tokens" --denials-from "http://$WH_HEALTH/denials"
CON_PID=${CP_PIDS[-1]}
cp_wait 20 "tessera console was not ready" curl -sf "http://$CON_HEALTH/readyz"
api() { curl -sk --max-time 10 -H "Authorization: Bearer ${1%%$'\n'*}" "https://127.0.0.1:$CON_PORT/api/v1/$2"; }
api "$op" denials >"$TMP/api-denials.json" || bad "the console's /api/v1/denials"
check "the console lists the first denial ($FIRST_DENIAL) for an operator" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["items"]
first = [x for x in d if x["uid"] == sys.argv[2]]
assert len(first) == 1 and first[0]["tenant"] == "platform-dev" and first[0]["namespace"] == "platform-dev", d
assert first[0]["rule"] == "escape-hatch/privileged", first
assert not [x for x in d if x["uid"] == "e2e-forged-1"], d' "$TMP/api-denials.json" "$FIRST_DENIAL"
api "$tb" denials >"$TMP/api-denials-b.json" || bad "the console's /api/v1/denials for client-b"
check "client-b's token: no denial of its own, none of others" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["items"] == [] and d["total"] == 0, d' "$TMP/api-denials-b.json"
kill "$CON_PID" 2>/dev/null

# failurePolicy: Fail - the webhook stopped closes tenant namespaces only
wh_stop
create denied client-a-prod down '' 'failed calling webhook "validate.tessera.dev"'
create allowed e2e-outside while-down
# of the ConfigMaps only the shim's limit files go to the webhook (its
# matchConditions): a tenant's own is written while it is down, a limit file
# is not (it fails closed)
if kc -n client-a-prod create configmap app-while-down --from-literal=a=b >"$TMP/cmd.out" 2>&1
then ok; else bad "a tenant's own ConfigMap was refused while the webhook was down"; cat "$TMP/cmd.out"; fi
if kc -n platform-dev patch configmap tessera-cuda-limits-notebooks --type merge \
    -p '{"metadata": {"labels": {"e2e": "down"}}}' >"$TMP/cmd.out" 2>&1; then
    bad "the shim's limit file was written while the webhook was down"
else expect_in "$TMP/cmd.out" 'failed calling webhook'; fi

# timeoutSeconds: 5 - a hung webhook is given up on after 5 s, and denies
wh_start
kill -STOP "$WH_PID"
t0=$SECONDS
create denied client-a-prod hung '' 'failed calling webhook'
dt=$((SECONDS - t0))
check "a hung webhook held the API server ${dt}s (timeoutSeconds 5)" [ "$dt" -ge 4 -a "$dt" -le 15 ]
kill -CONT "$WH_PID"
cp_wait 30 "the webhook did not recover" probe
create allowed client-a-prod after
