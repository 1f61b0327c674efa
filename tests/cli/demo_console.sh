#!/bin/bash
# labels: slow demo-day
# demo_console.sh - the end of `make demo` (scripts/demo-console) after the
# metering part: it prints the console's URL with a one-time operator token
# whose SHA-256 alone is on disk; with DEMO_NONINTERACTIVE=1 (make check) it
# checks the console and the API with it and exits at once; without, it
# serves (the console, and the API to that token as operator) until SIGINT.
# It is also the API's demo (scripts/demo-api was folded into it): the metering
# and replan routes are on, and a client-a token is printed (its hash alone on
# disk); run on a directory without the demo day, it makes the day itself.
# It runs `tessera console` (not the webhook: POST /validate is 404 there); a
# console that cannot start (its port taken) is reported at once, with its log.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
expect_rc 0 demo_day "$TMP/demo"
PORT=$(free_port)
DEMO_PORT=$PORT DEMO_NONINTERACTIVE=1 timeout 60 scripts/demo-console "$TESSERA" "$TMP/demo" \
    >"$TMP/out1" 2>&1
rc=$?
check "DEMO_NONINTERACTIVE=1 exited $rc, expected 0 (at once)" [ $rc -eq 0 ]
cat "$TMP/out1" >"$TMP/out"
expect_in "$TMP/out" "GET /ui/: 200"
expect_in "$TMP/out" "GET /api/v1/whoami: 200"
url_token() { # FILE: the token of the console URL printed there
    sed -n "s|^Open:  https://localhost:$PORT/ui/#token=\(tsk_[0-9a-f]\{64\}\)$|\1|p" "$1"
}
token=$(url_token "$TMP/out")
check "a console URL with a token: $(grep Open: "$TMP/out")" [ -n "$token" ]
hash=$(printf %s "$token" | sha256sum | cut -d' ' -f1)
expect_in "$TMP/demo/console/identities" "token sha256:$hash operator"
check "the token itself is on disk" [ -z "$(grep -rl -- "$token" "$TMP/demo")" ]
expect_in "$TMP/out" '"role":"operator"'
expect_in "$TMP/out" '"metering":true'
expect_in "$TMP/out" '"replan":true'
tok_a=$(sed -n 's/.*client-a token (shown once): //p' "$TMP/out")
hash_a=$(printf %s "$tok_a" | sha256sum | cut -d' ' -f1)
expect_in "$TMP/demo/console/identities" "token sha256:$hash_a tenant client-a"
check "the client-a token is not on disk" [ -z "$(grep -rl -- "$tok_a" "$TMP/demo")" ]

# on an empty directory it makes the demo day first
PORT2=$(free_port)
DEMO_PORT=$PORT2 DEMO_NONINTERACTIVE=1 timeout 120 scripts/demo-console "$TESSERA" \
    "$TMP/fresh" >"$TMP/out3" 2>&1
rc=$?
check "on an empty OUT it exits 0, not $rc ($(tail -3 "$TMP/out3"))" [ $rc -eq 0 ]
check "and made the demo day's store" [ -s "$TMP/fresh/metering.db" ]
check "and the running layout" [ -s "$TMP/fresh/plan.json" ]
expect_in "$TMP/out3" '"metering":true'

check "the server is stopped" [ -z "$(curl -sk "https://127.0.0.1:$PORT/healthz")" ]

# Interactive: serves until Ctrl-C (SIGINT to the script).
DEMO_PORT=$PORT setsid scripts/demo-console "$TESSERA" "$TMP/demo" >"$TMP/out2" 2>&1 &
DEMO=$!
for _ in $(seq 100); do grep -q 'Serving until Ctrl-C' "$TMP/out2" && break; sleep 0.1; done
token=$(url_token "$TMP/out2")
who=$(curl -s --cacert "$TMP/demo/console/ca.crt" -H "Authorization: Bearer $token" \
    "https://localhost:$PORT/api/v1/whoami")
case $who in *'"role":"operator"'* | *'"role": "operator"'*) ok ;; *) bad "whoami: $who" ;; esac
zero=tsk_$(printf '0%.0s' $(seq 64))
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$TMP/demo/console/ca.crt" \
    -H "Authorization: Bearer $zero" "https://localhost:$PORT/api/v1/whoami")
check "another token is refused ($code)" [ "$code" = 401 ]
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$TMP/demo/console/ca.crt" \
    -H 'Content-Type: application/json' --data-binary @tests/fixtures/admission/001-pod-no-gpu-tenant-ns.json \
    "https://localhost:$PORT/validate")
check "POST /validate on the demo's console: $code, want 404 (the webhook is another process)" \
    [ "$code" = 404 ]
# another demo on the same port: the console cannot listen; exit 1 with its log, at once
mkdir -p "$TMP/busy"
cp "$TMP/demo/metering.db" "$TMP/demo/plan.json" "$TMP/busy/"
start=$SECONDS
DEMO_PORT=$PORT DEMO_NONINTERACTIVE=1 timeout 120 scripts/demo-console "$TESSERA" "$TMP/busy" \
    >"$TMP/out4" 2>&1
rc=$?
check "a console that cannot listen: exit $rc, want 1" [ $rc -eq 1 ]
check "and reported within 60 s (took $((SECONDS - start)) s)" [ $((SECONDS - start)) -lt 60 ]
expect_in "$TMP/out4" "tessera console did not start; its log:"
expect_in "$TMP/out4" "cannot listen on 127.0.0.1:$PORT"
check "still serving" kill -0 $DEMO
kill -INT -- -$DEMO
for _ in $(seq 100); do kill -0 $DEMO 2>/dev/null || break; sleep 0.1; done
if kill -0 $DEMO 2>/dev/null; then bad "still running after SIGINT"; kill -9 -- -$DEMO; else ok; fi
check "the server is stopped after Ctrl-C" [ -z "$(curl -sk "https://127.0.0.1:$PORT/healthz")" ]
finish
