#!/bin/bash
# store_missing.sh - the verbs that only read the store (usage, invoice,
# ledger who/history/export/verify) refuse a SQLite --db that does not exist:
# exit 2, the message names the path, and no file appears (a typo must not
# read as an empty database). The verbs that write (meter import, ledger
# record) still create it.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
SPEC="$TESSERA_FIXTURES/meter/lab.yaml"
typo="$TMP/typo.db"
DB="sqlite:$typo"

refuses() {
    expect_rc 2 "$TESSERA" "$@"
    expect_in "$TMP/err" "$typo: no such database"
    check "$*: created $typo" [ ! -e "$typo" ]
}
refuses usage -f "$SPEC" --db "$DB"
refuses usage -f "$SPEC" --db "$DB" -o json
refuses invoice -f "$SPEC" --db "$DB" --tenant lab --period 2026-11
refuses ledger who --db "$DB" --instance GPU-x --at 1796036400
refuses ledger history --db "$DB" --tenant lab
refuses ledger export --db "$DB"
refuses ledger verify --db "$DB"
# a missing folder is the same refusal, not a crash
typo="$TMP/no/such/dir.db" DB="sqlite:$TMP/no/such/dir.db"
refuses ledger verify --db "$DB"

# writers create it; then the readers read it
typo="$TMP/typo.db" DB="sqlite:$TMP/typo.db"
expect_rc 0 "$TESSERA" ledger record --db "$DB" --tenant lab --gpu-uuid GPU-x --at 1796036400
check "ledger record did not create $typo" [ -s "$typo" ]
expect_rc 0 "$TESSERA" ledger verify --db "$DB"
expect_in "$TMP/out" "ledger intact: 1 entries"
expect_rc 0 "$TESSERA" usage -f "$SPEC" --db "$DB"
expect_in "$TMP/out" "TENANT"
finish
