#!/bin/bash
# labels: slow
# meter_prometheus_usage.sh - `tessera meter prometheus` with its default
# query reads Istio's istio_requests_total as well when the PriceBook splits
# shared workloads by usage (sharedSplit: usage): the worked example's
# embedding pool and its four consumers, their counters served as four pages
# 1 s apart to the real Prometheus (Debian's /usr/bin/prometheus), which
# scrapes them every 500 ms. The requests stored from the range read back
# must equal those `meter import` stores from the same pages; with the split
# by weight (no sharedSplit: usage) the default query reads no Istio series.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
SERVER= PROM=
trap 'kill $SERVER $PROM 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
need_prometheus

python3 - "$TMP/usage.yaml" <<'PY'
import sys
s = open("examples/four-h100.yaml").read()
assert "  migShareBasis: memory\n" in s
s = s.replace("  migShareBasis: memory\n", "  migShareBasis: memory\n  sharedSplit: usage\n")
open(sys.argv[1], "w").write(s)
PY
# four pages: each consumer's counter rises by its own step a second
T0=$(( $(date +%s) - 60 ))
for k in 0 1 2 3; do
    python3 - "$TMP/page$k.prom" $(( (T0 + k) * 1000 )) $k <<'PY'
import sys
ts, k = int(sys.argv[2]), int(sys.argv[3])
L = ('istio_requests_total{destination_workload_namespace="platform-embedding",'
     'destination_workload="embedding",source_workload_namespace="%s",response_code="200"} %d %d')
steps = {"rag-e": 30, "rag-f": 10, "rag-g": 0, "rag-h": 60}
open(sys.argv[1], "w").write("".join(L % (ns, 100 + s * k, ts) + "\n" for ns, s in steps.items()))
PY
done
expect_rc 0 "$TESSERA" meter import -f "$TMP/usage.yaml" --db sqlite:$TMP/direct.db --at $T0 \
    "$TMP"/page{0,1,2,3}.prom

PORT=$(free_port)
tests/tools/page_server.py $PORT pages "$TMP"/page{0,1,2,3}.prom &
SERVER=$!
prometheus_start "- {job_name: istio, scrape_interval: 500ms, scrape_timeout: 500ms,
   static_configs: [{targets: ['127.0.0.1:$PORT']}]}"
pages_scraped $PORT 5

expect_rc 0 "$TESSERA" meter prometheus -f "$TMP/usage.yaml" --url $PROM_URL --interval 1s \
    --db sqlite:$TMP/prom.db --from $T0 --to $((T0 + 3))
expect_in "$TMP/out" " 0 lines rejected"
q="SELECT consumer, ts_ms, total FROM requests ORDER BY consumer, ts_ms"
direct=$(sqlite3 "$TMP/direct.db" "$q") prom=$(sqlite3 "$TMP/prom.db" "$q")
check "requests stored: prometheus '$prom', direct '$direct'" \
    test -n "$direct" -a "$prom" = "$direct"
check "16 request counts stored (4 consumers x 4 scrapes): $(echo "$direct" | wc -l)" \
    test "$(echo "$direct" | wc -l)" -eq 16

# by weight: the default query is DCGM's alone, no request is stored
grep -v "sharedSplit: usage" "$TMP/usage.yaml" >"$TMP/weight.yaml"
expect_rc 0 "$TESSERA" meter prometheus -f "$TMP/weight.yaml" --url $PROM_URL --interval 1s \
    --db sqlite:$TMP/weight.db --from $T0 --to $((T0 + 3))
check "requests stored without sharedSplit: usage" \
    test "$(sqlite3 "$TMP/weight.db" "SELECT count(*) FROM requests")" -eq 0
# a query whose URL would pass 64 KiB is refused before any request, and said
long=$(python3 -c 'print("{a=\"" + "a" * 70000 + "\"}")')
expect_rc 2 "$TESSERA" meter prometheus -f "$TMP/usage.yaml" --url $PROM_URL --interval 1s \
    --db sqlite:$TMP/long.db --from $T0 --to $((T0 + 3)) --query "$long"
expect_in "$TMP/err" "the query (70006 bytes) makes a query URL over 64 KiB: give a shorter --query"
finish
