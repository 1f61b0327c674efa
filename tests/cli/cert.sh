#!/bin/bash
# cert.sh - `tessera cert`: the CA and serving certificate it makes verify with
# openssl and name the Service's DNS names; the webhook serves with them to a
# client that trusts only the CA; a second run rotates the certificate and keeps
# the CA, --new-ca replaces the CA with a bundle that trusts both; the manifest's
# Secret validates strictly and carries the files; bad arguments and a broken
# kept CA exit 2 naming what is wrong.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
T() { "$TESSERA" "$@"; }
D=$TMP/tls
V="/usr/bin/python3 tests/tools/validate_openapi.py tests/fixtures/schemas/openapi-1.35"
NAMES="DNS:tessera-webhook.tessera-system.svc, DNS:tessera-webhook, DNS:tessera-webhook.tessera-system, DNS:tessera-webhook.tessera-system.svc.cluster.local"

expect_rc 0 T cert --dir "$D"
cp "$TMP/out" "$TMP/m1.yaml"
cp "$D/ca.crt" "$TMP/ca1.crt"
cp "$D/tls.crt" "$TMP/tls1.crt"
expect_rc 0 openssl verify -CAfile "$D/ca.crt" "$D/tls.crt"
expect_rc 0 openssl x509 -in "$D/tls.crt" -noout -ext subjectAltName,basicConstraints,extendedKeyUsage -subject -text
expect_in "$TMP/out" "$NAMES"
expect_in "$TMP/out" "CA:FALSE"
expect_in "$TMP/out" "TLS Web Server Authentication"
expect_in "$TMP/out" "subject=CN = tessera-webhook.tessera-system.svc"
expect_in "$TMP/out" "ASN1 OID: prime256v1"
expect_rc 0 openssl x509 -in "$D/ca.crt" -noout -ext basicConstraints,keyUsage
expect_in "$TMP/out" "CA:TRUE, pathlen:0"
expect_in "$TMP/out" "Certificate Sign, CRL Sign"
check "the key is the certificate's" sh -c "[ \"\$(openssl x509 -in $D/tls.crt -noout -pubkey)\" = \"\$(openssl pkey -in $D/tls.key -pubout)\" ]"
check "keys are 0600" [ "$(stat -c %a "$D/ca.key" "$D/tls.key" | sort -u)" = 600 ]
# validity: 365 days by default, from a minute ago; the CA 3650
days() { # file: whole days from notBefore to notAfter
    /usr/bin/python3 -c 'import ssl, sys
b = ssl.cert_time_to_seconds(sys.argv[1]); a = ssl.cert_time_to_seconds(sys.argv[2])
print(int((a - b) // 86400))' "$(openssl x509 -in "$1" -noout -startdate | cut -d= -f2)" \
        "$(openssl x509 -in "$1" -noout -enddate | cut -d= -f2)"
}
check "leaf 365 days" [ "$(days "$D/tls.crt")" = 365 ]
check "CA 3650 days" [ "$(days "$D/ca.crt")" = 3650 ]

# the manifest: a Secret that validates strictly and holds the files, and the
# webhook configuration's caBundle = the CA
/usr/bin/python3 - "$TMP/m1.yaml" "$D" "$TMP/secret.yaml" <<'PY' && ok || bad "cert manifest"
import base64, sys, yaml
secret, vwc = list(yaml.safe_load_all(open(sys.argv[1])))
d = sys.argv[2]
assert secret["kind"] == "Secret" and secret["type"] == "kubernetes.io/tls"
assert secret["metadata"] == {"name": "tessera-webhook-tls", "namespace": "tessera-system"}
for key, f in (("tls.crt", "tls.crt"), ("tls.key", "tls.key"), ("ca.crt", "ca.crt")):
    assert base64.b64decode(secret["data"][key]) == open(d + "/" + f, "rb").read(), key
assert vwc["kind"] == "ValidatingWebhookConfiguration" and vwc["metadata"]["name"] == "tessera"
wh = vwc["webhooks"]
assert len(wh) == 1 and wh[0]["name"] == "validate.tessera.dev"
assert base64.b64decode(wh[0]["clientConfig"]["caBundle"]) == open(d + "/ca.crt", "rb").read()
yaml.safe_dump(secret, open(sys.argv[3], "w"))
PY
expect_rc 0 $V "$TMP/secret.yaml"
# the names agree with deploy/: the Secret the webhook mounts, its configuration
# and webhook, its Service
for want in "secretName: tessera-webhook-tls" "  name: tessera$" "name: validate.tessera.dev" \
    "  name: tessera-webhook$"; do
    check "deploy/base/webhook.yaml has '$want'" grep -q "$want" deploy/base/webhook.yaml
done

# the webhook serves with it; a client trusting only the CA reaches it by the
# Service's name
PORT=$(free_port)
HOST=tessera-webhook.tessera-system.svc
"$TESSERA" serve -f examples/four-h100.yaml --tls-cert "$D/tls.crt" --tls-key "$D/tls.key" \
    --listen 127.0.0.1:$PORT 2>"$TMP/serve.log" &
SERVER=$!
for _ in $(seq 50); do
    curl -s --cacert "$D/ca.crt" --resolve $HOST:$PORT:127.0.0.1 https://$HOST:$PORT/readyz \
        >/dev/null 2>&1 && break
    sleep 0.1
done
expect_rc 0 curl -sf --cacert "$D/ca.crt" --resolve $HOST:$PORT:127.0.0.1 https://$HOST:$PORT/healthz
expect_rc 60 curl -sf --cacert "$D/ca.crt" https://127.0.0.1:$PORT/healthz
kill $SERVER; wait $SERVER 2>/dev/null

# rotation: a new key and certificate from the same CA
expect_rc 0 T cert --dir "$D" --days 30 --key-type rsa-2048
check "rotation keeps the CA" cmp -s "$TMP/ca1.crt" "$D/ca.crt"
check "rotation makes a new certificate" sh -c "! cmp -s $TMP/tls1.crt $D/tls.crt"
expect_rc 0 openssl verify -CAfile "$TMP/ca1.crt" "$D/tls.crt"
check "leaf 30 days" [ "$(days "$D/tls.crt")" = 30 ]
expect_rc 0 openssl x509 -in "$D/tls.crt" -noout -text
expect_in "$TMP/out" "Public-Key: (2048 bit)"
expect_in "$TMP/out" "Key Encipherment"

# --new-ca: a new CA; the old one kept aside and still in caBundle
expect_rc 0 T cert --dir "$D" --new-ca --key-type rsa-3072 --service hook --namespace gpu \
    --cluster-domain corp.example
cp "$TMP/out" "$TMP/m3.yaml"
check "--new-ca replaces the CA" sh -c "! cmp -s $TMP/ca1.crt $D/ca.crt"
check "--new-ca keeps the old CA aside" cmp -s "$TMP/ca1.crt" "$D/ca-previous.crt"
expect_rc 0 openssl verify -CAfile "$D/ca.crt" "$D/tls.crt"
expect_rc 2 openssl verify -CAfile "$TMP/ca1.crt" "$D/tls.crt"
expect_rc 0 openssl x509 -in "$D/tls.crt" -noout -ext subjectAltName -text
expect_in "$TMP/out" "DNS:hook.gpu.svc, DNS:hook, DNS:hook.gpu, DNS:hook.gpu.svc.corp.example"
expect_in "$TMP/out" "Public-Key: (3072 bit)"
check "caBundle trusts the new and the old CA" /usr/bin/python3 -c '
import base64, sys, yaml
vwc = list(yaml.safe_load_all(open(sys.argv[1])))[1]
got = base64.b64decode(vwc["webhooks"][0]["clientConfig"]["caBundle"])
assert got == open(sys.argv[2], "rb").read() + open(sys.argv[3], "rb").read()
' "$TMP/m3.yaml" "$D/ca.crt" "$TMP/ca1.crt"

# bad arguments: 2, naming the problem
bad_args() { # MESSAGE ARGS...
    local msg=$1; shift
    expect_rc 2 T cert "$@"
    expect_in "$TMP/err" "$msg"
}
bad_args "no --dir DIR"
bad_args "no --dir DIR" --dir ""
bad_args "unexpected argument" --dir "$TMP/x" extra
bad_args "--days must be 1 to 3650 days, not '0'" --dir "$TMP/x" --days 0
bad_args "--days must be 1 to 3650 days, not '3651'" --dir "$TMP/x" --days 3651
bad_args "--ca-days must be 1 to 3650 days, not '1y'" --dir "$TMP/x" --ca-days 1y
bad_args "--ca-days 100 is shorter than --days 365" --dir "$TMP/x" --ca-days 100
bad_args "--key-type must be ecdsa-p256, rsa-2048 or rsa-3072" --dir "$TMP/x" --key-type dsa
bad_args "--service 'Tessera_Webhook' is not a Service name" --dir "$TMP/x" --service Tessera_Webhook
bad_args "--service '9hook' is not a Service name (1-63 of a-z, 0-9 and '-', a letter first" \
    --dir "$TMP/x" --service 9hook
expect_rc 0 T cert --dir "$TMP/ns9" --namespace 9ns --service h9
expect_in "$TMP/out" "namespace: 9ns"

bad_args "--namespace '-ns' is not a DNS label" --dir "$TMP/x" --namespace=-ns
bad_args "--cluster-domain 'a..b' is not a DNS domain" --dir "$TMP/x" --cluster-domain a..b
bad_args "unrecognized option" --dir "$TMP/x" --no-such
check "nothing written on bad arguments" [ ! -e "$TMP/x" ]
# a kept CA that cannot serve
mkdir "$TMP/k1" "$TMP/k2" "$TMP/k3" "$TMP/k4" "$TMP/k5"
cp "$D/ca.crt" "$TMP/k1/"
bad_args "holds ca.crt without ca.key: restore it, or use --new-ca" --dir "$TMP/k1"
echo "not a certificate" > "$TMP/k2/ca.crt"; cp "$D/ca.key" "$TMP/k2/"
bad_args "$TMP/k2: ca.crt: not a PEM certificate" --dir "$TMP/k2"
cp "$D/ca.crt" "$TMP/k3/"; cp "$D/tls.key" "$TMP/k3/ca.key"
bad_args "$TMP/k3: ca.key: not the key of ca.crt" --dir "$TMP/k3"
cp "$D/tls.crt" "$TMP/k4/ca.crt"; cp "$D/tls.key" "$TMP/k4/ca.key"
bad_args "$TMP/k4: ca.crt: not a CA certificate" --dir "$TMP/k4"
T cert --dir "$TMP/k5" --days 10 --ca-days 20 >/dev/null
bad_args "ca.crt: expires before a 30-day leaf would: make a new CA (--new-ca)" --dir "$TMP/k5" --days 30
expect_rc 0 T cert --dir "$TMP/k5" --days 30 --new-ca
# a FIFO (or anything not a regular file) where the CA is kept: 2, not a hang
mkdir "$TMP/k7"
mkfifo "$TMP/k7/ca.crt"
expect_rc 2 timeout 20 "$TESSERA" cert --dir "$TMP/k7"
expect_in "$TMP/err" "$TMP/k7/ca.crt: not a regular file"
mkdir "$TMP/k8" "$TMP/k8/ca.key"
expect_rc 2 T cert --dir "$TMP/k8"
expect_in "$TMP/err" "$TMP/k8/ca.key: not a regular file"
expect_rc 1 T cert --dir /proc/no-such-dir
expect_in "$TMP/err" "/proc/no-such-dir"

# a folder others can write to: links planted at the temporary names the keys
# were once written through (DIR/NAME.tmp.PID) are not followed
mkdir -m 1777 "$TMP/shared"
sh -c 'for f in ca.key tls.key; do ln -s "$2.$f" "$1/$f.tmp.$$"; done
    exec "$3" cert --dir "$1"' sh "$TMP/shared" "$TMP/stolen" "$TESSERA" >/dev/null 2>&1
expect_rc 0 openssl verify -CAfile "$TMP/shared/ca.crt" "$TMP/shared/tls.crt"
check "no key written through a planted link" [ ! -e "$TMP/stolen.ca.key" ]
check "no key written through a planted link" [ ! -e "$TMP/stolen.tls.key" ]

# nothing half-written: a rotation that cannot write tls.crt (a folder there)
# exits 1 naming it and leaves the key, the CA and no staged file behind
mkdir "$TMP/k6"
T cert --dir "$TMP/k6" >/dev/null
cp -a "$TMP/k6" "$TMP/k6.before"
rm "$TMP/k6/tls.crt"
mkdir "$TMP/k6/tls.crt"
expect_rc 1 T cert --dir "$TMP/k6" --new-ca
expect_in "$TMP/err" "$TMP/k6/tls.crt: is a folder"
for f in ca.key ca.crt tls.key; do
    check "a failed rotation leaves $f" cmp -s "$TMP/k6.before/$f" "$TMP/k6/$f"
done
check "a failed rotation leaves no staged file" \
    [ "$(ls "$TMP/k6" | tr '\n' ' ')" = "ca.crt ca.key tls.crt tls.key " ]
finish
