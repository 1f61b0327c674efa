#!/bin/bash
# labels: slow nosan demo-day
# console_browser.sh - the console in Debian's chromium (tests/browser/console.mjs,
# playwright-core and axe-core from tests/browser/package-lock.json, installed
# by scripts/install-deps check). A real `tessera console` over HTTPS with the
# worked example, the demo day's metering store (scripts/demo-meter) and an
# identities file of three bearer tokens made here (an operator, client-a,
# client-b: sha256 of each, as docs/api.md says), reading the denials of a
# real `tessera serve` (--denials-from); client-a's display name and one
# denied review's container name are hostile (the review is sent with the API
# server's client certificate, so that the webhook keeps it). What the pages must show is
# computed here from the CLI: client-a's invoice total (`tessera invoice`), the
# usage series (`tessera usage -o json`), the instance UUID of the inventory.
# Screenshots go to the build folder's screenshots/.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
BROWSER=tests/browser
if [ ! -d $BROWSER/node_modules/playwright-core ] || [ ! -d $BROWSER/node_modules/axe-core ]; then
    bad "$BROWSER/node_modules missing: run scripts/install-deps check (npm ci there)"
    finish
    exit
fi
SPEC=$TMP/spec.yaml
PERIOD=2026-11 FROM=2026-11-02T00:00:00Z TO=2026-11-03T00:00:00Z AT=2026-11-02T12:00:00Z
HOSTILE='<script>window.pwned=1</script>"onerror=window.pwned=2 javascript:window.pwned=3'
HOSTILE_NAME='<img src=x onerror=window.pwned=4>"onerror=x javascript:alert(1)'
HOSTILE_POD='<svg onload=window.pwned=5>"onerror=x javascript:alert(2)'
expect_rc 0 demo_day "$TMP/demo"
DB=sqlite:$TMP/demo/metering.db
# A custody violation whose pod label is hostile: one scrape, after the day, of a
# client-b pod on client-a's 3g.40gb instance of card 0.
grep -m1 'GPU_I_PROFILE="3g.40gb".*namespace="client-a-prod"' \
    "$TMP/demo/dcgm-2026-11-02.prom" | sed 's/namespace="client-a-prod",pod="[^"]*"/'\
'namespace="client-b-prod",pod="<svg onload=window.pwned=5>\\"onerror=x javascript:alert(2)"/;'\
's/ [0-9]*$/ 1793664000000/' >"$TMP/violation.prom"
expect_rc 0 "$TESSERA" meter import -f examples/four-h100.yaml --db "$DB" \
    --at 2026-11-03T00:00:00Z "$TMP/violation.prom"
expect_in "$TMP/out" "1 custody violation"
/usr/bin/python3 - "$HOSTILE" examples/four-h100.yaml "$SPEC" <<'PY'
import json, sys
text = open(sys.argv[2]).read()
old = "displayName: Client A (13B chat assistant)"
assert old in text
open(sys.argv[3], "w").write(text.replace(old, "displayName: " + json.dumps(sys.argv[1])))
PY

# Three identities: tsk_ and 64 hex digits; only their SHA-256 in the file.
token() { echo "tsk_$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"; }
sha() { printf %s "$1" | sha256sum | cut -d' ' -f1; }
OP=$(token) TA=$(token) TB=$(token)
{
    echo "token sha256:$(sha "$OP") operator"
    echo "token sha256:$(sha "$TA") tenant client-a"
    echo "token sha256:$(sha "$TB") tenant client-b"
    echo "cert cn:alice.ops.example operator"
} >"$TMP/identities"
# an operator's client certificate (clientAuth) from the users' CA
scripts/make-test-cert "$TMP/users" >/dev/null
client_cert "$TMP/alice" "$TMP/users" alice.ops.example clientAuth

scripts/make-test-cert "$TMP/c" >/dev/null
PORT=$(free_port)
BASE=https://127.0.0.1:$PORT
WPORT=$(free_port)
WHPORT=$(free_port)
# the API server's client certificate (clientAuth) from a CA of its own
scripts/make-test-cert "$TMP/apiserver" >/dev/null
client_cert "$TMP/apiserver" "$TMP/apiserver" kube-apiserver clientAuth
"$TESSERA" serve -f "$SPEC" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" \
    --listen 127.0.0.1:$WPORT --health-listen 127.0.0.1:$WHPORT \
    --admission-client-ca "$TMP/apiserver/ca.crt" 2>"$TMP/webhook.log" &
WEBHOOK=$!
"$TESSERA" console -f "$SPEC" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" \
    --listen 127.0.0.1:$PORT --db "$DB" --tokens "$TMP/identities" \
    --client-ca "$TMP/users/ca.crt" --denials-from "http://127.0.0.1:$WHPORT/denials" 2>"$TMP/serve.log" &
SERVER=$!
trap 'kill $SERVER $WEBHOOK 2>/dev/null; rm -rf "$TMP"' EXIT
for url in $BASE/readyz https://127.0.0.1:$WPORT/readyz; do
    for _ in $(seq 100); do
        curl -sf --cacert "$TMP/c/ca.crt" $url >/dev/null 2>&1 && break
        sleep 0.1
    done
done
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$TMP/c/ca.crt" \
    -H "Authorization: Bearer $OP" $BASE/api/v1/whoami)
check "the API answers the operator ($code)" [ "$code" = 200 ]

# A denial whose container name is hostile (the message quotes it).
/usr/bin/python3 - "$HOSTILE_NAME" tests/fixtures/admission/004-pod-privileged-container.json \
    >"$TMP/review.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
for c in r["request"]["object"]["spec"]["containers"]:
    if c["name"] == "nginx":  # the privileged one, named in the denial
        c["name"] = sys.argv[1]
print(json.dumps(r))
PY
out=$(curl -s --cacert "$TMP/c/ca.crt" -H 'Content-Type: application/json' \
    --cert "$TMP/apiserver.crt" --key "$TMP/apiserver.key" \
    --data-binary @"$TMP/review.json" https://127.0.0.1:$WPORT/validate)
case $out in
*'"allowed":false'* | *'"allowed": false'*) ok ;;
*) bad "review not denied: $out" ;;
esac

# What the pages must show, from the CLI.
"$TESSERA" invoice -f examples/four-h100.yaml --db "$DB" --tenant client-a --period $PERIOD \
    >"$TMP/invoice.txt"
for f in csv html; do
    "$TESSERA" invoice -f "$SPEC" --db "$DB" --tenant client-a --period $PERIOD -o $f \
        >"$TMP/invoice.$f"
done
TOTAL=$(sed -n 's/^Total (allocation basis, billed): *//p' "$TMP/invoice.txt")
check "tessera invoice gave a total ($TOTAL)" [ -n "$TOTAL" ]
"$TESSERA" usage -f examples/four-h100.yaml --db "$DB" -o json --from $FROM --to $TO \
    >"$TMP/usage.json"
SERIES=$(/usr/bin/python3 -c 'import json, sys
print(len({(r["tenant"], r["model"]) for r in json.load(open(sys.argv[1]))["rows"]}))' \
    "$TMP/usage.json")
TENANTS=$(grep -c '^kind: Tenant' "$SPEC")
UUID=$(/usr/bin/python3 -c 'import json, sys
g = json.load(open(sys.argv[1]))["gpus"][0]["gpuInstances"]
print(next(i["computeInstances"][0]["uuid"] for i in g if i["profile"] == "3g.40gb"))' \
    "$TMP/demo/inventory-gpu-node-1.json")
OTHERS=$(grep -A1 '^kind: Tenant' "$SPEC" | sed -n 's/.*{name: \(.*\)}/\1/p' |
    grep -vx 'client-a\|provider' | paste -sd' ')

SHOTS=$(dirname "$TESSERA")/screenshots
rm -rf "$SHOTS"
BASE=$BASE SHOTS=$SHOTS PERIOD=$PERIOD FROM=$FROM TO=$TO AT=$AT \
    OP_TOKEN=$OP TA_TOKEN=$TA TB_TOKEN=$TB CERT=$TMP/alice.crt KEY=$TMP/alice.key \
    TOTAL=$TOTAL SERIES=$SERIES TENANTS=$TENANTS UUID=$UUID HOSTILE=$HOSTILE \
    HOSTILE_NS=$HOSTILE_NAME HOSTILE_POD=$HOSTILE_POD OTHER_TENANTS=$OTHERS CSV=$TMP/invoice.csv HTML=$TMP/invoice.html \
    timeout 300 node $BROWSER/console.mjs >"$TMP/browser.out" 2>&1
rc=$?
cat "$TMP/browser.out"
check "console.mjs exited $rc" [ $rc -eq 0 ]
n=$(sed -n 's/^console.mjs: \([0-9]*\) passed.*/\1/p' "$TMP/browser.out")
check "console.mjs ran its checks (${n:-0})" [ "${n:-0}" -ge 60 ]
for shot in fleet tenants usage invoices custody ledger tenant tenant-invoices tenant-usage; do
    check "screenshot $shot.png" [ -s "$SHOTS/$shot.png" ]
done
if [ "$FAIL" -ne 0 ]; then tail -20 "$TMP/serve.log" "$TMP/webhook.log"; fi
finish
