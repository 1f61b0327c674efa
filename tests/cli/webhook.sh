#!/bin/bash
# labels: slow
# webhook.sh - `tessera serve` end to end, as the API server meets it: a CA and a
# serving certificate made with the openssl CLI, the real server on loopback,
# curl over TLS. Sends every AdmissionReview of tests/fixtures/admission/ and
# checks each answer against its .expect (HTTP status, allowed, message part);
# health, readiness and metrics (on the plain --health-listen port; the TLS
# port serves none); limits (413, 404, 405, slow client); kill -9 and
# restart; reload on a changed spec (verdicts change), a broken spec (old policy
# keeps serving), SIGHUP, and a rotated certificate.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
FIX=tests/fixtures/admission
PORT=$(free_port)
URL=https://127.0.0.1:$PORT
HPORT=$(free_port)
HEALTH=http://127.0.0.1:$HPORT

scripts/make-test-cert "$TMP/a" one
scripts/make-test-cert "$TMP/b" two
cp "$TMP/a/tls.crt" "$TMP/a/tls.key" "$TMP/"
cp examples/four-h100.yaml "$TMP/spec.yaml"

SHIM=/usr/lib/tessera/libtessera-cuda.so
start() { # [spec]
    "$TESSERA" serve -f "${1:-$TMP/spec.yaml}" --tls-cert "$TMP/tls.crt" --tls-key "$TMP/tls.key" \
        --listen 127.0.0.1:$PORT --health-listen 127.0.0.1:$HPORT --conn-timeout 2 \
        --shim-path $SHIM 2>>"$TMP/serve.log" &
    SERVER=$!
    for _ in $(seq 50); do
        curl -s --cacert "$TMP/a/ca.crt" $URL/readyz >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    bad "server did not become ready"; cat "$TMP/serve.log"
}
post() { # file -> $TMP/resp, prints status
    curl -s --cacert "$1" -o "$TMP/resp" -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary @"$2" $URL/validate
}
# check_table FOLDER: every review of FOLDER posted over TLS by one curl (one
# transfer each, the connection kept alive between them, as the API server
# keeps it), then every answer judged in one python3 against its .expect:
# HTTP status, the uid echoed, allowed, and a part of the message. The
# server refuses a body over 7 MiB (ADMIT_BODY_MAX) before admission sees it.
check_table() {
    local f n=0 out=$TMP/table
    rm -rf "$out" && mkdir -p "$out"
    for f in "$1"/*.json; do
        [ -f "${f%.json}.expect" ] || continue
        n=$((n + 1))
        echo "$f" >>"$out/files"
        : >"$out/$n.resp"
        [ "$n" -gt 1 ] && echo next
        printf 'url = "%s"\ncacert = "%s"\nheader = "%s"\ndata-binary = "@%s"\n' \
            "$URL/validate" "$TMP/a/ca.crt" "Content-Type: application/json" "$f"
        printf 'output = "%s"\nwrite-out = "%%{http_code}\\n"\n' "$out/$n.resp"
    done >"$out/curl.conf"
    curl -s -K "$out/curl.conf" >"$out/statuses"
    paste -d' ' "$out/files" "$out/statuses" >"$out/index"
    /usr/bin/python3 - "$out" <<'PY' >"$out/verdicts"
import json, os, sys
out = sys.argv[1]
for n, line in enumerate(open(os.path.join(out, "index")), 1):
    f, status = line.split()
    want_status, want_allowed, want_msg = (open(f[:-5] + ".expect").read().split("\n") + [""] * 3)[:3]
    if os.path.getsize(f) > 7 * 1024 * 1024:
        want_status, want_msg = "413", "-"
    body = open(os.path.join(out, f"{n}.resp"), "rb").read().decode("utf-8", "replace")
    if status != want_status:
        print(f"FAIL {f}: HTTP {status}, expected {want_status}"); continue
    try:
        r = json.loads(body)
    except ValueError:
        r = None
    if status == "200" and not isinstance(r, dict):
        print(f"FAIL {f}: HTTP 200 but the answer is not a JSON object: {body[:300]}"); continue
    if status == "200":
        q = json.load(open(f))
        if r["response"]["uid"] != q["request"]["uid"]:
            print(f"FAIL {f}: uid not echoed"); continue
        allowed = str(r["response"]["allowed"]).lower()
        if allowed != want_allowed:
            print(f"FAIL {f}: allowed={allowed}, expected {want_allowed}"); continue
    said = body if r is None else (r.get("error") or
                                   r.get("response", {}).get("status", {}).get("message", ""))
    if want_msg != "-" and want_msg not in said:
        print(f"FAIL {f}: answer lacks '{want_msg}': {said[:300]}"); continue
    print(f"ok {f}")
PY
    [ "$(wc -l <"$out/verdicts")" -eq "$n" ] || bad "$1: $n reviews, $(wc -l <"$out/verdicts") judged"
    while read -r verdict rest; do
        if [ "$verdict" = ok ]; then ok; else bad "$rest"; fi
    done <"$out/verdicts"
}

claim_review() { # class -> AdmissionReview of a claim template in client-c-prod
    cat <<JSON
{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"c-$1",
 "kind":{"group":"resource.k8s.io","version":"v1","kind":"ResourceClaimTemplate"},
 "resource":{"group":"resource.k8s.io","version":"v1","resource":"resourceclaimtemplates"},
 "namespace":"client-c-prod","operation":"CREATE","userInfo":{"username":"client-c"},
 "object":{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate",
  "metadata":{"name":"gpu","namespace":"client-c-prod"},
  "spec":{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":
   "tessera-h100-80gb-sxm-mig-$1","allocationMode":"ExactCount","count":1}}],
   "config":[{"requests":["gpu"],"opaque":{"driver":"gpu.nvidia.com","parameters":
    {"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig"}}}]}}}}}}
JSON
}
allowed() { # class -> true/false
    claim_review "$1" > "$TMP/claim.json"
    post "$TMP/a/ca.crt" "$TMP/claim.json" >/dev/null
    /usr/bin/python3 -c 'import json,sys; print(str(json.load(open(sys.argv[1]))["response"]["allowed"]).lower())' "$TMP/resp"
}

start "$FIX/sharing/spec.yaml"
check_table "$FIX/sharing"
kill -TERM $SERVER; wait $SERVER
start
check_table $FIX
[ "$(allowed 1g.10gb)" = true ] && ok || bad "client-c's 1g.10gb claim should be allowed"
[ "$(allowed 1g.20gb)" = false ] && ok || bad "client-c's 1g.20gb claim should be denied"
# health, readiness, metrics, routing and limits
expect_rc 0 curl -sf --cacert "$TMP/a/ca.crt" $URL/healthz
expect_rc 0 curl -sf --cacert "$TMP/a/ca.crt" $URL/readyz
curl -s $HEALTH/metrics > "$TMP/metrics"
expect_in "$TMP/metrics" 'tessera_admission_requests_total{result="denied"}'
expect_in "$TMP/metrics" 'tessera_admission_duration_seconds_bucket{le="+Inf"}'
expect_in "$TMP/metrics" 'tessera_admission_denials_total{rule="'
# the TLS port is the admission path's alone: no /metrics there
[ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$TMP/a/ca.crt" $URL/metrics)" = 404 ] && ok ||
    bad "/metrics on the TLS port: not 404"
[ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$TMP/a/ca.crt" $URL/nope)" = 404 ] && ok || bad "404"
[ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$TMP/a/ca.crt" -X PUT $URL/validate)" = 405 ] && ok || bad "405"
head -c $((7 * 1024 * 1024 + 1)) /dev/zero > "$TMP/big"
[ "$(post "$TMP/a/ca.crt" "$TMP/big")" = 413 ] && ok || bad "413 for a body over 7 MiB"
expect_rc 0 curl -sf --cacert "$TMP/a/ca.crt" $URL/healthz  # still serving
# plain HTTP is refused (HTTPS only)
expect_rc 0 bash -c "! curl -sf --max-time 3 http://127.0.0.1:$PORT/healthz"
# a slow client is cut off after --conn-timeout, and does not block others
(exec 3<>/dev/tcp/127.0.0.1/$PORT; sleep 4) &
SLOW=$!
expect_rc 0 curl -sf --max-time 2 --cacert "$TMP/a/ca.crt" $URL/healthz
wait $SLOW
# kill -9 and restart: the table still passes
kill -9 $SERVER; wait $SERVER 2>/dev/null
start
check_table $FIX
# reload with a changed spec: client-c's workload grows to 1g.20gb (and the node to
# five cards), so 1g.10gb is no longer its
sed -e 's/    memoryHighWaterGiB: 7.5$/    memoryHighWaterGiB: 15/' \
    -e 's/{model: h100-80gb-sxm, count: 4}/{model: h100-80gb-sxm, count: 5}/' \
    examples/four-h100.yaml > "$TMP/spec2.yaml"
cp "$TMP/spec2.yaml" "$TMP/spec.yaml"
for _ in $(seq 30); do [ "$(allowed 1g.20gb)" = true ] && break; sleep 0.2; done
expect_in "$TMP/serve.log" "policy loaded"
curl -s $HEALTH/metrics > "$TMP/metrics"
expect_in "$TMP/metrics" 'tessera_reloads_total{result="ok"} 1'
[ "$(allowed 1g.10gb)" = false ] && ok || bad "after the reload client-c's 1g.10gb claim is denied"
[ "$(allowed 1g.20gb)" = true ] && ok || bad "after the reload client-c's 1g.20gb claim is allowed"
# a broken spec keeps the old policy serving
echo "apiVersion: [" > "$TMP/spec.yaml"
for _ in $(seq 30); do grep -q "previous policy keeps serving" "$TMP/serve.log" && break; sleep 0.2; done
expect_in "$TMP/serve.log" "previous policy keeps serving"
expect_rc 0 curl -sf --cacert "$TMP/a/ca.crt" $URL/readyz
curl -s $HEALTH/metrics > "$TMP/metrics"
expect_in "$TMP/metrics" 'tessera_reloads_total{result="failed"} 1'
[ "$(allowed 1g.20gb)" = true ] && ok || bad "the last good policy keeps serving"
# SIGHUP reloads (the spec is good again)
cp examples/four-h100.yaml "$TMP/spec.yaml"
kill -HUP $SERVER
sleep 1.5
curl -s $HEALTH/metrics > "$TMP/metrics"
expect_in "$TMP/metrics" 'tessera_reloads_total{result="ok"}'
# the count was 1 before: a second good reload happened (HUP or the new mtime)
n=$(sed -n 's/^tessera_reloads_total{result="ok"} //p' "$TMP/metrics")
check "good reloads after the spec was fixed: ${n:-none}, expected 2 or more" [ "${n:-0}" -ge 2 ]
# a rotated certificate is served without a restart
cp "$TMP/b/tls.crt" "$TMP/b/tls.key" "$TMP/"
for _ in $(seq 30); do curl -sf --cacert "$TMP/b/ca.crt" $URL/healthz >/dev/null 2>&1 && break; sleep 0.2; done
expect_rc 0 curl -sf --cacert "$TMP/b/ca.crt" $URL/healthz
expect_rc 0 bash -c "! curl -sf --cacert $TMP/a/ca.crt $URL/healthz"
# SIGTERM stops cleanly
kill -TERM $SERVER
wait $SERVER
[ $? -eq 0 ] && ok || bad "serve did not exit 0 on SIGTERM"
expect_in "$TMP/serve.log" "msg=stopped"
finish
