#!/bin/bash
# webhook_refusals.sh - what the webhook refuses before a request is counted
# where docs/metrics.md says, and never floods its log: connections past the
# per-address limit (libmicrohttpd refuses them) in
# tessera_connections_refused_total, connections cut before their TLS
# handshake ended in tessera_tls_handshake_failures_total; each kind is
# logged only at its 1st, 2nd, 4th, 8th... occurrence, with the count.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
PORT=$(free_port)
HPORT=$(free_port)
scripts/make-test-cert "$TMP/c" refusals >/dev/null 2>&1
"$TESSERA" serve -f examples/four-h100.yaml --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" \
    --listen 127.0.0.1:$PORT --health-listen 127.0.0.1:$HPORT --max-per-client 2 \
    2>"$TMP/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:$HPORT/readyz >/dev/null && break; sleep 0.1; done
metric() { curl -s http://127.0.0.1:$HPORT/metrics | awk -v m="$1" '$1 == m {print $2}'; }
refused0=$(metric tessera_connections_refused_total)
cut0=$(metric tessera_tls_handshake_failures_total)

# 2 connections held (the address's limit), 100 more refused; 50 cut
# before their handshake (a TCP connect, then close; half with a partial
# ClientHello)
/usr/bin/python3 - "$PORT" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
time.sleep(0.5)
for _ in range(100):
    x = socket.create_connection(("127.0.0.1", port))
    x.settimeout(10)
    try:
        x.recv(1)  # refused: closed at once
    except OSError:
        pass
    x.close()
for h in held:
    h.close()
time.sleep(0.5)
for i in range(50):
    s = socket.create_connection(("127.0.0.1", port))
    if i % 2:
        s.send(b"\x16\x03\x01\x00\xff\x01\x00")
    s.close()
    time.sleep(0.01)
PY
# the counters move when libmicrohttpd has seen the closes
settled() {
    [ "$(($(metric tessera_connections_refused_total) - refused0))" -ge 100 ] &&
        [ "$(($(metric tessera_tls_handshake_failures_total) - cut0))" -ge 50 ]
}
for _ in $(seq 100); do settled && break; sleep 0.1; done
refused=$(($(metric tessera_connections_refused_total) - refused0))
cut=$(($(metric tessera_tls_handshake_failures_total) - cut0))
check "100 connections past the per-address limit counted as refused (got $refused)" \
    [ "$refused" -ge 100 -a "$refused" -le 102 ]
check "50 connections cut before their handshake counted (got $cut)" \
    [ "$cut" -ge 50 -a "$cut" -le 54 ]
# log lines: at most log2(count) + 1 of each kind, each with its count
nlimit=$(grep -c 'connection limit' "$TMP/serve.log")
nhand=$(grep -c 'handshake' "$TMP/serve.log")
check "refusals logged $nlimit times for $refused (powers of two only)" \
    [ "$nlimit" -ge 1 -a "$nlimit" -le 8 ]
check "cut handshakes logged $nhand times for $cut" [ "$nhand" -ge 1 -a "$nhand" -le 8 ]
expect_in "$TMP/serve.log" 'count=64'
finish
