#!/usr/bin/env bash
# catalog_import.sh - `tessera catalog import` end to end: import the real
# RTX PRO 6000 output (12-unit grid), plan a small spec on a node with the
# imported model through `tessera plan --catalog`, and check that bad input
# files exit 2 with a file:line:column message. Needs TESSERA (the binary)
# and TESSERA_FIXTURES (tests/fixtures) in the environment.
set -eu
. "$(dirname "$0")/../lib.sh"

fixtures="$TESSERA_FIXTURES/nvidia-smi"
rtx="$fixtures/rtx-pro-6000-bw-server_nvidia-smi-L-lgip-lgipp-lgi.txt"
a100="$fixtures/a100-sxm4-40gb_nvidia-smi-mig-lgip-cgi-lgi-lcip-L.txt"

# run NAME WANT_RC CMD...: run CMD, stdout to $TMP/out, stderr to $TMP/err.
run() {
    local name=$1 want=$2 rc=0
    shift 2
    "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
    if [ "$rc" -eq "$want" ]; then ok; else bad "$name: exit $rc, want $want: $(cat "$TMP/err")"; fi
}

# has NAME FILE TEXT: FILE contains the fixed string TEXT.
has() {
    if grep -qF -- "$3" "$2"; then ok; else bad "$1: '$3' not in $(basename "$2")"; fi
}

cat >"$TMP/spec.yaml" <<'EOF'
apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: rtx-lab}
spec:
  nodes:
  - name: rtx-node-1
    gpus:
    - {model: my-rtx6000, count: 1}
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: alpha}
spec:
  contract: isolated
  dataClass: confidential
  namespaces: [alpha]
  workloads:
  - {name: chat, kind: inference, memoryHighWaterGiB: 40, p99Ms: 250, trust: untrusted}
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: beta}
spec:
  contract: isolated
  dataClass: confidential
  namespaces: [beta]
  workloads:
  - {name: bot, kind: inference, memoryHighWaterGiB: 18, p99Ms: 300, trust: untrusted,
     replicas: 2, spread: none}
EOF

# Import: the document names the card and its 12-unit grid.
run import 0 "$TESSERA" catalog import --name my-rtx6000 "$rtx"
cp "$TMP/out" "$TMP/rtx.yaml"
has import "$TMP/rtx.yaml" "metadata: {name: my-rtx6000}"
has import "$TMP/rtx.yaml" "migGrid: 12"
has import "$TMP/rtx.yaml" '{name: 2g.48gb, id: 5, computeSlices: 2, memoryGiB: 47.38, sms: 94, maxCount: 2, placements: "{0,6}:6"}'

# The same input gives the same bytes.
run again 0 "$TESSERA" catalog import --name my-rtx6000 "$rtx"
if cmp -s "$TMP/out" "$TMP/rtx.yaml"; then ok; else bad "import is not deterministic"; fi

# The catalog accepts it.
run show 0 "$TESSERA" catalog show my-rtx6000 --catalog "$TMP/rtx.yaml"
has show "$TMP/out" "grid 12 units, 4 compute slices"

# Plan on the imported model: 2g.48gb + 2 x 1g.24gb at their 12-unit starts.
run plan 0 "$TESSERA" plan --catalog "$TMP/rtx.yaml" -f "$TMP/spec.yaml"
has plan "$TMP/out" "rtx-node-1 gpu 0  my-rtx6000  mig"
has plan "$TMP/out" "2g.48gb    @0:6  alpha/chat"
has plan "$TMP/out" "1g.24gb    @6:3  beta/bot"
has plan "$TMP/out" "1g.24gb    @9:3  beta/bot"
has plan "$TMP/out" "GPUs used          1 of 1"

# Without the imported catalog the model does not exist.
run plan-without-import 2 "$TESSERA" plan -f "$TMP/spec.yaml"
has plan-without-import "$TMP/err" "unknown GPU model 'my-rtx6000'"

# Bad input files: exit 2 and a located message.
run no-lgipp 2 "$TESSERA" catalog import "$a100"
has no-lgipp "$TMP/err" "tessera: $a100:15:28: no placements for profile ID 19 (1g.5gb): add the output of nvidia-smi mig -lgipp"
printf '| GPU instance profiles: |\n|   0  MIG 1g.10gb  19  7/7  9.62  No  14  1  0  |\n|   0  MIG 3g.40gb  9  2/2\n' >"$TMP/cut.txt"
run truncated 2 "$TESSERA" catalog import "$TMP/cut.txt"
has truncated "$TMP/err" "tessera: $TMP/cut.txt:3:27: malformed nvidia-smi mig -lgip row: expected memory GiB like 19.50, found end of line"
printf '\177ELF\002\001\001\000\000' >"$TMP/binary"
run binary 2 "$TESSERA" catalog import "$TMP/binary"
has binary "$TMP/err" ":1:8: binary data (a NUL byte)"
run missing 2 "$TESSERA" catalog import "$TMP/does-not-exist.txt"
has missing "$TMP/err" "tessera: $TMP/does-not-exist.txt: cannot open"
run wrong-gpu 2 "$TESSERA" catalog import --gpu 3 "$rtx"
has wrong-gpu "$TMP/err" "no nvidia-smi mig -lgip rows for GPU 3 (there are some for GPU 0)"
run bad-name 2 "$TESSERA" catalog import --name My_RTX "$rtx"
has bad-name "$TMP/err" "catalog name 'My_RTX' must be lowercase letters, digits and '-'"

finish
