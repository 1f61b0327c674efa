#!/bin/bash
# meter_catalog.sh - one catalog for every verb: a fleet of a model that only
# an imported catalog knows is planned (plan --catalog), imported (meter
# import --catalog), counted (usage --catalog) and priced (invoice --catalog),
# and TESSERA_CATALOG does the same for all of them. Without the catalog each
# verb refuses the spec naming the unknown model (exit 2). usage and invoice
# name the model by the same catalog key, the display name beside it.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
cat > "$TMP/extra.yaml" <<'YAML'
apiVersion: tessera.dev/v1alpha1
kind: GpuModel
metadata: {name: lab-test-card}
spec:
  displayName: "Lab Test 24GB"
  productNames: ["NVIDIA Lab Test 24GB"]
  memoryGiB: 22.0
  sms: 72
  architecture: ampere
  mig: false
YAML
cat > "$TMP/spec.yaml" <<'YAML'
apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: f}
spec:
  nodes: [{name: n1, gpus: [{model: lab-test-card, count: 1}]}]
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: lab}
spec:
  contract: shared-trusted
  namespaces: [lab-ns]
---
apiVersion: tessera.dev/v1alpha1
kind: PriceBook
metadata: {name: p}
spec:
  currency: EUR
  prices: [{model: lab-test-card, perGpuHour: "3.60"}]
YAML
L='gpu="0",UUID="GPU-lab",modelName="NVIDIA Lab Test 24GB",Hostname="n1",namespace="lab-ns",pod="p"'
printf 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{%s} 0.5\n' "$L" >"$TMP/s.prom"
DB="sqlite:$TMP/m.db"
C=(--catalog "$TMP/extra.yaml")

# without the catalog: refused, the model named
expect_rc 2 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$DB" --at 1700000000 "$TMP/s.prom"
expect_in "$TMP/err" "lab-test-card"
check "meter import without the catalog created the store" [ ! -e "$TMP/m.db" ]

# with it: 3 scrapes 15 s apart -> 30 s of a whole card
for t in 1700000000 1700000015 1700000030; do
    expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" "${C[@]}" --db "$DB" --at $t "$TMP/s.prom"
    expect_in "$TMP/out" "1 new samples, 0 lines rejected"
done
expect_rc 2 "$TESSERA" usage -f "$TMP/spec.yaml" --db "$DB"
expect_in "$TMP/err" "lab-test-card"
expect_rc 0 "$TESSERA" usage -f "$TMP/spec.yaml" "${C[@]}" --db "$DB" -o json
cp "$TMP/out" "$TMP/usage.json"
expect_rc 2 "$TESSERA" invoice -f "$TMP/spec.yaml" --db "$DB" --tenant lab --period 2023-11
expect_rc 0 "$TESSERA" invoice -f "$TMP/spec.yaml" "${C[@]}" --db "$DB" --tenant lab \
    --period 2023-11 -o json
cp "$TMP/out" "$TMP/invoice.json"
python3 - "$TMP/usage.json" "$TMP/invoice.json" >"$TMP/py.out" 2>&1 <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
inv = json.load(open(sys.argv[2]))
uh = 30 * 10**6 // 3600  # 30 s of one whole card
assert [(r["tenant"], r["allocationMicroGpuHours"]) for r in rows] == [("lab", uh)], rows
# one model key in usage and invoice (the catalog's), the display name beside it
assert (rows[0]["model"], rows[0]["displayName"], rows[0]["profile"]) == \
    ("lab-test-card", "Lab Test 24GB", "whole"), rows
[line] = inv["lines"]
assert line["model"] == "lab-test-card" and line["pricePerGpuHourMicro"] == 3600000, line
assert line["profile"] == "whole", line
from decimal import Decimal, ROUND_HALF_EVEN  # one line, rounded once, half to even
assert inv["totalMinor"] == int(
    (Decimal(uh * 3600000) / 10**10).quantize(1, ROUND_HALF_EVEN)) == 3, inv
print("ok")
PY
check "usage and invoice with the catalog: $(cat "$TMP/py.out")" grep -qx ok "$TMP/py.out"

# TESSERA_CATALOG gives the same to every verb
export TESSERA_CATALOG="$TMP/extra.yaml"
expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$DB" --at 1700000045 "$TMP/s.prom"
expect_rc 0 "$TESSERA" usage -f "$TMP/spec.yaml" --db "$DB"
expect_in "$TMP/out" "lab-test-card              whole              0.012500"
expect_rc 0 "$TESSERA" invoice -f "$TMP/spec.yaml" --db "$DB" --tenant lab --period 2023-11
# 0.0125 GPU-h x 3.60 = 0.045: half a cent, to the even cent (docs/metering.md)
expect_in "$TMP/out" "Total (allocation basis, billed): 0.04 EUR"
finish
