#!/bin/bash
# meter_scrape_reload.sh - `tessera meter scrape` reloads its spec between
# rounds: a running scrape of a recorded H100 page (served over loopback)
# whose spec gives the namespace to tenant alpha; the spec is rewritten to
# give it to beta: later rounds are charged to beta, earlier ones stay alpha.
# A broken spec (and SIGHUP while it is broken) keeps beta, and each failure
# is logged with the file:line:col and counted on /metrics.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
FIX=$TESSERA_SRC/tests/fixtures/dcgm
H100=nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom
P_HTTP=$(free_port) P_STAT=$(free_port)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$TMP"' EXIT

tenant_spec() { sed "s/name: lab}/name: $1}/" "$TESSERA_FIXTURES/meter/lab.yaml"; }
tenant_spec alpha > "$TMP/spec.yaml"
python3 -m http.server -b 127.0.0.1 -d "$FIX" "$P_HTTP" >/dev/null 2>&1 &
PIDS+=($!)
q() { sqlite3 "$TMP/r.db" "$1" 2>/dev/null; }
# wait_for SECONDS CMD...: until CMD succeeds; 1 when it never did
wait_for() {
    local n=$(($1 * 10)); shift
    for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.1; done
    return 1
}
has_rows() {
    local n; n=$(q "SELECT count(*) FROM samples WHERE tenant = '$1'")
    [ "${n:-0}" -ge "$2" ]
}
metric() { curl -s "http://127.0.0.1:$P_STAT/metrics" | grep -qxF "$1"; }
wait_for 10 curl -sf -o /dev/null "http://127.0.0.1:$P_HTTP/$H100" || bad "exporter not up"

"$TESSERA" meter scrape -f "$TMP/spec.yaml" --db "sqlite:$TMP/r.db" --interval 1s \
    --target "http://127.0.0.1:$P_HTTP/$H100" --listen "127.0.0.1:$P_STAT" \
    >"$TMP/run.out" 2>"$TMP/run.err" &
RUN=$!
PIDS+=($RUN)
check "no alpha samples within 20 s" wait_for 20 has_rows alpha 2

# rewritten in place (same inode): the next rounds belong to beta
tenant_spec beta > "$TMP/spec.new" && cat "$TMP/spec.new" > "$TMP/spec.yaml"
check "no beta samples within 20 s" wait_for 20 has_rows beta 4
check "no reload logged" grep -qE 'level=info msg=reload result=ok reason=changed$' "$TMP/run.err"
check "reload ok not counted" wait_for 5 metric 'tessera_meter_reloads_total{result="ok"} 1'
# every alpha sample is older than every beta one; nothing else was charged
check "alpha and beta samples interleave" \
    [ "$(q "SELECT max(ts_ms) FROM samples WHERE tenant = 'alpha'")" \
      -lt "$(q "SELECT min(ts_ms) FROM samples WHERE tenant = 'beta'")" ]
check "a tenant besides alpha, beta" \
    [ "$(q "SELECT count(*) FROM samples WHERE tenant NOT IN ('alpha','beta','unattributed')")" -eq 0 ]

# a broken spec (contract: column 13) replaced whole (new inode): beta stays, the failure is logged and counted
LINE=$(grep -n 'contract:' "$TMP/spec.new" | cut -d: -f1)
sed 's/contract: shared-trusted/contract: nosuch/' "$TMP/spec.new" > "$TMP/spec.bad"
mv "$TMP/spec.bad" "$TMP/spec.yaml"
check "broken spec: failure not counted" \
    wait_for 10 metric 'tessera_meter_reloads_total{result="failed"} 1'
check "broken spec: failure not logged with file:line:col" grep -qE \
    "level=error msg=reload result=failed reason=changed error=\"?$TMP/spec.yaml:$LINE:13: Tenant/beta.spec.contract: " \
    "$TMP/run.err"
BEFORE=$(q "SELECT count(*) FROM samples WHERE tenant = 'beta'")
check "no beta samples after the broken spec" wait_for 20 has_rows beta $((BEFORE + 4))
kill -HUP "$RUN"
check "SIGHUP on a broken spec: failure not counted" \
    wait_for 10 metric 'tessera_meter_reloads_total{result="failed"} 2'
check "SIGHUP failure not logged" grep -qE 'msg=reload result=failed reason=signal' "$TMP/run.err"
check "ok reloads changed by failures" metric 'tessera_meter_reloads_total{result="ok"} 1'
kill -TERM "$RUN"
wait "$RUN"; RC=$?
check "scrape exited $RC, expected 0" [ "$RC" -eq 0 ]
check "charged to other than beta after the failures" \
    [ "$(q "SELECT count(*) FROM samples WHERE tenant = 'alpha' AND ts_ms > \
        (SELECT min(ts_ms) FROM samples WHERE tenant = 'beta')")" -eq 0 ]
check "the run lost or failed scrapes" grep -qE 'failed=0 rejected=0 new_samples=[0-9]+ lost=0' \
    "$TMP/run.out"
finish
