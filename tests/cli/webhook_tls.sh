#!/bin/bash
# webhook_tls.sh - what the TLS ports of `tessera serve` (the webhook) and
# `tessera console` offer and whom they believe, on loopback with the openssl
# CLI and curl:
#   - TLS 1.2 only with ECDHE key exchange and AEAD ciphers: RSA key exchange
#     (AES128-SHA, AES128-GCM-SHA256), DHE, CBC and SHA-1 MACs are refused;
#     ECDHE-RSA with AES-GCM and ChaCha20-Poly1305 is served (the test
#     certificate's key is RSA), and with `tessera cert`'s ECDSA key
#     ECDHE-ECDSA-AES128-GCM-SHA256 but not ECDHE-ECDSA-AES128-SHA; TLS 1.3
#     with each of its suites, and curl; the same on both ports;
#   - the console's --client-ca: a client certificate is an identity only with
#     the TLS client-auth extended key usage; one made for servers only, or
#     with no extended key usage, gets 401 like no certificate;
#   - every answer of either TLS port carries Strict-Transport-Security (the
#     probes' plain-HTTP listeners do not: browsers ignore it there).
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
PORT=$(free_port)
HPORT=$(free_port)
URL=https://127.0.0.1:$PORT
CPORT=$(free_port)
CHPORT=$(free_port)
CURL=https://127.0.0.1:$CPORT
# an RSA key: the ECDHE-RSA suites below (the client certificates are ECDSA)
MAKE_TEST_CERT_KEY=rsa scripts/make-test-cert "$TMP/c" tls >/dev/null 2>&1
CA=$TMP/c/ca.crt

# client certificates from the server's CA: NAME EKU ("" for none)
client() { client_cert "$TMP/$1" "$TMP/c" "$1.example" "$2"; }
client client clientAuth
client both serverAuth,clientAuth
client server serverAuth
client none ""
openssl x509 -in "$TMP/server.crt" -noout -text | grep -q 'TLS Web Server Authentication' && ok ||
    bad "the server-only certificate lacks serverAuth"
openssl x509 -in "$TMP/none.crt" -noout -text | grep -q 'Extended Key Usage' && bad "none has an EKU" || ok
for n in client both server none; do echo "cert cn:$n.example operator"; done >"$TMP/tokens"

start() { # CERT KEY: the webhook
    "$TESSERA" serve -f examples/four-h100.yaml --tls-cert "$1" --tls-key "$2" \
        --listen 127.0.0.1:$PORT --health-listen 127.0.0.1:$HPORT --threads 2 \
        2>>"$TMP/serve.log" &
    SERVER=$!
    for _ in $(seq 50); do curl -sk $URL/readyz >/dev/null 2>&1 && return; sleep 0.1; done
    bad "server did not become ready"
}
start "$TMP/c/tls.crt" "$TMP/c/tls.key"
"$TESSERA" console -f examples/four-h100.yaml --tls-cert "$TMP/c/tls.crt" \
    --tls-key "$TMP/c/tls.key" --listen 127.0.0.1:$CPORT --health-listen 127.0.0.1:$CHPORT \
    --threads 2 --tokens "$TMP/tokens" --client-ca "$CA" 2>>"$TMP/console.log" &
CONSOLE=$!
trap 'kill $SERVER $CONSOLE 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do curl -sk $CURL/readyz >/dev/null 2>&1 && break; sleep 0.1; done
expect_rc 0 curl -sf --cacert "$CA" $CURL/readyz

# suite VERSION-FLAG SUITE: the suite the handshake agreed on with the
# server on $ON (the webhook's port unless set), or (NONE)
suite() {
    local opt=-cipher
    [ "$1" = -tls1_3 ] && opt=-ciphersuites
    echo | timeout 5 openssl s_client -connect 127.0.0.1:${ON:-$PORT} "$1" "$opt" "$2" 2>&1 |
        sed -n 's/.*Cipher is \([^ ]*\)$/\1/p' | head -1
}
served() {
    local got
    got=$(suite "$@")
    check "$2 over $1 (port ${ON:-$PORT}): got '${got:-nothing}'" [ "$got" = "$2" ]
}
refused() {
    local got
    got=$(suite "$@")
    check "$2 over $1 was served (port ${ON:-$PORT})" [ "${got:-(NONE)}" = "(NONE)" ]
}
for ON in $PORT $CPORT; do
    for c in AES128-SHA AES256-SHA AES128-GCM-SHA256 AES256-GCM-SHA384 DHE-RSA-AES128-GCM-SHA256 \
        ECDHE-RSA-AES128-SHA ECDHE-RSA-AES256-SHA ECDHE-RSA-AES128-SHA256; do
        refused -tls1_2 $c
    done
    for c in ECDHE-RSA-AES128-GCM-SHA256 ECDHE-RSA-AES256-GCM-SHA384 ECDHE-RSA-CHACHA20-POLY1305; do
        served -tls1_2 $c
    done
    for c in TLS_AES_128_GCM_SHA256 TLS_AES_256_GCM_SHA384 TLS_CHACHA20_POLY1305_SHA256 \
        TLS_AES_128_CCM_SHA256; do
        served -tls1_3 $c
    done
    expect_rc 0 curl -sf --cacert "$CA" https://127.0.0.1:$ON/healthz
    expect_rc 0 curl -sf --tlsv1.2 --tls-max 1.2 --cacert "$CA" https://127.0.0.1:$ON/healthz
done
ON=

# client certificates: only those for TLS clients are identities of the console
whoami() { # NAME [PATH]: the status of the console's PATH (/api/v1/whoami) with NAME's certificate
    curl -s -o "$TMP/who" -w '%{http_code}' --cacert "$CA" --cert "$TMP/$1.crt" --key "$TMP/$1.key" \
        $CURL${2:-/api/v1/whoami}
}
got=$(whoami client)
check "clientAuth certificate: $got $(cat "$TMP/who")" [ "$got" = 200 ]
expect_in "$TMP/who" '"subject":"cn:client.example"'
got=$(whoami both)
check "serverAuth,clientAuth certificate: $got" [ "$got" = 200 ]
got=$(whoami server)
check "serverAuth-only certificate is no identity: $got $(cat "$TMP/who")" [ "$got" = 401 ]
got=$(whoami none)
check "a certificate without extended key usage is no identity: $got" [ "$got" = 401 ]
got=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" $CURL/api/v1/whoami)
check "no certificate: $got" [ "$got" = 401 ]
# the console's /metrics: an operator's certificate (clientAuth) reads it, others do not
got=$(whoami client /metrics)
check "/metrics with an operator's clientAuth certificate: $got" [ "$got" = 200 ]
expect_in "$TMP/who" "tessera_tenant_allocation_gpus"
got=$(whoami server /metrics)
check "/metrics with a serverAuth-only certificate: $got" [ "$got" = 401 ]
got=$(whoami none /metrics)
check "/metrics with a certificate without extended key usage: $got" [ "$got" = 401 ]

# HSTS on every answer of either TLS port: the webhook's probes, reviews
# (allowed and malformed) and 404s (what only the console serves); the
# console's probes, API, files, /metrics refused and a 404
HSTS='Strict-Transport-Security: max-age=31536000'
sed 's/"namespace": *"[^"]*"/"namespace": "client-c-prod"/g' \
    tests/fixtures/admission/001-pod-no-gpu-tenant-ns.json >"$TMP/review.json"
hsts() { # WHAT CURL-ARGS...
    local what=$1
    shift
    curl -s -D "$TMP/h" -o /dev/null --cacert "$CA" "$@"
    tr -d '\r' <"$TMP/h" | grep -qx "$HSTS" && ok || { bad "$what: no '$HSTS'"; cat "$TMP/h"; }
}
hsts /healthz $URL/healthz
hsts /readyz $URL/readyz
hsts "/validate" -H 'Content-Type: application/json' --data-binary @"$TMP/review.json" $URL/validate
hsts "/validate, not JSON" --data-binary 'x' $URL/validate
for p in /metrics /api/v1/whoami /ui/ /nope; do
    hsts "the webhook's $p (404)" $URL$p
    check "the webhook's $p: HTTP $(sed -n '1s/\r//p' "$TMP/h"), expected 404" \
        grep -q '^HTTP/[0-9.]* 404' "$TMP/h"
done
hsts "the console's /healthz" $CURL/healthz
hsts "the console's /readyz" $CURL/readyz
hsts "the console's /metrics (401)" $CURL/metrics
hsts "the console's /metrics (200)" --cert "$TMP/client.crt" --key "$TMP/client.key" $CURL/metrics
hsts "the console's /api/v1/whoami" $CURL/api/v1/whoami
hsts "the console's /ui/" $CURL/ui/
hsts "the console's /ui" $CURL/ui
hsts "the console's /nope" $CURL/nope
hsts "the console's POST /validate" --data-binary @"$TMP/review.json" $CURL/validate
for hp in $HPORT $CHPORT; do
    for p in /healthz /metrics; do
        curl -s -D "$TMP/h" -o /dev/null http://127.0.0.1:$hp$p
        check "the plain port $hp answered $p" grep -q '^HTTP/[0-9.]* 200' "$TMP/h"
        grep -qi '^Strict-Transport-Security' "$TMP/h" && bad "HSTS on plain HTTP ($hp$p)" || ok
    done
done

# an ECDSA certificate (tessera cert's default key): ECDHE-ECDSA with AEAD only
kill $SERVER $CONSOLE
wait $CONSOLE 2>/dev/null
wait $SERVER 2>/dev/null
"$TESSERA" cert --dir "$TMP/e" >/dev/null 2>&1
start "$TMP/e/tls.crt" "$TMP/e/tls.key"
served -tls1_2 ECDHE-ECDSA-AES128-GCM-SHA256
served -tls1_2 ECDHE-ECDSA-CHACHA20-POLY1305
refused -tls1_2 ECDHE-ECDSA-AES128-SHA
refused -tls1_2 ECDHE-ECDSA-AES256-SHA384
finish
