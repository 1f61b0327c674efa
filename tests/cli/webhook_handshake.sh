#!/bin/bash
# labels: slow
# webhook_handshake.sh - the request deadline (--request-timeout) starts
# when the TLS handshake ends, and the handshake has a deadline of its own
# (3 request deadlines, at least 10 s), on loopback (about 20 s):
#   - a client that waits 3 s before its handshake, then sends a request
#     over 2 s, is answered with --request-timeout 3 (it was cut when the
#     deadline counted from the connection's start);
#   - a request that takes 5 s after the handshake is still cut;
#   - a client that never finishes its handshake, sending a byte a second,
#     is cut at about 10 s, not held for ever (the idle timeout is 60 s here,
#     so that only the deadline cuts it);
#   - waiting for that handshake costs the server no CPU (a spinning thread
#     took a core);
#   - a connection's memory: 12 KiB of headers are served, 20 KiB get 431.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
PORT=$(free_port)
HPORT=$(free_port)
scripts/make-test-cert "$TMP/c" handshake >/dev/null 2>&1
CA=$TMP/c/ca.crt
"$TESSERA" serve -f examples/four-h100.yaml --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" \
    --listen 127.0.0.1:$PORT --health-listen 127.0.0.1:$HPORT --request-timeout 3 --conn-timeout 60 \
    --threads 2 2>"$TMP/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do curl -s --cacert "$CA" https://127.0.0.1:$PORT/readyz >/dev/null 2>&1 && break; sleep 0.1; done

CLIENTS=tests/tools/handshake_clients.py
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' /proc/$SERVER/stat; }
cpu0=$(cpu_s)
/usr/bin/python3 $CLIENTS trickle $PORT 20 >"$TMP/trickle" &
TRICKLE=$!
late=$(/usr/bin/python3 $CLIENTS late $PORT "$CA" 3 2)
check "late handshake then a 2 s request: answered (got: $late)" [ "$late" = "HTTP/1.1 200 OK" ]
slow=$(/usr/bin/python3 $CLIENTS late $PORT "$CA" 0 5)
check "a 5 s request after the handshake: cut at 3 s (got: $slow)" [ "$slow" = cut ]
wait $TRICKLE
# waiting for a handshake costs nothing: with libmicrohttpd's epoll mode
# (0.9.75) a thread spun on it, 5 CPU s over these 10 s
spent=$(awk -v a="$cpu0" -v b="$(cpu_s)" 'BEGIN { printf "%.2f", b - a }')
check "server CPU while a handshake trickled for 10 s: $spent s, want under 1" \
    awk -v s="$spent" 'BEGIN { exit !(s < 1) }'
cut=$(cat "$TMP/trickle")
check "never-ending handshake cut between 9 and 14 s (got: $cut s)" \
    awk -v t="$cut" 'BEGIN { exit !(t + 0 >= 9 && t + 0 <= 14 && t !~ /\+/) }'
cuts=$(curl -s http://127.0.0.1:$HPORT/metrics | awk '/^tessera_connections_deadline_total/ { print $2 }')
check "the cut is counted (tessera_connections_deadline_total ${cuts:-missing})" [ "${cuts:-0}" -ge 1 ]
# the memory a connection may make the server hold (SERVE_HEADER_MAX, 16 KiB):
# 12 KiB of headers are served, 20 KiB answered 431
hdr() { # KIB: the status of /healthz with KIB KiB of headers
    local args=() i
    for i in $(seq "$1"); do args+=(-H "X-Pad-$i: $(printf '%01000d' 0)"); done
    curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" "${args[@]}" https://127.0.0.1:$PORT/healthz
}
got=$(hdr 12)
check "12 KiB of headers: answered (got $got)" [ "$got" = 200 ]
got=$(hdr 20)
check "20 KiB of headers: 431 (got $got)" [ "$got" = 431 ]
finish
