#!/bin/bash
# env.sh - TESSERA_SPEC, TESSERA_CATALOG and TESSERA_DB stand in for -f,
# --catalog and --db when the command line does not give them; flags win;
# the spec and catalog variables hold ':'-separated lists; a bad value is
# bad input (2) named like the flag's.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
EX=examples/four-h100.yaml
unset TESSERA_SPEC TESSERA_CATALOG TESSERA_DB

TESSERA_SPEC=$EX expect_rc 0 "$TESSERA" check
expect_in "$TMP/out" "ok:"
"$TESSERA" check -f $EX > "$TMP/flag.out"
TESSERA_SPEC=$EX "$TESSERA" check > "$TMP/env.out"
check "check from TESSERA_SPEC differs from check -f" cmp -s "$TMP/flag.out" "$TMP/env.out"
# flags win over the environment
TESSERA_SPEC=/nonexistent.yaml expect_rc 0 "$TESSERA" check -f $EX
TESSERA_SPEC=/nonexistent.yaml expect_rc 2 "$TESSERA" check
expect_in "$TMP/err" "/nonexistent.yaml"
expect_rc 2 "$TESSERA" check
expect_in "$TMP/err" "TESSERA_SPEC"

# a list: the fleet in one file, the tenants in another
awk 'BEGIN{f=1} /^---/{f++} {print > ("'"$TMP"'/part" (f==1?1:2) ".yaml")}' $EX
"$TESSERA" plan -f "$TMP/part1.yaml" -f "$TMP/part2.yaml" -o json > "$TMP/two-flags.json"
TESSERA_SPEC="$TMP/part1.yaml:$TMP/part2.yaml" "$TESSERA" plan -o json > "$TMP/two-env.json"
check "a ':' list in TESSERA_SPEC plans differently from two -f" \
    cmp -s "$TMP/two-flags.json" "$TMP/two-env.json"
check "the split left one file empty" test -s "$TMP/part2.yaml"
TESSERA_SPEC="$TMP/part2.yaml" expect_rc 2 "$TESSERA" plan
expect_in "$TMP/err" "no Fleet document"
TESSERA_SPEC=/$(printf 'x%.0s' $(seq 1 5000)) expect_rc 2 "$TESSERA" check
expect_in "$TMP/err" "TESSERA_SPEC: a value longer than"

# TESSERA_CATALOG: a model only the extra catalog has
cat > "$TMP/extra.yaml" <<'YAML'
apiVersion: tessera.dev/v1alpha1
kind: GpuModel
metadata: {name: env-test-card}
spec:
  displayName: "Env Test 24GB"
  productNames: ["Env Test"]
  memoryGiB: 22.0
  sms: 72
  architecture: ampere
  mig: false
YAML
expect_rc 2 "$TESSERA" catalog show env-test-card
TESSERA_CATALOG="$TMP/extra.yaml" expect_rc 0 "$TESSERA" catalog show env-test-card
expect_in "$TMP/out" "Env Test 24GB"
TESSERA_CATALOG=/nonexistent-catalog.yaml expect_rc 2 "$TESSERA" catalog list
expect_in "$TMP/err" "/nonexistent-catalog.yaml"

# TESSERA_DB; --db wins
TESSERA_DB="sqlite:$TMP/env.db" expect_rc 0 "$TESSERA" ledger record --tenant t --gpu-uuid GPU-e
check "TESSERA_DB did not name the store ledger record opened" test -s "$TMP/env.db"
TESSERA_DB="sqlite:$TMP/env.db" expect_rc 0 "$TESSERA" ledger verify
expect_in "$TMP/out" "ledger intact: 1 entries"
TESSERA_DB="sqlite:/nonexistent-dir/x.db" expect_rc 0 "$TESSERA" ledger verify --db "sqlite:$TMP/env.db"
# a read-only verb refuses a database that is not there (store_missing.sh)
TESSERA_DB="sqlite:/nonexistent-dir/x.db" expect_rc 2 "$TESSERA" ledger verify
expect_in "$TMP/err" "/nonexistent-dir/x.db: no such database"

# --help names the variable
"$TESSERA" usage --help > "$TMP/help"
expect_in "$TMP/help" '(else $TESSERA_SPEC)'
expect_in "$TMP/help" '(else $TESSERA_DB)'
finish
