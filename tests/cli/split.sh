#!/bin/bash
# labels: slow
# split.sh - the admission webhook (`tessera serve`) and the console (`tessera
# console`) are two processes, on loopback with curl and openssl-made
# certificates:
#   - the webhook's TLS port serves POST /validate and the probes, nothing else
#     (404 for /api/v1/, /ui/ and /metrics, even with an operator's token); the
#     console's answers 404 to POST /validate; each refuses the other's options
#     and the console will not start without --tokens;
#   - the console's /metrics on its TLS port: 401 without an identity, 403 for a
#     tenant, 200 for an operator with the plan `tessera plan -o json` makes; on
#     its --health-listen port to anyone; no /denials there;
#   - the webhook records a review as a tenant's (its /denials on the probes'
#     port, tessera_admission_tenant_*) only when the API server's client
#     certificate came with it: signed by --admission-client-ca, clientAuth,
#     naming --admission-client (CN or DNS name). No certificate, serverAuth
#     only, no EKU, another CA, another name, or no --admission-client-ca at
#     all: answered the same, counted in tessera_admission_unauthenticated_total;
#   - the console lists what the webhook kept (--denials-from): all of it for
#     an operator, a tenant its own only; a --denials-from nobody answers is 502
#     naming the URL; an answer that is not the webhook's (wrong types, 2,000
#     denials, 5 MiB, a 2,000-byte message, HTML, HTTP 500, too slow, one bad
#     item after a good one) is 502 and nothing of it is listed, the console
#     keeps serving; a caller without an identity never makes it fetch.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
SPEC=examples/four-h100.yaml
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT

# ---- certificates, tokens, reviews ----
scripts/make-test-cert "$TMP/tls" >/dev/null # the servers' (both trust CA tls)
scripts/make-test-cert "$TMP/api" >/dev/null # the CA of the API server's client certificate
scripts/make-test-cert "$TMP/other" >/dev/null
CA=$TMP/tls/ca.crt
NAME=kube-apiserver-webhook-client
cert() { client_cert "$TMP/$1" "${@:2}"; } # NAME CA-DIR CN EKU [SAN]: $TMP/NAME.crt, .key
cert good "$TMP/api" $NAME clientAuth
cert dns "$TMP/api" someone clientAuth "DNS:$NAME"
cert server "$TMP/api" $NAME serverAuth
cert noeku "$TMP/api" $NAME ""
cert otherca "$TMP/other" $NAME clientAuth
cert othername "$TMP/api" kube-scheduler clientAuth
check "the good certificate is for TLS clients" \
    sh -c "openssl x509 -in '$TMP/good.crt' -noout -text | grep -q 'TLS Web Client Authentication'"
check "the serverAuth certificate is not" \
    sh -c "! openssl x509 -in '$TMP/server.crt' -noout -text | grep -q 'TLS Web Client Authentication'"
check "the other CA's certificate does not verify against the API server's CA" \
    sh -c "! openssl verify -CAfile '$TMP/api/ca.crt' '$TMP/otherca.crt' >/dev/null 2>&1"
for who in "op --operator" "c --tenant client-c" "a --tenant client-a"; do
    set -- $who
    "$TESSERA" token new $2 $3 >"$TMP/tok-$1"
    sed -n 2p "$TMP/tok-$1" >>"$TMP/tokens"
done
OP=$(sed -n 1p "$TMP/tok-op") TC=$(sed -n 1p "$TMP/tok-c") TA=$(sed -n 1p "$TMP/tok-a")
# review UID NAMESPACE: fixture 004 (a privileged container: denied in a
# tenant's namespace) as $TMP/UID.json; 001 (allowed) when UID starts with ok-
review() {
    local f=tests/fixtures/admission/004-pod-privileged-container.json
    case $1 in ok-*) f=tests/fixtures/admission/001-pod-no-gpu-tenant-ns.json ;; esac
    /usr/bin/python3 - "$f" "$1" "$2" >"$TMP/$1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["request"]["uid"] = sys.argv[2]
r["request"]["namespace"] = r["request"]["object"]["metadata"]["namespace"] = sys.argv[3]
print(json.dumps(r))
PY
}
# post PORT UID [CERT]: POST $TMP/UID.json to the webhook on PORT (with the
# client certificate CERT); the answer in $TMP/UID.answer, prints
# "STATUS ALLOWED" (ALLOWED as the answer says)
post() {
    local args=()
    [ -z "${3:-}" ] || args=(--cert "$TMP/$3.crt" --key "$TMP/$3.key")
    local status
    status=$(curl -s --cacert "$CA" "${args[@]}" -o "$TMP/$2.answer" -w '%{http_code}' \
        -H 'Content-Type: application/json' --data-binary @"$TMP/$2.json" \
        "https://127.0.0.1:$1/validate")
    echo "$status $(/usr/bin/python3 -c 'import json, sys
try:
    print(str(json.load(open(sys.argv[1]))["response"]["allowed"]).lower())
except Exception:
    print("none")' "$TMP/$2.answer")"
}
# metric HPORT PREFIX: the sum of the series of /metrics on HPORT whose name
# and labels begin with PREFIX, 0 when none
metric() {
    curl -s "http://127.0.0.1:$1/metrics" |
        awk -v p="$2" '!/^#/ && index($1, p) == 1 { s += $2 } END { print s + 0 }'
}
code() { curl -s -o "$TMP/body" -w '%{http_code}' --cacert "$CA" "$@"; }
# start NAME READY-URL ARGS...: tessera ARGS in the background until READY-URL answers
start() {
    local name=$1 url=$2
    shift 2
    "$TESSERA" "$@" 2>"$TMP/$name.log" &
    PIDS+=($!)
    eval "$name=$!"
    for _ in $(seq 100); do
        curl -sf --cacert "$CA" "$url" >/dev/null 2>&1 && return 0
        kill -0 "${PIDS[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    bad "$name did not become ready: $(tail -3 "$TMP/$name.log")"
}
TLS=(-f $SPEC --tls-cert "$TMP/tls/tls.crt" --tls-key "$TMP/tls/tls.key")

# ---- the options each takes ----
expect_rc 2 "$TESSERA" serve "${TLS[@]}" --listen 127.0.0.1:1 --tokens "$TMP/tokens"
expect_in "$TMP/err" "unrecognized option '--tokens'"
expect_rc 2 "$TESSERA" serve "${TLS[@]}" --listen 127.0.0.1:1 --db "sqlite:$TMP/m.db"
expect_in "$TMP/err" "unrecognized option '--db'"
check "serve --db made a store" [ ! -e "$TMP/m.db" ]
expect_rc 2 timeout 20 "$TESSERA" console "${TLS[@]}" --listen 127.0.0.1:1
expect_in "$TMP/err" "console needs -f SPEC, --tls-cert and --tls-key and --tokens"

# ---- W1: a webhook without --admission-client-ca; C1: a console reading W2 ----
W1=$(free_port) W1H=$(free_port) W2=$(free_port) W2H=$(free_port) C1=$(free_port) C1H=$(free_port)
start w1 "https://127.0.0.1:$W1/readyz" serve "${TLS[@]}" --listen 127.0.0.1:$W1 \
    --health-listen 127.0.0.1:$W1H
start w2 "https://127.0.0.1:$W2/readyz" serve "${TLS[@]}" --listen 127.0.0.1:$W2 \
    --health-listen 127.0.0.1:$W2H --admission-client-ca "$TMP/api/ca.crt" --admission-client $NAME
start c1 "https://127.0.0.1:$C1/readyz" console "${TLS[@]}" --listen 127.0.0.1:$C1 \
    --health-listen 127.0.0.1:$C1H --tokens "$TMP/tokens" \
    --denials-from "http://127.0.0.1:$W2H/denials"

# the webhook's TLS port: the probes and /validate, nothing of the console's
for p in /healthz /readyz; do
    check "the webhook's $p: $(code "https://127.0.0.1:$W1$p")" [ "$(code "https://127.0.0.1:$W1$p")" = 200 ]
done
for p in /api/v1/whoami /api/v1/plan /ui/ /ui/fleet.html /metrics; do
    got=$(code "https://127.0.0.1:$W1$p")
    check "the webhook's $p: $got, want 404" [ "$got" = 404 ]
    got=$(code -H "Authorization: Bearer $OP" "https://127.0.0.1:$W1$p")
    check "the webhook's $p with an operator's token: $got, want 404" [ "$got" = 404 ]
done
check "the webhook's 404 shows nothing of the API" sh -c "! grep -q 'whoami\|\"error\"' '$TMP/body'"
# the console's TLS port: no /validate
review ok-1 client-c-prod
got=$(code -H 'Content-Type: application/json' --data-binary @"$TMP/ok-1.json" "https://127.0.0.1:$C1/validate")
check "POST /validate on the console: $got, want 404" [ "$got" = 404 ]
check "the console answered a review" sh -c "! grep -q AdmissionReview '$TMP/body'"
# the probes' ports: the webhook's has /denials, the console's not; neither the API
check "the webhook's probes' /denials: $(code "http://127.0.0.1:$W1H/denials")" \
    [ "$(code "http://127.0.0.1:$W1H/denials")" = 200 ]
check "the console's probes' /denials: $(code "http://127.0.0.1:$C1H/denials"), want 404" \
    [ "$(code "http://127.0.0.1:$C1H/denials")" = 404 ]
for hp in $W1H $C1H; do
    got=$(code -H "Authorization: Bearer $OP" "http://127.0.0.1:$hp/api/v1/whoami")
    check "/api/v1/whoami on the probes' port $hp: $got, want 404" [ "$got" = 404 ]
done

# ---- the console's /metrics: operators only on TLS, anyone on the probes' port ----
"$TESSERA" plan -f $SPEC -o json >"$TMP/plan.json"
read -r USED FLEET NAIVE DEDICATED < <(/usr/bin/python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print(s["gpusUsed"], s["gpusTotal"], s["naiveGpus"], s["dedicatedGpus"])' "$TMP/plan.json")
curl -s -D "$TMP/h" -o "$TMP/body" --cacert "$CA" "https://127.0.0.1:$C1/metrics"
check "the console's /metrics without an identity: $(head -1 "$TMP/h")" grep -q '^HTTP/[0-9.]* 401' "$TMP/h"
check "401 asks for a bearer token" grep -qi '^WWW-Authenticate: Bearer' "$TMP/h"
check "the 401 shows no metric" sh -c "! grep -q '^tessera_' '$TMP/body'"
got=$(code -H "Authorization: Bearer tsk_$(printf '0%.0s' $(seq 64))" "https://127.0.0.1:$C1/metrics")
check "the console's /metrics with an unknown token: $got, want 401" [ "$got" = 401 ]
got=$(code -H "Authorization: Bearer $TC" "https://127.0.0.1:$C1/metrics")
check "the console's /metrics with a tenant's token: $got, want 403" [ "$got" = 403 ]
check "the 403 shows no metric" sh -c "! grep -q '^tessera_' '$TMP/body'"
got=$(code -H "Authorization: Bearer $OP" "https://127.0.0.1:$C1/metrics")
check "the console's /metrics with an operator's token: $got, want 200" [ "$got" = 200 ]
cp "$TMP/body" "$TMP/console.metrics"
curl -s "http://127.0.0.1:$C1H/metrics" >"$TMP/console-plain.metrics"
for page in console console-plain; do
    for kv in used:$USED fleet:$FLEET naive:$NAIVE dedicated:$DEDICATED; do
        check "$page /metrics: tessera_plan_gpus{kind=\"${kv%:*}\"} is not the plan's ${kv#*:}" \
            grep -qx "tessera_plan_gpus{kind=\"${kv%:*}\"} ${kv#*:}" "$TMP/$page.metrics"
    done
    check "$page /metrics has admission figures (the webhook's)" \
        sh -c "! grep -q '^tessera_admission_' '$TMP/$page.metrics'"
done
check "the webhook's /metrics has the plan's figures (the console's)" \
    sh -c "! curl -s http://127.0.0.1:$W1H/metrics | grep -q '^tessera_plan_gpus\|^tessera_tenant_allocation'"

# ---- W1, no --admission-client-ca: reviews answered, none recorded as a tenant's ----
review n1 client-c-prod
review n2 client-c-prod
got=$(post $W1 n1)
check "W1, no certificate: $got, want 200 false" [ "$got" = "200 false" ]
got=$(post $W1 n2 good)
check "W1, the API server's certificate: $got, want 200 false" [ "$got" = "200 false" ]
got=$(post $W1 ok-1 good)
check "W1, an allowed review: $got, want 200 true" [ "$got" = "200 true" ]
n=$(metric $W1H 'tessera_admission_requests_total{result="denied"}')
check "W1: reviews denied $n, want 2" [ "$n" = 2 ]
n=$(metric $W1H tessera_admission_unauthenticated_total)
check "W1: unauthenticated $n, want 3" [ "$n" = 3 ]
n=$(metric $W1H tessera_admission_tenant_)
check "W1: per-tenant counts $n, want 0" [ "$n" = 0 ]
curl -s "http://127.0.0.1:$W1H/denials" >"$TMP/w1.denials"
check "W1 /denials: $(head -c 200 "$TMP/w1.denials"), want none" /usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not (d == {"dropped": 0, "denials": []}))' "$TMP/w1.denials"

# ---- W2, --admission-client-ca and --admission-client NAME ----
# UID CERT NAMESPACE RECORDED: in this order, each posted once
CASES="none - client-c-prod no
good good client-c-prod yes
server server client-c-prod no
noeku noeku client-c-prod no
otherca otherca client-c-prod no
othername othername client-c-prod no
dns dns client-c-prod yes
a-good good client-a-prod yes
a-none - client-a-prod no"
unauth=0
while read -r uid crt ns rec; do
    review "$uid" "$ns"
    [ "$crt" = - ] && crt=
    got=$(post $W2 "$uid" $crt)
    check "W2, review $uid (certificate ${crt:-none}): $got, want 200 false" [ "$got" = "200 false" ]
    [ "$rec" = yes ] || unauth=$((unauth + 1))
    sleep 0.01 # the ring's times are in ms: one per review
done <<<"$CASES"
review ok-2 client-c-prod
got=$(post $W2 ok-2 good)
check "W2, an allowed review with the certificate: $got, want 200 true" [ "$got" = "200 true" ]
n=$(metric $W2H tessera_admission_unauthenticated_total)
check "W2: unauthenticated $n, want $unauth" [ "$n" = $unauth ]
n=$(metric $W2H 'tessera_admission_tenant_denials_total{tenant="client-c",')
check "W2: client-c's denials $n, want 2" [ "$n" = 2 ]
n=$(metric $W2H 'tessera_admission_tenant_denials_total{tenant="client-a",')
check "W2: client-a's denials $n, want 1" [ "$n" = 1 ]
n=$(metric $W2H 'tessera_admission_tenant_denials_total{')
check "W2: denials per tenant in all $n, want 3" [ "$n" = 3 ]
n=$(metric $W2H 'tessera_admission_tenant_allowed_total{tenant="client-c"}')
check "W2: client-c's allowed $n, want 1" [ "$n" = 1 ]
n=$(metric $W2H 'tessera_admission_requests_total{result="denied"}')
check "W2: denied in all $n, want 9" [ "$n" = 9 ]
grep -c 'client=apiserver' "$TMP/w2.log" >"$TMP/n"
check "W2 logged $(cat "$TMP/n") denials as the API server's, want 3" [ "$(cat "$TMP/n")" = 3 ]
# /denials: the three recorded, newest first, each as its answer said (the
# tenant whose namespaces the spec gives it, the answer's message)
curl -s "http://127.0.0.1:$W2H/denials" >"$TMP/w2.denials"
/usr/bin/python3 - "$TMP" $SPEC >"$TMP/py.out" 2>&1 <<'PY'
import json, sys, yaml
tmp, spec = sys.argv[1], sys.argv[2]
owner = {ns: d["metadata"]["name"] for d in yaml.safe_load_all(open(spec))
         if d and d.get("kind") == "Tenant" for ns in d["spec"]["namespaces"]}
doc = json.load(open(tmp + "/w2.denials"))
got = doc["denials"]
assert doc["dropped"] == 0, doc
assert [d["uid"] for d in got] == ["a-good", "dns", "good"], [d["uid"] for d in got]
assert [d["timeMs"] for d in got] == sorted((d["timeMs"] for d in got), reverse=True), got
for d in got:
    review = json.load(open("%s/%s.json" % (tmp, d["uid"])))["request"]
    answer = json.load(open("%s/%s.answer" % (tmp, d["uid"])))["response"]
    assert d["namespace"] == review["namespace"] and d["tenant"] == owner[review["namespace"]], d
    assert d["kind"] == review["kind"]["kind"] and d["rule"], d
    assert d["message"] and d["message"] in answer["status"]["message"], (d, answer)
print("ok")
PY
check "W2 /denials: $(tail -3 "$TMP/py.out")" [ "$(cat "$TMP/py.out")" = ok ]

# ---- C1 lists W2's denials: an operator all, a tenant its own ----
api() { # TOKEN PATH: the status; the body in $TMP/body
    code -H "Authorization: Bearer $1" "https://127.0.0.1:$C1/api/v1$2"
}
uids() { # the uids of $TMP/body's items, in order
    /usr/bin/python3 -c 'import json, sys
print(" ".join(d["uid"] for d in json.load(open(sys.argv[1]))["items"]))' "$TMP/body"
}
want=$(/usr/bin/python3 -c 'import json, sys
print(" ".join(d["uid"] for d in json.load(open(sys.argv[1]))["denials"]))' "$TMP/w2.denials")
check "operator's /api/v1/denials: $(api "$OP" /denials)" [ "$(api "$OP" /denials)" = 200 ]
check "operator sees the webhook's denials: '$(uids)', want '$want'" [ "$(uids)" = "$want" ]
check "client-c's /api/v1/denials: $(api "$TC" /denials)" [ "$(api "$TC" /denials)" = 200 ]
check "client-c sees its own: '$(uids)', want 'dns good'" [ "$(uids)" = "dns good" ]
check "client-a's /api/v1/denials: $(api "$TA" /denials)" [ "$(api "$TA" /denials)" = 200 ]
check "client-a sees its own: '$(uids)', want 'a-good'" [ "$(uids)" = "a-good" ]
check "client-c asking for client-a's: $(api "$TC" '/denials?tenant=client-a'), want 403" \
    [ "$(api "$TC" '/denials?tenant=client-a')" = 403 ]
check "without an identity: $(code "https://127.0.0.1:$C1/api/v1/denials"), want 401" \
    [ "$(code "https://127.0.0.1:$C1/api/v1/denials")" = 401 ]

# ---- C2: --denials-from nobody answers; C3: a hostile /denials ----
DEAD=$(dead_port) HOST=$(free_port) C2=$(free_port) C3=$(free_port) C4=$(free_port)
mkdir -p "$TMP/hostile"
echo good >"$TMP/hostile/mode"
/usr/bin/python3 tests/tools/denials_server.py $HOST "$TMP/hostile" 2>"$TMP/hostile.log" &
PIDS+=($!)
for _ in $(seq 50); do curl -s "http://127.0.0.1:$HOST/denials" >/dev/null 2>&1 && break; sleep 0.1; done
start c2 "https://127.0.0.1:$C2/readyz" console "${TLS[@]}" --listen 127.0.0.1:$C2 \
    --tokens "$TMP/tokens" --denials-from "http://127.0.0.1:$DEAD/denials"
start c3 "https://127.0.0.1:$C3/readyz" console "${TLS[@]}" --listen 127.0.0.1:$C3 \
    --tokens "$TMP/tokens" --denials-from "http://127.0.0.1:$HOST/denials"
start c4 "https://127.0.0.1:$C4/readyz" console "${TLS[@]}" --listen 127.0.0.1:$C4 \
    --tokens "$TMP/tokens"
got=$(code -H "Authorization: Bearer $OP" "https://127.0.0.1:$C2/api/v1/denials")
check "--denials-from nobody answers: $got, want 502" [ "$got" = 502 ]
expect_in "$TMP/body" "http://127.0.0.1:$DEAD/denials"
got=$(code -H "Authorization: Bearer $TC" "https://127.0.0.1:$C2/api/v1/denials")
check "the same for a tenant: $got, want 502" [ "$got" = 502 ]
check "the console without --denials-from: $(code -H "Authorization: Bearer $OP" "https://127.0.0.1:$C4/api/v1/denials")" \
    [ "$(code -H "Authorization: Bearer $OP" "https://127.0.0.1:$C4/api/v1/denials")" = 200 ]
check "lists none: '$(uids)'" [ -z "$(uids)" ]

fetches() { cat "$TMP/hostile/count" 2>/dev/null || echo 0; }
hostile() { # MODE: the operator's /api/v1/denials on C3 while the server answers MODE
    echo "$1" >"$TMP/hostile/mode"
    code -H "Authorization: Bearer $OP" --max-time 30 "https://127.0.0.1:$C3/api/v1/denials"
}
check "a good answer: $(hostile good)" [ "$(hostile good)" = 200 ]
check "its denial listed: '$(uids)'" [ "$(uids)" = hostile-good ]
expect_in "$TMP/body" '"dropped":2'
for mode in types item object negative many big longmsg mixed html status500 slow; do
    t0=$SECONDS
    got=$(hostile $mode)
    check "a /denials answer '$mode': $got, want 502 ($(head -c 200 "$TMP/body"))" [ "$got" = 502 ]
    check "'$mode': the 502 names the URL" grep -q "http://127.0.0.1:$HOST/denials" "$TMP/body"
    check "'$mode': not the error shape, or items listed: $(head -c 200 "$TMP/body")" \
        /usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not (set(d) == {"error"} and d["error"]["status"] == 502))' "$TMP/body"
    check "'$mode' answered in $((SECONDS - t0)) s, want under 15" [ $((SECONDS - t0)) -lt 15 ]
    check "the console still serving after '$mode'" \
        curl -sf --max-time 10 --cacert "$CA" "https://127.0.0.1:$C3/healthz" -o /dev/null
done
check "console C3 still running" kill -0 "$c3"
check "a good answer again: $(hostile good)" [ "$(hostile good)" = 200 ]
check "its denial listed again: '$(uids)'" [ "$(uids)" = hostile-good ]
# a caller without an identity never makes the console fetch
n=$(fetches)
for _ in 1 2 3; do code "https://127.0.0.1:$C3/api/v1/denials" >/dev/null; done
got=$(code -H "Authorization: Bearer tsk_$(printf '1%.0s' $(seq 64))" "https://127.0.0.1:$C3/api/v1/denials")
check "an unknown token: $got, want 401" [ "$got" = 401 ]
check "fetches for callers without an identity: $(($(fetches) - n)), want 0" [ "$(fetches)" = "$n" ]
hostile good >/dev/null
check "one fetch for an operator: $(($(fetches) - n)), want 1" [ "$(fetches)" = $((n + 1)) ]

for name in w1 w2 c1 c2 c3 c4; do
    pid=${!name}
    kill -TERM "$pid" 2>/dev/null
    wait "$pid"
    rc=$?
    check "$name stopped on SIGTERM with $rc, want 0 ($(tail -2 "$TMP/$name.log"))" [ $rc = 0 ]
done
finish
