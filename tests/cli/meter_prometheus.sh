#!/bin/bash
# labels: slow
# meter_prometheus.sh - `tessera meter prometheus` against the real Prometheus
# (Debian's /usr/bin/prometheus): recorded dcgm-exporter pages (H100 with MIG
# pods, V100, A30 MIG, the DataDog sample of three hosts, a GPU at 44 %;
# tests/fixtures/dcgm) are served as one page over loopback four times with the
# timestamps of four scrapes 1 s apart (the third with half the engine
# activity); Prometheus scrapes it every 500 ms. The raw samples read back
# (/api/v1/query of a range vector) must give exactly the usage (`tessera
# usage -o json`, to the micro-GPU-hour) that `meter import` of the same four
# pages gives. Unstamped pages, Prometheus' own times:
# meter_prometheus_stamps.sh. Bad cases: Prometheus' own error (a bad query,
# an expression that is not a selector), canned answers with a bad field
# (named by its JSON path), an error text with control bytes (escaped), a
# non-JSON 404, bad flags; a range of 90 s at --interval 1s asked for in two
# windows of 60 and 30 s (the URLs checked).
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
FIX=tests/fixtures/dcgm
PAGES=($FIX/nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom
       $FIX/nvidia-dcgm-exporter-issue250-v100-sxm2-32gb.prom
       $FIX/nvidia-dcgm-exporter-issue68-a30-mig-2g12gb.prom
       $FIX/NVIDIA-gpu-monitoring-tools-issue138-k8s-empty-pod-labels.prom
       $FIX/datadog-integrations-core_dcgm_metrics.txt)
SERVER= PROM= CANNED=
trap 'kill $SERVER $PROM $CANNED 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
need_prometheus

cp tests/fixtures/meter/lab-isolated.yaml "$TMP/spec.yaml"
cat >> "$TMP/spec.yaml" <<'YAML'
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: ray}
spec:
  contract: shared-trusted
  namespaces: [ray-llm]
YAML

# four pages: every sample line stamped T0 + k s (k = 0..3), the third page's
# engine activity and GPU utilisation halved; comments dropped (the files'
# HELP/TYPE lines would repeat in one page)
T0=$(( $(date +%s) - 60 ))
for k in 0 1 2 3; do
    awk -v ts=$(( (T0 + k) * 1000 )) -v half=$(( k == 2 )) '
        /^#/ || NF == 0 { next }
        { v = $NF; if (half && $0 ~ /^DCGM_FI_(PROF_GR_ENGINE_ACTIVE|DEV_GPU_UTIL)\{/) v = v / 2
          sub(/ [^ ]+$/, ""); print $0 " " v " " ts }' "${PAGES[@]}" > "$TMP/page$k.prom"
done
check "the pages have samples" test "$(wc -l < "$TMP/page0.prom")" -gt 20

# direct import of the same pages
expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db sqlite:$TMP/direct.db --at $T0 \
    "$TMP"/page{0,1,2,3}.prom

PORT=$(free_port)
tests/tools/page_server.py $PORT pages "$TMP"/page{0,1,2,3}.prom &
SERVER=$!
prometheus_start "- {job_name: dcgm, scrape_interval: 500ms, scrape_timeout: 500ms,
   static_configs: [{targets: ['127.0.0.1:$PORT']}]}"
PURL=$PROM_URL
# the four pages and one empty page after them were scraped (so the fourth is stored)
pages_scraped $PORT 5

PROMQ=("$TESSERA" meter prometheus -f "$TMP/spec.yaml" --url $PURL --interval 1s)
expect_rc 0 "${PROMQ[@]}" --db sqlite:$TMP/prom.db --from $T0 --to $((T0 + 3))
expect_in "$TMP/out" "$PURL: "
expect_in "$TMP/out" " 0 lines rejected"
# the same device scrapes as the direct import
dev_direct=$("$TESSERA" meter import -f "$TMP/spec.yaml" --db sqlite:$TMP/again.db --at $T0 \
    "$TMP"/page{0,1,2,3}.prom | awk '{s += $2} END {print s}')
dev_prom=$(awk '{print $2}' "$TMP/out")
check "device scrapes: prometheus $dev_prom, direct $dev_direct" \
    test "$dev_prom" = "$dev_direct"

for db in direct prom; do
    expect_rc 0 "$TESSERA" usage -f "$TMP/spec.yaml" --db sqlite:$TMP/$db.db --interval 1s -o json
    cp "$TMP/out" "$TMP/usage-$db.json"
done
D=$TMP/usage-direct.json P=$TMP/usage-prom.json
/usr/bin/python3 - "$D" "$P" <<'PY' && ok || bad "usage differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a == b, (a, b)
rows = a["rows"]
assert len(rows) >= 3 and any(r["usageMicroGpuHours"] > 0 for r in rows), rows
# the halved third page shows: usage below allocation for lab's busy slices
lab = [r for r in rows if r["tenant"] == "lab"]
assert lab and all(r["usageMicroGpuHours"] <= r["allocationMicroGpuHours"] for r in lab), lab
PY
# read again: nothing new (the same samples, idempotent)
expect_rc 0 "${PROMQ[@]}" --db sqlite:$TMP/prom.db --from $T0 --to $((T0 + 3))
expect_in "$TMP/out" " 0 new samples"
# a range of two scrapes only: fewer samples than the four
expect_rc 0 "${PROMQ[@]}" --db sqlite:$TMP/two.db --from $((T0 + 2)) --to $((T0 + 3))
check "two scrapes give half the device scrapes" test "$(awk '{print $2}' "$TMP/out")" = \
    "$((dev_direct / 2))"

# Prometheus' own errors and answers that are not raw series
expect_rc 2 "${PROMQ[@]}" --db sqlite:$TMP/x.db --from $T0 --to $((T0 + 3)) --query 'rate('
expect_in "$TMP/err" 'Prometheus answered status "error": bad_data: '
expect_rc 2 "${PROMQ[@]}" --db sqlite:$TMP/x.db --from $T0 --to $((T0 + 3)) \
    --query 'DCGM_FI_PROF_GR_ENGINE_ACTIVE * 2'
expect_in "$TMP/err" 'Prometheus answered status "error": bad_data: '
# two selectors (--query twice): each read, the samples of both stored
expect_rc 0 "${PROMQ[@]}" --db sqlite:$TMP/q2.db --from $T0 --to $((T0 + 3)) \
    --query '{__name__=~"DCGM_FI_.*",GPU_I_ID="7"}' --query '{__name__=~"DCGM_FI_.*",GPU_I_ID!="7"}'
check "two selectors: $(awk '{print $2}' "$TMP/out") device scrapes, want $dev_direct" \
    test "$(awk '{print $2}' "$TMP/out")" = "$dev_direct"
kill $PROM $SERVER 2>/dev/null
wait 2>/dev/null
PROM= SERVER=

# canned answers
CPORT=$(free_port)
C=$TMP/canned.json
echo 200 > "$C.status"; echo "{}" > "$C"
tests/tools/page_server.py $CPORT canned "$C" &
CANNED=$!
for _ in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:$CPORT/ && break; sleep 0.1; done
CQ=("$TESSERA" meter prometheus -f "$TMP/spec.yaml" --db sqlite:$TMP/c.db --url
    http://127.0.0.1:$CPORT/ --from 1700000000 --to 1700000030)
canned() { printf '%s' "$1" > "$C"; echo "${2:-200}" > "$C.status"; }
M='"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","UUID":"GPU-1","Hostname":"n"}'
OKV='[1700000000,"5"],[1700000015,"7"]'
R='{"status":"success","data":{"resultType":"matrix","result":['
canned "$R"'{'"$M"',"values":['"$OKV"']},'\
'{'"$M"',"values":['"$OKV"',[1700000030,"x1"]]}]}}'
expect_rc 2 "${CQ[@]}"
expect_in "$TMP/err" 'data.result[1].values[2][1]: "x1" is not a number'
canned "$R"'{'"$M"',"values":[[1700000000]]}]}}'
expect_rc 2 "${CQ[@]}"
expect_in "$TMP/err" 'data.result[0].values[0]: expected [time, "value"]'
canned "$R"'{'"$M"',"values":[["t","1"]]}]}}'
expect_rc 2 "${CQ[@]}"
expect_in "$TMP/err" 'data.result[0].values[0][0]: not a time in seconds'
canned "$R"'{"metric":{"__name__":"A","bad-name":"1"},"values":[]}]}}'
expect_rc 2 "${CQ[@]}"
expect_in "$TMP/err" 'data.result[0].metric.bad-name: not a valid Prometheus name'
canned '{"status":"success","data":{"resultType":"vector","result":[]}}'
expect_rc 2 "${CQ[@]}"
expect_in "$TMP/err" 'data.resultType: expected "matrix"'
canned "$R"'{'"$M"',"values":'
expect_rc 2 "${CQ[@]}"
expect_in "$TMP/err" "http://127.0.0.1:$CPORT/api/v1/query?query="
# hostile answers: a series' samples out of order, twice, outside the window
canned "$R"'{'"$M"',"values":[[1700000015,"5"],[1700000000,"7"]]}]}}'
expect_rc 2 "${CQ[@]}"
expect_in "$TMP/err" "data.result[0].values[1][0]: 1700000000000 ms is not after the series' previous sample (1700000015000 ms): out of order or a duplicate"
canned "$R"'{'"$M"',"values":[[1700000031,"5"]]}]}}'
expect_rc 2 "${CQ[@]}"
expect_in "$TMP/err" "data.result[0].values[0][0]: 1700000031000 ms is outside the window asked for (1700000000000 to 1700000030000 ms)"
canned "$R"'{'"$M"',"values":[]},{'"$M"',"values":[]}]}}'
expect_rc 2 "${CQ[@]}"
expect_in "$TMP/err" "data.result[1].metric: the same series as data.result[0]"
check "nothing stored from a refused answer" test ! -s "$TMP/c.db" -o \
    "$(sqlite3 "$TMP/c.db" "SELECT count(*) FROM samples" 2>/dev/null || echo 0)" = 0
canned '{"status":"error","errorType":"execution","error":"boom\n\u001b[31mlevel=error forged"}' 422
expect_rc 1 "${CQ[@]}"
expect_in "$TMP/err" 'execution: boom\x0a\x1b[31mlevel=error forged'
if grep -q $'\x1b' "$TMP/err"; then bad "an escape byte reached stderr"; else ok; fi
canned '<html>not found</html>' 404
expect_rc 1 "${CQ[@]}"
expect_in "$TMP/err" "HTTP status 404"
# an answer over METER_PROM_BODY_MAX (32 MiB) is refused, nothing stored
/usr/bin/python3 -c 'import sys; sys.stdout.write("{\"status\":\"" + "x" * (32 << 20) + "\"}")' \
    > "$C"
echo 200 > "$C.status"
expect_rc 2 "${CQ[@]}"
expect_in "$TMP/err" "body larger than 33554432 bytes: refused"
# a good canned answer: two samples stored
canned "$R"'{'"$M"',"values":['"$OKV"']}]}}'
expect_rc 0 "${CQ[@]}"
expect_in "$TMP/out" "2 device scrapes, 2 new samples"
# an answer of 75 KB whose lines make 36 MB (a 30 KB label on 1,200 samples):
# the lines are handed to the ingest 256 KiB at a time, never held whole
# (before: refused, "the answer's lines exceed 33554432 bytes")
/usr/bin/python3 - "$C" <<'PY2'
import sys
m = '{"__name__":"DCGM_FI_DEV_GPU_UTIL","UUID":"GPU-9","Hostname":"n","note":"%s"}' % ("x" * 30000)
v = ",".join('[%d,"50"]' % (1700000000 + i) for i in range(1200))
open(sys.argv[1], "w").write('{"status":"success","data":{"resultType":"matrix","result":'
                             '[{"metric":%s,"values":[%s]}]}}' % (m, v))
PY2
echo 200 > "$C.status"
expect_rc 0 "$TESSERA" meter prometheus -f "$TMP/spec.yaml" --db sqlite:$TMP/wide.db --url \
    http://127.0.0.1:$CPORT/ --from 1700000000 --to 1700001199 --interval 20s
expect_in "$TMP/out" "1200 device scrapes, 1200 new samples, 0 lines rejected"
# two targets exporting one device (series apart by instance only): both read,
# the second value of a device-time counted as a conflicting duplicate
M2='"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","UUID":"GPU-2","Hostname":"n","instance":"b:1"}'
M3='"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","UUID":"GPU-2","Hostname":"n","instance":"c:1"}'
canned "$R"'{'"$M2"',"values":[[1700000000,"5"]]},{'"$M3"',"values":[[1700000000,"9"]]}]}}'
expect_rc 0 "${CQ[@]}"
expect_in "$TMP/out" "1 device scrapes, 1 new samples, 0 lines rejected, 0 custody violations, 1 conflicting duplicates (the first kept)"

kill $CANNED 2>/dev/null
wait 2>/dev/null
CANNED=

# a range of 90 s at --interval 1s is asked for in two windows (60 s, then
# the 30 s and one ms left: both ends are included), in time order, and both
# answers are stored
mkdir "$TMP/pieces"
printf '%s' "$R"'{'"$M"',"values":[[1700000000,"5"],[1700000059,"6"]]}]}}' > "$TMP/pieces/a"
printf '%s' "$R"'{'"$M"',"values":[[1700000060,"7"],[1700000089,"8"]]}]}}' > "$TMP/pieces/b"
tests/tools/page_server.py $CPORT pages "$TMP/pieces/a" "$TMP/pieces/b" &
CANNED=$!
for _ in $(seq 50); do (: </dev/tcp/127.0.0.1/$CPORT) 2>/dev/null && break; sleep 0.1; done
expect_rc 0 "$TESSERA" meter prometheus -f "$TMP/spec.yaml" --db sqlite:$TMP/pieces.db --url \
    http://127.0.0.1:$CPORT --from 1700000000 --to 1700000089 --interval 1s
expect_in "$TMP/out" "4 device scrapes, 4 new samples"
Q='/api/v1/query?query=%7B__name__%3D~%22DCGM_FI_.%2A%22%7D'
printf '%s\n' "$Q%5B60000ms%5D&time=1700000059.999" \
    "$Q%5B29001ms%5D&time=1700000089.000" > "$TMP/want-paths"
check "two windows of 60 s and 29.001 s" cmp -s "$TMP/want-paths" "$TMP/pieces/$CPORT.paths" ||
    cat "$TMP/pieces/$CPORT.paths"

# bad usage
expect_rc 2 "$TESSERA" meter prometheus -f "$TMP/spec.yaml" --db sqlite:$TMP/c.db --url x \
    --from 1 --to 2
expect_in "$TMP/err" "not an http:// or https:// URL"
expect_rc 2 "${CQ[@]}" --interval 0s
expect_rc 2 "$TESSERA" meter prometheus -f "$TMP/spec.yaml" --db sqlite:$TMP/c.db \
    --url http://127.0.0.1:$CPORT --from 20 --to 10
expect_in "$TMP/err" "--from is after --to"
expect_rc 2 "$TESSERA" meter prometheus -f "$TMP/spec.yaml" --db sqlite:$TMP/c.db
expect_in "$TMP/err" "needs -f SPEC, --db DB, --url URL"
expect_rc 0 "$TESSERA" meter prometheus --help
expect_in "$TMP/out" "/api/v1/query of SELECTOR[Wms]"
finish
