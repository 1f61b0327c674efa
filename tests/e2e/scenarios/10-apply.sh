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

# the worked example's and the mixed fleet's rendered trees, first (docs/install.md: the
# webhook, once registered, refuses the tenant namespaces' objects until it
# serves); the GPU
# operator, a prerequisite (docs/install.md), makes its namespace and the
# RuntimeClass nvidia the agent runs with (without it the API server refuses
# the agent's pods: RuntimeClass "nvidia" not found)
kc create namespace gpu-operator >/dev/null
kc apply --server-side -f - >/dev/null <<EOF || bad "RuntimeClass nvidia"
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia}
handler: nvidia
EOF
for ex in four-h100 mixed-fleet; do
    "$TESSERA" render -f "$TESSERA_SRC/examples/$ex.yaml" --out-dir "$TMP/render-$ex" >/dev/null ||
        bad "render $ex"
    apply_twice "rendered $ex" -k "$TMP/render-$ex"
done
# deploy/ with the image named once, as docs/install.md says
# (kustomize takes no absolute path to a base)
mkdir -p "$TMP/deploy-e2e"
cat >"$TMP/deploy-e2e/kustomization.yaml" <<EOF
resources:
- $(realpath --relative-to "$TMP/deploy-e2e" "$TESSERA_SRC/deploy")
images:
- name: tessera
  newName: registry.e2e.invalid/tessera
  newTag: e2e
EOF
apply_twice "deploy/" -k "$TMP/deploy-e2e"
kc get deploy,daemonset -n tessera-system -o jsonpath='{range .items[*]}{.spec.template.spec.containers[0].image}{"\n"}{end}' \
    >"$TMP/images"
if [ -s "$TMP/images" ] && ! grep -qv '^registry.e2e.invalid/tessera:e2e$' "$TMP/images"; then ok; else
    bad "deploy/ images are not the one overridden"; cat "$TMP/images"; fi

# what the API server holds is what render wrote: one DeviceClass each
want=$(grep -h '^kind: DeviceClass' -r "$TMP"/render-*/cluster/deviceclasses.yaml | wc -l)
got=$(kc get deviceclasses -o name | wc -l)
check "DeviceClasses in the API server ($got) equal the rendered ($want)" [ "$got" -ge "$want" -a "$want" -gt 0 ]
