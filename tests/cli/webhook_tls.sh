#!/bin/bash
# webhook_tls.sh - what `tessera serve`'s TLS port offers and whom it believes,
# on loopback with the openssl CLI and curl:
#   - TLS 1.2 only with ECDHE key exchange and AEAD ciphers: RSA key exchange
#     (AES128-SHA, AES128-GCM-SHA256), DHE, CBC and SHA-1 MACs are refused;
#     ECDHE-RSA with AES-GCM and ChaCha20-Poly1305 is served (the test
#     certificate's key is RSA), and with `tessera cert`'s ECDSA key
#     ECDHE-ECDSA-AES128-GCM-SHA256 but not ECDHE-ECDSA-AES128-SHA; TLS 1.3
#     with each of its suites, and curl;
#   - --client-ca: a client certificate is an identity only with the TLS
#     client-auth extended key usage; one made for servers only, or with no
#     extended key usage, gets 401 like no certificate;
#   - every answer of the TLS port carries Strict-Transport-Security (the
#     probes' plain-HTTP listener does not: browsers ignore it there).
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
PORT=$(free_port)
HPORT=$(free_port)
URL=https://127.0.0.1:$PORT
scripts/make-test-cert "$TMP/c" tls >/dev/null 2>&1
CA=$TMP/c/ca.crt

# client certificates from the server's CA: NAME EKU ("" for none)
client() {
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$1.example" -keyout "$TMP/$1.key" \
        -out "$TMP/$1.csr" 2>/dev/null
    local ext=()
    if [ -n "$2" ]; then
        printf 'extendedKeyUsage=%s\n' "$2" >"$TMP/$1.ext"
        ext=(-extfile "$TMP/$1.ext")
    fi
    openssl x509 -req -in "$TMP/$1.csr" -CA "$CA" -CAkey "$TMP/c/ca.key" -CAcreateserial -days 2 \
        "${ext[@]}" -out "$TMP/$1.crt" 2>/dev/null
}
client client clientAuth
client both serverAuth,clientAuth
client server serverAuth
client none ""
openssl x509 -in "$TMP/server.crt" -noout -text | grep -q 'TLS Web Server Authentication' && ok ||
    bad "the server-only certificate lacks serverAuth"
openssl x509 -in "$TMP/none.crt" -noout -text | grep -q 'Extended Key Usage' && bad "none has an EKU" || ok
for n in client both server none; do echo "cert cn:$n.example operator"; done >"$TMP/tokens"

start() { # CERT KEY
    "$TESSERA" serve -f examples/four-h100.yaml --tls-cert "$1" --tls-key "$2" \
        --listen 127.0.0.1:$PORT --health-listen 127.0.0.1:$HPORT --threads 2 \
        --tokens "$TMP/tokens" --client-ca "$CA" 2>>"$TMP/serve.log" &
    SERVER=$!
    for _ in $(seq 50); do curl -sk $URL/readyz >/dev/null 2>&1 && return; sleep 0.1; done
    bad "server did not become ready"
}
start "$TMP/c/tls.crt" "$TMP/c/tls.key"
trap 'kill $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT

# suite VERSION-FLAG SUITE: the suite the handshake agreed on, or (NONE)
suite() {
    local opt=-cipher
    [ "$1" = -tls1_3 ] && opt=-ciphersuites
    echo | timeout 5 openssl s_client -connect 127.0.0.1:$PORT "$1" "$opt" "$2" 2>&1 |
        sed -n 's/.*Cipher is \([^ ]*\)$/\1/p' | head -1
}
served() { local got; got=$(suite "$@"); check "$2 over $1: got '${got:-nothing}'" [ "$got" = "$2" ]; }
refused() { local got; got=$(suite "$@"); check "$2 over $1 was served" [ "${got:-(NONE)}" = "(NONE)" ]; }
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
expect_rc 0 curl -sf --cacert "$CA" $URL/healthz
expect_rc 0 curl -sf --tlsv1.2 --tls-max 1.2 --cacert "$CA" $URL/healthz

# client certificates: only those for TLS clients are identities
whoami() { # NAME: the status of /api/v1/whoami with NAME's certificate
    curl -s -o "$TMP/who" -w '%{http_code}' --cacert "$CA" --cert "$TMP/$1.crt" --key "$TMP/$1.key" \
        $URL/api/v1/whoami
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
got=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" $URL/api/v1/whoami)
check "no certificate: $got" [ "$got" = 401 ]

# HSTS on every answer of the TLS port: probes, reviews (allowed and
# malformed), the API, the console, a 404
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
hsts /metrics $URL/metrics
hsts "/validate" -H 'Content-Type: application/json' --data-binary @"$TMP/review.json" $URL/validate
hsts "/validate, not JSON" --data-binary 'x' $URL/validate
hsts /api/v1/whoami $URL/api/v1/whoami
hsts /ui/ $URL/ui/
hsts /ui $URL/ui
hsts /nope $URL/nope
curl -s -D "$TMP/h" -o /dev/null http://127.0.0.1:$HPORT/healthz
grep -qi '^Strict-Transport-Security' "$TMP/h" && bad "HSTS on plain HTTP" || ok

# an ECDSA certificate (tessera cert's default key): ECDHE-ECDSA with AEAD only
kill $SERVER
wait $SERVER 2>/dev/null
"$TESSERA" cert --dir "$TMP/e" >/dev/null 2>&1
start "$TMP/e/tls.crt" "$TMP/e/tls.key"
served -tls1_2 ECDHE-ECDSA-AES128-GCM-SHA256
served -tls1_2 ECDHE-ECDSA-CHACHA20-POLY1305
refused -tls1_2 ECDHE-ECDSA-AES128-SHA
refused -tls1_2 ECDHE-ECDSA-AES256-SHA384
finish
