#!/bin/bash
# store_pg.sh - the store conformance suites against a real PostgreSQL: starts
# a throwaway cluster (scripts/pg-test-server) on a random loopback port, runs
# tests/test_store_schema, test_store_records and test_store (last: its
# samples stay) with TESSERA_TEST_PG_URL and checks the PostgreSQL cases ran
# and passed; then restarts the server and checks that the data the suites
# left survived and that a new run (new store_open, fresh migrations) works.
# The server is always stopped at the end.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
SUITES="test_store_schema test_store_records test_store"
PG="$TMP/pg"
PORT=$(free_port)
trap 'scripts/pg-test-server stop "$PG" >/dev/null 2>&1; rm -rf "$TMP"' EXIT

if ! URL=$(scripts/pg-test-server start "$PG" "$PORT" 2>"$TMP/start.err"); then
    bad "pg-test-server start failed"; cat "$TMP/start.err"; finish; exit 1
fi
ok

has() { grep -q -- "$1" "$TMP/suite.out"; }
hasnt() { ! grep -q -- "$1" "$TMP/suite.out"; }

# run_suite LABEL: every suite, PostgreSQL cases included and passing
run_suite() {
    local suite
    for suite in $SUITES; do
        TESSERA_TEST_PG_URL=$URL "$(dirname "$TESSERA")/tests/$suite" >"$TMP/suite.out" 2>&1
        rc=$?
        if [ "$rc" -eq 0 ]; then ok; else bad "$1: $suite exited $rc"; grep -E "ERROR|FAIL|LINE" "$TMP/suite.out" | head -20; fi
        # two groups each (SQLite's, or the common one, and PostgreSQL's), nothing skipped
        check "$1: $suite: not 2 passing groups" [ "$(grep -c '^\[  PASSED  \]' "$TMP/suite.out")" -eq 2 ]
        check "$1: $suite: cases skipped" hasnt SKIPPED
        check "$1: $suite: PostgreSQL skipped" hasnt '_postgresql: skipped'
        # every case each group ran passed: the counts cmocka announced, passed
        ran=$(sed -n 's/^\[==========\] Running \([0-9]*\) test(s)\./\1/p' "$TMP/suite.out" | paste -sd' ')
        passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' "$TMP/suite.out" | paste -sd' ')
        check "$1: $suite: cases run ($ran) and passed ($passed) differ" [ -n "$ran" ] && [ "$ran" = "$passed" ]
    done
}

count() { psql "$URL" -AtXqc "SELECT count(*) FROM samples" 2>&1; }

run_suite first
before=$(count)
check "no samples left by the suite: $before" [ "$before" -gt 0 ]

scripts/pg-test-server restart "$PG" 2>"$TMP/restart.err"
rc=$?
check "restart failed: $(cat "$TMP/restart.err")" [ "$rc" -eq 0 ]
after=$(count)
check "samples after restart: $after, before: $before" [ "$after" = "$before" ]
check "schema_version is not 9 (the migrations in src/store/schema.c)" [ "$(psql "$URL" -AtXqc 'SELECT max(version) FROM schema_version')" = 9 ]

run_suite "after restart"
finish
