#!/usr/bin/env bash
# good_specs.sh - valid specs that `tessera check` must accept.
#
# The worked example (examples/four-h100.yaml) and three small variants
# written here at run time: a spec without a PriceBook, one that uses YAML
# anchors and aliases the legitimate way, and one split over two -f files.
# Each must exit 0, print exactly the expected `ok:` line on stdout and
# nothing on stderr.
#
# Environment: TESSERA (the binary), TESSERA_SRC (source tree).
set -u
. "$(dirname "$0")/../lib.sh"

: "${TESSERA:?set TESSERA to the tessera binary}"
SRC=${TESSERA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
TIMEOUT=${GOOD_SPECS_TIMEOUT:-60}

cd "$SRC" || exit 1

# expect NAME OK_LINE -f FILE [-f FILE...]
expect() {
    local name=$1 want=$2 problems=() rc got msg
    shift 2
    timeout "$TIMEOUT" "$TESSERA" check "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    got=$(cat "$TMP/out")
    [ "$rc" -eq 0 ] || problems+=("exit: expected 0, got $rc")
    [ "$got" = "$want" ] || problems+=("stdout: expected '$want', got '$got'")
    [ -s "$TMP/err" ] && problems+=("stderr not empty: '$(head -n 3 "$TMP/err" | tr '\n' '|')'")
    if [ ${#problems[@]} -eq 0 ]; then
        ok
    else
        msg=$(printf '%s; ' "${problems[@]}")
        bad "$name: ${msg%; }"
    fi
}

# fleet MODEL COUNT: a Fleet document of one node, node-1, with COUNT MODEL GPUs.
fleet() {
    cat <<EOF
apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: lab}
spec:
  nodes:
  - name: node-1
    gpus:
    - {model: $1, count: $2}
EOF
}

# The worked example of README.md.
expect worked-example "ok: 10 tenants, 7 workloads, 4 of 4 GPUs used" \
    -f examples/four-h100.yaml

# No PriceBook: pricing is optional.
{ fleet h100-80gb-sxm 3; cat <<'EOF'
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: client-a}
spec:
  contract: isolated
  namespaces: [client-a]
  workloads:
  - name: chat
    kind: inference
    memoryHighWaterGiB: 20
    p99Ms: 200
    trust: untrusted
    replicas: 2
    spread: gpu
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: research}
spec:
  contract: shared-trusted
  namespaces: [research]
  workloads:
  - name: notebooks
    kind: dev
    memoryHighWaterGiB: 12
    bestEffort: true
EOF
} >"$TMP/no-pricebook.yaml"
expect no-pricebook "ok: 2 tenants, 2 workloads, 3 of 3 GPUs used" \
    -f "$TMP/no-pricebook.yaml"

# Anchors and aliases: one GPU list and CUDA version shared by two nodes,
# one latency target and KV cache size shared by two workloads.
cat >"$TMP/anchors.yaml" <<'EOF'
apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: lab}
spec:
  nodes:
  - name: node-1
    gpus: &two-h100
    - {model: h100-80gb-sxm, count: 2}
    cudaVersion: &cuda "12.8"
  - name: node-2
    gpus: *two-h100
    cudaVersion: *cuda
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: client-a}
spec:
  contract: isolated
  namespaces: &ns [client-a-prod, client-a-staging]
  workloads:
  - name: chat
    kind: inference
    memoryHighWaterGiB: 20
    kvCacheGiB: &kv 4
    p99Ms: &p99 250
    trust: &trust untrusted
    replicas: 2
    spread: node
  - name: chat-canary
    kind: inference
    memoryHighWaterGiB: 20
    kvCacheGiB: *kv
    p99Ms: *p99
    trust: *trust
EOF
expect anchors-and-aliases "ok: 1 tenants, 2 workloads, 2 of 4 GPUs used" \
    -f "$TMP/anchors.yaml"

# One spec over two files: the fleet in one, the tenants and prices in another.
fleet a100-80gb 2 >"$TMP/fleet.yaml"
cat >"$TMP/tenants.yaml" <<'EOF'
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: client-a}
spec:
  contract: isolated
  namespaces: [client-a]
  workloads:
  - name: summarise
    kind: inference
    memoryHighWaterGiB: 9
    p99Ms: 400
    trust: untrusted
---
apiVersion: tessera.dev/v1alpha1
kind: PriceBook
metadata: {name: list-prices}
spec:
  currency: EUR
  prices:
  - {model: a100-80gb, perGpuHour: "1.80"}
EOF
expect two-files "ok: 1 tenants, 1 workloads, 1 of 2 GPUs used" \
    -f "$TMP/fleet.yaml" -f "$TMP/tenants.yaml"

finish
