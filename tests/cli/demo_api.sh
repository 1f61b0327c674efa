#!/bin/bash
# demo_api.sh - scripts/demo-api as `make check` runs it (DEMO_NONINTERACTIVE=1):
# the demo day is loaded, serve answers the operator token it printed with the
# operator's whoami and the metering and replan routes on, and stops.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PORT=$(free_port)
PORT=$PORT DEMO_NONINTERACTIVE=1 TESSERA_DEMO_DIR="$TMP/w" \
    expect_rc 0 scripts/demo-api "$TESSERA" "$TMP/day"
expect_in "$TMP/out" "https://127.0.0.1:$PORT/api/v1/"
expect_in "$TMP/out" '"role":"operator"'
expect_in "$TMP/out" '"metering":true'
expect_in "$TMP/out" '"replan":true'
tok=$(sed -n 's/.*operator token (shown once): //p' "$TMP/out")
sum=$(printf %s "$tok" | sha256sum | cut -d' ' -f1)
check "the identities file holds the printed token's hash" \
    grep -qx "token sha256:$sum operator" "$TMP/w/tokens"
check "and not the token" sh -c "! grep -q '$tok' '$TMP/w/tokens'"
check "serve stopped with the script" sh -c "! curl -s --cacert '$TMP/w/tls/ca.crt' \
    https://127.0.0.1:$PORT/healthz"
finish
