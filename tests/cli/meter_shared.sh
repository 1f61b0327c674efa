#!/bin/bash
# labels: slow demo-day
# meter_shared.sh - a shared service billed to its consumers (PriceBook
# sharedSplit), on SQLite and a real PostgreSQL. The worked example's day
# (scripts/demo-day.py) is imported once per backend; the RAG clients use the
# provider's embedding pool (7 x 1g.10gb). Checked against figures computed
# here from the plan, not from tessera's output:
#  - the pool's micro-GPU-hours (7 instances x 1/8 card x the day less its
#    last 15 s) split equally, by weight (rag-h 3, rag-e 2) or not at all
#    (none): floors, the micro-GPU-hours left to the largest remainders,
#    ties to the tenant listed first; amounts rounded half to even;
#  - the owner's passed-on line is minus the pool's hours and minus the sum
#    of the consumers' amounts, so the invoices of all tenants add up to the
#    fleet's cost (each usage row priced) to the cent, with or without split;
#  - PostgreSQL's invoices equal SQLite's;
#  - a time-sliced card: a guest's and an intruder's pods 1/N each, the owner
#    the rest, the intruder a custody violation;
#  - a v2 database (before the workload column) is upgraded in place to v3
#    on both backends, its old samples kept (workload '', not split).
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PG="$TMP/pg"
PORT=$(free_port)
trap 'scripts/pg-test-server stop "$PG" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
TENANTS="client-a client-b client-c client-d rag-e rag-f rag-g rag-h provider platform-dev"

expect_rc 0 demo_day "$TMP/demo"
DAY=$TMP/demo/dcgm-2026-11-02.prom INV=$TMP/demo/inventory-gpu-node-1.json

# spec variants of the worked example: sharedSplit and the uses' weights
# (NAME SPLIT RAG_E_WEIGHT RAG_H_WEIGHT, four at a time: one python3 writes them)
variants() {
    python3 - "$TMP" "$@" <<'PY'
import sys
d, args = sys.argv[1], sys.argv[2:]
for name, split, we, wh in zip(*[iter(args)] * 4):
    s = open("examples/four-h100.yaml").read()
    if split:
        s = s.replace("  migShareBasis: memory\n", f"  migShareBasis: memory\n  sharedSplit: {split}\n")
    for t, w in (("rag-e", we), ("rag-h", wh)):
        old = f"namespaces: [{t}]\n  uses: [{{tenant: provider, workload: embedding}}]"
        assert old in s, old
        s = s.replace(old, old[:-2] + f", weight: {w}}}]")
    open(f"{d}/{name}.yaml", "w").write(s)
PY
}
variants default "" 1 1 equal equal 1 1 weight weight 2 3 none none 2 3 ||
    bad "the spec variants were not written"

# invoices DB SPEC DIR: every tenant's November invoice in JSON, and the usage
invoices() {
    mkdir -p "$3"
    "$TESSERA" usage -f "$2" --db "$1" -o json >"$3/usage.json" || bad "usage $1 $2"
    for t in $TENANTS; do
        "$TESSERA" invoice -f "$2" --db "$1" --tenant "$t" --period 2026-11 -o json \
            >"$3/$t.json" || bad "invoice $t $1 $2"
    done
}

# verify DIR SPLIT WEIGHTS: the checks above on one backend's invoices,
# queued; verify_all judges the queue in one python3: the check (BODY) runs
# for each DIR as it would alone (its own sys.argv and globals; exit 0 or
# falling off the end passes, an exception or another exit fails)
VERIFY=()
verify() { VERIFY+=("$1" "$2" "$3"); }
verify_all() {
    local n
    python3 - "${VERIFY[@]}" >"$TMP/py.out" 2>&1 <<'PY'
import sys, traceback
BODY = r"""
import json, sys
d, split, weights = sys.argv[1], sys.argv[2], [int(w) for w in sys.argv[3].split(",")]
tenants = "client-a client-b client-c client-d rag-e rag-f rag-g rag-h provider platform-dev".split()
rags = ["rag-e", "rag-f", "rag-g", "rag-h"]
inv = {t: json.load(open(f"{d}/{t}.json")) for t in tenants}
usage = json.load(open(f"{d}/usage.json"))["rows"]
price = 2900000  # EUR 2.90 in micro-units

def cents(uh):  # uh x price (1e-12 EUR) in cents, half to even
    n, dv = uh * price, 10**10
    q, r = divmod(abs(n), dv)
    q += 2 * r > dv or (2 * r == dv and q % 2)
    return q if n >= 0 else -q

# the pool: 7 instances x 1g.10gb (1 of 8 memory slices), the day less its last 15 s
pool = (7 * (86400 - 15) * 1000 * 125000 + 1800000) // 3600000
fleet = sum(cents(r["allocationMicroGpuHours"]) for r in usage)
assert sum(inv[t]["totalMinor"] for t in tenants) == fleet, "invoices do not add up to the fleet"
shared = lambda t: [l for l in inv[t]["lines"] if l.get("note", "").startswith("shared:")]
passed = [l for l in inv["provider"]["lines"] if l.get("note", "").startswith("passed on:")]
if split == "none":
    assert not passed and all(not shared(t) for t in rags), "split with sharedSplit: none"
    print("ok none"); sys.exit(0)
w = weights if split == "weight" else [1] * 4
parts = [pool * x // sum(w) for x in w]
rem = [pool * x % sum(w) for x in w]
for i in sorted(range(4), key=lambda i: (-rem[i], i))[: pool - sum(parts)]:
    parts[i] += 1
for t, p in zip(rags, parts):
    [l] = shared(t)
    assert l["note"] == "shared: provider/embedding" and l["profile"] == "1g.10gb", l
    assert l["microGpuHours"] == p and l["amountMinor"] == cents(p), (t, l, p)
    assert inv[t]["totalMinor"] == cents(p), inv[t]
[l] = passed
assert l["microGpuHours"] == -pool, (l, pool)
assert l["amountMinor"] == -sum(cents(p) for p in parts), l
own = [l for l in inv["provider"]["lines"] if l["profile"] == "1g.10gb" and "note" not in l]
assert own[0]["microGpuHours"] == pool, own
print("ok", split, parts)
"""
code = compile(BODY, "verify", "exec")
args = sys.argv[1:]
for i in range(0, len(args), 3):
    sys.argv = ["verify"] + args[i:i + 3]
    try:
        exec(code, {"__name__": "__main__"})
        good = True
    except SystemExit as e:
        good = e.code in (None, 0)
    except BaseException:
        traceback.print_exc(file=sys.stdout)
        good = False
    sys.stdout.flush()
    print("verdict %s %s" % (args[i], "ok" if good else "bad"), flush=True)
PY
    for ((n = 0; n < ${#VERIFY[@]}; n += 3)); do
        if grep -qxF "verdict ${VERIFY[n]} ok" "$TMP/py.out"; then ok; else
            bad "${VERIFY[n]} ${VERIFY[n + 1]}: $(grep -B3 -xF "verdict ${VERIFY[n]} bad" "$TMP/py.out" | sed '$d')"
        fi
    done
    VERIFY=()
}

DB=sqlite:$TMP/demo/metering.db
invoices "$DB" "$TMP/default.yaml" "$TMP/sqlite-default"
verify "$TMP/sqlite-default" equal 1,1,1,1
invoices "$DB" "$TMP/equal.yaml" "$TMP/sqlite-equal"
verify "$TMP/sqlite-equal" equal 1,1,1,1
invoices "$DB" "$TMP/weight.yaml" "$TMP/sqlite-weight"
verify "$TMP/sqlite-weight" weight 2,1,1,3
invoices "$DB" "$TMP/none.yaml" "$TMP/sqlite-none"
verify "$TMP/sqlite-none" none 1,1,1,1
verify_all
# the text invoice says it too, with a negative line for the owner
expect_rc 0 "$TESSERA" invoice -f "$TMP/weight.yaml" --db "$DB" --tenant provider --period 2026-11
expect_in "$TMP/out" "passed on: provider/embedding"
grep -qE " -[0-9]+\.[0-9]{6} .* -[0-9]+\.[0-9]{2}  passed on" "$TMP/out" && ok || bad "no negative line"

# a time-sliced card (the provider's fine-tune card, platform-dev its guest):
# the guest's pod and an intruder's (client-a) each charged 1/2 (2 plan
# clients), the owner the rest (0), the intruder a custody violation
python3 - "$DAY" >"$TMP/slice.prom" <<'PY'
import sys
line = next(l for l in open(sys.argv[1]) if 'namespace="platform-dev"' in l and "ACTIVE" in l)
labels, rest = line.split("} ", 1)
t0 = int(rest.split()[1])
card = labels.replace(',container="main",namespace="platform-dev",pod="notebooks-0"', "")
intruder = labels.replace('namespace="platform-dev",pod="notebooks-0"',
                          'namespace="client-a-prod",pod="x-0"')
for i in range(3):
    for l in (card, labels, intruder):
        print(f"{l}}} 0.5 {t0 + 15000 * i}")
PY
SDB=sqlite:$TMP/slice.db
expect_rc 0 "$TESSERA" ledger record --db "$SDB" --inventory "$INV" -f examples/four-h100.yaml \
    --at 2026-11-01T00:00:00Z
expect_rc 0 "$TESSERA" meter import -f examples/four-h100.yaml --db "$SDB" \
    --at 2026-11-02T00:00:00Z "$TMP/slice.prom"
expect_in "$TMP/out" "9 device scrapes, 9 new samples, 0 lines rejected, 1 custody violations"
expect_in "$TMP/err" "pod client-a-prod/x-0 of tenant 'client-a' on a device planned for 'provider'"
"$TESSERA" usage -f examples/four-h100.yaml --db "$SDB" -o json >"$TMP/slice.json"
python3 -c 'import json, sys
r = {x["tenant"]: x["allocationMicroGpuHours"] for x in json.load(open(sys.argv[1]))["rows"]}
half = (30000 * 500000 + 1800000) // 3600000  # 30 s x 1/2
assert r == {"client-a": half, "platform-dev": half, "provider": 0}, r' "$TMP/slice.json" &&
    ok || bad "time-sliced card: $(cat "$TMP/slice.json")"

# v2 -> v3 in place: a v2 SQLite file (samples without workload) is upgraded
V2_DDL="CREATE TABLE schema_version (version BIGINT NOT NULL PRIMARY KEY);
INSERT INTO schema_version VALUES (1), (2);
CREATE TABLE samples (node TEXT NOT NULL, device TEXT NOT NULL, ts_ms BIGINT NOT NULL,
 model TEXT NOT NULL, profile TEXT NOT NULL, tenant TEXT NOT NULL, ns TEXT NOT NULL,
 pod TEXT NOT NULL, share_ppm BIGINT NOT NULL, util_ppm BIGINT NOT NULL,
 PRIMARY KEY (device, ts_ms));
CREATE INDEX samples_ts ON samples (ts_ms);
CREATE TABLE expositions (source TEXT NOT NULL PRIMARY KEY, ts_ms BIGINT NOT NULL,
 body BYTEA NOT NULL);
INSERT INTO samples VALUES ('n', 'GPU-old', 1793923200000, 'h100-80gb-sxm', '', 'provider',
 '', '', 1000000, -1), ('n', 'GPU-old', 1793926800000, 'h100-80gb-sxm', '', 'provider',
 '', '', 1000000, -1);"
python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).executescript(sys.argv[2])' \
    "$TMP/v2.db" "$V2_DDL"
# (the ledger table a v1 migration made is left out: the upgrade adds only v3)
upgraded() { # DB QUERY_FN
    "$TESSERA" usage -f "$TMP/weight.yaml" --db "$1" --interval 3600s -o json >"$TMP/v2.json" ||
        bad "usage on the upgraded $1"
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["rows"]
assert [(x["tenant"], x["allocationMicroGpuHours"]) for x in r] == [("provider", 1000000)], r' \
        "$TMP/v2.json" && ok || bad "the v2 samples read back wrong: $(cat "$TMP/v2.json")"
}
python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ms BIGINT NOT NULL, node TEXT NOT NULL, gpu_uuid TEXT NOT NULL, instance_uuid TEXT NOT NULL, gi_id TEXT NOT NULL, profile TEXT NOT NULL, placement TEXT NOT NULL, tenant TEXT NOT NULL, workload TEXT NOT NULL, source TEXT NOT NULL, hash TEXT NOT NULL, prev_hash TEXT NOT NULL, mac TEXT NOT NULL)")
db.commit()' "$TMP/v2.db"
upgraded "sqlite:$TMP/v2.db"
got=$(python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute("SELECT max(version) FROM schema_version").fetchone()[0],
      db.execute("SELECT count(*) FROM samples WHERE workload = \"\"").fetchone()[0])' "$TMP/v2.db")
check "sqlite v2 upgraded: '$got', expected '9 2'" [ "$got" = "9 2" ]

# ---- PostgreSQL: the same day, the same invoices; the same upgrade ----------
if ! URL=$(scripts/pg-test-server start "$PG" "$PORT" 2>"$TMP/start.err"); then
    bad "pg-test-server start failed"; cat "$TMP/start.err"; finish; exit 1
fi
expect_rc 0 "$TESSERA" ledger record --db "$URL" --inventory "$INV" -f examples/four-h100.yaml \
    --at 2026-11-01T00:00:00Z
expect_rc 0 "$TESSERA" meter import -f examples/four-h100.yaml --db "$URL" \
    --at 2026-11-02T00:00:00Z "$DAY"
expect_in "$TMP/out" "95040 new samples"
invoices "$URL" "$TMP/weight.yaml" "$TMP/pg-weight"
verify "$TMP/pg-weight" weight 2,1,1,3
verify_all
for t in $TENANTS; do
    cmp -s "$TMP/sqlite-weight/$t.json" "$TMP/pg-weight/$t.json" || bad "$t: PostgreSQL differs"
done
cmp -s "$TMP/sqlite-weight/usage.json" "$TMP/pg-weight/usage.json" && ok || bad "usage differs"
psql "$URL" -AtXqc "CREATE DATABASE v2" >/dev/null && ok || bad "CREATE DATABASE v2"
V2URL=${URL%/postgres}/v2
psql "$V2URL" -AtXq -v ON_ERROR_STOP=1 -c "${V2_DDL}" >/dev/null && ok || bad "v2 DDL on pg"
psql "$V2URL" -AtXqc "CREATE TABLE ledger (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
 ts_ms BIGINT NOT NULL, node TEXT NOT NULL, gpu_uuid TEXT NOT NULL, instance_uuid TEXT NOT NULL,
 gi_id TEXT NOT NULL, profile TEXT NOT NULL, placement TEXT NOT NULL, tenant TEXT NOT NULL,
 workload TEXT NOT NULL, source TEXT NOT NULL, hash TEXT NOT NULL, prev_hash TEXT NOT NULL,
 mac TEXT NOT NULL)" >/dev/null
upgraded "$V2URL"
got=$(psql "$V2URL" -AtXqc "SELECT max(version) || ' ' || (SELECT count(*) FROM samples
    WHERE workload = '') FROM schema_version")
check "postgresql v2 upgraded: '$got', expected '9 2'" [ "$got" = "9 2" ]
finish
