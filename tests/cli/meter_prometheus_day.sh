#!/bin/bash
# meter_prometheus_day.sh - a scaled-down day read from the real Prometheus
# (Debian's) and billed, equal to its closed form worked out here: two hours,
# 2026-11-30T23:00Z to 2026-12-01T01:00Z, 481 scrapes 15 s apart, each stamped
# as Prometheus stamps a scrape (6-127 ms after its tick, a different offset
# each), backfilled into Prometheus' TSDB with promtool (Prometheus stamps
# only with its own clock: a month boundary in the past cannot be scraped
# live; meter_prometheus_stamps.sh covers the stamps Prometheus makes). Two
# 7g.80gb instances (whole H100s): provider's embedding pool, its engine
# activity NaN for ten minutes (23:10-23:20: billed, its use unknown), and
# acme's card, down from its scrape at 23:59:45 (+ offset) to 00:30 (an
# outage across the month boundary: its capped 30 s split at midnight);
# Istio's counters of the pool's two consumers: rag-e's first series
# vanishes at 23:30 and a new one counts on, rag-f's counter restarts at
# 00:15. `meter prometheus` over the range, then `usage` and `invoice` for
# November and December, each figure against the closed form (to the
# micro-GPU-hour and the cent; sharedSplit: usage, 2.90 EUR per GPU-hour).
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PROM=
trap 'kill $PROM 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
need_prometheus
command -v promtool >/dev/null || { bad "promtool missing (Debian's prometheus package)"; finish; exit 1; }

cat >"$TMP/spec.yaml" <<'YAML'
apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: day}
spec:
  nodes: [{name: n1, gpus: [{model: h100-80gb-sxm, count: 2}]}]
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: provider}
spec:
  contract: isolated
  namespaces: [platform]
  workloads:
  - {name: embedding, kind: inference, memoryHighWaterGiB: 70, trust: untrusted}
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: acme}
spec:
  contract: isolated
  namespaces: [acme]
  workloads:
  - {name: train, kind: inference, memoryHighWaterGiB: 70, trust: untrusted}
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: rag-e}
spec:
  contract: shared-trusted
  namespaces: [rag-e]
  uses: [{tenant: provider, workload: embedding}]
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: rag-f}
spec:
  contract: shared-trusted
  namespaces: [rag-f]
  uses: [{tenant: provider, workload: embedding}]
---
apiVersion: tessera.dev/v1alpha1
kind: PriceBook
metadata: {name: p}
spec:
  currency: EUR
  sharedSplit: usage
  prices: [{model: h100-80gb-sxm, perGpuHour: "2.90"}]
YAML

# the day as OpenMetrics (seconds with the ms of Prometheus' stamp), and the
# closed form of every figure (expect.json)
python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
B, STEP, N = 1796079600000, 15000, 481  # 2026-11-30T23:00:00Z
MID = 1796083200000                      # 2026-12-01T00:00:00Z
t = [B + STEP * k + 6 + (k * 53) % 122 for k in range(N)]  # 6-127 ms after the tick
GPU = {"provider": ("GPU-0a0a0a0a-0000-4000-8000-000000000000", "0", "platform", "embedding-0"),
       "acme": ("GPU-1b1b1b1b-0000-4000-8000-000000000001", "1", "acme", "train-0")}
def up(tenant, k):
    return tenant == "provider" or k <= 239 or k >= 360   # acme down 23:59:45 .. 00:30
def engine(tenant, k):
    if tenant == "acme":
        return 0.25
    return "NaN" if 40 <= k < 80 else 0.5
def series(k):  # Istio: (consumer, pod) -> value at scrape k
    s = {}
    if k < 120: s[("rag-e", "e-0")] = 10 * k
    else: s[("rag-e", "e-1")] = 3 * (k - 120)
    s[("rag-f", "f-0")] = 5 * k if k < 300 else 7 + 2 * (k - 300)
    return s
out = ["# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge"]
for tenant, (uuid, gpu, ns, pod) in GPU.items():
    for k in range(N):
        if up(tenant, k):
            out.append('DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="%s",UUID="%s",modelName="NVIDIA H100 '
                       '80GB HBM3",GPU_I_PROFILE="7g.80gb",GPU_I_ID="0",Hostname="n1",'
                       'namespace="%s",pod="%s"} %s %.3f' % (gpu, uuid, ns, pod, engine(tenant, k),
                                                             t[k] / 1000))
out.append("# TYPE istio_requests_total gauge")
for key in [("rag-e", "e-0"), ("rag-e", "e-1"), ("rag-f", "f-0")]:
    for k in range(N):
        v = series(k).get(key)
        if v is not None:
            out.append('istio_requests_total{destination_workload_namespace="platform",'
                       'destination_workload="embedding",source_workload_namespace="%s",'
                       'response_code="200",pod="%s"} %d %.3f' % (key[0], key[1], v, t[k] / 1000))
open(tmp + "/day.om", "w").write("\n".join(out) + "\n# EOF\n")

# closed form. A point is billed to the device's next scrape, capped at 30 s
# (2 x 15 s); the newest point not at all; a part of an interval in each month
MONTHS = {"2026-11": (0, MID), "2026-12": (MID, 1798761600000)}
def rows(tenant):
    pts = [k for k in range(N) if up(tenant, k)]
    r = {m: {"alloc": 0, "use": 0, "unknown": 0} for m in MONTHS}
    for a, b in zip(pts, pts[1:]):
        s, e = t[a], min(t[b], t[a] + 30000)
        for m, (lo, hi) in MONTHS.items():
            ms = max(0, min(e, hi) - max(s, lo))
            r[m]["alloc"] += ms * 10**6
            u = engine(tenant, a)
            if u == "NaN": r[m]["unknown"] += ms * 10**6
            else: r[m]["use"] += round(ms * u * 10**6)
    return {m: {k: (v + 1800000) // 3600000 for k, v in x.items()} for m, x in r.items()}
hours = {tn: rows(tn) for tn in GPU}
# requests: each series' rises whose later point is in the month, a drop a
# restart counting its value, a new series from its second point
req = {m: {"rag-e": 0, "rag-f": 0} for m in MONTHS}
for key in [("rag-e", "e-0"), ("rag-e", "e-1"), ("rag-f", "f-0")]:
    pts = [(k, series(k)[key]) for k in range(N) if key in series(k)]
    for (_, v0), (k1, v1) in zip(pts, pts[1:]):
        m = "2026-11" if t[k1] < MID else "2026-12"
        req[m][key[0]] += v1 - v0 if v1 >= v0 else v1
def split(total, counts):  # floors, the rest to the largest remainders (ties: spec order)
    c = sum(counts.values())
    parts = {n: total * x // c for n, x in counts.items()}
    rest = total - sum(parts.values())
    for n in sorted(counts, key=lambda n: -(total * counts[n] % c))[:rest]:
        parts[n] += 1
    return parts
def cents(uh):  # uh x 2.90 EUR, half to even
    num, d = uh * 2900000, 10**10
    q, r2 = divmod(num, d)
    r2 *= 2
    return q + (r2 > d or (r2 == d and q % 2))
inv = {}
for m in MONTHS:
    h = hours["provider"][m]["alloc"]
    parts = split(h, req[m])
    inv[m] = {"acme": cents(hours["acme"][m]["alloc"])}
    for n, uh in parts.items():
        inv[m][n] = cents(uh)
    inv[m]["provider"] = cents(h) - sum(inv[m][n] for n in parts)
json.dump({"hours": hours, "requests": req, "invoices": inv}, open(tmp + "/expect.json", "w"),
          indent=1, sort_keys=True)
PY
promtool tsdb create-blocks-from openmetrics "$TMP/day.om" "$TMP/tsdb" >"$TMP/promtool.log" 2>&1 ||
    { bad "promtool: $(tail -3 "$TMP/promtool.log")"; finish; exit 1; }
prometheus_start ""
for _ in $(seq 120); do
    curl -s --max-time 2 "$PROM_URL/-/ready" >/dev/null 2>&1 && break
    sleep 0.5
done

DB=sqlite:$TMP/day.db
expect_rc 0 "$TESSERA" meter prometheus -f "$TMP/spec.yaml" --db "$DB" --url "$PROM_URL" \
    --from 2026-11-30T23:00:00Z --to 2026-12-01T01:00:00.127Z
expect_in "$TMP/out" " 0 lines rejected"
expect_in "$TMP/out" ", 40 unreadable utilisation (unknown use)"
for m in 2026-11 2026-12; do
    from=$m-01T00:00:00Z
    [ $m = 2026-11 ] && to=2026-12-01T00:00:00Z || to=2027-01-01T00:00:00Z
    expect_rc 0 "$TESSERA" usage -f "$TMP/spec.yaml" --db "$DB" --from $from --to $to -o json
    cp "$TMP/out" "$TMP/usage-$m.json"
    for tn in provider acme rag-e rag-f; do
        expect_rc 0 "$TESSERA" invoice -f "$TMP/spec.yaml" --db "$DB" --tenant $tn --period $m \
            -o json
        cp "$TMP/out" "$TMP/invoice-$m-$tn.json"
    done
done
python3 - "$TMP" <<'PY' && ok || bad "the day differs from its closed form"
import json, sys
tmp = sys.argv[1]
want = json.load(open(tmp + "/expect.json"))
bad = 0
for m in ("2026-11", "2026-12"):
    got = {r["tenant"]: r for r in json.load(open("%s/usage-%s.json" % (tmp, m)))["rows"]}
    for tn, w in sorted(want["hours"].items()):
        r = got.get(tn, {})
        g = (r.get("allocationMicroGpuHours"), r.get("usageMicroGpuHours"),
             r.get("unknownUsageMicroGpuHours"))
        x = (w[m]["alloc"], w[m]["use"], w[m]["unknown"])
        print("%s %-8s usage alloc/use/unknown %s, closed form %s" % (m, tn, g, x))
        bad += g != x
    for tn, cents in sorted(want["invoices"][m].items()):
        g = json.load(open("%s/invoice-%s-%s.json" % (tmp, m, tn)))["totalMinor"]
        print("%s %-8s invoice %d cents, closed form %d" % (m, tn, g, cents))
        bad += g != cents
print("requests counted:", want["requests"])
sys.exit(bad)
PY
finish
