#!/bin/bash
# labels: demo-day
# api_inventory.sh - console --inventory (a NodeInventory file or a folder of
# them): /api/v1/plan gives every card of the demo its GPU UUID and every
# MIG instance its UUID by index and placement, from the inventory
# scripts/demo-meter recorded (two cards of the demo have the same layout,
# which the ledger alone cannot tell apart), and each one's holder from the
# ledger; a tenant sees only its own. Bad paths stop the console at start;
# the webhook (serve) takes no --inventory, and the console needs --tokens.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PORT=$(free_port)
demo_day "$TMP/demo" >/dev/null 2>&1 || bad "demo-meter failed"
SPEC=examples/four-h100.yaml
INV=$TMP/inv
mkdir -p "$INV"
cp "$TMP/demo/inventory-gpu-node-1.json" "$INV/gpu-node-1.json"
echo "not read: not .json" > "$INV/README"
scripts/make-test-cert "$TMP/tls" >/dev/null
for who in "op --operator" "a --tenant client-a"; do
    set -- $who
    "$TESSERA" token new $2 $3 > "$TMP/tok-$1"
    sed -n 2p "$TMP/tok-$1" >> "$TMP/tokens"
done
SERVE=(console -f $SPEC --tls-cert "$TMP/tls/tls.crt" --tls-key "$TMP/tls/tls.key"
    --listen 127.0.0.1:$PORT --db "sqlite:$TMP/demo/metering.db" --tokens "$TMP/tokens")
"$TESSERA" "${SERVE[@]}" --inventory "$INV" 2>"$TMP/serve.log" &
SERVER=$!
for _ in $(seq 100); do
    curl -s --cacert "$TMP/tls/ca.crt" "https://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
    sleep 0.1
done
for who in op a; do
    curl -s --cacert "$TMP/tls/ca.crt" -H "Authorization: Bearer $(sed -n 1p "$TMP/tok-$who")" \
        "https://127.0.0.1:$PORT/api/v1/plan" > "$TMP/plan-$who.json"
done
kill $SERVER
wait $SERVER 2>/dev/null

# what the inventory says, by index and placement; holders from the CLI
/usr/bin/python3 - "$TMP" "$INV/gpu-node-1.json" <<'PY' > "$TMP/want.txt"
import json, sys
inv = json.load(open(sys.argv[2]))
for g in inv["gpus"]:
    print("card", g["index"], g["uuid"])
    for gi in g.get("gpuInstances", []):
        pl = gi["placement"]
        print("inst", g["index"], pl["start"], pl["size"], gi["computeInstances"][0]["uuid"])
PY
/usr/bin/python3 - "$TMP/plan-op.json" <<'PY' > "$TMP/got.txt"
import json, sys
for g in json.load(open(sys.argv[1]))["gpus"]:
    print("card", g["index"], g["uuid"])
    for i in g["instances"]:
        if i.get("start") is not None:
            print("inst", g["index"], i["start"], i["size"], i["uuid"])
PY
check "4 cards in the inventory" [ "$(grep -c '^card' "$TMP/want.txt")" -eq 4 ]
check "every card and MIG instance has the inventory's UUID" \
    diff <(sort "$TMP/want.txt") <(sort "$TMP/got.txt")
# each MIG instance's holder is what tessera ledger who says of its UUID
while read -r _ idx start size uuid; do
    want=$("$TESSERA" ledger who --db "sqlite:$TMP/demo/metering.db" --instance "$uuid" \
        --at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" | sed -n 's/^tenant: *//p')
    got=$(/usr/bin/python3 -c 'import json,sys
for g in json.load(open(sys.argv[1]))["gpus"]:
    for i in g["instances"]:
        if i.get("uuid") == sys.argv[2]: print((i["holder"] or {}).get("tenant"))' \
        "$TMP/plan-op.json" "$uuid")
    check "holder of $uuid ($got) is ledger who's ($want)" [ -n "$got" ] && [ "$got" = "$want" ]
done < <(grep '^inst' "$TMP/want.txt")
# client-a: its own instances keep their UUIDs, no other tenant's is shown
/usr/bin/python3 - "$TMP/plan-a.json" <<'PY' || bad "client-a's plan shows another tenant"
import json, sys
gpus = json.load(open(sys.argv[1]))["gpus"]
own = [i for g in gpus for i in g["instances"]]
assert own and all(i["tenant"] == "client-a" and i["uuid"] for i in own), own
assert all(i["holder"] is None or i["holder"]["tenant"] == "client-a" for i in own)
PY

# a path that is not there, a broken file, --inventory without --tokens, to the webhook
echo '{"gpus": [' > "$TMP/broken.json"
for arg in "$TMP/missing" "$TMP/broken.json"; do
    expect_rc 2 timeout 60 "$TESSERA" "${SERVE[@]}" --inventory "$arg"
    expect_in "$TMP/err" "$arg"
done
expect_rc 2 "$TESSERA" console -f $SPEC --tls-cert "$TMP/tls/tls.crt" \
    --tls-key "$TMP/tls/tls.key" --listen 127.0.0.1:1 --inventory "$INV"
expect_in "$TMP/err" "console needs -f SPEC, --tls-cert and --tls-key and --tokens"
expect_rc 2 "$TESSERA" serve -f $SPEC --tls-cert "$TMP/tls/tls.crt" \
    --tls-key "$TMP/tls/tls.key" --listen 127.0.0.1:1 --inventory "$INV"
expect_in "$TMP/err" "unrecognized option '--inventory'"
finish
