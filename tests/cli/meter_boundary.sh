#!/bin/bash
# meter_boundary.sh - an outage across a month boundary (issue 32) is billed
# by one rule in `usage` and `invoice`: the interval after a device's scrape
# ends at its next scrape, capped at twice --interval, however late that
# scrape comes; so the part of the capped interval before the boundary is
# the earlier month's, whether the month is read alone (the invoice) or with
# the next (usage over both). Three instances of the real H100 MIG scrape
# (tests/fixtures/dcgm, issue 512; 1/8 of the card each) scraped every 15 s
# on 2026-11-30 and 2026-12-01 with outages across the boundary: GI 7's last
# scrape 15 s before it, GI 9's 10 minutes before it, GI 8's 20 s before it,
# all back an hour after it. The months' figures are worked out here from
# the scrape times; SQLite and PostgreSQL.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PG="$TMP/pg"
PORT=$(free_port)
trap 'scripts/pg-test-server stop "$PG" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
F=tests/fixtures/dcgm/nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom
B=1796083200 # 2026-12-01T00:00:00Z
cat "$TESSERA_FIXTURES/meter/lab.yaml" - >"$TMP/spec.yaml" <<'YAML'
---
apiVersion: tessera.dev/v1alpha1
kind: PriceBook
metadata: {name: p}
spec:
  currency: EUR
  prices: [{model: h100-80gb-sxm, perGpuHour: "2.90"}]
YAML

# the scrapes, and "MONTH tenant micro-GPU-hours" by the rule
python3 - "$F" "$TMP/outage.prom" "$B" >"$TMP/want" <<'PY'
import re, sys
src, out, b = sys.argv[1], sys.argv[2], int(sys.argv[3]) * 1000
lines = [l.rstrip("\n") for l in open(src) if l.startswith("DCGM_")]
last = {"7": b - 15000, "9": b - 600000, "8": b - 20000}  # the last scrape before the outage
before = lambda gi: [t for t in range(b - 7200000, b, 15000) if t <= last[gi]] + [last[gi]]
after = list(range(b + 3600000, b + 7200000, 15000))
times = {gi: sorted(set(before(gi))) + after for gi in last}
body = []
for l in lines:
    gi = re.search(r'GPU_I_ID="(\d+)"', l).group(1)
    head = re.match(r'(\S+\{.*\}) \S+$', l).group(1)
    body += ["%s 0.5 %d" % (head, t) for t in times[gi]]
open(out, "w").write("\n".join(body) + "\n")
tenant = {"7": "lab", "9": "lab", "8": "unattributed"}
num = {}
for gi, ts in times.items():
    for a, n in zip(ts, ts[1:]):
        end = a + min(n - a, 30000)
        for month, lo, hi in (("2026-11", -2**62, b), ("2026-12", b, 2**62)):
            part = max(0, min(end, hi) - max(a, lo))
            key = (month, tenant[gi])
            num[key] = num.get(key, 0) + part * 125000
for (month, t), n in sorted(num.items()):
    print(month, t, (n + 1800000) // 3600000)
PY
# got DB: the same lines from usage (each month) and lab's invoices
got() {
    local month from to
    for m in "2026-11 2026-11-01T00:00:00Z $B" "2026-12 $B 2027-01-01T00:00:00Z"; do
        read -r month from to <<<"$m"
        "$TESSERA" usage -f "$TMP/spec.yaml" --db "$1" --from "$from" --to "$to" -o json |
            python3 -c 'import json, sys
for r in sorted(json.load(sys.stdin)["rows"], key=lambda r: r["tenant"]):
    print(sys.argv[1], r["tenant"], r["allocationMicroGpuHours"])' "$month"
    done
}
invoiced() {
    for month in 2026-11 2026-12; do
        "$TESSERA" invoice -f "$TMP/spec.yaml" --db "$1" --tenant lab --period $month -o json |
            python3 -c 'import json, sys
print(sys.argv[1], "lab", sum(l["microGpuHours"] for l in json.load(sys.stdin)["lines"]))' "$month"
    done
}
backend() {
    expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$1" --at "$B" "$TMP/outage.prom"
    got "$1" >"$TMP/$2.usage"
    check "$2: usage by month $(paste -sd' ' "$TMP/$2.usage"), by the rule $(paste -sd' ' "$TMP/want")" \
        cmp -s "$TMP/$2.usage" "$TMP/want"
    invoiced "$1" >"$TMP/$2.invoice"
    grep ' lab ' "$TMP/want" >"$TMP/want.lab"
    check "$2: lab's invoices $(paste -sd' ' "$TMP/$2.invoice"), by the rule $(paste -sd' ' "$TMP/want.lab")" \
        cmp -s "$TMP/$2.invoice" "$TMP/want.lab"
    # usage over both months: each tenant's months added, within one micro-GPU-hour
    "$TESSERA" usage -f "$TMP/spec.yaml" --db "$1" -o json | python3 -c '
import json, sys
want = {}
for l in open(sys.argv[1]):
    m, t, v = l.split(); want[t] = want.get(t, 0) + int(v)
got = {r["tenant"]: r["allocationMicroGpuHours"] for r in json.load(sys.stdin)["rows"]}
assert got.keys() == want.keys() and all(abs(got[t] - want[t]) <= 1 for t in got), (got, want)
' "$TMP/want" && ok || bad "$2: usage over both months is not the months added"
}
backend "sqlite:$TMP/s.db" sqlite
if ! URL=$(scripts/pg-test-server start "$PG" "$PORT" 2>"$TMP/start.err"); then
    bad "pg-test-server start failed"; cat "$TMP/start.err"; finish; exit 1
fi
backend "$URL" postgresql
finish
