#!/bin/bash
# meter_scrape_pg.sh - a running `tessera meter scrape` into PostgreSQL
# survives the database going away: a real restart of a throwaway cluster
# (scripts/pg-test-server restart) and a longer outage (the database refuses
# connections for 2.5 s and the scraper's connection is cut). The scraper
# keeps scraping; what the store could not take waits and is stored later.
# Checks: exit 0 on SIGTERM, nothing lost, rows = rounds x devices (each
# device-scrape once), the outage seen in the log as store-wait events each
# followed by a stored-late one.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PG="$TMP/pg"
PORT=$(free_port) HPORT=$(free_port)
FIX=tests/fixtures/dcgm
H100=nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom   # 3 devices
trap 'kill $SPID $HPID 2>/dev/null; scripts/pg-test-server stop "$PG" >/dev/null 2>&1; rm -rf "$TMP"' EXIT

if ! URL=$(scripts/pg-test-server start "$PG" "$PORT" 2>"$TMP/start.err"); then
    bad "pg-test-server start failed"; cat "$TMP/start.err"; finish; exit 1
fi
(cd $FIX && exec python3 -m http.server "$HPORT" --bind 127.0.0.1 >/dev/null 2>&1) &
HPID=$!
curl -s -o /dev/null --retry 30 --retry-connrefused --retry-delay 0 "http://127.0.0.1:$HPORT/$H100" \
    || { bad "http server did not start"; finish; exit 1; }
cp "$TESSERA_FIXTURES/meter/lab.yaml" "$TMP/spec.yaml"

rows() { psql "$URL" -AtXqc "SELECT count(*) FROM samples" 2>/dev/null || echo -1; }
# wait_rows N: until at least N rows are stored (10 s at most)
wait_rows() {
    for _ in $(seq 100); do [ "$(rows)" -ge "$1" ] && return 0; sleep 0.1; done
    return 1
}

"$TESSERA" meter scrape -f "$TMP/spec.yaml" --db "$URL" --interval 300ms --timeout 2s \
    --target "http://127.0.0.1:$HPORT/$H100" >"$TMP/out" 2>"$TMP/err" &
SPID=$!
check "no rows before the restart" wait_rows 6

# 1. a real restart (fast shutdown: the scraper's connection dies)
check "restart failed" scripts/pg-test-server restart "$PG"
before=$(rows)
check "no new rows after the restart (had $before)" wait_rows $((before + 6))

# 2. an outage longer than several rounds
psql "${URL%/postgres}/template1" -AtXq >/dev/null 2>"$TMP/psql.err" <<'SQL'
ALTER DATABASE postgres ALLOW_CONNECTIONS false;
SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'postgres';
SQL
check "could not cut the database off: $(cat "$TMP/psql.err")" [ ! -s "$TMP/psql.err" ]
sleep 2.5
psql "${URL%/postgres}/template1" -AtXq -c "ALTER DATABASE postgres ALLOW_CONNECTIONS true" >/dev/null
before=$(rows)
check "no new rows after the outage (had $before)" wait_rows $((before + 6))

kill -TERM $SPID
wait $SPID
rc=$?
check "scraper exited $rc: $(tail -3 "$TMP/err")" [ "$rc" -eq 0 ]
rounds=$(sed -n 's/^rounds=\([0-9]*\) .*/\1/p' "$TMP/out")
expect_in "$TMP/out" "failed=0 rejected=0 new_samples=$((rounds * 3)) lost=0"
check "rows $(rows) for $rounds rounds of 3 devices" [ "$(rows)" -eq $((rounds * 3)) ]
check "a device-scrape stored twice" [ "$(psql "$URL" -AtXqc \
    'SELECT count(*) FROM (SELECT DISTINCT device, ts_ms FROM samples) d')" -eq $((rounds * 3)) ]
waits=$(grep -c 'msg=store-wait' "$TMP/err")
late=$(grep -c 'msg=stored-late' "$TMP/err")
echo "meter_scrape_pg: $rounds rounds, $waits scrapes waited for the store, $late stored late"
check "the outage was not seen (no store-wait event)" [ "$waits" -ge 1 ]
check "store-wait $waits, stored-late $late" [ "$waits" -eq "$late" ]
expect_in "$TMP/err" 'msg=store-wait'
check "store-wait without the database's reason" grep -q 'msg=store-wait.*error="postgresql: ' "$TMP/err"
finish
