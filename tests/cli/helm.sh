#!/bin/bash
# labels: nosan
# helm.sh - the Helm chart deploy/helm/tessera, generated from deploy/ by
# scripts/gen-helm: the committed chart is what the generator writes now;
# `helm lint --strict` passes; `helm template` with the defaults renders exactly
# the objects `kubectl kustomize deploy/` does (tests/tools/chart_check.py: parsed,
# by kind, namespace and name; the chart adds no Helm labels); non-default image,
# pull secret, node selector, toleration, priority class and resources reach every
# pod template and change nothing else; the namespace value renames every mention;
# the user's spec file replaces the worked example's;
# values of the wrong shape are refused by values.schema.json before rendering.
# kubectl and helm are required ($KUBECTL, $HELM: the ones tests/e2e/build makes,
# as make check builds them before the tests): without them this test fails.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
KUBECTL=${KUBECTL:-kubectl}
HELM=${HELM:-helm}
CHART=deploy/helm/tessera
CC="/usr/bin/python3 tests/tools/chart_check.py"
V="/usr/bin/python3 tests/tools/validate_openapi.py tests/fixtures/schemas/openapi-1.35"
for tool in "$KUBECTL" "$HELM"; do
    if ! command -v "$tool" >/dev/null; then
        bad "$tool is missing: make e2e-build builds it"
        finish
        exit 1
    fi
done
# helm keeps its settings and caches under HOME; none of the caller's
export HOME=$TMP/home XDG_CONFIG_HOME=$TMP/home/.config XDG_CACHE_HOME=$TMP/home/.cache \
    XDG_DATA_HOME=$TMP/home/.local/share
unset HELM_NAMESPACE KUBECONFIG

# (a) the committed chart is what scripts/gen-helm writes from deploy/ now
expect_rc 0 scripts/gen-helm --kubectl "$KUBECTL" --out "$TMP/chart"
if diff -r "$CHART" "$TMP/chart" >"$TMP/chart.diff"; then ok; else
    bad "deploy/helm/tessera is not what deploy/ generates: run scripts/gen-helm and commit it"
    head -30 "$TMP/chart.diff"
fi

# (b) helm lint, warnings as errors
expect_rc 0 "$HELM" lint --strict "$CHART"
expect_in "$TMP/out" "1 chart(s) linted, 0 chart(s) failed"

# (c) the defaults render what kustomize renders
"$KUBECTL" kustomize deploy >"$TMP/kustomize.yaml"
expect_rc 0 "$HELM" template tessera "$CHART"
cp "$TMP/out" "$TMP/helm.yaml"
expect_rc 0 $CC same "$TMP/kustomize.yaml" "$TMP/helm.yaml"
expect_in "$TMP/out" " 0 differences"
check "the chart's objects are kustomize's, none lost" \
    test "$(grep -c '^kind:' "$TMP/helm.yaml")" = "$(grep -c '^kind:' "$TMP/kustomize.yaml")"
check "no Helm labels added" sh -c "! grep -q 'helm.sh/chart\|app.kubernetes.io/managed-by' '$TMP/helm.yaml'"
# the comparison sees a difference: deploy/ changed and the chart not regenerated
cp -r deploy "$TMP/deploy"
sed -i 's/^            memory: 128Mi$/            memory: 256Mi/' "$TMP/deploy/base/webhook.yaml"
"$KUBECTL" kustomize "$TMP/deploy" >"$TMP/changed.yaml"
expect_rc 1 $CC same "$TMP/changed.yaml" "$TMP/helm.yaml"
expect_in "$TMP/out" "Deployment tessera-system/tessera-webhook.spec.template.spec.containers[0].resources.limits.memory: kustomize '256Mi', helm '128Mi'"

# (d) non-default values reach every pod template and nothing else
$CC values "$TMP/kustomize.yaml" >"$TMP/custom-values.yaml"
expect_rc 0 "$HELM" template tessera "$CHART" -f "$TMP/custom-values.yaml"
cp "$TMP/out" "$TMP/custom.yaml"
expect_rc 0 $CC expect "$TMP/kustomize.yaml" "$TMP/custom.yaml"
expect_in "$TMP/out" " 0 differences"
expect_in "$TMP/custom.yaml" "image: \"registry.example:5000/gpu/tessera:"
expect_rc 0 $V "$TMP/custom.yaml"
expect_rc 0 "$HELM" lint --strict "$CHART" -f "$TMP/custom-values.yaml"
# ...and the check sees a pod template that lacks them (the defaults' output)
expect_rc 1 $CC expect "$TMP/kustomize.yaml" "$TMP/helm.yaml"
expect_in "$TMP/out" "DaemonSet tessera-system/tessera-agent.spec.template.spec.initContainers[0].image: expected 'registry.example:5000/gpu/tessera:"
# the webhook's replica count, alone
expect_rc 0 "$HELM" template tessera "$CHART" --set webhook.replicas=3
check "webhook.replicas=3" /usr/bin/python3 -c '
import sys, yaml
d = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o and o["kind"] == "Deployment"]
r = {o["metadata"]["name"]: o["spec"]["replicas"] for o in d}
assert r == {"tessera-webhook": 3, "tessera-console": 1, "tessera-meter": 1}, r' "$TMP/out"
# the user's spec (--set-file): the ConfigMap holds that file, nothing else changes
expect_rc 0 "$HELM" template tessera "$CHART" --set-file spec=examples/mixed-fleet.yaml
check "--set-file spec: ConfigMap tessera-spec holds the file, nothing else changed" \
    /usr/bin/python3 -c '
import sys, yaml
def load(p):
    return sorted((o for o in yaml.safe_load_all(open(p)) if o),
                  key=lambda o: (o["kind"], o["metadata"]["name"]))
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a != b
cm = [o for o in a if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "tessera-spec"]
cm[0]["data"]["spec.yaml"] = open(sys.argv[3]).read()
assert a == b' "$TMP/helm.yaml" "$TMP/out" examples/mixed-fleet.yaml
# a map value merges into the default (Helm's rule): null drops a default key
expect_rc 0 "$HELM" template tessera "$CHART" --set 'agent.nodeSelector.nvidia\.com/gpu\.present=null'
check "agent.nodeSelector's default key dropped with null" /usr/bin/python3 -c '
import sys, yaml
d = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o and o["kind"] == "DaemonSet"]
assert len(d) == 1 and "nodeSelector" not in d[0]["spec"]["template"]["spec"], d' "$TMP/out"
expect_rc 0 "$HELM" template tessera "$CHART" --set webhook.affinity=null
check "webhook.affinity=null drops it" sh -c "! grep -q 'podAntiAffinity' '$TMP/out'"
# another namespace: every mention follows; without the Namespace object
expect_rc 0 "$HELM" template tessera "$CHART" --set namespace=gpu-tenancy
cp "$TMP/out" "$TMP/ns.yaml"
expect_rc 0 $CC namespace "$TMP/kustomize.yaml" "$TMP/ns.yaml" gpu-tenancy
expect_in "$TMP/ns.yaml" "cert-manager.io/inject-ca-from: \"gpu-tenancy/tessera-webhook-tls\""
expect_rc 0 "$HELM" template tessera "$CHART" --set namespace=gpu-tenancy --set createNamespace=false
cp "$TMP/out" "$TMP/ns2.yaml"
expect_rc 0 $CC namespace "$TMP/kustomize.yaml" "$TMP/ns2.yaml" gpu-tenancy --no-namespace
expect_rc 1 $CC namespace "$TMP/kustomize.yaml" "$TMP/ns.yaml" gpu-tenancy --no-namespace
expect_in "$TMP/out" "Namespace /gpu-tenancy: in helm's output only"

# (e) values of the wrong shape: refused before anything renders, naming the value
refused() { # MESSAGE HELM-ARGS...
    local msg=$1
    shift
    expect_rc 1 "$HELM" template tessera "$CHART" "$@"
    expect_in "$TMP/err" "$msg"
    check "nothing rendered for $*" test ! -s "$TMP/out"
}
refused "at '/image/tag': minLength: got 0, want 1" --set image.tag=
refused "at '/webhook/tolerations': got string, want array" --set webhook.tolerations=NoSchedule
refused "at '/agent/nodeSelector': got array, want object" --set 'agent.nodeSelector={a,b}'
refused "at '/webhook/replicas'" --set webhook.replicas=0
refused "at '/webhook': additional properties 'replica' not allowed" --set webhook.replica=3
refused "at '/meter/resources': additional properties 'webhook' not allowed" \
    --set meter.resources.webhook.limits.memory=1Gi
refused "at '/namespace'" --set namespace=Tessera_System
refused "at '/spec': minLength: got 0, want 1" --set spec=
refused "at '/imagePullSecrets'" --set imagePullSecrets=regcred
refused "at '/image/pullPolicy'" --set image.pullPolicy=Sometimes
refused "at '/webhook/tolerations/0/operator'" --set 'webhook.tolerations[0].operator=Maybe'

# the generator takes any object deploy/ gains (a NetworkPolicy, a ClusterRole,
# a new workload) and its chart still renders what kustomize renders
cp -r deploy "$TMP/deploy2"
cat >"$TMP/deploy2/base/extra.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: tessera-webhook, namespace: tessera-system}
spec:
  podSelector: {matchLabels: {app.kubernetes.io/name: tessera-webhook}}
  policyTypes: [Ingress]
  ingress: [{ports: [{port: 8443, protocol: TCP}]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tessera-reader}
rules: [{apiGroups: [""], resources: [nodes], verbs: [get]}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: tessera-report-daily, namespace: tessera-system}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - {name: report, image: tessera, args: [invoice, "--note={{ not a template }}"]}
YAML
sed -i 's/^- agent.yaml$/- agent.yaml\n- extra.yaml/' "$TMP/deploy2/base/kustomization.yaml"
expect_rc 0 scripts/gen-helm --kubectl "$KUBECTL" --source "$TMP/deploy2" --out "$TMP/chart2"
"$KUBECTL" kustomize "$TMP/deploy2" >"$TMP/kustomize2.yaml"
expect_rc 0 "$HELM" template tessera "$TMP/chart2"
cp "$TMP/out" "$TMP/helm2.yaml"
expect_rc 0 $CC same "$TMP/kustomize2.yaml" "$TMP/helm2.yaml"
expect_in "$TMP/out" "25 objects, 0 differences"
$CC values "$TMP/kustomize2.yaml" >"$TMP/custom2-values.yaml"
expect_rc 0 "$HELM" template tessera "$TMP/chart2" -f "$TMP/custom2-values.yaml"
cp "$TMP/out" "$TMP/custom2.yaml"
expect_rc 0 $CC expect "$TMP/kustomize2.yaml" "$TMP/custom2.yaml"
expect_rc 0 "$HELM" lint --strict "$TMP/chart2"
finish
