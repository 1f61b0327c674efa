#!/bin/bash
# labels: slow
# prometheus.sh - tenant-labelled metrics end to end, read by the real Prometheus
# (Debian's /usr/bin/prometheus): real dcgm-exporter scrapes (tests/fixtures/dcgm)
# go into a SQLite store with `tessera meter import`; `tessera console --db` serves
# /metrics over HTTPS with a test CA, to an operator's bearer token only;
# Prometheus scrapes it every second on loopback with that token. Checked through Prometheus's HTTP API: tessera_gpu_hours_total equals
# what `tessera usage -o json` says (also after a new scrape is imported while
# serving: the incremental totals), the DCGM series carry the tenants the
# attribution gives, the plan's allocation is there. Bad cases: a bad --db URL
# (exit 2 at start), flags that need --db, --db to the webhook (`tessera
# serve` has no store), a store that breaks while serving (tessera_metering_up
# 0, the page still 200 with the plan's allocation and the connection gauges).
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
FIX=tests/fixtures/dcgm
H100=$FIX/nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom
DATADOG=$FIX/datadog-integrations-core_dcgm_metrics.txt
DB=sqlite:$TMP/m.db
SERVER= PROM=
trap 'kill $SERVER $PROM 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM

need_prometheus
PORT=$(free_port)
HPORT=$(free_port)
URL=https://127.0.0.1:$PORT

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
scripts/make-test-cert "$TMP/c"
"$TESSERA" token new --operator >"$TMP/op"
OP=$(sed -n 1p "$TMP/op")
sed -n 2p "$TMP/op" >"$TMP/tokens"

# three scrapes of the H100 node 15 s apart, and a node of the DataDog file
for t in 1700000000 1700000015 1700000030; do
    expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db $DB --at $t $H100
done
expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db $DB --at 1700000000 $DATADOG

# bad usage: refused before anything starts
SERVE=("$TESSERA" console -f "$TMP/spec.yaml" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key"
       --listen 127.0.0.1:$PORT --tokens "$TMP/tokens")
serve() { "${SERVE[@]}" "$@"; }
expect_rc 2 serve --db nope:/x
expect_in "$TMP/err" "--db: unsupported database URL"
expect_rc 2 serve --db $DB --metering-refresh soon
expect_rc 2 serve --metering-refresh 1s
expect_in "$TMP/err" "--interval and --metering-refresh need --db"
expect_rc 0 "$TESSERA" console --help
expect_in "$TMP/out" "--db DB"
# the webhook has no store
expect_rc 2 "$TESSERA" serve -f "$TMP/spec.yaml" --tls-cert "$TMP/c/tls.crt" \
    --tls-key "$TMP/c/tls.key" --listen 127.0.0.1:$PORT --db $DB
expect_in "$TMP/err" "unrecognized option '--db'"
expect_rc 0 "$TESSERA" serve --help
check "serve --help offers --db" sh -c "! grep -q -- '--db' '$TMP/out'"

"${SERVE[@]}" --db $DB --metering-refresh 1s --health-listen 127.0.0.1:$HPORT 2>"$TMP/serve.log" &
SERVER=$!
for _ in $(seq 50); do
    curl -sf --cacert "$TMP/c/ca.crt" $URL/readyz >/dev/null 2>&1 && break
    sleep 0.1
done

prometheus_start "- {job_name: tessera, scheme: https, tls_config: {ca_file: $TMP/c/ca.crt},
   authorization: {credentials: '$OP'},
   static_configs: [{targets: ['127.0.0.1:$PORT']}]}"
API=$PROM_URL/api/v1

# q PROMQL -> the query's JSON result in $TMP/q.json
q() { curl -s --max-time 5 "$API/query" --data-urlencode "query=$1" > "$TMP/q.json"; }
# up: Prometheus scraped tessera at least once and found the page valid
prometheus_up 1 30 && ok ||
    { bad "Prometheus never scraped tessera (target not up in 30 s)"; finish; exit; }

# check_hours: Prometheus's tessera_gpu_hours_total equals `tessera usage` row by row
check_hours() {
    expect_rc 0 "$TESSERA" usage -f "$TMP/spec.yaml" --db $DB -o json
    cp "$TMP/out" "$TMP/usage.json"
    for _ in $(seq 20); do # the next scrape after a refresh
        q 'tessera_gpu_hours_total'
        /usr/bin/python3 - "$TMP/usage.json" "$TMP/q.json" 2>"$TMP/py.err" <<'PY' && return 0
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
got = {}
for r in json.load(open(sys.argv[2]))["data"]["result"]:
    m = r["metric"]
    got[(m["tenant"], m["model"], m["profile"], m["basis"])] = float(r["value"][1])
want = {}
for r in rows:
    key = (r["tenant"], r["model"], r["profile"] or "whole")
    want[key + ("allocation",)] = r["allocationMicroGpuHours"] / 1e6
    want[key + ("usage",)] = r["usageMicroGpuHours"] / 1e6
assert rows and got == want, (got, want)
PY
        sleep 0.5
    done
    bad "tessera_gpu_hours_total differs from tessera usage"
    tail -1 "$TMP/py.err"
    curl -s http://127.0.0.1:$HPORT/metrics | grep "^tessera_gpu\|^tessera_meter"
}
check_hours
# the lab tenant's 1g.10gb slices: three instances over 30 s, 1/8 of a card each
q 'tessera_gpu_hours_total{tenant="lab",basis="allocation",profile="1g.10gb"}'
expect_in "$TMP/q.json" '"0.003125"]'

# the DCGM series come back with their tenant: pods of lab's namespace, the idle
# instance by the plan, the A10G pod of ray-llm, the T4s of nobody
q 'count by (tenant) (DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_PROFILE="1g.10gb"})'
expect_in "$TMP/q.json" '{"metric":{"tenant":"lab"},"value":['
expect_in "$TMP/q.json" '"3"]'
q 'DCGM_FI_PROF_DRAM_ACTIVE{namespace="ray-llm"}'
expect_in "$TMP/q.json" '"tenant":"ray"'
q 'count(DCGM_FI_DEV_FB_USED{tenant="unattributed",modelName="Tesla T4"})'
expect_in "$TMP/q.json" '"value":['
q 'count(DCGM_FI_DEV_FB_USED{tenant!="unattributed"}) or vector(0)'
expect_in "$TMP/q.json" '"0"]'
# every relabelled series has a tenant
q 'count({__name__=~"DCGM_.*", tenant=""}) or vector(0)'
expect_in "$TMP/q.json" '"0"]'
q 'tessera_tenant_allocation_gpus{tenant="lab",model="h100-80gb-sxm",profile="1g.10gb"}'
expect_in "$TMP/q.json" '"0.125"]'
q 'tessera_metering_up'
expect_in "$TMP/q.json" '"1"]'

# a new scrape while serving: the next refresh integrates only it, and still
# agrees with a full `tessera usage`
expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db $DB --at 1700000045 $H100
check_hours
q 'tessera_gpu_hours_total{tenant="lab",basis="allocation",profile="1g.10gb"}'
expect_in "$TMP/q.json" '"0.004688"]'

# the same page on the plain probes' port, to anyone
curl -s http://127.0.0.1:$HPORT/metrics >"$TMP/plain"
expect_in "$TMP/plain" 'tessera_gpu_hours_total{tenant="lab"'
# the console counts no reviews: the admission families are the webhook's
if grep -q "^tessera_admission_" "$TMP/plain"; then bad "admission metrics on the console"; else ok; fi

# the store breaks: the page still answers 200 with the rest of the console's metrics
printf 'this is not a database' > "$TMP/m.db"
rm -f "$TMP/m.db-wal" "$TMP/m.db-shm"
sleep 1.2
code=$(curl -s --cacert "$TMP/c/ca.crt" -H "Authorization: Bearer $OP" -o "$TMP/metrics" \
    -w '%{http_code}' $URL/metrics)
[ "$code" = 200 ] && ok || bad "/metrics answered $code with the store broken"
expect_in "$TMP/metrics" "tessera_metering_up 0"
expect_in "$TMP/metrics" 'tessera_connections{slots="general"}'
expect_in "$TMP/metrics" 'tessera_tenant_allocation_gpus{tenant="lab"'
if grep -q "^tessera_gpu_hours_total" "$TMP/metrics"; then bad "stale GPU-hours served"; else ok; fi
code=$(curl -s -o "$TMP/plain" -w '%{http_code}' http://127.0.0.1:$HPORT/metrics)
[ "$code" = 200 ] && ok || bad "the probes' port's /metrics answered $code with the store broken"
expect_in "$TMP/plain" "tessera_metering_up 0"
expect_in "$TMP/serve.log" "metering refresh failed"
kill $PROM $SERVER 2>/dev/null
wait 2>/dev/null
SERVER= PROM=
finish
