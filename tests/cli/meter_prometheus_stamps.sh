#!/bin/bash
# meter_prometheus_stamps.sh - `tessera meter prometheus` reads each scrape
# once, at the time the real Prometheus (Debian's) stamped it: unstamped
# exporter pages (no timestamps, as dcgm-exporter writes them) of the recorded
# H100 MIG scrape (tests/fixtures/dcgm, issue 512: GI 7 and 9 with lab's pods,
# GI 8 without pods) are served one a scrape to Prometheus scraping every
# 250 ms. Pages 3-7 put an intruder's pod (tenant `other`) on GI 8; GI 9 is
# missing from page 9 (a gap one scrape long); every page carries
# tessera_test_page N, which the meter never reads, so the time Prometheus
# gave each page is known here. Then:
# - `meter prometheus` over the range equals `meter import` of exactly the
#   pages Prometheus stored, each stamped with that time (usage -o json per
#   tenant and profile, to one micro-GPU-hour, and the device scrapes);
# - each tenant's allocation equals its closed form from the pages' times:
#   1/8 of an H100 (a 1g.10gb's memory slices) for each device's point to its
#   next point (capped at 2 s), GI 8's on pages 3-7 the intruder's, GI 9's
#   point before the gap billed to page 10 (0.5 s, under usage's cap);
# - a second read of the same range stores nothing new; two reads that split
#   the range at a scrape's own time store what one read stores.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
F=tests/fixtures/dcgm/nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom
N=12
SERVER= PROM=
trap 'kill $SERVER $PROM 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
need_prometheus

cp "$TESSERA_FIXTURES/meter/lab-isolated.yaml" "$TMP/spec.yaml"
printf -- '---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: other}\nspec:\n  contract: isolated\n  namespaces: [intruder-ns]\n' >>"$TMP/spec.yaml"

# the pages, unstamped: engine activity (k x 37 mod 100) % on every instance
python3 - "$F" "$TMP" $N <<'PY'
import sys
src, tmp, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [l.rstrip("\n") for l in open(src) if l.startswith("DCGM_")]
assert len(lines) == 3 and 'GPU_I_ID="8"' in lines[1] and "pod=" not in lines[1], lines
for k in range(n):
    v = (k * 37 % 100) / 100
    page = ["tessera_test_page %d" % k]
    for i, l in enumerate(lines):
        head = l.rsplit(" ", 1)[0]
        if i == 1 and 3 <= k <= 7:  # the intruder's pod on GI 8
            head = head[:-1] + ',namespace="intruder-ns",pod="miner-0"}'
        if i == 2 and k == 9:  # GI 9 missing from one scrape
            continue
        page.append("%s %g" % (head, v))
    open("%s/page%d.prom" % (tmp, k), "w").write("\n".join(page) + "\n")
PY

PORT=$(free_port)
tests/tools/page_server.py $PORT pages "$TMP"/page{0..11}.prom &
SERVER=$!
FROM=$(date +%s)
prometheus_start "- {job_name: dcgm, scrape_interval: 250ms, scrape_timeout: 250ms,
   static_configs: [{targets: ['127.0.0.1:$PORT']}]}"
pages_scraped $PORT $((N + 2))
TO=$(($(date +%s) + 1))

# the time Prometheus gave each page it stored (a page whose scrape failed on a
# busy machine is in neither read)
for _ in $(seq 40); do
    curl -s --max-time 5 "$PROM_URL/api/v1/query" --data-urlencode "query=tessera_test_page[1h]" \
        --data-urlencode "time=$TO" >"$TMP/serial.json" && grep -q '"values"' "$TMP/serial.json" &&
        break
    sleep 0.5
done
python3 - "$TMP" <<'PY' >"$TMP/stamps" || bad "no page times from Prometheus: $(head -c 300 "$TMP/serial.json")"
import json, sys
tmp = sys.argv[1]
vals = json.load(open(tmp + "/serial.json"))["data"]["result"][0]["values"]
out = []
for t, k in vals:
    ms = round(float(t) * 1000)
    print(int(k), ms)
    page = [l.rstrip("\n") for l in open("%s/page%s.prom" % (tmp, k)) if l.startswith("DCGM_")]
    out += ["%s %d" % (l, ms) for l in page]
open(tmp + "/direct.prom", "w").write("\n".join(out) + "\n")
PY
stored=$(wc -l <"$TMP/stamps")
# a scrape that timed out on a busy machine leaves its page out of both reads
# and the closed form; the intruder and the gap must be among those stored
check "Prometheus stored $stored of the $N pages, want the intruder's (3-7) and page 9's neighbours" \
    test "$(awk '$1 >= 3 && $1 <= 7' "$TMP/stamps" | wc -l)" -ge 1 -a \
    "$(awk '$1 == 8 || $1 == 10' "$TMP/stamps" | wc -l)" -eq 2
off=$(awk '{printf "%s%d", (NR > 1 ? " " : ""), $2 % 1000}' "$TMP/stamps")
echo "the pages' times, ms after the second: $off"

expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db sqlite:$TMP/direct.db --at "$FROM" \
    "$TMP/direct.prom"
dev_direct=$(awk '{print $2}' "$TMP/out")
PQ=("$TESSERA" meter prometheus -f "$TMP/spec.yaml" --url "$PROM_URL" --interval 250ms)
expect_rc 0 "${PQ[@]}" --db sqlite:$TMP/prom.db --from "$FROM" --to "$TO"
expect_in "$TMP/out" " 0 lines rejected, 1 custody violations"
dev_prom=$(sed -n 's/.*: \([0-9]*\) device scrapes.*/\1/p' "$TMP/out")
check "device scrapes: prometheus $dev_prom, direct import $dev_direct" \
    test -n "$dev_prom" -a "$dev_prom" = "$dev_direct"

for db in direct prom; do
    expect_rc 0 "$TESSERA" usage -f "$TMP/spec.yaml" --db sqlite:$TMP/$db.db --interval 1s -o json
    cp "$TMP/out" "$TMP/usage-$db.json"
done
python3 - "$TMP" <<'PY' && ok || bad "meter prometheus differs from the direct import or the closed form"
import json, sys
tmp = sys.argv[1]
def rows(db):
    return {(r["tenant"], r["device"] if "device" in r else "", r["profile"]):
            (r["allocationMicroGpuHours"], r["usageMicroGpuHours"])
            for r in json.load(open("%s/usage-%s.json" % (tmp, db)))["rows"]}
d, p = rows("direct"), rows("prom")
bad = 0
for k in sorted(set(d) | set(p)):
    a, b = d.get(k, (0, 0)), p.get(k, (0, 0))
    diff = (b[0] - a[0], b[1] - a[1])
    print("  %-28s direct alloc %8d use %8d  prometheus alloc %8d use %8d  diff %+d %+d"
          % ("/".join(x for x in k if x), a[0], a[1], b[0], b[1], diff[0], diff[1]))
    bad += abs(diff[0]) > 1 or abs(diff[1]) > 1
# the closed form from the pages' times: each device's point billed to its
# next point, capped at 2 s (usage --interval 1s), 1/8 of a card (125000 ppm);
# GI 8 is the intruder's on pages 3-7 and lab's (the plan's) otherwise, GI 9
# has no point on page 9 (the gap)
t = dict(tuple(map(int, l.split())) for l in open(tmp + "/stamps"))
ms = {"lab": 0, "other": 0}
for gi in (7, 8, 9):
    pts = [k for k in sorted(t) if not (gi == 9 and k == 9)]
    for a, b in zip(pts, pts[1:]):
        ms["other" if gi == 8 and 3 <= a <= 7 else "lab"] += min(t[b] - t[a], 2000)
for tenant, m in sorted(ms.items()):
    want = (m * 125000 + 1800000) // 3600000
    got = sum(v[0] for k, v in p.items() if k[0] == tenant)
    print("  %s: prometheus %d, closed form %d (%d ms of 1g.10gb)" % (tenant, got, want, m))
    bad += abs(got - want) > 1
sys.exit(bad)
PY

# every sample at its page's own time: the samples stored are the direct
# import's, row for row; read with --interval 15s (the windows only) the same
q="SELECT device, ts_ms, tenant, share_ppm, util_ppm FROM samples ORDER BY 1, 2, 3"
same=$(comm -12 <(sqlite3 "$TMP/prom.db" "$q") <(sqlite3 "$TMP/direct.db" "$q") | wc -l)
check "samples at the direct import's times: $same of $dev_direct" test "$same" = "$dev_direct"
expect_rc 0 "${PQ[@]}" --db sqlite:$TMP/i15.db --from "$FROM" --to "$TO" --interval 15s
check "--interval 15s stores the same samples" \
    test "$(sqlite3 "$TMP/i15.db" "$q")" = "$(sqlite3 "$TMP/prom.db" "$q")"

# again: nothing new; the range split at a scrape's own time: the same samples
expect_rc 0 "${PQ[@]}" --db sqlite:$TMP/prom.db --from "$FROM" --to "$TO"
expect_in "$TMP/out" " 0 new samples"
rfc3339() { printf '%s.%03dZ' "$(date -u -d @$(($1 / 1000)) +%Y-%m-%dT%H:%M:%S)" $(($1 % 1000)); }
MID=$(awk '$1 >= 5 {print $2; exit}' "$TMP/stamps")
expect_rc 0 "${PQ[@]}" --db sqlite:$TMP/split.db --from "$FROM" --to "$(rfc3339 $((MID - 1)))"
a=$(sed -n 's/.*: \([0-9]*\) device scrapes.*/\1/p' "$TMP/out")
expect_rc 0 "${PQ[@]}" --db sqlite:$TMP/split.db --from "$(rfc3339 $MID)" --to "$TO"
b=$(sed -n 's/.*: \([0-9]*\) device scrapes.*/\1/p' "$TMP/out")
check "split at the time of page 5 or the first stored after ($MID ms): $a + $b device scrapes, want $dev_direct" \
    test $((a + b)) -eq "$dev_direct"
check "the split reads store the samples one read stores" \
    test "$(sqlite3 "$TMP/split.db" "$q")" = "$(sqlite3 "$TMP/prom.db" "$q")"
finish
