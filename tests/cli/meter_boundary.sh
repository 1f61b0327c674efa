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
# all back an hour after it; and a card the plan does not have, listing two
# of lab's pods (each charged half of it under its own key, GPU-9#ns/pod),
# whose last scrape is 10 s before the boundary and whose pods come back
# under other names (the device's next scrape is under none of its old
# keys). The months' figures are worked out here from the scrape times;
# SQLite and PostgreSQL.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PG="$TMP/pg"
PORT=$(free_port)
trap 'scripts/pg-test-server stop "$PG" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
F=tests/fixtures/dcgm/nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom
B=1796083200 # 2026-12-01T00:00:00Z
cat "$TESSERA_FIXTURES/meter/lab.yaml" "$TESSERA_FIXTURES/meter/lab-prices.yaml" >"$TMP/spec.yaml"

# the scrapes, and "MONTH tenant micro-GPU-hours" by the rule
python3 - "$F" "$TMP/outage.prom" "$B" >"$TMP/want" <<'PY'
import re, sys
src, out, b = sys.argv[1], sys.argv[2], int(sys.argv[3]) * 1000
lines = [l.rstrip("\n") for l in open(src) if l.startswith("DCGM_")]
last = {"7": b - 15000, "9": b - 600000, "8": b - 20000}  # the last scrape before the outage
before = lambda gi: [t for t in range(b - 7200000, b, 15000) if t <= last[gi]] + [last[gi]]
after = list(range(b + 3600000, b + 7200000, 15000))
last["card"] = b - 10000
times = {gi: sorted(set(before(gi))) + after for gi in last}
body = []
for l in lines:
    gi = re.search(r'GPU_I_ID="(\d+)"', l).group(1)
    head = re.match(r'(\S+\{.*\}) \S+$', l).group(1)
    body += ["%s 0.5 %d" % (head, t) for t in times[gi]]
    if gi == "7":  # the card: GI 7's line as a whole GPU-9, two pods, renamed after the outage
        card = re.sub(r',GPU_I_PROFILE="[^"]*",GPU_I_ID="[^"]*"', "", head)
        card = card.replace('gpu="0"', 'gpu="1"').replace(re.search(r'UUID="([^"]*)"', card).group(1), "GPU-9")
        for t in times["card"]:
            for pod in ("a", "b") if t < b else ("c", "d"):
                body.append("%s 0.5 %d" % (re.sub(r'pod="[^"]*"', 'pod="%s"' % pod, card), t))
open(out, "w").write("\n".join(body) + "\n")
tenant = {"7": "lab", "9": "lab", "8": "unattributed", "card": "lab"}
share = {"7": 125000, "9": 125000, "8": 125000, "card": 1000000}  # the card: 2 pods x 1/2
num = {}
for gi, ts in times.items():
    for a, n in zip(ts, ts[1:]):
        end = a + min(n - a, 30000)
        for month, lo, hi in (("2026-11", -2**62, b), ("2026-12", b, 2**62)):
            part = max(0, min(end, hi) - max(a, lo))
            key = (month, tenant[gi], gi == "card")  # a row per profile (whole, 1g.10gb)
            num[key] = num.get(key, 0) + part * share[gi]
uh = {}  # each row rounded, as usage and the invoice lines are, then added per tenant
for (month, t, _), n in num.items():
    uh[month, t] = uh.get((month, t), 0) + (n + 1800000) // 3600000
for (month, t), v in sorted(uh.items()):
    print(month, t, v)
PY
# got DB: the same lines from usage (each month) and lab's invoices
got() {
    local month from to
    for m in "2026-11 2026-11-01T00:00:00Z $B" "2026-12 $B 2027-01-01T00:00:00Z"; do
        read -r month from to <<<"$m"
        "$TESSERA" usage -f "$TMP/spec.yaml" --db "$1" --from "$from" --to "$to" -o json |
            python3 -c 'import json, sys
got = {}
for r in json.load(sys.stdin)["rows"]:
    got[r["tenant"]] = got.get(r["tenant"], 0) + r["allocationMicroGpuHours"]
for t in sorted(got):
    print(sys.argv[1], t, got[t])' "$month"
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
    # usage over both months: each tenant's months added, within one micro-GPU-hour a row
    "$TESSERA" usage -f "$TMP/spec.yaml" --db "$1" -o json | python3 -c '
import json, sys
want = {}
for l in open(sys.argv[1]):
    m, t, v = l.split(); want[t] = want.get(t, 0) + int(v)
got = {}
for r in json.load(sys.stdin)["rows"]:
    got[r["tenant"]] = got.get(r["tenant"], 0) + r["allocationMicroGpuHours"]
assert got.keys() == want.keys() and all(abs(got[t] - want[t]) <= 2 for t in got), (got, want)
' "$TMP/want" && ok || bad "$2: usage over both months is not the months added"
}
backend "sqlite:$TMP/s.db" sqlite
if ! URL=$(scripts/pg-test-server start "$PG" "$PORT" 2>"$TMP/start.err"); then
    bad "pg-test-server start failed"; cat "$TMP/start.err"; finish; exit 1
fi
backend "$URL" postgresql
finish
