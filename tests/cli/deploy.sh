#!/bin/bash
# deploy.sh - deploy/webhook.yaml validates strictly against the Kubernetes 1.35
# OpenAPI documents (a copy with unknown or mistyped fields must fail), and
# holds the settings issue 4 asks of it.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
V="/usr/bin/python3 tests/tools/validate_openapi.py tests/fixtures/schemas/openapi-1.35"
expect_rc 0 $V deploy/webhook.yaml
sed 's/  replicas: 2/  replicas: 2\n  replica: 3/; s/    port: 443/    port: "443"/' \
    deploy/webhook.yaml > "$TMP/bad.yaml"
expect_rc 1 $V "$TMP/bad.yaml"
expect_in "$TMP/out" "(Deployment tessera-webhook) spec: Additional properties are not allowed ('replica' was unexpected)"
expect_in "$TMP/out" "(Service tessera-webhook) spec.ports.0.port: '443' is not of type 'integer'"
if /usr/bin/python3 - deploy/webhook.yaml <<'PY'
import sys, yaml
docs = {d["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
dep = docs["Deployment"]["spec"]
assert dep["replicas"] == 2
aff = dep["template"]["spec"]["affinity"]["podAntiAffinity"]
assert aff["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == "kubernetes.io/hostname"
assert docs["PodDisruptionBudget"]["spec"]["minAvailable"] == 1
wh = docs["ValidatingWebhookConfiguration"]["webhooks"][0]
assert wh["admissionReviewVersions"] == ["v1"] and wh["sideEffects"] == "None"
assert wh["failurePolicy"] == "Fail" and wh["timeoutSeconds"] == 5
assert wh["namespaceSelector"]["matchExpressions"][0]["key"] == "tessera.dev/tenant"
res = {(g, r) for rule in wh["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
for want in [("", "pods"), ("resource.k8s.io", "resourceclaims"),
             ("resource.k8s.io", "resourceclaimtemplates"), ("apps", "deployments"),
             ("batch", "jobs"), ("batch", "cronjobs"), ("apps", "statefulsets")]:
    assert want in res, want
assert wh["clientConfig"]["service"]["path"] == "/validate"
PY
then ok; else bad "deploy/webhook.yaml settings"; fi
finish
