#!/bin/bash
# webhook_conns.sh - tessera serve's peak RSS (VmHWM) with N concurrent TLS
# connections (default 2,000), on loopback: idle keep-alive ones that each
# POST a small review every 1-2 s (tests/tools/webhook_clients.py many), so
# every connection has served requests and holds what a served one holds.
# With MODE=fat, slow-header clients instead: each sends KB (default 48)
# KiB of headers and then a header line every 2 s (webhook_clients.py fat).
# REQ_S sets --request-timeout. Prints the clients' tally, the deadline cuts (from
# /metrics on the webhook's --health-listen port), peak and current RSS (and the
# server log's commonest lines on stderr).
set -euo pipefail
cd "$(dirname "$0")/.."
TESSERA=${TESSERA:-build/tessera}
N=${N:-2000}
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
scripts/make-test-cert "$W" >/dev/null 2>&1
"$TESSERA" serve -f examples/four-h100.yaml --tls-cert "$W/tls.crt" --tls-key "$W/tls.key" \
    --listen 127.0.0.1:18445 --health-listen 127.0.0.1:18446 --request-timeout "${REQ_S:-60}" --max-connections 4096 --max-per-client 1024 \
    --threads 2 2>"$W/serve.log" &
SERVER=$!
for _ in $(seq 50); do curl -s --cacert "$W/ca.crt" https://127.0.0.1:18445/readyz >/dev/null 2>&1 && break; sleep 0.1; done
sed 's/"namespace": *"[^"]*"/"namespace": "client-c-prod"/g' \
    tests/fixtures/admission/001-pod-no-gpu-tenant-ns.json >"$W/small.json"
if [ "${MODE:-many}" = fat ]; then
    ARGS=(fat 18445 "$W/ca.crt" "$N" "$W/stop" "${KB:-48}")
else
    ARGS=(many 18445 "$W/ca.crt" "$N" "$W/stop" "$W/small.json")
fi
python3 tests/tools/webhook_clients.py "${ARGS[@]}" 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5 \
    >"$W/many.out" 2>&1 &
for _ in $(seq 1200); do grep -q ready "$W/many.out" && break; sleep 0.1; done
sleep 5 # every connection has had a request answered
rss=$(awk '/VmRSS/ {print $2}' /proc/$SERVER/status)
cuts=$(curl -s http://127.0.0.1:18446/metrics | awk '/^tessera_connections_deadline_total/ {print $2}')
touch "$W/stop"
wait %2 || true
sort "$W/serve.log" | sed -E "s/[0-9]+/N/g" | sort | uniq -c | sort -rn | head -5 >&2
echo "mode ${MODE:-many} conns $N $(grep -E '^(connected|held)' "$W/many.out")" \
    "deadline_cuts ${cuts:-?} hwm_kb $(awk '/VmHWM/ {print $2}' /proc/$SERVER/status) rss_kb $rss"
