# 60-metering.sh - metering across nodes: three GPU nodes, each a test host
# (a network namespace with its own address) running its own "dcgm-exporter"
# (a recorded exporter page, its Hostname and card UUIDs made that node's),
# behind the Service nvidia-dcgm-exporter in gpu-operator as the GPU operator
# makes it, its EndpointSlice listing each node's exporter (the third not
# ready). `tessera meter scrape --discover`, with the meter's own
# service-account token and deploy/'s Role, must store every card of the two
# ready nodes each round, each once and from its own node, and nothing of the
# third. `tessera console`, its store from TESSERA_DB as the postgres overlay
# passes it, then shows those nodes' series on its /metrics. Needs
# 10-apply.sh's deploy/ (the ServiceAccount, Role, RoleBinding).

PAGE=$TESSERA_FIXTURES/dcgm/nvidia-dcgm-exporter-issue250-v100-sxm2-32gb.prom
declare -A EXPORTER
for n in a b c; do
    netns_host "gpu-$n" || { bad "test host gpu-$n"; break; }
    addr=$NETNS_ADDR
    EXPORTER[$n]=$addr
    mkdir -p "$TMP/exp-$n"
    # node n's page: its Hostname, and its cards' UUIDs (GPU-<n>...)
    sed -e "s/Hostname=\"[^\"]*\"/Hostname=\"gpu-node-$n\"/g" \
        -e "s/UUID=\"GPU-./UUID=\"GPU-$n/g" "$PAGE" >"$TMP/exp-$n/page.prom"
    echo 200 >"$TMP/exp-$n/page.prom.status"
    cp_daemon "exporter-$n" ip netns exec "$NETNS_PREFIX-gpu-$n" env PAGE_SERVER_ADDRESS="$addr" \
        /usr/bin/python3 "$TESSERA_SRC/tests/tools/page_server.py" 9400 canned "$TMP/exp-$n/page.prom"
done
for n in a b c; do
    cp_wait 20 "exporter $n did not answer" curl -sf "http://${EXPORTER[$n]}:9400/metrics"
done

# the GPU operator's Service and the slice its controller would keep
kc apply --server-side -f - >"$TMP/svc.out" 2>&1 <<EOF || { bad "exporter Service"; cat "$TMP/svc.out"; }
apiVersion: v1
kind: Service
metadata: {name: nvidia-dcgm-exporter, namespace: gpu-operator}
spec:
  ports: [{name: gpu-metrics, port: 9400, targetPort: 9400}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: nvidia-dcgm-exporter-e2e
  namespace: gpu-operator
  labels: {kubernetes.io/service-name: nvidia-dcgm-exporter, endpointslice.kubernetes.io/managed-by: e2e}
addressType: IPv4
ports: [{name: gpu-metrics, port: 9400, protocol: TCP}]
endpoints:
- {addresses: ["${EXPORTER[a]}"], nodeName: gpu-node-a, conditions: {ready: true}}
- {addresses: ["${EXPORTER[b]}"], nodeName: gpu-node-b}
- {addresses: ["${EXPORTER[c]}"], nodeName: gpu-node-c, conditions: {ready: false}}
EOF

# scrape as the meter's pod would: its ServiceAccount's token, deploy/'s RBAC
kc -n tessera-system create token tessera-meter >"$TMP/meter.token" || bad "meter token"
scrape() {
    "$TESSERA" meter scrape -f "$TESSERA_SRC/examples/four-h100.yaml" --db "sqlite:$TMP/meter.db" \
        --discover gpu-operator/nvidia-dcgm-exporter:gpu-metrics \
        --api-server "https://127.0.0.1:$CP_API_PORT" --api-token-file "$1" \
        --api-ca-file "$CP_DIR/pki/ca.crt" --interval 1s --count 2 >"$TMP/scrape.out" 2>&1
}
if scrape "$TMP/meter.token"; then ok; else bad "meter scrape --discover failed"; cat "$TMP/scrape.out"; fi
/usr/bin/python3 - "$TMP/meter.db" >"$TMP/samples.out" 2>&1 <<'PY'
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute(
    "SELECT node, device, COUNT(*), COUNT(DISTINCT ts_ms) FROM samples GROUP BY node, device").fetchall()
byhost = {}
for node, device, n, distinct in rows:
    assert n == distinct == 2, ("each card once a round, two rounds", node, device, n, distinct)
    # a card's UUID names its node (GPU-a..., GPU-b...): none stored from another node
    assert device.startswith("GPU-" + node[-1]), ("from the wrong node", node, device)
    byhost.setdefault(node, []).append(device)
assert sorted(byhost) == ["gpu-node-a", "gpu-node-b"], ("the ready nodes only", sorted(byhost))
assert all(len(v) == 4 for v in byhost.values()), byhost
print("stored: " + ", ".join("%s %d cards x 2 rounds" % (k, len(v)) for k, v in sorted(byhost.items())))
PY
if [ $? -eq 0 ]; then ok; cat "$TMP/samples.out"; else bad "samples across nodes"; cat "$TMP/samples.out"; fi

# a token without the Role (the webhook's account) is refused by the API's RBAC:
# the scrape says so and fails, it does not bill nothing quietly
kc -n tessera-system create token tessera-webhook >"$TMP/other.token"
if scrape "$TMP/other.token"; then bad "a scrape without discovery access succeeded"; else ok; fi
expect_in "$TMP/scrape.out" "HTTP 403"

# the console serves what metering stored: its store from TESSERA_DB, as
# deploy/overlays/postgres gives it the Secret's URL (the webhook opens no
# store); on its probes' port, /metrics has the stored exporter series of the
# two ready nodes with a tenant label, and the store is up
"$TESSERA" token new --operator | tail -1 >"$TMP/meter-console-tokens"
"$TESSERA" cert --dir "$TMP/meter-console-tls" >/dev/null || bad "tessera cert"
MC_HEALTH=127.0.0.1:$(free_port)
cp_daemon meter-console env TESSERA_DB="sqlite:$TMP/meter.db" "$TESSERA" console \
    -f "$TESSERA_SRC/examples/four-h100.yaml" --tls-cert "$TMP/meter-console-tls/tls.crt" \
    --tls-key "$TMP/meter-console-tls/tls.key" --listen "127.0.0.1:$(free_port)" \
    --health-listen "$MC_HEALTH" --tokens "$TMP/meter-console-tokens"
MC_PID=${CP_PIDS[-1]}
cp_wait 20 "the console was not ready" curl -sf "http://$MC_HEALTH/readyz"
curl -sf "http://$MC_HEALTH/metrics" >"$TMP/console-metrics" || bad "the console's /metrics"
expect_in "$TMP/console-metrics" "tessera_metering_up 1"
check "the console's /metrics: the ready nodes' stored series, with a tenant label" /usr/bin/python3 -c '
import re, sys
hosts = set(re.findall(r"^DCGM_FI_DEV_GPU_UTIL\{[^}]*Hostname=\"([^\"]+)\"[^}]*,tenant=\"[^\"]+\"\}", open(sys.argv[1]).read(), re.M))
assert hosts == {"gpu-node-a", "gpu-node-b"}, hosts' "$TMP/console-metrics"
kill "$MC_PID" 2>/dev/null
