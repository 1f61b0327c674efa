# 20-webhook.sh - the webhook registered with the real API server as deploy/
# registers it, its caBundle from `tessera cert`: tenant pods get the
# webhook's verdicts and the API server's Pod Security verdicts; the
# namespace selector, failurePolicy: Fail and timeoutSeconds behave as
# docs/webhook.md says while the webhook is stopped or hung. Needs
# 10-apply.sh's objects (deploy/ and the worked example's tenants).

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

# wh_start: the webhook as deploy/ runs it (its own log in $CP_DIR/webhook.log);
# it stays up for the later scenarios and stops with the control plane
wh_start() {
    WH_HEALTH=127.0.0.1:$(free_port)
    cp_daemon webhook "$TESSERA" serve -f "$TESSERA_SRC/examples/four-h100.yaml" \
        --tls-cert "$TMP/wh-tls/tls.crt" --tls-key "$TMP/wh-tls/tls.key" \
        --listen "$CP_HOST_IP:$WH_PORT" --health-listen "$WH_HEALTH" \
        --shim-path /opt/tessera/lib/libtessera-cuda.so --reserve-for "$CP_HOST_IP/32"
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

# failurePolicy: Fail - the webhook stopped closes tenant namespaces only
wh_stop
create denied client-a-prod down '' 'failed calling webhook "validate.tessera.dev"'
create allowed e2e-outside while-down

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
