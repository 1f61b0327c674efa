# 10-apply.sh - every object tessera installs or renders is accepted by the
# real API server (its schemas, its validation, CEL selectors compiled), and
# a second apply changes nothing. Sourced by tests/e2e/run.

# apply_twice WHAT ARGS...: `kubectl apply --server-side ARGS` (as
# docs/install.md installs: the caBundle `tessera cert` applies then keeps its
# own field manager) succeeds; then the API server finds nothing the same
# apply would change (`kubectl diff --server-side`, a dry-run apply on the
# server, exits 0), and the second apply succeeds too.
apply_twice() {
    local what=$1; shift
    if ! kc apply --server-side "$@" >"$TMP/apply1" 2>&1; then
        bad "$what: first apply failed"
        grep -v " serverside-applied$" "$TMP/apply1" | head -20
        return 1
    fi
    ok
    if kc diff --server-side "$@" >"$TMP/diff" 2>&1; then ok; else
        bad "$what: a second apply would change objects"; head -30 "$TMP/diff"; fi
    kc apply --server-side "$@" >"$TMP/apply2" 2>&1 && ok ||
        { bad "$what: second apply failed"; head "$TMP/apply2"; }
}

# The CRDs the rendered trees use: Kueue's own, from the module the harness
# builds Kueue from; KubeVirt's VirtualMachine from its published schema.
kueue_dir=$(cd "$E2E/kueue" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
kc apply --server-side -f "$kueue_dir/config/components/crd/bases" >"$TMP/crd.out" 2>&1 ||
    { bad "Kueue CRDs"; cat "$TMP/crd.out"; }
"$E2E/tools/schema_crd.py" kubevirt.io VirtualMachine virtualmachines v1 \
    "$TESSERA_FIXTURES/schemas/kubevirt/kubevirt.io_virtualmachine_v1.json" >"$TMP/vm-crd.json"
kc apply --server-side -f "$TMP/vm-crd.json" >"$TMP/crd.out" 2>&1 || { bad "KubeVirt CRD"; cat "$TMP/crd.out"; }
check "CRDs established" kc wait --for condition=established --timeout 60s crd --all

# The GPU operator, a prerequisite (docs/install.md), makes its namespace and
# the RuntimeClass nvidia the agent runs with (without it the API server
# refuses the agent's pods: RuntimeClass "nvidia" not found)
kc create namespace gpu-operator >/dev/null
kc apply --server-side -f - >/dev/null <<EOF || bad "RuntimeClass nvidia"
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia}
handler: nvidia
EOF
# The one-command install (docs/install.md), as a user runs it: first with
# mistakes, which it refuses before it changes anything, then for real. The
# API server here connects from this host's address (no endpoint reconciler:
# the Service default/kubernetes lists none, so it is named).
install() {
    "$TESSERA_SRC/deploy/install" --tessera "$TESSERA" --kubectl "$CP_BIN/kubectl" \
        --cert-dir "$TMP/install-ca" "$@"
}
IMAGE=registry.e2e.invalid/tessera:e2e
expect_rc 2 install --spec "$TESSERA_SRC/examples/four-h100.yaml"
expect_in "$TMP/err" "--image REF is required"
expect_rc 2 install --spec "$TESSERA_SRC/examples/four-h100.yaml" --image 'Registry/Tessera:e2e'
expect_in "$TMP/err" "is not REPOSITORY:TAG"
expect_rc 2 install --spec "$TESSERA_SRC/examples/four-h100.yaml" --image $IMAGE --apiserver-cidr 10.213.0.300/32
expect_in "$TMP/err" "10.213.0.300/32' is not a CIDR"
expect_rc 2 install --spec "$TESSERA_SRC/examples/four-h100.yaml" --image $IMAGE --admission-client-ca "$CP_DIR/pki/ca.key"
expect_in "$TMP/err" "ca.key: not a PEM certificate"
# the spec's GPU node is not in the cluster yet: refused, nothing applied
expect_rc 1 install --spec "$TESSERA_SRC/examples/four-h100.yaml" --image $IMAGE --timeout 0
expect_in "$TMP/err" "nodes the cluster does not have: gpu-node-1"
check "nothing applied by the refused install" \
    [ "$(kc get namespace client-a-prod tessera-system -o name 2>/dev/null | wc -l)" -eq 0 ]
# the worked example's and the mixed fleet's rendered trees, before the
# webhook is registered (then it refuses tenant objects until it serves): a
# second apply changes nothing
for ex in four-h100 mixed-fleet; do
    "$TESSERA" render -f "$TESSERA_SRC/examples/$ex.yaml" --out-dir "$TMP/render-$ex" >/dev/null ||
        bad "render $ex"
    apply_twice "rendered $ex" -k "$TMP/render-$ex"
done
# for real, with the node there (KWOK keeps it; 30-dra.sh gives it its GPUs),
# and the CA of the API server's client certificate for webhooks (cluster.sh's
# AdmissionConfiguration: the e2e CA signs it)
kwok_node gpu-node-1 '{"nvidia.com/gpu.present": "true", "nvidia.com/mig.config": "all-disabled"}'
if install --spec "$TESSERA_SRC/examples/four-h100.yaml" --image $IMAGE --apiserver-cidr "$CP_HOST_IP/32" \
    --admission-client-ca "$CP_DIR/pki/ca.crt" --timeout 0 --work "$TMP/install" >"$TMP/inst.out" 2>&1
then ok; else
    bad "deploy/install failed"; tail -20 "$TMP/inst.out"; fi
# the node's labels from its labels.sh: tessera's agent owns its MIG, the
# GPU operator's mig-manager is off it and its mig.config label gone
check "gpu-node-1 labelled by the install" [ "$(kc get node gpu-node-1 \
    -o jsonpath='{.metadata.labels.tessera\.dev/managed}/{.metadata.labels.nvidia\.com/gpu\.deploy\.mig-manager}/{.metadata.labels.nvidia\.com/mig\.config}')" = true/false/ ]
# the spec is the user's, the webhook's connection slots and the network
# policy name the API server
kc -n tessera-system get configmap tessera-spec -o jsonpath='{.data.spec\.yaml}' >"$TMP/spec-in-cluster"
check "the ConfigMap tessera-spec holds the spec given" cmp -s "$TMP/spec-in-cluster" "$TESSERA_SRC/examples/four-h100.yaml"
expect_in <(kc -n tessera-system get deployment tessera-webhook -o jsonpath='{.spec.template.spec.containers[0].args}') \
    "--reserve-for=$CP_HOST_IP/32"
check "tessera-system's ingress: the API server's address only, on the webhook port" [ "$(kc -n tessera-system \
    get networkpolicy tessera-apiserver -o jsonpath='{.spec.ingress[0].from[*].ipBlock.cidr}/{.spec.ingress[0].ports[0].port}')" = "$CP_HOST_IP/32/8443" ]
check "the webhook's certificate made by the install" kc -n tessera-system get secret tessera-webhook-tls
# the webhook keeps only the API server's reviews as a tenant's: the CA in its
# Secret, the flags of deploy/components/admission-client-auth
check "Secret tessera-admission-client-ca holds the CA given" cmp -s "$CP_DIR/pki/ca.crt" \
    <(kc -n tessera-system get secret tessera-admission-client-ca -o jsonpath='{.data.ca\.crt}' | base64 -d)
expect_in <(kc -n tessera-system get deployment tessera-webhook -o jsonpath='{.spec.template.spec.containers[0].args}') \
    "--admission-client-ca=/etc/tessera/admission-client-ca/ca.crt"
# the console's identities: one operator token, printed once; the Secret holds
# its SHA-256, not the token
token=$(grep -A1 "the console's operator token" "$TMP/inst.out" | tail -1)
check "the install printed an operator token once" [ "$(grep -c '^tsk_' "$TMP/inst.out")" = 1 ]
kc -n tessera-system get secret tessera-console-tokens -o jsonpath='{.data.tokens}' | base64 -d >"$TMP/tokens"
expect_in "$TMP/tokens" "token sha256:$(printf %s "$token" | sha256sum | cut -d' ' -f1) operator"
check "the Secret holds no token itself" sh -c "! grep -q tsk_ '$TMP/tokens'"
check "the install's work folder holds no token" sh -c "! grep -rq tsk_ '$TMP/install'"
# deploy/ as the install wrote it: applied again, nothing changes
apply_twice "deploy/ (deploy/install's kustomization)" -k "$TMP/install/install"

kc get deploy,daemonset -n tessera-system -o jsonpath='{range .items[*]}{.spec.template.spec.containers[0].image}{"\n"}{end}' \
    >"$TMP/images"
if [ -s "$TMP/images" ] && ! grep -qv '^registry.e2e.invalid/tessera:e2e$' "$TMP/images"; then ok; else
    bad "deploy/ images are not the one overridden"; cat "$TMP/images"; fi

# what the API server holds is what render wrote: one DeviceClass each
want=$(grep -h '^kind: DeviceClass' -r "$TMP"/render-*/cluster/deviceclasses.yaml | wc -l)
got=$(kc get deviceclasses -o name | wc -l)
check "DeviceClasses in the API server ($got) equal the rendered ($want)" [ "$got" -ge "$want" -a "$want" -gt 0 ]
