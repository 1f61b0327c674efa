#!/bin/bash
# meter_schema_v8.sh - SQLite databases of schema v7 (samples_ts, a B-tree
# on time beside the primary key) and v8 (one wide table of samples) move
# to v9 (readings naming their attributions, view samples) when a newer
# tessera opens them: the index goes, the rows stay, and usage and invoices
# read from them equal those of a database created at v9 and the
# closed-form usage (tests/tools/gen_history.py --extras: a shared card
# split between two tenants, whose keys "DEVICE#..." the aggregate's tails
# look up).
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
trap 'rm -rf "$TMP"' EXIT

python3 tests/tools/gen_history.py --hours 1 --extras --out "$TMP/h.prom" --spec "$TMP/spec.yaml" \
    --expect "$TMP/want.json"
cat >>"$TMP/spec.yaml" <<'EOF'
---
apiVersion: tessera.dev/v1alpha1
kind: PriceBook
metadata: {name: p}
spec:
  currency: EUR
  prices: [{model: h100-80gb-sxm, perGpuHour: "2.90"}, {model: a100-80gb, perGpuHour: "1.70"}]
EOF
expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "sqlite:$TMP/new.db" --at 0 "$TMP/h.prom"
q() { sqlite3 "$TMP/$1.db" "$2"; }
check "v9: samples_ts still there" [ "$(q new "SELECT count(*) FROM sqlite_master WHERE name = 'samples_ts'")" = 0 ]
check "v9: version $(q new 'SELECT max(version) FROM schema_version')" \
    [ "$(q new 'SELECT max(version) FROM schema_version')" = 9 ]
check "v9: $(q new 'SELECT count(*) FROM attributions') attributions for $(q new 'SELECT count(*) FROM readings') readings" \
    [ "$(q new 'SELECT count(*) FROM attributions')" -lt "$(q new 'SELECT count(*) FROM readings')" ]

# the same rows as v8 left them: one wide table, no version 9
cp "$TMP/new.db" "$TMP/v8.db"
q v8 "CREATE TABLE wide AS SELECT * FROM samples;
DROP VIEW samples; DROP TABLE readings; DROP TABLE attributions;
CREATE TABLE samples (node TEXT NOT NULL, device TEXT NOT NULL, ts_ms BIGINT NOT NULL,
 model TEXT NOT NULL, profile TEXT NOT NULL, tenant TEXT NOT NULL, ns TEXT NOT NULL,
 pod TEXT NOT NULL, share_ppm BIGINT NOT NULL, util_ppm BIGINT NOT NULL,
 workload TEXT NOT NULL DEFAULT '', PRIMARY KEY (device, ts_ms));
INSERT INTO samples SELECT * FROM wide; DROP TABLE wide;
DELETE FROM schema_version WHERE version = 9"
check "v8 copy has no table of samples" [ "$(q v8 "SELECT type FROM sqlite_master WHERE name = 'samples'")" = table ]
# and as v7 left them: the index on time, no version 8
cp "$TMP/v8.db" "$TMP/v7.db"
q v7 "CREATE INDEX samples_ts ON samples (ts_ms); DELETE FROM schema_version WHERE version = 8"
check "v7 copy has samples_ts" [ "$(q v7 "SELECT count(*) FROM sqlite_master WHERE name = 'samples_ts'")" = 1 ]
rows() { q "$1" 'SELECT * FROM samples ORDER BY device, ts_ms'; }
rows new >"$TMP/new.rows"

# reports DB: usage, and each tenant's January invoice twice (the second
# reads the aggregate the first kept, checking its tails)
reports() {
    local t
    "$TESSERA" usage -f "$TMP/spec.yaml" --db "sqlite:$TMP/$1.db" -o json >"$TMP/$1.usage" || bad "$1: usage"
    for t in acme globex initech acme globex; do
        "$TESSERA" invoice -f "$TMP/spec.yaml" --db "sqlite:$TMP/$1.db" --tenant "$t" \
            --period 2026-01 -o json || bad "$1: invoice $t"
    done >"$TMP/$1.invoices"
}
reports new
for v in v7 v8; do
    reports $v
    check "$v: samples_ts left" [ "$(q $v "SELECT count(*) FROM sqlite_master WHERE name = 'samples_ts'")" = 0 ]
    check "$v: version $(q $v 'SELECT max(version) FROM schema_version')" \
        [ "$(q $v 'SELECT max(version) FROM schema_version')" = 9 ]
    rows $v >"$TMP/$v.rows"
    check "$v: the samples differ after the migration" cmp -s "$TMP/$v.rows" "$TMP/new.rows"
    check "$v: attributions $(q $v 'SELECT count(*) FROM attributions'), want $(q new 'SELECT count(*) FROM attributions')" \
        [ "$(q $v 'SELECT count(*) FROM attributions')" = "$(q new 'SELECT count(*) FROM attributions')" ]
    check "$v: usage differs after the migration" cmp -s "$TMP/$v.usage" "$TMP/new.usage"
    check "$v: invoices differ after the migration" cmp -s "$TMP/$v.invoices" "$TMP/new.invoices"
done
check "no invoice lines" grep -q microGpuHours "$TMP/v7.invoices"
check "no samples" [ -s "$TMP/new.rows" ]
same=$(python3 -c 'import json,sys; print("yes" if json.load(open(sys.argv[1]))["rows"] == json.load(open(sys.argv[2]))["rows"] else "no")' \
    "$TMP/want.json" "$TMP/v7.usage")
check "usage after the migration is not the closed form" [ "$same" = yes ]
finish
