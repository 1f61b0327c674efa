#!/bin/bash
# fragment.sh - fragmentation explained (issue 12): a board (imported with
# --catalog) whose 2g profile may only start at unit 1 and whose 1g profile
# only at units 1 and 2. With the 2g instance on the one card, 2 of its 4
# slices are free but no legal 1g start is: the error says so, names the
# starts and what covers them, and that no single move frees one. With a
# second card the same workloads plan (one on each card).
. "$(dirname "$0")/../lib.sh"
cat >"$TMP/cat.yaml" <<'YAML'
apiVersion: tessera.dev/v1alpha1
kind: GpuModel
metadata: {name: frag-24gb}
spec:
  displayName: "Fragmenting test board"
  productNames: ["Fragmenting test board"]
  memoryGiB: 23.7
  sms: 56
  architecture: ampere
  mig: true
  migGrid: 4
  computeSlices: 4
  profiles:
  - {name: 1g.6gb, id: 14, computeSlices: 1, memoryGiB: 5.81, sms: 14, maxCount: 2, placements: "{1,2}:1"}
  - {name: 2g.12gb, id: 5, computeSlices: 2, memoryGiB: 11.69, sms: 28, maxCount: 1, placements: "{1}:2"}
YAML
cat >"$TMP/one.yaml" <<'YAML'
apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: f}
spec:
  nodes:
  - name: n0
    gpus: [{model: frag-24gb, count: 1}]
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: a}
spec:
  contract: isolated
  namespaces: [a]
  workloads:
  - {name: big, kind: inference, memoryHighWaterGiB: 10, p99Ms: 100}
  - {name: small, kind: inference, memoryHighWaterGiB: 4, p99Ms: 100}
YAML
sed 's/count: 1}/count: 2}/' "$TMP/one.yaml" >"$TMP/two.yaml"

expect_rc 1 "$TESSERA" plan -f "$TMP/one.yaml" --catalog "$TMP/cat.yaml"
expect_in "$TMP/err" "one.yaml:17:5: Tenant/a.spec.workloads[1]: a/small r0 (1g.6gb) does not fit"
expect_in "$TMP/err" "n0 gpu 0 has 2 free slices of 4 (it needs 1) but no legal start left for 1g.6gb"
expect_in "$TMP/err" "its starts are 1 (a/big r0 (2g.12gb)), 2 (a/big r0 (2g.12gb))"
expect_in "$TMP/err" "no single move frees one"

expect_rc 0 "$TESSERA" plan -f "$TMP/two.yaml" --catalog "$TMP/cat.yaml" -o json
/usr/bin/python3 - "$TMP/out" <<'PY' && ok || bad "two cards: one instance on each"
import json, sys
p = json.load(open(sys.argv[1]))
held = sorted(len(g["instances"]) for g in p["gpus"])
assert held == [1, 1], held
PY
finish
