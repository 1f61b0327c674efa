#!/bin/bash
# webhook_bodies.sh - the request bodies' budget (32 MiB, all connections) is
# shared fairly, on loopback (tests/tools/webhook_edge.py hog; 127.0.0.2 is
# --reserve-for, "the API server"; every other 127.0.0.x is a tenant pod):
#   1. five clients from 127.0.0.1 each declare a 6.4 MiB review and send a
#      byte a second (together they held the whole budget, and every review
#      got 429): four get 429 at once (one address holds at most 7 MiB), the
#      fifth is cut for its rate well before the request deadline (60 s
#      here), and both are counted on /metrics;
#   2. clients from 127.0.0.1, .3 and .4 hold 6.25 MiB each, sending fast
#      enough: another 1 MiB from 127.0.0.1 gets 429 (its share), while
#      127.0.0.5's 6.25 MiB is held (another address has room);
#   3. the other addresses now hold the 25 MiB not kept for --reserve-for:
#      127.0.0.6's 6.25 MiB and a small review from 127.0.0.7 get 429, while
#      127.0.0.2 is answered 200, a small review and a maximal (7 MiB) one;
#   4. when the clients go, every byte of the budget comes back.
# Times are only bounds (a busy 2-core machine takes longer, never shorter).
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
PORT=$(free_port)
URL=https://127.0.0.1:$PORT
HPORT=$(free_port)
scripts/make-test-cert "$TMP/c" bodies >/dev/null 2>&1
CA=$TMP/c/ca.crt
"$TESSERA" serve -f examples/four-h100.yaml --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" \
    --listen 127.0.0.1:$PORT --threads 2 --reserve-for 127.0.0.2/32 --request-timeout 60 \
    --conn-timeout 60 --health-listen 127.0.0.1:$HPORT 2>"$TMP/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do curl -s --cacert "$CA" $URL/readyz >/dev/null 2>&1 && break; sleep 0.1; done

HOG="/usr/bin/python3 tests/tools/webhook_edge.py hog $PORT $CA"
# the webhook's /metrics is on its plain probes' port
metric() { curl -s http://127.0.0.1:$HPORT/metrics | awk -v m="$1" '$1 == m {print $2}'; }
# held BYTES: wait (20 s at most) until the bodies' gauge shows BYTES
held() {
    local n
    for _ in $(seq 200); do
        n=$(metric tessera_request_bodies_bytes)
        [ "$n" = "$1" ] && { ok; return; }
        sleep 0.1
    done
    bad "request bodies held: ${n:-none}, want $1"
}
post() { # ADDR FILE: the status of POST /validate from ADDR
    curl -s -o "$TMP/resp" -w '%{http_code}' --max-time 30 --interface "$1" --cacert "$CA" \
        -H 'Content-Type: application/json' --data-binary @"$2" $URL/validate
}
sed 's/"namespace": *"[^"]*"/"namespace": "client-c-prod"/g' \
    tests/fixtures/admission/001-pod-no-gpu-tenant-ns.json >"$TMP/small.json"
# a review of exactly 7 MiB (ADMIT_BODY_MAX): the small one with a long annotation
/usr/bin/python3 - "$TMP" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + "/small.json"))
d["request"]["object"]["metadata"]["annotations"] = {"example.com/blob": ""}
pad = 7 * 1024 * 1024 - len(json.dumps(d))
d["request"]["object"]["metadata"]["annotations"]["example.com/blob"] = "x" * pad
open(sys.argv[1] + "/max.json", "w").write(json.dumps(d))
PY
check "max.json is 7 MiB" [ "$(stat -c %s "$TMP/max.json")" = $((7 * 1024 * 1024)) ]

# 1. one address, five 6.4 MiB bodies at a byte a second
read -r _ refused _ _ _ cut _ _ _ first <<<"$($HOG 6710886 1 30 "$TMP/stop" \
    127.0.0.1 127.0.0.1 127.0.0.1 127.0.0.1 127.0.0.1)"
check "one address's five 6.4 MiB bodies: $refused refused at once, want 4" [ "$refused" = 4 ]
check "the slow one cut: $cut, want 1" [ "$cut" = 1 ]
check "cut ${first} s after its headers, want well under the 60 s deadline (< 15 s)" \
    awk -v t="$first" 'BEGIN { exit !(t != "none" && t + 0 < 15) }'
n=$(metric tessera_connections_slow_body_total)
check "tessera_connections_slow_body_total ${n:-missing}, want 1" [ "${n:-0}" = 1 ]
n=$(metric tessera_admission_busy_total)
check "tessera_admission_busy_total ${n:-missing}, want 4" [ "${n:-0}" = 4 ]
held 0

# 2. three addresses hold 6.25 MiB each at 256 KiB/s (4 times the minimum rate)
$HOG 6553600 262144 50 "$TMP/stop" 127.0.0.1 127.0.0.3 127.0.0.4 >"$TMP/hog1" &
HOG1=$!
held $((3 * 6553600))
read -r _ refused _ <<<"$($HOG 1048576 262144 10 "$TMP/stop" 127.0.0.1)"
check "127.0.0.1 past its share: ${refused} refused, want 1" [ "$refused" = 1 ]
$HOG 6553600 262144 50 "$TMP/stop" 127.0.0.5 >"$TMP/hog2" &
HOG2=$!
held $((4 * 6553600))

# 3. the general part is full: a fifth address tries for the rest (its answer,
# or its body held), then a small review; the reserved address is still served
$HOG 6553600 262144 50 "$TMP/stop" 127.0.0.6 >"$TMP/hog3" &
HOG3=$!
for _ in $(seq 200); do
    [ -s "$TMP/hog3" ] || [ "$(metric tessera_request_bodies_bytes)" = $((5 * 6553600)) ] && break
    sleep 0.1
done
got=$(post 127.0.0.7 "$TMP/small.json")
check "a small review from 127.0.0.7 with the general part full: $got, want 429" [ "$got" = 429 ]
got=$(post 127.0.0.2 "$TMP/small.json")
check "a small review from the reserved address: $got, want 200" [ "$got" = 200 ]
expect_in "$TMP/resp" '"allowed":true'
got=$(post 127.0.0.2 "$TMP/max.json")
check "a 7 MiB review from the reserved address: $got, want 200" [ "$got" = 200 ]
expect_in "$TMP/resp" '"allowed":true'

# 4. the holders go: nothing stays held; none of them was cut or answered
touch "$TMP/stop"
wait $HOG1 $HOG2 $HOG3
cat "$TMP/hog1" "$TMP/hog2" "$TMP/hog3"
expect_in "$TMP/hog1" "refused 0 held 3 cut 0"
expect_in "$TMP/hog2" "refused 0 held 1 cut 0"
expect_in "$TMP/hog3" "refused 1 held 0 cut 0"
held 0
finish
