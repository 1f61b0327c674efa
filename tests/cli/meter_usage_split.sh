#!/bin/bash
# labels: slow demo-day
# meter_usage_split.sh - a shared workload split by a usage metric
# (PriceBook sharedSplit: usage), import -> invoice: the worked example's
# day (the provider's embedding pool, used by rag-e..rag-h) and Istio's
# istio_requests_total for it, scraped alongside DCGM (several series of a
# consumer, counters restarted, a series that vanishes). Each consumer's part is the pool's
# micro-GPU-hours x its requests in the month / all the consumers' (floors,
# the rest to the largest remainders), worked out here from the counter
# values written, not from tessera (each series' increase as Prometheus's
# increase() counts it, summed per consumer: rag-e's second series restarts,
# rag-h's 503 series vanishes at 10:00, which summed per consumer would count
# rag-e's and rag-h's whole totals again); a consumer with no requests gets 0; the
# owner passes on the whole pool. A consumer label naming a tenant that does
# not use the pool, or no tenant, is refused with its line and nothing is
# billed to it. Without any request counted the split falls back to the
# uses' weights and the invoice says so.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
RAGS="rag-e rag-f rag-g rag-h"
PG="$TMP/pg"
PORT=$(free_port)
trap 'scripts/pg-test-server stop "$PG" >/dev/null 2>&1; rm -rf "$TMP"' EXIT

expect_rc 0 demo_day "$TMP/demo"
cp "$TMP/demo/metering.db" "$TMP/none.db" # no requests counted: by weight
python3 - "$TMP/usage.yaml" <<'PY'
import sys
s = open("examples/four-h100.yaml").read()
s = s.replace("  migShareBasis: memory\n", "  migShareBasis: memory\n  sharedSplit: usage\n")
old = "namespaces: [rag-h]\n  uses: [{tenant: provider, workload: embedding}]"
assert old in s and "sharedSplit: usage" in s
s = s.replace(old, old[:-2] + ", weight: 3}]")
open(sys.argv[1], "w").write(s)
PY

# the counters, hourly over the day; the requests each consumer made, by the rule
python3 - "$TMP/istio.prom" >"$TMP/want" <<'PY'
import sys
t0 = 1793577600000  # 2026-11-02T00:00:00Z
L = 'istio_requests_total{destination_workload_namespace="platform-embedding",destination_workload="embedding",source_workload_namespace="%s",response_code="%s"} %d %d'
def value(ns, code, h):
    if ns == "rag-e" and code == "500":  # a second series of rag-e, restarted at 07:00
        return 900 + 7 * h if h < 7 else 3 * (h - 7)
    if ns == "rag-e": return 1000 + 30 * h
    if ns == "rag-f": return 10 * h if h < 12 else 5 + 10 * (h - 12)  # restarted at 12:00
    if ns == "rag-g": return 5
    return 40 * h if code == "200" else 600 + 20 * h
# rag-h's 503 series vanishes after 10:00 (its pod gone): nothing after its last point
present = lambda ns, code, h: not (ns == "rag-h" and code == "503" and h > 10)
series = [("rag-e", "200"), ("rag-e", "500"), ("rag-f", "200"), ("rag-g", "200"),
          ("rag-h", "200"), ("rag-h", "503")]
lines = [L % (ns, c, value(ns, c, h), t0 + 3600000 * h) for h in range(25) for ns, c in series
         if present(ns, c, h)]
lines.append(L % ("client-a-prod", "200", 7, t0))   # a tenant that does not use the pool
lines.append(L % ('evil\\"ns', "200", 9, t0))       # no tenant at all
lines.append(L % ("platform-embedding", "200", 9, t0))  # the owner's own: not counted
# the consumer's own sidecar reports the same requests again: only the destination's count
S = L.replace("source_workload_namespace", 'reporter="source",source_workload_namespace')
lines += [S % ("rag-e", "200", 10**6 * h, t0 + 3600000 * h) for h in range(25)]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
want = {}
for ns, c in series:  # per series, as Prometheus's increase() (no extrapolation)
    vs = [value(ns, c, h) for h in range(25) if present(ns, c, h)]
    want[ns] = want.get(ns, 0) + sum(b - a if b >= a else b for a, b in zip(vs, vs[1:]))
print(" ".join(str(want[r]) for r in ("rag-e", "rag-f", "rag-g", "rag-h")))
PY
DB=sqlite:$TMP/demo/metering.db
expect_rc 1 "$TESSERA" meter import -f "$TMP/usage.yaml" --db "$DB" --at 2026-11-02T00:00:00Z "$TMP/istio.prom"
expect_in "$TMP/err" "istio.prom:137:1: requests from source_workload_namespace 'client-a-prod' (tenant client-a) to provider/embedding: not a consumer of it, nothing billed to it"
expect_in "$TMP/err" "istio.prom:138:1: requests from source_workload_namespace 'evil\"ns' (no tenant) to provider/embedding"
expect_in "$TMP/out" "0 device scrapes, 0 new samples, 2 lines rejected"
got=$(sqlite3 "$TMP/demo/metering.db" "SELECT count(*), count(DISTINCT consumer) FROM requests")
check "stored request counts: $got, want 136|4 (25 hours x 6 series less rag-h's 503 gone 14)" [ "$got" = "136|4" ]

# invoices DB DIR: the rags' and the provider's November invoices in JSON
invoices() {
    mkdir -p "$2"
    for t in $RAGS provider; do
        "$TESSERA" invoice -f "$TMP/usage.yaml" --db "$1" --tenant "$t" --period 2026-11 -o json \
            >"$2/$t.json" || bad "invoice $t $1"
    done
}
# verify DIR WEIGHTS NOTE: each rag's part of the pool by WEIGHTS, the provider's passed on
verify() {
    python3 - "$@" >"$TMP/py.out" 2>&1 <<'PY'
import json, sys
d, w, note = sys.argv[1], [int(x) for x in sys.argv[2].split()], sys.argv[3]
rags = ["rag-e", "rag-f", "rag-g", "rag-h"]
inv = {t: json.load(open(f"{d}/{t}.json")) for t in rags + ["provider"]}
pool = (7 * (86400 - 15) * 1000 * 125000 + 1800000) // 3600000  # 7 x 1g.10gb, the day
parts = [pool * x // sum(w) for x in w]
rem = [pool * x % sum(w) for x in w]
for i in sorted(range(4), key=lambda i: (-rem[i], i))[: pool - sum(parts)]:
    parts[i] += 1
for t, p in zip(rags, parts):
    [l] = [l for l in inv[t]["lines"] if l.get("note", "").startswith("shared:")]
    assert l["note"] == note and l["microGpuHours"] == p, (t, l, p)
[l] = [l for l in inv["provider"]["lines"] if l.get("note", "").startswith("passed on:")]
assert l["microGpuHours"] == -pool, (l, pool)
print("ok", parts)
PY
    if [ $? -eq 0 ]; then ok; else bad "$1: $(tail -3 "$TMP/py.out")"; fi
}
invoices "$DB" "$TMP/by-usage"
verify "$TMP/by-usage" "$(cat "$TMP/want")" "shared: provider/embedding"
invoices "sqlite:$TMP/none.db" "$TMP/by-weight"
verify "$TMP/by-weight" "1 1 1 3" "shared: provider/embedding, by weight: no requests counted"
expect_rc 0 "$TESSERA" invoice -f "$TMP/usage.yaml" --db "sqlite:$TMP/none.db" --tenant provider --period 2026-11
expect_in "$TMP/out" "passed on: provider/embedding, by weight: no requests counted"

# PostgreSQL: the same day and counters, the same invoices
if ! URL=$(scripts/pg-test-server start "$PG" "$PORT" 2>"$TMP/start.err"); then
    bad "pg-test-server start failed"; cat "$TMP/start.err"; finish; exit 1
fi
expect_rc 0 "$TESSERA" ledger record --db "$URL" --inventory "$TMP/demo/inventory-gpu-node-1.json" \
    -f examples/four-h100.yaml --at 2026-11-01T00:00:00Z
expect_rc 0 "$TESSERA" meter import -f examples/four-h100.yaml --db "$URL" \
    --at 2026-11-02T00:00:00Z "$TMP/demo/dcgm-2026-11-02.prom"
expect_rc 1 "$TESSERA" meter import -f "$TMP/usage.yaml" --db "$URL" --at 2026-11-02T00:00:00Z "$TMP/istio.prom"
invoices "$URL" "$TMP/pg-usage"
verify "$TMP/pg-usage" "$(cat "$TMP/want")" "shared: provider/embedding"
for t in $RAGS provider; do
    cmp -s "$TMP/by-usage/$t.json" "$TMP/pg-usage/$t.json" && ok || bad "$t: PostgreSQL's invoice differs"
done
finish
