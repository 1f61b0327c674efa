#!/bin/bash
# webhook_robust.sh - `tessera serve` against a hostile network, on loopback
# only, bounded in count and time (under a minute):
#   - slow-header and slow-body TLS clients from 127.0.0.2 fill that address's
#     connection limit (--max-per-client) while a prober from 127.0.0.1 sees
#     /healthz and /validate answered within 100 ms each, and the probes'
#     own listener (--health-listen) too; the slow ones are cut at
#     --request-timeout (counted on /metrics);
#   - a TLS 1.1 client is refused (and TLS 1.2 accepted); plain HTTP to the
#     TLS port is counted on /metrics;
#   - eight concurrent 3 MB reviews (long strings, and 100,000 env entries,
#     which is refused with a 400 naming the limit) keep peak RSS (VmHWM)
#     under 64 MB.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
PY=/usr/bin/python3
# under AddressSanitizer (make check's second build) memory and time are the
# sanitizer's: the RSS and 100 ms bounds are checked in the plain build only
SAN=0
nm "$TESSERA" 2>/dev/null | grep -q __asan_init && SAN=1
fast() { [ "$SAN" = 1 ] || [ "$1" -lt 100 ]; }
PORT=$(free_port)
HPORT=$(free_port)
URL=https://127.0.0.1:$PORT
scripts/make-test-cert "$TMP/c" robust >/dev/null 2>&1
CA=$TMP/c/ca.crt

"$TESSERA" serve -f examples/four-h100.yaml --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" \
    --listen 127.0.0.1:$PORT --health-listen 127.0.0.1:$HPORT --request-timeout 3 \
    --max-per-client 64 --threads 2 \
    2>"$TMP/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null' EXIT
for _ in $(seq 50); do curl -s --cacert "$CA" $URL/readyz >/dev/null 2>&1 && break; sleep 0.1; done

# a small allowed review for the prober
sed 's/"namespace": *"[^"]*"/"namespace": "client-c-prod"/g' \
    tests/fixtures/admission/001-pod-no-gpu-tenant-ns.json >"$TMP/small.json"

# prober PATH [POST-FILE]: ten requests, prints the slowest time in ms and the codes
# (PATH with a scheme goes to that URL: the health listener)
probe() {
    local base=$URL
    case $1 in http://*) base= ;; esac
    local worst=0 codes="" t code
    for _ in $(seq 10); do
        if [ -n "${2:-}" ]; then
            read -r code t < <(curl -s -o /dev/null --max-time 2 --cacert "$CA" -w '%{http_code} %{time_total}\n' \
                -H 'Content-Type: application/json' --data-binary @"$2" $base$1)
        else
            read -r code t < <(curl -s -o /dev/null --max-time 2 --cacert "$CA" -w '%{http_code} %{time_total}\n' $base$1)
        fi
        codes="$codes $code"
        t=$(awk -v t="$t" 'BEGIN { printf "%d", t * 1000 }')
        [ "$t" -gt "$worst" ] && worst=$t
        sleep 0.1
    done
    echo "$worst$codes"
}

# 1. slow clients from 127.0.0.2: 100 send a header line every second, 40 a
# body byte every second; the address may hold 64 connections
$PY - "$PORT" "$CA" >"$TMP/slow.out" 2>&1 <<'PY' &
import socket, ssl, sys, threading, time
port, ca = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile=ca)
ctx.check_hostname = False
held, cut = [0], [0]
lock = threading.Lock()
def client(body):
    try:
        raw = socket.create_connection(("127.0.0.1", port), timeout=3, source_address=("127.0.0.2", 0))
        s = ctx.wrap_socket(raw)
    except (OSError, ssl.SSLError):
        return
    with lock: held[0] += 1
    start = time.time()
    try:
        s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\n")
        if body:
            s.sendall(b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
        while time.time() - start < 12:
            s.sendall(b"a" if body else b"X-Slow: 1\r\n")
            time.sleep(1)
    except (OSError, ssl.SSLError):
        with lock: cut[0] += 1
        return
threads = [threading.Thread(target=client, args=(i >= 100,)) for i in range(140)]
for t in threads: t.start()
for t in threads: t.join()
print("held", held[0], "cut", cut[0])
PY
SLOW=$!
sleep 1.5
read -r worst codes < <(probe /healthz)
fast "$worst" && ok || bad "/healthz under slow clients: slowest ${worst} ms"
[ "$(echo $codes | tr ' ' '\n' | sort -u)" = 200 ] && ok || bad "/healthz codes under slow clients: $codes"
read -r worst codes < <(probe /validate "$TMP/small.json")
fast "$worst" && ok || bad "/validate under slow clients: slowest ${worst} ms"
[ "$(echo $codes | tr ' ' '\n' | sort -u)" = 200 ] && ok || bad "/validate codes under slow clients: $codes"
read -r worst codes < <(probe http://127.0.0.1:$HPORT/healthz)
fast "$worst" && ok || bad "health listener under slow clients: slowest ${worst} ms"
[ "$(echo $codes | tr ' ' '\n' | sort -u)" = 200 ] && ok || bad "health listener codes: $codes"
wait $SLOW
cat "$TMP/slow.out"
held=$(awk '/held/ {print $2}' "$TMP/slow.out"); cut=$(awk '/held/ {print $4}' "$TMP/slow.out")
[ "${held:-0}" -ge 60 ] && [ "${held:-0}" -le 140 ] && ok || bad "slow clients held: $held"
[ "${cut:-0}" -ge 60 ] && ok || bad "slow clients cut by the request deadline: $cut of $held"
curl -s --cacert "$CA" $URL/metrics >"$TMP/metrics"
n=$(awk '/^tessera_connections_deadline_total/ {print $2}' "$TMP/metrics")
[ "${n:-0}" -ge 60 ] && ok || bad "tessera_connections_deadline_total $n"

# 2. TLS 1.1 refused, TLS 1.2 served; plain HTTP counted
echo | timeout 5 openssl s_client -connect 127.0.0.1:$PORT -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0' \
    >"$TMP/tls11" 2>&1
grep -q "Cipher is (NONE)" "$TMP/tls11" && ok || bad "TLS 1.1 accepted: $(grep -E 'Cipher is|Protocol' "$TMP/tls11")"
echo | timeout 5 openssl s_client -connect 127.0.0.1:$PORT -tls1_2 >"$TMP/tls12" 2>&1
grep -q "Cipher is ECDHE" "$TMP/tls12" && ok || bad "TLS 1.2 refused"
before=$(curl -s --cacert "$CA" $URL/metrics | awk '/^tessera_tls_handshake_failures_total/ {print $2}')
curl -s --max-time 2 http://127.0.0.1:$PORT/healthz >/dev/null 2>&1
sleep 0.3
after=$(curl -s --cacert "$CA" $URL/metrics | awk '/^tessera_tls_handshake_failures_total/ {print $2}')
[ "${after:-0}" -gt "${before:-0}" ] && ok || bad "plain HTTP not counted ($before -> $after)"

# 3. eight concurrent 3 MB reviews: peak RSS under 64 MB
$PY - "$TMP" <<'PY'
import json, sys
d = json.load(open("tests/fixtures/admission/001-pod-no-gpu-tenant-ns.json"))
d["request"]["namespace"] = "client-c-prod"
d["request"]["object"]["metadata"]["namespace"] = "client-c-prod"
c = d["request"]["object"]["spec"]["containers"][0]
big = json.loads(json.dumps(d))
big["request"]["object"]["metadata"]["annotations"] = {"example.com/blob": "x" * (3 * 1000 * 1000)}
json.dump(big, open(sys.argv[1] + "/strings.json", "w"))
c["env"] = [{"name": "V%06d" % i, "value": "v"} for i in range(100000)]
json.dump(d, open(sys.argv[1] + "/entries.json", "w"))
PY
ls -la "$TMP/strings.json" "$TMP/entries.json" | awk '{print $5, $9}'
BIG=""
for i in 1 2 3 4 5 6 7 8; do
    f=$TMP/strings.json; [ $((i % 2)) = 0 ] && f=$TMP/entries.json
    curl -s --max-time 20 --cacert "$CA" -o "$TMP/big$i" -w '%{http_code}\n' \
        -H 'Content-Type: application/json' --data-binary @"$f" $URL/validate >"$TMP/code$i" &
    BIG="$BIG $!"
done
read -r worst codes < <(probe http://127.0.0.1:$HPORT/readyz)
fast "$worst" && ok || bad "health listener under big reviews: slowest ${worst} ms"
[ "$(echo $codes | tr ' ' '\n' | sort -u)" = 200 ] && ok || bad "health listener codes: $codes"
wait $BIG
for i in 1 2 3 4 5 6 7 8; do
    want=200; [ $((i % 2)) = 0 ] && want=400
    [ "$(cat "$TMP/code$i")" = $want ] && ok || bad "big review $i: HTTP $(cat "$TMP/code$i"), want $want"
done
expect_in "$TMP/big2" "more than 65536 entries"
hwm=$(awk '/VmHWM/ {print $2}' /proc/$SERVER/status)
echo "peak RSS: $hwm kB"
[ "$SAN" = 1 ] || [ "${hwm:-999999}" -lt $((64 * 1024)) ] && ok || bad "peak RSS ${hwm} kB, over 64 MB"
expect_rc 0 curl -sf --cacert "$CA" $URL/healthz
# the health listener serves the probes only
[ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$HPORT/metrics)" = 404 ] && ok || bad "health listener serves /metrics"
[ "$(curl -s -o /dev/null -w '%{http_code}' --data x http://127.0.0.1:$HPORT/validate)" = 405 ] && ok || bad "health listener takes POST"
finish
