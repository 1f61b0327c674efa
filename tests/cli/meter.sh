#!/bin/bash
# meter.sh - `tessera meter import` and `tessera usage` as a user runs them, on
# real dcgm-exporter scrapes (tests/fixtures/dcgm): a sequence of scrapes with a
# re-sent one, a gap and an out-of-order import, checked against a reference
# computation written independently here (Python, from the same files and
# times); bad times, bad URLs and malformed lines.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
F=tests/fixtures/dcgm/nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom
DB=sqlite:$TMP/m.db
cat "$TESSERA_FIXTURES/meter/lab.yaml" "$TESSERA_FIXTURES/meter/lab-prices.yaml" >"$TMP/spec.yaml"
# scrapes at 0, 15, 15 (re-sent), 45 (late: imported last), 30, and 600 (after a gap)
TIMES="1700000000 1700000015 1700000015 1700000600 1700000030 1700000045"
for t in $TIMES; do
    expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db $DB --at $t $F
done
expect_in "$TMP/out" "3 device scrapes, 3 new samples, 0 lines rejected, 0 custody violations"
expect_rc 0 "$TESSERA" usage -f "$TMP/spec.yaml" --db $DB -o json
cp "$TMP/out" "$TMP/usage.json"
if /usr/bin/python3 - "$F" "$TMP/usage.json" $TIMES <<'PY'
import json, re, sys
prom, usage, times = sys.argv[1], sys.argv[2], sorted(set(int(t) for t in sys.argv[3:]))
devices = {}
for line in open(prom):
    m = re.match(r'(\w+)\{(.*)\} (\S+)', line)
    if not m:
        continue
    labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
    tenant = "lab" if labels.get("namespace") == "model-playground-stg" else "unattributed"
    devices[labels["UUID"] + "/" + labels["GPU_I_ID"]] = tenant
want = {}
for dev, tenant in devices.items():
    ms = sum(min(b - a, 30) * 1000 for a, b in zip(times, times[1:]))  # gaps capped at 2 x 15 s
    want[tenant] = want.get(tenant, 0) + ms * 125000                  # 1g.10gb = 1/8 of the card
got = {r["tenant"]: r["allocationMicroGpuHours"] for r in json.load(open(usage))["rows"]}
want = {t: (v + 1800000) // 3600000 for t, v in want.items()}
assert got == want, (got, want)
PY
then ok; else bad "usage differs from the reference computation"; fi
expect_rc 0 "$TESSERA" usage -f "$TMP/spec.yaml" --db $DB
expect_in "$TMP/out" "lab                  h100-80gb-sxm              1g.10gb"
# the invoice prices the same hours: the DCGM model name finds h100-80gb-sxm's price
expect_rc 0 "$TESSERA" invoice -f "$TMP/spec.yaml" --db $DB --tenant lab --period 2023-11 -o json
cp "$TMP/out" "$TMP/invoice.json"
if /usr/bin/python3 - "$TMP/usage.json" "$TMP/invoice.json" <<'PY'
import json, sys
usage = {r["tenant"]: r for r in json.load(open(sys.argv[1]))["rows"]}
inv = json.load(open(sys.argv[2]))
assert inv["currency"] == "EUR" and inv["tenant"] == "lab" and inv["period"] == "2023-11"
(line,) = inv["lines"]
assert line["model"] == "h100-80gb-sxm" and line["profile"] == "1g.10gb"
assert line["pricePerGpuHourMicro"] == 2900000
uh = usage["lab"]["allocationMicroGpuHours"]
assert line["microGpuHours"] == uh
from decimal import Decimal, ROUND_HALF_EVEN  # one line, rounded once, half to even
assert inv["totalMinor"] == line["amountMinor"] == int(
    (Decimal(uh * 2900000) / 10**10).quantize(1, ROUND_HALF_EVEN)), inv
assert inv["currencyExponent"] == 2, inv
PY
then ok; else bad "invoice differs from the usage and the price"; fi
expect_rc 0 "$TESSERA" invoice -f "$TMP/spec.yaml" --db $DB --tenant lab --period 2023-11
expect_in "$TMP/out" "Total (allocation basis, billed):"
expect_rc 0 "$TESSERA" invoice -f "$TMP/spec.yaml" --db $DB --tenant lab --period 2023-11 -o csv
expect_in "$TMP/out" 'lab,2023-11,EUR,h100-80gb-sxm,1g.10gb,'
expect_rc 0 "$TESSERA" invoice -f "$TMP/spec.yaml" --db $DB --tenant lab --period 2023-11 -o html
expect_in "$TMP/out" "<dt>Period<dd>2023-11-01 to 2023-11-30"
# another month has nothing to bill
expect_rc 0 "$TESSERA" invoice -f "$TMP/spec.yaml" --db $DB --tenant lab --period 2023-12 -o json
expect_in "$TMP/out" '"totalMinor": 0'
expect_rc 2 "$TESSERA" invoice -f "$TMP/spec.yaml" --db $DB --tenant nobody --period 2023-11
expect_in "$TMP/err" "no tenant 'nobody' in the spec"
expect_rc 2 "$TESSERA" invoice -f "$TMP/spec.yaml" --db $DB --tenant lab --period 2023-13
expect_in "$TMP/err" "--period '2023-13': expected a month as YYYY-MM"
# a malformed line is reported with its place; the rest of the scrape is stored
{ cat $F; echo 'DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-x",GPU_I_PROFILE="<<<NULL>>>"}'; } > "$TMP/bad.prom"
expect_rc 1 "$TESSERA" meter import -f "$TMP/spec.yaml" --db $DB --at 1700000700 "$TMP/bad.prom"
expect_in "$TMP/err" "bad.prom:6:70: no value"
expect_in "$TMP/out" "3 device scrapes, 3 new samples, 1 lines rejected"
# custody: a pod of another tenant on lab's planned 3g.40gb is billed to who used it,
# reported, and recorded in the ledger (MACed with the key); a device without pods
# goes to the plan's tenant
cp "$TESSERA_FIXTURES/meter/custody.yaml" "$TMP/cust.yaml"
L='gpu="0",UUID="GPU-c",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",GPU_I_PROFILE="3g.40gb",GPU_I_ID="2"'
printf 'DCGM_FI_DEV_GPU_UTIL{%s,namespace="other-ns",pod="p1"} 40\n' "$L" > "$TMP/intruder.prom"
printf 'DCGM_FI_DEV_GPU_UTIL{%s} 0\n' "$L" > "$TMP/idle.prom"
printf 'k3y\n' > "$TMP/key"
CDB=sqlite:$TMP/cust.db
expect_rc 0 "$TESSERA" meter import -f "$TMP/cust.yaml" --db $CDB --at 1700000000 "$TMP/idle.prom"
expect_rc 0 "$TESSERA" meter import -f "$TMP/cust.yaml" --db $CDB --at 1700000015 --hmac-key-file "$TMP/key" "$TMP/intruder.prom"
expect_in "$TMP/out" "1 custody violations"
expect_in "$TMP/err" "custody violation: GPU-c/2 on 3g.40gb (node n1) at 2023-11-14T22:13:35Z: pod other-ns/p1 of tenant 'other' on a device planned for 'lab'"
expect_rc 0 "$TESSERA" meter import -f "$TMP/cust.yaml" --db $CDB --at 1700000030 "$TMP/idle.prom"
expect_rc 0 "$TESSERA" usage -f "$TMP/cust.yaml" --db $CDB -o json
# 0-15 s idle (plan: lab), 15-30 s the intruder (other), each 15 s x 4/8 of a card
if /usr/bin/python3 - "$TMP/out" <<'PY'
import json, sys
got = {r["tenant"]: r["allocationMicroGpuHours"] for r in json.load(open(sys.argv[1]))["rows"]}
want = {"lab": (15000 * 500000 + 1800000) // 3600000, "other": (15000 * 500000 + 1800000) // 3600000}
assert got == want, (got, want)
PY
then ok; else bad "custody usage"; fi
expect_rc 0 "$TESSERA" ledger history --db $CDB --tenant other
expect_in "$TMP/out" "observed"
expect_in "$TMP/out" "other-ns/p1"
expect_rc 0 "$TESSERA" ledger verify --db $CDB --hmac-key-file "$TMP/key"
expect_rc 2 "$TESSERA" meter import -f "$TMP/cust.yaml" --db $CDB --at 1 --hmac-key-file "$TMP/nokey" "$TMP/idle.prom"
expect_in "$TMP/err" "tessera: $TMP/nokey: cannot open"
# bad input
expect_rc 2 "$TESSERA" meter import -f "$TMP/spec.yaml" --db $DB --at yesterday $F
expect_in "$TMP/err" "bad value 'yesterday'"
expect_rc 2 "$TESSERA" meter import -f "$TMP/spec.yaml" --db nope:/x --at 1 $F
expect_in "$TMP/err" "unsupported database URL"
expect_rc 2 "$TESSERA" meter import -f "$TMP/spec.yaml" --db $DB --at 1
expect_rc 2 "$TESSERA" meter frobnicate
expect_rc 0 "$TESSERA" meter --help
expect_rc 2 "$TESSERA" usage -f "$TMP/spec.yaml" --db $DB -o xml
finish
