#!/bin/bash
# meter_schema_v8.sh - a SQLite database of schema v7 (samples_ts, a B-tree
# on time beside the primary key) moves to v8 when a newer tessera opens it:
# the index goes, the rows stay, and usage and invoices read from it equal
# those of a database created at v8 and the closed-form usage
# (tests/tools/gen_history.py --extras: a shared card split between two
# tenants, whose keys "DEVICE#..." the aggregate's tails look up).
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
check "v8: samples_ts still there" [ "$(q new "SELECT count(*) FROM sqlite_master WHERE name = 'samples_ts'")" = 0 ]
check "v8: version $(q new 'SELECT max(version) FROM schema_version')" \
    [ "$(q new 'SELECT max(version) FROM schema_version')" = 8 ]

# the same rows as v7 left them: the index on time, no version 8
cp "$TMP/new.db" "$TMP/old.db"
q old "CREATE INDEX samples_ts ON samples (ts_ms); DELETE FROM schema_version WHERE version = 8"
check "v7 copy has samples_ts" [ "$(q old "SELECT count(*) FROM sqlite_master WHERE name = 'samples_ts'")" = 1 ]

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
reports old
reports new
check "migrated: samples_ts left" [ "$(q old "SELECT count(*) FROM sqlite_master WHERE name = 'samples_ts'")" = 0 ]
check "migrated: version $(q old 'SELECT max(version) FROM schema_version')" \
    [ "$(q old 'SELECT max(version) FROM schema_version')" = 8 ]
check "migrated: rows $(q old 'SELECT count(*) FROM samples')" \
    [ "$(q old 'SELECT count(*) FROM samples')" = "$(q new 'SELECT count(*) FROM samples')" ]
check "usage differs after the migration" cmp -s "$TMP/old.usage" "$TMP/new.usage"
check "invoices differ after the migration" cmp -s "$TMP/old.invoices" "$TMP/new.invoices"
check "no invoice lines" grep -q microGpuHours "$TMP/old.invoices"
same=$(python3 -c 'import json,sys; print("yes" if json.load(open(sys.argv[1]))["rows"] == json.load(open(sys.argv[2]))["rows"] else "no")' \
    "$TMP/want.json" "$TMP/old.usage")
check "usage after the migration is not the closed form" [ "$same" = yes ]
finish
