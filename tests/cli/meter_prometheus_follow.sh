#!/bin/bash
# labels: slow
# meter_prometheus_follow.sh - `tessera meter prometheus --follow` against the
# real Prometheus (Debian's): recorded dcgm-exporter pages (tests/fixtures/dcgm)
# stamped with four scrape times 1 s apart, about a minute ago, are scraped by
# Prometheus every 500 ms; --follow from the first reads them in windows of 60
# steps (the first [T0, T0 + 59.999 s]) and on, and stops on SIGTERM (exit 0,
# a summary line). It stores the four pages' samples and nothing more (no
# point repeated at later steps) and the usage over the four scrapes equals
# `meter import` of the same pages to the micro-GPU-hour. Run again without
# --from it resumes at the millisecond after the store's newest sample (the
# fourth page's). Against a Prometheus that is down (run while this one
# starts), windows fail and are retried after 1 s, 2 s, ... (the log says so),
# and SIGTERM ends it with exit 1. A sample stored from 2100 is warned and
# not waited for. Bad flags: exit 2. Every wait is on a condition (a log
# line, a page count) with a generous deadline, never a sleep.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
FIX=tests/fixtures/dcgm
PAGES=($FIX/nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom
       $FIX/nvidia-dcgm-exporter-issue68-a30-mig-2g12gb.prom)
SERVER= PROM= FOLLOW=
trap 'kill $SERVER $PROM $FOLLOW 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
need_prometheus

cp tests/fixtures/meter/lab-isolated.yaml "$TMP/spec.yaml"

T0=$(( $(date +%s) - 60 ))
for k in 0 1 2 3; do
    awk -v ts=$(( (T0 + k) * 1000 )) -v half=$(( k == 2 )) '
        /^#/ || NF == 0 { next }
        { v = $NF; if (half && $0 ~ /^DCGM_FI_(PROF_GR_ENGINE_ACTIVE|DEV_GPU_UTIL)\{/) v = v / 2
          sub(/ [^ ]+$/, ""); print $0 " " v " " ts }' "${PAGES[@]}" > "$TMP/page$k.prom"
done
expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db sqlite:$TMP/direct.db --at $T0 \
    "$TMP"/page{0,1,2,3}.prom
DIRECT_SAMPLES=$(awk '{s += $2} END {print s}' "$TMP/out")
check "the pages hold device scrapes: $DIRECT_SAMPLES" test "$DIRECT_SAMPLES" -gt 8

# bad flags first (no Prometheus needed)
F=("$TESSERA" meter prometheus -f "$TMP/spec.yaml" --db sqlite:$TMP/f.db --interval 1s)
expect_rc 2 "${F[@]}" --url http://127.0.0.1:1 --follow --to $T0
expect_in "$TMP/err" "or --follow without --to"
expect_rc 2 "${F[@]}" --url http://127.0.0.1:1 --follow --delay -5s
expect_in "$TMP/err" "bad value '-5s' for --delay"

# follow_until LOG PATTERN PID: wait (60 s at most) for PATTERN in LOG, then
# SIGTERM PID; its exit status in LOG.rc
follow_until() {
    local deadline=$((SECONDS + 60))
    until grep -q -- "$2" "$1" 2>/dev/null || [ $SECONDS -ge $deadline ]; do sleep 0.2; done
    kill -TERM $3
    wait $3
    echo $? > "$1.rc"
}
utc() { date -u -d @$1 +%Y-%m-%dT%H:%M:%SZ; }

# Prometheus down: failed windows, retried after 1 s then 2 s (run while the
# real one starts)
DEAD=$(dead_port)
"${F[@]}" --url http://127.0.0.1:$DEAD --follow --from $T0 --delay 1s \
    >"$TMP/dead.out" 2>"$TMP/dead.log" &
DEADF=$!
FOLLOW=$DEADF

PORT=$(free_port)
tests/tools/page_server.py $PORT pages "$TMP"/page{0,1,2,3}.prom &
SERVER=$!
prometheus_start "- {job_name: dcgm, scrape_interval: 500ms, scrape_timeout: 500ms,
   static_configs: [{targets: ['127.0.0.1:$PORT']}]}"
pages_scraped $PORT 5

follow_until "$TMP/dead.log" "retry_in_ms=2000" $DEADF
check "down: exit $(cat "$TMP/dead.log.rc"), want 1" test "$(cat "$TMP/dead.log.rc")" = 1
expect_in "$TMP/dead.log" "level=error msg=window-failed"
expect_in "$TMP/dead.log" "retry_in_ms=1000"
expect_in "$TMP/dead.log" "retry_in_ms=2000"
expect_in "$TMP/dead.out" "failed="

F=("$TESSERA" meter prometheus -f "$TMP/spec.yaml" --db sqlite:$TMP/prom.db --interval 1s
   --url $PROM_URL --delay 2s)
"${F[@]}" --follow --from $T0 >"$TMP/one.out" 2>"$TMP/one.log" &
FOLLOW=$!
# the second window has begun: the four scrapes were in the first
follow_until "$TMP/one.log" "msg=window from=$(utc $((T0 + 60))) " $FOLLOW
check "follow: exit $(cat "$TMP/one.log.rc"), want 0: $(tail -3 "$TMP/one.log")" \
    test "$(cat "$TMP/one.log.rc")" = 0
expect_in "$TMP/one.log" "msg=window from=$(utc $T0) to=$(utc $((T0 + 59)) | sed 's/Z$/.999Z/') devices=$DIRECT_SAMPLES new_samples=$DIRECT_SAMPLES"
expect_in "$TMP/one.out" "failed=0"
expect_in "$TMP/one.out" "new_samples=$DIRECT_SAMPLES "
for db in direct prom; do
    expect_rc 0 "$TESSERA" usage -f "$TMP/spec.yaml" --db sqlite:$TMP/$db.db --interval 1s \
        --from $T0 --to $((T0 + 3)) -o json
    cp "$TMP/out" "$TMP/usage-$db.json"
done
/usr/bin/python3 - "$TMP/usage-direct.json" "$TMP/usage-prom.json" <<'PY' && ok || bad "usage differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a == b, (a, b)
assert a["rows"] and any(r["usageMicroGpuHours"] > 0 for r in a["rows"]), a
PY

# again without --from: it starts at the ms after the newest sample stored,
# the fourth page's
newest=$(sqlite3 "$TMP/prom.db" "SELECT max(ts_ms) FROM samples")
check "the newest sample stored: $newest, want the fourth page's $(((T0 + 3) * 1000))" \
    test "$newest" = $(((T0 + 3) * 1000))
want=$(utc $((T0 + 3)) | sed 's/Z$/.001Z/')
"${F[@]}" --follow >"$TMP/two.out" 2>"$TMP/two.log" &
FOLLOW=$!
follow_until "$TMP/two.log" "msg=window" $FOLLOW
check "resumed: exit $(cat "$TMP/two.log.rc")" test "$(cat "$TMP/two.log.rc")" = 0
first=$(sed -n 's/.*msg=window from=\([^ ]*\).*/\1/p' "$TMP/two.log" | head -1)
check "resumed at $first, want $want (the ms after the fourth page)" test "$first" = "$want"
expect_in "$TMP/two.out" "new_samples=0 "

# a stored sample from the future (2100): follow warns and reads now, never waits for it
sqlite3 "$TMP/prom.db" "INSERT INTO readings (device, ts_ms, attribution, share_ppm, util_ppm)
    SELECT device, 4102444800000, attribution, share_ppm, util_ppm FROM readings LIMIT 1" ||
    bad "could not store a sample from 2100"
"${F[@]}" --follow >"$TMP/three.out" 2>"$TMP/three.log" &
FOLLOW=$!
follow_until "$TMP/three.log" "msg=window" $FOLLOW
FOLLOW=
expect_in "$TMP/three.log" "msg=store-newest-sample-ahead-of-now newest_sample=2100-01-01T00:00:00Z"
check "after a future sample: no window read: $(tail -2 "$TMP/three.log")" \
    grep -q "msg=window from=$(date -u +%Y-%m-%d)" "$TMP/three.log"
finish
