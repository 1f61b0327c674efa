#!/bin/bash
# labels: slow timing serial
# webhook_robust.sh - `tessera serve` against a hostile network, on loopback
# only, bounded in count and time (under a minute; clients: tests/tools/
# webhook_clients.py):
#   - slow-header and slow-body TLS clients from 127.0.0.2-4 hold every general
#     connection slot (--max-connections 200, 40 --reserved for 127.0.0.1, the
#     "API server") and reconnect when cut at --request-timeout, while a prober
#     from 127.0.0.1 sees /healthz and /validate answered within 100 ms (nine probes of ten; none over 500 ms),
#     and the probes' own listener (--health-listen) too; another address is
#     refused (counted on /metrics);
#   - a TLS 1.1 client is refused (and TLS 1.2 accepted); plain HTTP to the
#     TLS port is counted on /metrics (the webhook's, on --health-listen);
#   - the body budget: reviews whose bodies would take the bodies in memory
#     past 32 MiB are answered 429 unread;
#   - eight concurrent 3 MB reviews (long strings, and 100,000 env entries,
#     which is refused with a 400 naming the limit) keep peak RSS (VmHWM)
#     under 64 MB;
#   - CONNS concurrent keep-alive connections sending reviews, with the same
#     prober: 1,000 in make check (5 times the first server's slots, 500
#     times its threads), 2,000 in make bench (bench/acceptance.sh sets
#     WEBHOOK_ROBUST_CONNS=2000): their TLS handshakes alone took 15 s of
#     this serial test at 2,000 with an RSA-2048 serving key (the test
#     certificates are ECDSA P-256 since, as tessera cert's: tests/lib.sh).
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
PY=/usr/bin/python3
# under AddressSanitizer (make check's second build) memory and time are the
# sanitizer's: the RSS and 100 ms bounds are checked in the plain build only
SAN=0
nm "$TESSERA" 2>/dev/null | grep -q __asan_init && SAN=1
# fast P90 MAX: nine of ten probes within max(250 ms, 4 x the quiet ninth)
# and none over max(1 s, 4 x the quiet slowest), the quiet figures measured
# in this run before any load (BASE90, BASEMAX). A starved listener shows as
# curl's 2 s timeout; a busy 2-core machine's scheduler as a few hundred ms.
fast() {
    [ "$SAN" = 1 ] && return 0
    local lim90=$((4 * BASE90)) limmax=$((4 * BASEMAX))
    [ $lim90 -ge 250 ] || lim90=250
    [ $limmax -ge 1000 ] || limmax=1000
    [ "$1" -lt $lim90 ] && [ "$2" -lt $limmax ]
}
CONNS=${WEBHOOK_ROBUST_CONNS:-1000}
PORT=$(free_port)
HPORT=$(free_port)
URL=https://127.0.0.1:$PORT
scripts/make-test-cert "$TMP/c" robust >/dev/null 2>&1
CA=$TMP/c/ca.crt

# bad capacity options: exit 2 naming the option and the value
serve_bad() { # WANT-TEXT ARGS...
    local text=$1 # not "want": expect_rc sets that one
    shift
    expect_rc 2 "$TESSERA" serve -f examples/four-h100.yaml --tls-cert "$TMP/c/tls.crt" \
        --tls-key "$TMP/c/tls.key" --listen 127.0.0.1:$PORT "$@"
    expect_in "$TMP/err" "$text"
}
serve_bad "--reserve-for: '10.0.0.0/33' is not ADDR or ADDR/BITS" --reserve-for 10.0.0.0/33
serve_bad "--reserve-for: 'apiserver' is not ADDR or ADDR/BITS" --reserve-for 10.0.0.1 --reserve-for apiserver
serve_bad "--reserve-for: '::1/' is not ADDR or ADDR/BITS" --reserve-for ::1/
serve_bad "--reserved needs --reserve-for" --reserved 10
serve_bad "--reserved 100: must be under --max-connections 100" --max-connections 100 --reserve-for 10.0.0.0/8 --reserved 100
serve_bad "--max-connections must be 2 to 16384" --max-connections 1

"$TESSERA" serve -f examples/four-h100.yaml --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" \
    --listen 127.0.0.1:$PORT --health-listen 127.0.0.1:$HPORT --request-timeout 3 \
    --max-per-client 64 --threads 2 --max-connections 200 --reserve-for 127.0.0.1/32 \
    --reserved 40 \
    2>"$TMP/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do curl -s --cacert "$CA" $URL/readyz >/dev/null 2>&1 && break; sleep 0.1; done

# a small allowed review for the prober
sed 's/"namespace": *"[^"]*"/"namespace": "client-c-prod"/g' \
    tests/fixtures/admission/001-pod-no-gpu-tenant-ns.json >"$TMP/small.json"

# prober PATH [POST-FILE]: ten requests (a new curl and TLS handshake each),
# prints the ninth fastest time in ms (the bound's check: one in ten may meet
# the 2-core machine's scheduler), the slowest, and the codes
# (PATH with a scheme goes to that URL: the health listener)
probe() {
    local base=$URL
    case $1 in http://* | https://*) base= ;; esac
    local times="" codes="" t code
    for _ in $(seq 10); do
        if [ -n "${2:-}" ]; then
            read -r code t < <(curl -s -o /dev/null --max-time 2 --cacert "$CA" -w '%{http_code} %{time_total}\n' \
                -H 'Content-Type: application/json' --data-binary @"$2" $base$1)
        else
            read -r code t < <(curl -s -o /dev/null --max-time 2 --cacert "$CA" -w '%{http_code} %{time_total}\n' $base$1)
        fi
        codes="$codes $code"
        t=$(awk -v t="$t" 'BEGIN { printf "%d", t * 1000 }')
        times="$times $t"
        sleep 0.1
    done
    echo "$(echo $times | tr ' ' '\n' | sort -n | sed -n 9p) $(echo $times | tr ' ' '\n' | sort -n | tail -1)$codes"
}

# the quiet reference for fast(): /healthz over TLS before any load
read -r BASE90 BASEMAX _ < <(probe /healthz)
echo "webhook_robust: quiet /healthz: ninth of ten $BASE90 ms, slowest $BASEMAX ms"

# 1. slow clients at the connection limit: 200 threads from 127.0.0.2-4 (64 a
# client address, 192 in all) send a header line or a body byte a second and
# reconnect when cut; only 160 of the 200 slots are theirs (40 are reserved
# for 127.0.0.1, the "API server"), so they hold every general slot
$PY tests/tools/webhook_clients.py slow "$PORT" "$CA" 12 127.0.0.2 127.0.0.3 127.0.0.4 \
    >"$TMP/slow.out" 2>&1 &
SLOW=$!
sleep 1
for _ in $(seq 40); do # the slow clients' handshakes take a while on a busy machine
    curl -s http://127.0.0.1:$HPORT/metrics >"$TMP/metrics"
    general=$(awk '/^tessera_connections\{slots="general"\}/ {print $2}' "$TMP/metrics")
    [ "${general:-0}" -ge 158 ] && break
    sleep 0.1
done
[ "${general:-0}" -ge 150 ] && [ "${general:-0}" -le 162 ] && ok || bad "general slots held by slow clients: $general of 160"
# another address finds no slot (a cut client's slot may be free for a moment)
refused=0
for _ in 1 2 3 4 5; do
    $PY - "$PORT" "$CA" 2>/dev/null <<'PY' || refused=$((refused + 1))
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[2])
ctx.check_hostname = False
raw = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2,
                               source_address=("127.0.0.5", 0))
s = ctx.wrap_socket(raw)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
sys.exit(0 if s.recv(100).startswith(b"HTTP/1.1 200") else 1)
PY
    sleep 0.2
done
[ "$refused" -ge 3 ] && ok || bad "127.0.0.5 served while the general slots were full ($refused of 5 refused)"
read -r p90 worst codes < <(probe /healthz)
fast "$p90" "$worst" && ok || bad "/healthz under slow clients: ninth of ten ${p90} ms, slowest ${worst} ms"
[ "$(echo $codes | tr ' ' '\n' | sort -u)" = 200 ] && ok || bad "/healthz codes under slow clients: $codes"
read -r p90 worst codes < <(probe /validate "$TMP/small.json")
fast "$p90" "$worst" && ok || bad "/validate under slow clients: ninth of ten ${p90} ms, slowest ${worst} ms"
[ "$(echo $codes | tr ' ' '\n' | sort -u)" = 200 ] && ok || bad "/validate codes under slow clients: $codes"
read -r p90 worst codes < <(probe http://127.0.0.1:$HPORT/healthz)
fast "$p90" "$worst" && ok || bad "health listener under slow clients: ninth of ten ${p90} ms, slowest ${worst} ms"
[ "$(echo $codes | tr ' ' '\n' | sort -u)" = 200 ] && ok || bad "health listener codes: $codes"
wait $SLOW
cat "$TMP/slow.out"
read -r _ peak _ cut _ nrefused <"$TMP/slow.out"
[ "${cut:-0}" -ge 100 ] && ok || bad "slow clients cut by the request deadline: $cut"
[ "${nrefused:-0}" -ge 1 ] && ok || bad "slow clients never refused a slot"
curl -s http://127.0.0.1:$HPORT/metrics >"$TMP/metrics"
n=$(awk '/^tessera_connections_deadline_total/ {print $2}' "$TMP/metrics")
[ "${n:-0}" -ge 100 ] && ok || bad "tessera_connections_deadline_total $n"
n=$(awk '/^tessera_connections_refused_total/ {print $2}' "$TMP/metrics")
[ "${n:-0}" -ge 3 ] && ok || bad "tessera_connections_refused_total $n"

# 2. TLS 1.1 refused, TLS 1.2 served; plain HTTP counted
echo | timeout 5 openssl s_client -connect 127.0.0.1:$PORT -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0' \
    >"$TMP/tls11" 2>&1
grep -q "Cipher is (NONE)" "$TMP/tls11" && ok || bad "TLS 1.1 accepted: $(grep -E 'Cipher is|Protocol' "$TMP/tls11")"
echo | timeout 5 openssl s_client -connect 127.0.0.1:$PORT -tls1_2 >"$TMP/tls12" 2>&1
grep -q "Cipher is ECDHE" "$TMP/tls12" && ok || bad "TLS 1.2 refused"
before=$(curl -s http://127.0.0.1:$HPORT/metrics | awk '/^tessera_tls_handshake_failures_total/ {print $2}')
curl -s --max-time 2 http://127.0.0.1:$PORT/healthz >/dev/null 2>&1
sleep 0.3
after=$(curl -s http://127.0.0.1:$HPORT/metrics | awk '/^tessera_tls_handshake_failures_total/ {print $2}')
[ "${after:-0}" -gt "${before:-0}" ] && ok || bad "plain HTTP not counted ($before -> $after)"

# the rest on a server with longer deadlines (a 3 MB upload on a busy machine
# may take over 3 s; 2,000 TLS handshakes queue), room for 2,000 connections,
# 127.0.0.1 reserved
kill $SERVER
wait $SERVER 2>/dev/null
ulimit -n 8192 2>/dev/null || true
PORT=$(free_port)
HPORT=$(free_port)
URL=https://127.0.0.1:$PORT
"$TESSERA" serve -f examples/four-h100.yaml --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" \
    --listen 127.0.0.1:$PORT --health-listen 127.0.0.1:$HPORT --threads 2 \
    --request-timeout 30 --conn-timeout 30 --max-connections 2400 --max-per-client 300 --reserve-for 127.0.0.1 \
    2>"$TMP/serve2.log" &
SERVER=$!
for _ in $(seq 50); do curl -s --cacert "$CA" $URL/readyz >/dev/null 2>&1 && break; sleep 0.1; done

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
read -r p90 worst codes < <(probe http://127.0.0.1:$HPORT/readyz)
fast "$p90" "$worst" && ok || bad "health listener under big reviews: ninth of ten ${p90} ms, slowest ${worst} ms"
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
# the health listener serves the probes, the webhook's /metrics and /denials, nothing else
code=$(curl -s -o "$TMP/hmetrics" -w '%{http_code}' http://127.0.0.1:$HPORT/metrics)
check "health listener /metrics: $code" [ "$code" = 200 ]
# the four big reviews of long strings were allowed, the four of 100,000 entries refused
n=$(awk '$1 == "tessera_admission_requests_total{result=\"allowed\"}" {print $2}' "$TMP/hmetrics")
check "allowed reviews on the health listener's /metrics: ${n:-none}, want 4" [ "${n:-0}" = 4 ]
n=$(awk '$1 == "tessera_admission_requests_total{result=\"bad_request\"}" {print $2}' "$TMP/hmetrics")
check "bad requests on the health listener's /metrics: ${n:-none}, want 4" [ "${n:-0}" = 4 ]
code=$(curl -s -o "$TMP/hdenials" -w '%{http_code}' http://127.0.0.1:$HPORT/denials)
check "health listener /denials: $code" [ "$code" = 200 ]
expect_in "$TMP/hdenials" '"denials":'
for p in /api/v1/whoami /ui/ /nope; do
    code=$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$HPORT$p)
    check "health listener $p: $code, want 404" [ "$code" = 404 ]
done
[ "$(curl -s -o /dev/null -w '%{http_code}' --data x http://127.0.0.1:$HPORT/validate)" = 405 ] && ok || bad "health listener takes POST"
# 4. the body budget (32 MiB, all connections together): nine reviews that
# declare 3.6 MB each hold 32.4 MB of it unsent; a tenth is answered 429 at
# once, unread, while a small review still fits; then the nine are answered
$PY tests/tools/webhook_clients.py bodies "$PORT" "$CA" 9 3600000 >"$TMP/bodies.out" 2>&1 &
BODIES=$!
sleep 1
expect_rc 0 curl -sf --cacert "$CA" -H 'Content-Type: application/json' --data-binary @"$TMP/small.json" $URL/validate
wait $BODIES
cat "$TMP/bodies.out"
expect_in "$TMP/bodies.out" "extra HTTP/1.1 429"
expect_in "$TMP/bodies.out" "held 400 400 400 400 400 400 400 400 400"
curl -s http://127.0.0.1:$HPORT/metrics >"$TMP/metrics"
n=$(awk '/^tessera_admission_busy_total/ {print $2}' "$TMP/metrics")
[ "${n:-0}" = 1 ] && ok || bad "tessera_admission_busy_total $n, want 1"
n=$(awk '/^tessera_request_bodies_bytes/ {print $2}' "$TMP/metrics")
[ "${n:-x}" = 0 ] && ok || bad "tessera_request_bodies_bytes $n after every review was answered"

# 5. CONNS concurrent keep-alive connections from 127.0.0.2-9, each POSTing a
# review every 1-2 s, while the prober (127.0.0.1) sees /healthz and
# /validate answered within 100 ms, and the health listener too
if [ "$(ulimit -n)" -lt 4500 ]; then
    skip "$CONNS connections: ulimit -n is $(ulimit -n)"
else
    $PY tests/tools/webhook_clients.py many "$PORT" "$CA" "$CONNS" "$TMP/stop" "$TMP/small.json" \
        127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5 127.0.0.6 127.0.0.7 127.0.0.8 127.0.0.9 \
        >"$TMP/many.out" 2>&1 &
    MANY=$!
    for _ in $(seq 600); do grep -q ready "$TMP/many.out" && break; sleep 0.1; done
    expect_in "$TMP/many.out" ready
    curl -sS --max-time 10 http://127.0.0.1:$HPORT/metrics >"$TMP/metrics" 2>&1
    n=$(awk '/^tessera_connections\{slots="general"\}/ {print $2}' "$TMP/metrics")
    [ "${n:-0}" -ge $((CONNS - 10)) ] && ok || { bad "connections open with $CONNS clients: $n"; grep -E 'connections|curl' "$TMP/metrics"; }
    read -r p90 worst codes < <(probe /healthz)
    fast "$p90" "$worst" && ok || bad "/healthz under $CONNS connections: ninth of ten ${p90} ms, slowest ${worst} ms"
    [ "$(echo $codes | tr ' ' '\n' | sort -u)" = 200 ] && ok || bad "/healthz codes under $CONNS connections: $codes"
    read -r p90 worst codes < <(probe /validate "$TMP/small.json")
    fast "$p90" "$worst" && ok || bad "/validate under $CONNS connections: ninth of ten ${p90} ms, slowest ${worst} ms"
    [ "$(echo $codes | tr ' ' '\n' | sort -u)" = 200 ] && ok || bad "/validate codes under $CONNS connections: $codes"
    read -r p90 worst codes < <(probe http://127.0.0.1:$HPORT/healthz)
    fast "$p90" "$worst" && ok || bad "health listener under $CONNS connections: ninth of ten ${p90} ms, slowest ${worst} ms"
    touch "$TMP/stop"
    wait $MANY
    cat "$TMP/many.out"
    read -r _ connected _ answered _ failed < <(grep connected "$TMP/many.out")
    [ "${connected:-0}" = "$CONNS" ] && ok || bad "$CONNS clients: $connected connected"
    [ "${failed:-1}" = 0 ] && ok || bad "$CONNS clients: $failed failed"
    [ "${answered:-0}" -ge "$CONNS" ] && ok || bad "$CONNS clients: $answered answered"
    hwm=$(awk '/VmHWM/ {print $2}' /proc/$SERVER/status)
    echo "peak RSS with $CONNS connections: $hwm kB"
fi
finish
