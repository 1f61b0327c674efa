#!/bin/bash
# labels: slow demo-day
# api.sh - the JSON API under /api/v1/ (docs/api.md) of the real `tessera console`
# over HTTPS, loaded with the demo day (scripts/demo-meter): tokens minted by
# `tessera token new` (the file holds only their SHA-256, checked here with
# sha256sum), client certificates made with openssl, a running layout for
# /replan, three reviews denied by the webhook (`tessera serve`, another
# process, sent with the API server's client certificate) for /denials, read
# from the webhook's probes' port (--denials-from), one custody violation with a
# hostile pod name, a hostile displayName, hostile scrape labels on a day of
# their own. tests/tools/api_check.py then asks every route and compares with
# what the CLI says on the same spec and store. Then the identities file is
# changed under the running console (a token added, one removed, a broken
# file), and bad identities files stop the console at start naming file:line:col.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PORT=$(free_port)
WPORT=$(free_port)
WHPORT=$(free_port)
D=$TMP/d
mkdir -p "$D"
demo_day "$TMP/demo" >/dev/null 2>&1 || bad "demo-meter failed"
DB=sqlite:$TMP/demo/metering.db

# a hostile displayName: markup, quotes, a backslash; the plan is unchanged
HOSTILE='</script><script>alert("x")</script> "onerror=alert(1) \ javascript:alert(1)'
printf '%s\n' "$HOSTILE" > "$D/hostile.txt"
/usr/bin/python3 - "$D/hostile.txt" examples/four-h100.yaml > "$TMP/spec.yaml" <<'PY'
import json, sys
hostile = open(sys.argv[1]).read().rstrip("\n")
for line in open(sys.argv[2]):
    if "displayName: Client D" in line:
        line = line.split("displayName:")[0] + "displayName: " + json.dumps(hostile) + "\n"
    sys.stdout.write(line)
PY
SPEC=$TMP/spec.yaml
/usr/bin/python3 - "$SPEC" "$D" <<'PY'
import json, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") == "Tenant"]
json.dump([d["metadata"]["name"] for d in docs], open(sys.argv[2] + "/tenants.json", "w"))
json.dump({d["metadata"]["name"]: d["spec"]["contract"] for d in docs},
          open(sys.argv[2] + "/contracts.json", "w"))
PY

# identities: four tokens and two certificate lines
for who in "op --operator" "a --tenant client-a" "b --tenant client-b" "c --tenant client-c" \
    "p --tenant provider"; do
    set -- $who
    expect_rc 0 "$TESSERA" token new $2 $3
    tok=$(sed -n 1p "$TMP/out")
    echo "$1=$tok" >> "$D/tokens.env"
    sed -n 2p "$TMP/out" >> "$TMP/tokens"
    sum=$(printf %s "$tok" | sha256sum | cut -d' ' -f1)
    check "token line of $1 holds its sha256" grep -qx "token sha256:$sum ${3:+tenant }${3:-operator}" "$TMP/out"
    check "the token is not in the file" sh -c "! grep -q '$tok' '$TMP/tokens'"
done
echo "HASH_A=$(printf %s "$(sed -n 's/^a=//p' "$D/tokens.env")" | sha256sum | cut -d' ' -f1)" >> "$D/tokens.env"
echo "cert cn:client-b.example tenant client-b" >> "$TMP/tokens"
echo "cert cn:client-x.example operator" >> "$TMP/tokens"

scripts/make-test-cert "$TMP/tls" >/dev/null
scripts/make-test-cert "$TMP/other" >/dev/null
cp "$TMP/tls/ca.crt" "$D/ca.crt"
client() { # name ca-dir cn (a TLS client's certificate: both processes require clientAuth)
    client_cert "$TMP/client-$1" "$2" "$3" clientAuth
    cp "$TMP/client-$1.crt" "$TMP/client-$1.key" "$D/"
}
client b "$TMP/tls" client-b.example
client x "$TMP/other" client-x.example # an operator's name, from a CA the console does not trust
# the API server's client certificate to the webhook, from a CA of its own
scripts/make-test-cert "$TMP/apiserver" >/dev/null
client apiserver "$TMP/apiserver" kube-apiserver-webhook-client

# hostile label values from scrapes (as tests/cli/meter_hostile.sh stores them:
# markup, a formula, a newline and a terminal escape, bytes that are not UTF-8)
# on client-a, on a day of their own
/usr/bin/python3 - "$TMP/demo/metering.db" <<'PY'
import sqlite3, sys
sys.path.insert(0, "tests/tools")
from stored_samples import put_sample
db = sqlite3.connect(sys.argv[1])
rows = [(b"GPU-h1", b"NVIDIA H100 80GB HBM3", b'<img src=x onerror="alert(1)">'),
        (b"GPU-h2", b"NVIDIA H100 \xff\xfe", b"1g.10gb"),
        (b"GPU-h3", b'=HYPERLINK("http://e.example/","x")', b"</script>"),
        (b"GPU-h4", b"line1\nFORGED line", b"\x1b[31mred")]
for dev, model, prof in rows:
    for i in range(3):
        put_sample(db, b"n1", dev, 1793836800000 + 15000 * i, model, prof, "client-a", "ns",
                   "pod", 1000000, 500000)
# written behind tessera's back: the usage aggregate (schema v7) the demo day's
# invoice kept no longer holds, so it goes too, as no ingest would leave it
for table in ("agg_tails", "agg_totals", "agg_periods"):
    db.execute("DELETE FROM " + table)
db.commit()
PY
"$TESSERA" usage -f "$SPEC" --db "$DB" --from 2026-11-05T00:00:00Z --to 2026-11-06T00:00:00Z \
    -o json > "$D/usage-hostile.json"
check "four hostile rows stored" [ "$(grep -c '"tenant"' "$D/usage-hostile.json")" -eq 4 ]
# what the CLI says on the same spec and store
"$TESSERA" plan -f "$SPEC" -o json > "$D/plan.json"
"$TESSERA" usage -f "$SPEC" --db "$DB" --from 2026-11-02T00:00:00Z --to 2026-11-03T00:00:00Z \
    -o json > "$D/usage.json"
# each step of /usage?from=09:30&to=12:00&step=1h, the last one cut at 12:00
for w in 09:30,10:30 10:30,11:30 11:30,12:00; do
    "$TESSERA" usage -f "$SPEC" --db "$DB" --from "2026-11-02T${w%,*}:00Z" \
        --to "2026-11-02T${w#*,}:00Z" -o json > "$D/usage-step-${w%,*}.json"
done
for f in json csv html; do
    "$TESSERA" invoice -f "$SPEC" --db "$DB" --tenant client-a --period 2026-11 -o $f \
        > "$D/invoice-a.$f"
done
"$TESSERA" ledger history --db "$DB" --tenant client-a -o json > "$D/history-a.json"
INV=$TMP/demo/inventory-gpu-node-1.json
uuid() { # profile index -> the compute instance UUID and its GPU's
    /usr/bin/python3 -c 'import json, sys
for g in json.load(open(sys.argv[1]))["gpus"]:
    for i in g["gpuInstances"]:
        if i["profile"] == sys.argv[2]:
            print(i["computeInstances"][0]["uuid"], g["uuid"]); sys.exit()' "$INV" "$1"
}
cp "$INV" "$D/inventory.json"
# what `tessera ledger who` says now of every device of the inventory, for
# the uuid and holder of /plan's cards and instances
NOW=$(date -u +%Y-%m-%dT%H:%M:%SZ)
for u in $(/usr/bin/python3 -c 'import json, sys
for g in json.load(open(sys.argv[1]))["gpus"]:
    print(g["uuid"])
    for i in g["gpuInstances"]:
        print(i["computeInstances"][0]["uuid"])' "$INV"); do
    echo "== $u"
    "$TESSERA" ledger who --db "$DB" --instance "$u" --at "$NOW"
done > "$D/who.txt"
/usr/bin/python3 - "$D/who.txt" > "$D/who.json" <<'PY'
import json, sys
who, u, cur = {}, None, None
for line in open(sys.argv[1]):
    if line.startswith("== "):
        u, cur = line[3:].strip(), None
    elif ":" in line and u not in who or (cur is not None and who.get(u) is cur):
        k, _, v = line.partition(":")
        k, v = k.strip(), v.strip()
        if k == "tenant" and u not in who:
            cur = who[u] = {"tenant": v}
        elif cur is not None and k in ("workload", "since", "seq", "source") and k not in cur:
            cur[k] = int(v) if k == "seq" else v
print(json.dumps(who))
PY
check "ledger who answered for card 2's seven instances" \
    [ "$(grep -o '"tenant": "provider"' "$D/who.json" | wc -l)" -ge 8 ]
read -r UA GA < <(uuid 3g.40gb)
read -r UB _ < <(uuid 2g.20gb)
check "client-b's 2g.20gb in the inventory" [ -n "$UB" ]
{ echo "UUID_A=$UA"; echo "UUID_B=$UB"; echo "GPU_A=$GA"; } >> "$D/tokens.env"
# a custody violation: client-b's pod seen on client-a's card, with a hostile name
POD='client-b/<img src=x onerror=alert(1)>"'
expect_rc 0 "$TESSERA" ledger record --db "$DB" --tenant client-b --gpu-uuid "$GA" \
    --source observed --workload "$POD" --at 2026-11-02T13:00:00Z
echo "HOSTILE_POD=$POD" >> "$D/tokens.env"
# the running layout: the plan before client-a's second replica
sed '36s/replicas: 2/replicas: 1/' "$SPEC" > "$TMP/before.yaml"
check "the layout before differs" sh -c "! cmp -s '$SPEC' '$TMP/before.yaml'"
"$TESSERA" plan -f "$TMP/before.yaml" -o json > "$TMP/current.json"

"$TESSERA" serve -f "$SPEC" --tls-cert "$TMP/tls/tls.crt" --tls-key "$TMP/tls/tls.key" \
    --listen 127.0.0.1:$WPORT --health-listen 127.0.0.1:$WHPORT \
    --admission-client-ca "$TMP/apiserver/ca.crt" --admission-client kube-apiserver-webhook-client \
    2>"$TMP/webhook.log" &
WEBHOOK=$!
"$TESSERA" console -f "$SPEC" --tls-cert "$TMP/tls/tls.crt" --tls-key "$TMP/tls/tls.key" \
    --listen 127.0.0.1:$PORT --db "$DB" --tokens "$TMP/tokens" --client-ca "$TMP/tls/ca.crt" \
    --current "$TMP/current.json" --denials-from "http://127.0.0.1:$WHPORT/denials" \
    --threads 12 2>"$TMP/serve.log" &
SERVER=$!
trap 'kill $WEBHOOK $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT
for url in "https://127.0.0.1:$PORT/readyz" "https://127.0.0.1:$WPORT/readyz"; do
    for _ in $(seq 100); do
        curl -s --cacert "$D/ca.crt" "$url" >/dev/null 2>&1 && break
        sleep 0.1
    done
done
# three denials of client-c's pods, as the API server sends them (its client
# certificate); the rules as the webhook logged them
for f in tests/fixtures/admission/00[4]-*.json tests/fixtures/admission/0{09,10}-*.json; do
    curl -s --cacert "$D/ca.crt" -o /dev/null -H 'Content-Type: application/json' \
        --cert "$D/client-apiserver.crt" --key "$D/client-apiserver.key" \
        --data-binary "@$f" "https://127.0.0.1:$WPORT/validate"
done
rules=$(sed -n 's/.*msg=denied.* rule=\([^ ]*\) .*client=apiserver.*/\1/p' "$TMP/webhook.log" |
    paste -sd,)
check "three denials logged ($rules)" [ "$(echo "$rules" | tr ',' '\n' | grep -c .)" -eq 3 ]
echo "RULES=$rules" >> "$D/tokens.env"

# /invoices reads the usage aggregate as tessera invoice does: emptied here,
# its first request integrates November and keeps it (api_check compares
# the invoices with the CLI's)
agg() {
    /usr/bin/python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for sql in sys.argv[2:]:
    r = db.execute(sql).fetchone()
db.commit()
print(r[0] if r else "")' "$TMP/demo/metering.db" "$@"
}
agg "DELETE FROM agg_tails" "DELETE FROM agg_totals" "DELETE FROM agg_periods" >/dev/null

/usr/bin/python3 tests/tools/api_check.py "$PORT" "$D" > "$TMP/check.out" 2>&1
rc=$?
cat "$TMP/check.out"
check "api_check.py" [ $rc -eq 0 ]
grep -q "api_check: [1-9][0-9]* passed, 0 failed" "$TMP/check.out" && ok || bad "no checks ran"
kept=$(agg "SELECT count(*) FROM agg_periods WHERE from_ms = 1793491200000 AND to_ms = 1796083200000 AND done = 1")
check "November's aggregate not kept by /invoices ($kept windows)" [ "$kept" = 1 ]

# the identities file reloads when it changes: a new token works, a removed one
# does not, a broken file keeps the last good one (and says so)
api() { # token path -> HTTP status
    curl -s --cacert "$D/ca.crt" -o "$TMP/api.out" -w '%{http_code}' \
        -H "Authorization: Bearer $1" "https://127.0.0.1:$PORT/api/v1$2"
}
wait_for() { # status token path
    for _ in $(seq 100); do [ "$(api "$2" "$3")" = "$1" ] && return 0; sleep 0.1; done
    return 1
}
OP=$(sed -n 's/^op=//p' "$D/tokens.env")
"$TESSERA" token new --tenant client-d > "$TMP/new"
NEW=$(sed -n 1p "$TMP/new")
check "a new token is refused before it is in the file" [ "$(api "$NEW" /whoami)" = 401 ]
sed -n 2p "$TMP/new" >> "$TMP/tokens"
check "a new token works once the file has it" wait_for 200 "$NEW" /whoami
expect_in "$TMP/api.out" '"tenant":"client-d"'
grep -v operator "$TMP/tokens" > "$TMP/t2" && cat "$TMP/t2" > "$TMP/tokens"
check "a removed token stops working" wait_for 401 "$OP" /whoami
echo "token sha256:nothex operator" >> "$TMP/tokens"
for _ in $(seq 100); do grep -q "previous policy keeps serving" "$TMP/serve.log" && break; sleep 0.1; done
expect_in "$TMP/serve.log" "previous policy keeps serving"
check "the last good identities still serve" [ "$(api "$NEW" /whoami)" = 200 ]

# a broken identities file stops the console at start, naming file:line:col
printf 'token sha256:abc operator\n' > "$TMP/bad-tokens"
expect_rc 2 "$TESSERA" console -f "$SPEC" --tls-cert "$TMP/tls/tls.crt" \
    --tls-key "$TMP/tls/tls.key" --listen 127.0.0.1:1 --tokens "$TMP/bad-tokens"
expect_in "$TMP/err" "$TMP/bad-tokens:1:7"
printf '# ok\ncert cn:x tenant\n' > "$TMP/bad-tokens"
expect_rc 2 "$TESSERA" console -f "$SPEC" --tls-cert "$TMP/tls/tls.crt" \
    --tls-key "$TMP/tls/tls.key" --listen 127.0.0.1:1 --tokens "$TMP/bad-tokens"
expect_in "$TMP/err" "$TMP/bad-tokens:2:11"
# a corrupt running plan (a card listed twice) is refused as plan --current refuses it
/usr/bin/python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); p["gpus"].append(p["gpus"][0]); json.dump(p, open(sys.argv[2], "w"))' \
    "$TMP/current.json" "$TMP/twice.json"
expect_rc 2 "$TESSERA" console -f "$SPEC" --tls-cert "$TMP/tls/tls.crt" \
    --tls-key "$TMP/tls/tls.key" --listen 127.0.0.1:1 --tokens /dev/null \
    --current "$TMP/twice.json"
expect_in "$TMP/err" "$TMP/twice.json"
expect_in "$TMP/err" "listed twice"
# the console without --tokens; the webhook takes none of the API's options
expect_rc 2 "$TESSERA" console -f "$SPEC" --tls-cert "$TMP/tls/tls.crt" \
    --tls-key "$TMP/tls/tls.key" --listen 127.0.0.1:1 --current "$TMP/current.json"
expect_in "$TMP/err" "and --tokens"
for opt in "--tokens $TMP/tokens" "--client-ca $TMP/tls/ca.crt" "--current $TMP/current.json"; do
    # shellcheck disable=SC2086
    expect_rc 2 "$TESSERA" serve -f "$SPEC" --tls-cert "$TMP/tls/tls.crt" \
        --tls-key "$TMP/tls/tls.key" --listen 127.0.0.1:1 $opt
    expect_in "$TMP/err" "unrecognized option '${opt%% *}'"
done
expect_rc 2 "$TESSERA" token new --tenant "a b"
expect_rc 2 "$TESSERA" token new --operator --tenant client-a
kill "$SERVER" "$WEBHOOK"
wait "$SERVER"
wait "$WEBHOOK"
finish
