#!/bin/bash
# labels: slow
# meter_crash.sh - crash safety of `tessera meter import`: a day of 15 s
# scrapes of 64 GPUs in one recorded file (tests/tools/gen_history.py:
# 5,760 scrape times x 64 = 368,640 device-scrapes, whole GPUs and MIG
# instances, three tenants and namespaces of none), imported and killed with
# SIGKILL at a random moment once some but not all of it is stored, then
# imported again in full. Checks, on SQLite and on PostgreSQL: the killed
# import left whole batches only; the second import stored exactly the rest;
# a third stores nothing and says so; every device-scrape is stored once; `tessera usage -o json` equals the
# generator's closed-form reference to the micro-GPU-hour. Under ASan (the
# binary links libasan) the history is 7 hours, not 24, and the test says so:
# import commits every 4 batches of up to 16,384 device-times
# (METER_COMMIT_BATCHES x METER_GATHER_MAX, 65,536) and the rest at its end,
# so a history must be longer than one commit for a kill to land mid-way.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PG="$TMP/pg"
PORT=$(free_port)
trap 'kill -9 $IPID 2>/dev/null; scripts/pg-test-server stop "$PG" >/dev/null 2>&1; rm -rf "$TMP"' EXIT

HOURS=24
if ldd "$TESSERA" 2>/dev/null | grep -q libasan; then
    HOURS=7 # 107,520 device-scrapes: one commit, then the rest
    echo "meter_crash: ASan build: a history of $HOURS hours x 64 GPUs instead of 24"
fi
python3 tests/tools/gen_history.py --hours $HOURS --out "$TMP/history.prom" \
    --spec "$TMP/spec.yaml" >"$TMP/want.json" || { bad "gen_history.py failed"; finish; exit 1; }
TOTAL=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples"])' "$TMP/want.json")
echo "meter_crash: $TOTAL device-scrapes in $(stat -c %s "$TMP/history.prom") bytes"


# crash_and_recover LABEL DB COUNT_CMD...: import, SIGKILL mid-way, import again.
crash_and_recover() {
    label=$1 db=$2; shift 2
    # kill once between 10% and 40% of the samples are stored: the import
    # stores them a commit at a time (65,536 device-scrapes, the ASan
    # build's short history: its first commit), the last ones at the end
    at=$((TOTAL * (10 + RANDOM % 31) / 100))
    "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$db" --at 0 "$TMP/history.prom" \
        >"$TMP/first.out" 2>&1 &
    IPID=$!
    n=0
    while kill -0 $IPID 2>/dev/null; do
        n=$("$@" 2>/dev/null || echo 0)
        [ "${n:-0}" -ge "$at" ] && break
        sleep 0.05
    done
    kill -9 $IPID 2>/dev/null
    wait $IPID 2>/dev/null
    rc=$?
    left=$("$@")
    echo "meter_crash: $label: killed at $left of $TOTAL stored (aimed at $at), exit $rc"
    check "$label: the import ended before the kill (exit $rc)" [ "$rc" -eq 137 ]
    check "$label: nothing stored before the kill" [ "${left:-0}" -gt 0 ]
    check "$label: all stored before the kill" [ "${left:-0}" -lt "$TOTAL" ]
    "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$db" --at 0 "$TMP/history.prom" \
        >"$TMP/second.out" 2>&1
    rc=$?
    check "$label: second import exited $rc: $(tail -3 "$TMP/second.out")" [ "$rc" -eq 0 ]
    # the second import stores exactly what the first did not
    expect_in "$TMP/second.out" "$TOTAL device scrapes, $((TOTAL - left)) new samples, 0 lines rejected"
    # a third import finds everything stored (on PostgreSQL every COPY meets
    # stored samples and the batch goes again skipping them): says so, adds nothing
    "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$db" --at 0 "$TMP/history.prom" \
        >"$TMP/third.out" 2>&1
    rc=$?
    check "$label: third import exited $rc: $(tail -3 "$TMP/third.out")" [ "$rc" -eq 0 ]
    expect_in "$TMP/third.out" "$TOTAL device scrapes, 0 new samples, 0 lines rejected"
    local stored
    stored=$("$@")
    check "$label: rows after both imports: $stored" [ "$stored" -eq "$TOTAL" ]
    "$TESSERA" usage -f "$TMP/spec.yaml" --db "$db" -o json >"$TMP/usage.json" 2>"$TMP/usage.err"
    if python3 - "$TMP/want.json" "$TMP/usage.json" <<'PY'
import json, sys
want = json.load(open(sys.argv[1]))["rows"]
got = json.load(open(sys.argv[2]))["rows"]
if got != want:
    for w, g in zip(want, got):
        if w != g:
            print("want", w, "\ngot ", g)
    sys.exit(1)
PY
    then ok; else bad "$label: usage differs from the generator's reference"; fi
}

sqlite_count() { sqlite3 "$TMP/crash.db" "SELECT count(*) FROM samples"; }
crash_and_recover sqlite "sqlite:$TMP/crash.db" sqlite_count

if ! URL=$(scripts/pg-test-server start "$PG" "$PORT" 2>"$TMP/start.err"); then
    bad "pg-test-server start failed"; cat "$TMP/start.err"; finish; exit 1
fi
pg_count() { psql "$URL" -AtXqc "SELECT count(*) FROM samples"; }
crash_and_recover postgresql "$URL" pg_count
finish
