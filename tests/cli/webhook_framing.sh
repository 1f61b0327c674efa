#!/bin/bash
# webhook_framing.sh - a request must say one way where its body ends (RFC 9112
# section 6.3), or a second request can hide in it (request smuggling). Raw
# bytes over TLS on loopback (tests/tools/webhook_edge.py raw): each request
# below frames its body two ways, or a way another parser may read otherwise,
# and carries a smuggled "GET /healthz" after it on the same connection. Each
# gets one answer, 400 with Connection: close, and the connection is closed:
# the smuggled request is never answered. The same two requests framed one way
# are both answered (the tool sees a second answer when there is one).
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
PORT=$(free_port)
HPORT=$(free_port)
scripts/make-test-cert "$TMP/c" framing >/dev/null 2>&1
CA=$TMP/c/ca.crt
"$TESSERA" serve -f examples/four-h100.yaml --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" \
    --listen 127.0.0.1:$PORT --health-listen 127.0.0.1:$HPORT --threads 2 2>"$TMP/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do curl -s --cacert "$CA" https://127.0.0.1:$PORT/readyz >/dev/null 2>&1 && break; sleep 0.1; done

SMUGGLED='GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
raw() { /usr/bin/python3 tests/tools/webhook_edge.py raw "$PORT" "$CA" "$1"; }
# refused HEADERS BODY WHAT: POST /validate with HEADERS and BODY, then the
# smuggled request: one answer, 400, Connection: close, then closed
refused() {
    raw "POST /validate HTTP/1.1\r\nHost: x\r\n$1\r\n$2$SMUGGLED" >"$TMP/out"
    local answers first last
    answers=$(grep -c '^HTTP/' "$TMP/out")
    first=$(head -1 "$TMP/out")
    last=$(tail -1 "$TMP/out")
    if [ "$answers" = 1 ] && [ "$first" = "HTTP/1.1 400 Bad Request (Connection: close)" ] &&
        [ "$last" = closed ]; then
        ok
    else
        bad "$3: want one 400 with Connection: close, then closed; got: $(tr '\n' '|' <"$TMP/out")"
    fi
}
refused 'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n' '5\r\nabcde\r\n0\r\n\r\n' \
    "Content-Length and Transfer-Encoding"
refused 'Transfer-Encoding: chunked\r\nContent-Length: 30\r\n' '5\r\nabcde\r\n0\r\n\r\n' \
    "Transfer-Encoding then Content-Length"
refused 'Content-Length: 5\r\nContent-Length: 6\r\n' 'abcdef' "two Content-Lengths 5 and 6"
refused 'Content-Length: 5\r\ncontent-length: 05\r\n' 'abcde' "two Content-Lengths 5 and 05"
refused 'Content-Length: 5, 6\r\n' 'abcdef' "a Content-Length list"
refused 'Content-Length: +5\r\n' 'abcde' "a Content-Length with a sign"
refused 'Content-Length: 5x\r\n' 'abcde' "a Content-Length that is not digits"
refused 'Content-Length: 5\r\nTransfer-Encoding: identity\r\n' 'abcde' "Transfer-Encoding identity"
refused 'Transfer-Encoding: gzip, chunked\r\n' '5\r\nabcde\r\n0\r\n\r\n' "a coding before chunked"
refused 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n' '5\r\nabcde\r\n0\r\n\r\n' \
    "chunked twice"
refused 'Content-Length : 5\r\n' 'abcde' "a space before the colon"
refused 'X-A: 1\r\n Content-Length: 5\r\n' 'abcde' "a folded line"
# HTTP/1.0 has no chunked coding: a GET that claims one is refused, not answered
raw "GET /healthz HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" >"$TMP/out"
[ "$(head -1 "$TMP/out")" = "HTTP/1.1 400 Bad Request (Connection: close)" ] && ok ||
    bad "chunked in HTTP/1.0: $(tr '\n' '|' <"$TMP/out")"

# framed one way, both requests are answered: the first (not JSON) with 400
# from the decoder, the second with 200
for framing in 'Content-Length: 5\r\n\r\nabcde' 'Content-Length: 5\r\ncontent-length: 5\r\n\r\nabcde' \
    'Transfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n0\r\n\r\n'; do
    raw "POST /validate HTTP/1.1\r\nHost: x\r\n$framing$SMUGGLED" >"$TMP/out"
    sed -n 2p "$TMP/out" | grep -q '^HTTP/1.1 200 OK' && ok ||
        bad "framed one way ($framing): $(tr '\n' '|' <"$TMP/out")"
done
# counted: the nine refusals of ours (the list, the sign and the letters are
# libmicrohttpd's own 400) and the HTTP/1.0 one
n=$(curl -s http://127.0.0.1:$HPORT/metrics | awk '/^tessera_http_framing_refused_total/ {print $2}')
check "tessera_http_framing_refused_total ${n:-missing}, want 10" [ "${n:-0}" = 10 ]
expect_rc 0 curl -sf --cacert "$CA" https://127.0.0.1:$PORT/healthz # still serving
finish
