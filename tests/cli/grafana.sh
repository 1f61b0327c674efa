#!/bin/bash
# labels: slow nosan demo-day
# grafana.sh - the Grafana dashboards (deploy/grafana/) against the real Prometheus
# (Debian's /usr/bin/prometheus) scraping a real `tessera serve` (the webhook) and a
# real `tessera console` on their probes' ports (--health-listen): the worked example
# (examples/four-h100.yaml) with the demo day's store (scripts/demo-meter) and the
# day's last scrape stored again as a live one (no timestamps, as dcgm-exporter serves
# it; the day itself is over the 16 MiB a stored body may hold); the admission reviews
# of tests/fixtures/admission sent three times, with the API server's client
# certificate (--admission-client-ca), while Prometheus scrapes every second.
# tests/tools/dashboard_check.py then checks each dashboard's JSON and that every
# metric a query names is documented in docs/metrics.md, and runs every panel's PromQL
# (variables substituted: tenant = all, client-a) over the last seconds through
# Prometheus' HTTP API: each must return a series with a number. Also: every tessera_
# family either process writes is documented; the denial count Prometheus sums equals
# the fixtures' expected denials, client-a's per-tenant count its own; and the checker fails (naming the panel) on a mistyped
# metric, a syntax error, a label that matches nothing, an undocumented metric, a
# foreign data source, and a file that is not JSON (FILE:LINE:COL). The ConfigMap for
# Grafana's sidecar (deploy/grafana/kustomization.yaml) holds both files unchanged.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
SPEC=examples/four-h100.yaml
DASH=(deploy/grafana/tessera-fleet.json deploy/grafana/tessera-tenant.json)
CHECK=(tests/tools/dashboard_check.py --docs docs/metrics.md)
SERVER= CONSOLE= PROM= AGENT=
trap 'kill $SERVER $CONSOLE $PROM $AGENT 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
need_prometheus

# the dashboards' JSON and documentation, before anything runs
expect_rc 0 "${CHECK[@]}" "${DASH[@]}"
cat "$TMP/out"

# the sidecar's ConfigMap: kustomization.yaml's generator made by hand (kustomize need
# not be installed), valid for Kubernetes 1.35, labelled for the sidecar, holding every
# dashboard file as it is; where kubectl is, `kubectl kustomize` makes the same object
/usr/bin/python3 - deploy/grafana "$TMP/cm.yaml" <<'PY' && ok || bad "the dashboards' ConfigMap"
import glob, os, sys, yaml
folder, out = sys.argv[1:]
k = yaml.safe_load(open(os.path.join(folder, "kustomization.yaml")))
(gen,) = k["configMapGenerator"]
labels = k["generatorOptions"]["labels"]
assert labels["grafana_dashboard"] == "1" and k["generatorOptions"]["disableNameSuffixHash"]
files = sorted(gen["files"])
assert files == sorted(map(os.path.basename, glob.glob(folder + "/*.json"))), files
data = {f: open(os.path.join(folder, f)).read() for f in files}
cm = {"apiVersion": "v1", "kind": "ConfigMap", "data": data,
      "metadata": {"name": gen["name"], "labels": labels}}
yaml.safe_dump(cm, open(out, "w"))
PY
expect_rc 0 /usr/bin/python3 tests/tools/validate_openapi.py tests/fixtures/schemas/openapi-1.35 \
    "$TMP/cm.yaml"
KUBECTL=${KUBECTL:-kubectl}
if command -v "$KUBECTL" >/dev/null; then
    "$KUBECTL" kustomize deploy/grafana > "$TMP/kcm.yaml" 2>"$TMP/err" || bad "kubectl kustomize"
    /usr/bin/python3 -c 'import sys, yaml; a, b = (yaml.safe_load(open(f)) for f in sys.argv[1:])
assert a == b, "kubectl kustomize differs"' "$TMP/cm.yaml" "$TMP/kcm.yaml" && ok || bad "kustomize"
fi

# the demo day, and its last scrape as a live one twice (15 s apart, so the GPU-hours grow)
demo_day "$TMP/demo" >"$TMP/demo.log" 2>&1 || bad "demo-meter failed"
DB=sqlite:$TMP/demo/metering.db
DAY=$TMP/demo/dcgm-2026-11-02.prom
last=$(tail -1 "$DAY" | awk '{print $NF}')
awk -v ts="$last" '$NF == ts { $NF = ""; sub(/ $/, ""); print }' "$DAY" > "$TMP/live.prom"
n=$(wc -l < "$TMP/live.prom")
check "the live scrape has $n series, not the day's last 32 (16 devices, 2 fields)" [ "$n" -eq 32 ]
NOW=$(date +%s)
for t in $((NOW - 30)) $((NOW - 15)); do
    expect_rc 0 "$TESSERA" meter import -f $SPEC --db $DB --at $t "$TMP/live.prom"
done

scripts/make-test-cert "$TMP/c"
# the API server's client certificate (clientAuth), from a CA of its own
scripts/make-test-cert "$TMP/apiserver" >/dev/null
client_cert "$TMP/apiserver" "$TMP/apiserver" kube-apiserver clientAuth
"$TESSERA" token new --operator | sed -n 2p >"$TMP/tokens"
PORT=$(free_port) HPORT=$(free_port) CPORT=$(free_port) CHPORT=$(free_port)
"$TESSERA" serve -f $SPEC --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" \
    --listen 127.0.0.1:$PORT --health-listen 127.0.0.1:$HPORT \
    --shim-path /usr/lib/tessera/libtessera-cuda.so \
    --admission-client-ca "$TMP/apiserver/ca.crt" 2>"$TMP/serve.log" &
SERVER=$!
"$TESSERA" console -f $SPEC --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" \
    --listen 127.0.0.1:$CPORT --health-listen 127.0.0.1:$CHPORT --tokens "$TMP/tokens" \
    --db $DB --metering-refresh 1s 2>"$TMP/console.log" &
CONSOLE=$!
for port in $PORT $CPORT; do
    for _ in $(seq 50); do
        curl -sf --cacert "$TMP/c/ca.crt" https://127.0.0.1:$port/readyz >/dev/null 2>&1 && break
        sleep 0.1
    done
done
# the node agent, where this build has `agent watch`: the stand-in NVML's two H100s
# (tests/fixtures/agent) kept to the plan of that folder's spec; without it, the
# agent's panels must still parse in Prometheus but cannot show data
AGENT_JOB= OPTIONAL=()
if "$TESSERA" agent watch --help >/dev/null 2>&1; then
    APORT=$(free_port)
    cp tests/fixtures/agent/h100-mixed.state "$TMP/node.state"
    "$TESSERA" plan -f tests/fixtures/agent/spec.yaml -o json > "$TMP/node-config.json"
    TESSERA_NVML_LIBRARY="$(dirname "$TESSERA")/standin/libnvidia-ml.so.1" \
        TESSERA_STANDIN_NVML="$TMP/node.state" TESSERA_STANDIN_NVML_LOG="$TMP/calls.log" \
        "$TESSERA" agent watch --node gpu-node-1 --node-config "$TMP/node-config.json" \
        --listen 127.0.0.1:$APORT --interval-ms 200 2>"$TMP/agent.log" &
    AGENT=$!
    AGENT_JOB="- {job_name: agent, static_configs: [{targets: ['127.0.0.1:$APORT']}]}"
else
    OPTIONAL=(--optional-prefix tessera_agent_)
    echo "note: this tessera has no 'agent watch'; the agent panels are checked for syntax only"
fi
prometheus_start "- {job_name: tessera-webhook, static_configs: [{targets: ['127.0.0.1:$HPORT']}]}
- {job_name: tessera-console, static_configs: [{targets: ['127.0.0.1:$CHPORT']}]}
$AGENT_JOB"
PURL=$PROM_URL

# reviews: every fixture under 64 KiB (the worked example's policy, served as the
# fixtures' SOURCES.md says), on one connection with the API server's client
# certificate, each answered as its .expect says; prints the denials (status 200,
# allowed false), then those in client-a's namespace
reviews() {
    /usr/bin/python3 - "$PORT" "$TMP/c/ca.crt" "$TMP/apiserver" tests/fixtures/admission/*.json <<'PY'
import http.client, json, os, ssl, sys
port, ca, client, files = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
ctx = ssl.create_default_context(cafile=ca)
ctx.load_cert_chain(client + ".crt", client + ".key")
c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
denied = client_a = 0
for f in files:
    if os.path.getsize(f) >= 64 * 1024:
        continue
    c.request("POST", "/validate", open(f, "rb").read(), {"Content-Type": "application/json"})
    r = c.getresponse()
    body = r.read()
    status, allowed = open(f[:-5] + ".expect").read().split("\n")[:2]
    assert r.status == int(status), (f, r.status)
    got = r.status == 200 and json.loads(body)["response"]["allowed"]
    assert r.status != 200 or got == (allowed == "true"), (f, body[:300])
    no = status == "200" and allowed == "false"
    denied += no
    ns = no and json.loads(open(f, "rb").read())["request"].get("namespace")
    client_a += ns == "client-a-prod"
print(denied, client_a)
PY
}
deadline=$((SECONDS + 30))
targets=2
[ -n "$AGENT" ] && targets=3
prometheus_up $targets 30 && ok ||
    { bad "Prometheus never scraped the webhook, the console and the agent (targets not up in 30 s)"; finish; exit; }
r1=$(reviews) || bad "reviews failed"
sleep 3
expect_rc 0 "$TESSERA" meter import -f $SPEC --db $DB --at "$NOW" "$TMP/live.prom"
r2=$(reviews) || bad "reviews failed"
sleep 3
r3=$(reviews) || bad "reviews failed"
sleep 3
read d1 a1 <<< "$r1"
read d2 a2 <<< "$r2"
read d3 a3 <<< "$r3"
check "the fixtures expect denials (${d1:-none}), of client-a (${a1:-none})" \
    [ "${d1:-0}" -gt 10 -a "${a1:-0}" -gt 5 ]

# every panel of both dashboards returns data: all tenants and one tenant
run() { expect_rc 0 "${CHECK[@]}" --prometheus $PURL --window 15 "${OPTIONAL[@]}" "$@"
        cat "$TMP/out"; }
run --var 'tenant=.*' deploy/grafana/tessera-fleet.json
run --var tenant=client-a "${DASH[@]}"

# what a panel shows is what was done: the denials summed equal the fixtures' three times
q() { curl -s --max-time 5 "$PURL/api/v1/query" --data-urlencode "query=$1" > "$TMP/q.json"; }
for _ in $(seq 10); do
    q 'sum(tessera_admission_denials_total)'
    grep -q "\"$((d1 + d2 + d3))\"\]" "$TMP/q.json" && break
    sleep 0.5
done
expect_in "$TMP/q.json" "\"$((d1 + d2 + d3))\"]"
q 'sum(tessera_admission_tenant_denials_total{tenant="client-a"})'
expect_in "$TMP/q.json" "\"$((a1 + a2 + a3))\"]"
q 'max(tessera_plan_gpus{kind="used"}) + max(tessera_plan_gpus{kind="naive"}) * 10'
expect_in "$TMP/q.json" '"74"]' # the worked example: 4 cards, 7 naive
q 'count(DCGM_FI_DEV_FB_USED{tenant="client-a"})'
expect_in "$TMP/q.json" '"2"]' # its two 3g.40gb instances

# every tessera_ family on either page is documented, with its type
curl -s http://127.0.0.1:$HPORT/metrics > "$TMP/page"
expect_rc 0 "${CHECK[@]}" --exposition "$TMP/page" "${DASH[@]}"
cat "$TMP/out"
check "the webhook's page has its denials" grep -q '^tessera_admission_tenant_denials_total{' "$TMP/page"
curl -s http://127.0.0.1:$CHPORT/metrics > "$TMP/page"
expect_rc 0 "${CHECK[@]}" --exposition "$TMP/page" "${DASH[@]}"
cat "$TMP/out"
check "the console's page has the plan's cards" grep -q '^tessera_plan_gpus{kind="used"} 4$' "$TMP/page"
check "the console's page has the GPU-hours" grep -q '^tessera_gpu_hours_total{' "$TMP/page"
if [ -n "$AGENT" ]; then # the agent's page too; the fixture's two cards planned
    curl -s http://127.0.0.1:$APORT/metrics > "$TMP/agent-page"
    expect_rc 0 "${CHECK[@]}" --exposition "$TMP/agent-page" "${DASH[@]}"
    cat "$TMP/out"
    q 'max(tessera_agent_planned_cards) * 10 + max(tessera_agent_drift_cards)'
    expect_in "$TMP/q.json" '"20"]'
fi
kill $SERVER $CONSOLE $AGENT 2>/dev/null
wait $SERVER $CONSOLE $AGENT 2>/dev/null
SERVER= CONSOLE= AGENT=

# the checker fails, naming the panel: a copy of the fleet dashboard mutated
mutate() { # PYTHON-EXPR-ON-d -> $TMP/bad.json
    /usr/bin/python3 - deploy/grafana/tessera-fleet.json "$TMP/bad.json" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["panels"][6]["targets"][0]
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"), indent=2)
PY
}
title=$(/usr/bin/python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["panels"][6]
print("panel %d \"%s\" target A" % (p["id"], p["title"]))' deploy/grafana/tessera-fleet.json)
bad_run() { # TEXT [--var tenant=...]: the checker fails on bad.json, saying TEXT
    local text=$1; shift
    expect_rc 1 "${CHECK[@]}" --prometheus $PURL --window 15 --var 'tenant=.*' "$@" "$TMP/bad.json"
    expect_in "$TMP/out" "$TMP/bad.json: $title: $text"
}
mutate 't["expr"] = t["expr"].replace("tenant_allocation_gpus", "tenant_alocation_gpus")'
bad_run "metric tessera_tenant_alocation_gpus is not documented in docs/metrics.md"
expect_in "$TMP/out" "$title: no data for 'sum by (tenant) (max by"
mutate 't["expr"] = t["expr"].replace("(max by", "((max by")'
bad_run "Prometheus refused 'sum by (tenant) (("
expect_in "$TMP/out" "bad_data: 1:"
mutate 't["expr"] = t["expr"].replace("{tenant=~", "{tennant=~")'
bad_run "no data for" --var tenant=client-a # (tennant=~".*" would match the absent label)
mutate 't["expr"] = "up"'
bad_run "metric up is not documented in docs/metrics.md"
mutate 'd["panels"][6]["datasource"] = {"type": "prometheus", "uid": "prod"}'
expect_rc 1 "${CHECK[@]}" "$TMP/bad.json"
expect_in "$TMP/out" "${title% target A}: datasource {'type': 'prometheus', 'uid': 'prod'} is not"
mutate 'd["panels"][6]["type"] = "graph"; d["templating"]["list"].pop()
d["panels"][1]["gridPos"]["x"] = 2'
expect_rc 1 "${CHECK[@]}" "$TMP/bad.json"
expect_in "$TMP/out" "$TMP/bad.json: panel 2 \"Cards in the fleet\": overlaps panel 1 at x 2, y 0"
expect_in "$TMP/out" "${title% target A}: type 'graph' is not one of"
expect_in "$TMP/out" "$TMP/bad.json: templating: no tenant variable"
mutate 'd["templating"]["list"][1]["query"]["label"] = "tenants"'
expect_rc 1 "${CHECK[@]}" "$TMP/bad.json"
expect_in "$TMP/out" "$TMP/bad.json: variable tenant: metric and label"
head -c 3000 deploy/grafana/tessera-fleet.json > "$TMP/bad.json"
expect_rc 2 "${CHECK[@]}" "$TMP/bad.json"
grep -Eq "^$TMP/bad.json:[0-9]+:[0-9]+: " "$TMP/out" && ok ||
    { bad "no FILE:LINE:COL"; cat "$TMP/out"; }
kill $PROM 2>/dev/null
wait 2>/dev/null
PROM=
finish
