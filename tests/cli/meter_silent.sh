#!/bin/bash
# labels: slow
# meter_silent.sh - what metering used to do silently is now an explicit
# choice, warned in the import summary (issue 32), on SQLite and PostgreSQL,
# from the real H100 MIG scrape (tests/fixtures/dcgm, issue 512: GI 7 and 9
# lab's pods, GI 8 without pods):
# - a scrape time outside the window around now (--max-age, --max-ahead) is
#   refused with its line: a timestamp in 2099, one in seconds (January
#   1970); a wider window takes them;
# - a ledger entry of another profile than the scrape's (the GPU instance id
#   reused after a repartition, the new entry not recorded yet) is not
#   applied: GI 8, held by lab as a 1g.10gb, scraped as a 1g.20gb for 10
#   minutes, is billed from the plan (unattributed), not to lab;
# - a conflicting duplicate (device, time) keeps the first value, in a file
#   as across files, and is counted;
# - meter prometheus --follow records a custody violation once, as one range
#   read does, not once per window: the real Prometheus (Debian's) scrapes
#   six pages of the recorded scrape stamped a minute apart (the last five
#   minutes and more), whose pods belong to a tenant the plan does not give
#   the card; --follow reads them in windows of 60 steps (each window has
#   the pods) and records as many violations as a range read over the same
#   steps: the instances with pods in the pages (GI 7 and 9, counted here);
# - meter scrape counts what it stored but could not bill as read on its
#   /metrics: tessera_meter_warnings_total{kind="unreadable_utilisation"}
#   for a page whose every value is NaN (3 per round).
# Expected figures worked out here from the scrape times and shares.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PG="$TMP/pg"
PORT=$(free_port)
SERVER= PROM= FOLLOW= PAGES= SCRAPER=
trap 'kill $SERVER $PROM $FOLLOW $PAGES $SCRAPER 2>/dev/null; wait 2>/dev/null; scripts/pg-test-server stop "$PG" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
need_prometheus
F=tests/fixtures/dcgm/nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom
GPU=GPU-58e8f5ea-13cc-013a-d88f-2bcf5ae8bc77
NOW=$(date +%s)
T0=$(( (NOW - 3600) / 15 * 15 )) # an hour ago, on a 15 s step
cp "$TESSERA_FIXTURES/meter/lab.yaml" "$TMP/spec.yaml"

python3 - "$F" "$TMP" "$T0" <<'PY'
import re, sys
src, d, t0 = sys.argv[1], sys.argv[2], int(sys.argv[3]) * 1000
lines = [l.rstrip("\n") for l in open(src) if l.startswith("DCGM_")]
head = lambda l: re.match(r'(\S+\{.*\}) \S+$', l).group(1)
gi = lambda l: re.search(r'GPU_I_ID="(\d+)"', l).group(1)
# the window: one scrape now-ish, one in 2099, one stamped in seconds
w = ["%s 0.5 %d" % (head(l), t0) for l in lines]
w.append("%s 0.5 %d" % (head(lines[0]), 4070908800000))  # 2099-01-01
w.append("%s 0.5 %d" % (head(lines[1]), t0 // 1000))     # seconds: 1970-01-21
open(d + "/window.prom", "w").write("\n".join(w) + "\n")
# the repartition: GI 8 a 1g.20gb for 10 minutes, 41 scrapes
r = []
for k in range(41):
    for l in lines:
        h = head(l).replace('GPU_I_PROFILE="1g.10gb"', 'GPU_I_PROFILE="1g.20gb"') if gi(l) == "8" else head(l)
        r.append("%s 0.5 %d" % (h, t0 + 600000 + 15000 * k))
open(d + "/repartition.prom", "w").write("\n".join(r) + "\n")
num = 40 * 15000  # ms of the 10 minutes
uh = lambda n: (n + 1800000) // 3600000
with open(d + "/want.repartition", "w") as f:
    print("lab 1g.10gb", uh(2 * num * 125000), file=f)        # GI 7 and 9, 1/8 each
    print("unattributed 1g.20gb", uh(num * 250000), file=f)   # GI 8: 2 of 8 memory slices
# duplicates: each scrape of GI 7 at 0.25, then again at 0.75 in the same file
dup = []
for k in range(41):
    for l in lines:
        dup.append("%s 0.25 %d" % (head(l), t0 + 1800000 + 15000 * k))
    dup.append("%s 0.75 %d" % (head(lines[0]), t0 + 1800000 + 15000 * k))
open(d + "/dup.prom", "w").write("\n".join(dup) + "\n")
# lab's three instances at 0.25 (GI 7's first value; GI 8 a 1g.10gb again, lab's
# by the ledger as its profile agrees)
with open(d + "/want.dup", "w") as f:
    print("lab", uh(3 * 40 * 15000 * 125000 // 4), file=f)
PY

# the real Prometheus: six pages of the scrape, stamped a minute apart from
# FT0 (about seven minutes ago) on, in the order Prometheus scrapes them, each
# read once (then empty pages); a spec where their pods' namespace is another
# tenant's than lab's, the card lab's by the plan
FT0=$(( $(date +%s) - 420 ))
for k in 0 1 2 3 4 5; do
    awk -v ts=$(( (FT0 + 60 * k) * 1000 )) '/^DCGM_/ { sub(/ [^ ]+$/, ""); print $0 " 0.5 " ts }' \
        "$F" >"$TMP/follow$k.prom"
done
# the violations a run must record: the instances with a pod in the namespace
# the spec gives the other tenant
WANT=$(grep -h 'namespace="model-playground-stg"' "$TMP"/follow?.prom |
    sed -E 's/.*UUID="([^"]*)".*GPU_I_ID="([^"]*)".*/\1 \2/' | sort -u | wc -l)
check "the pages put $WANT instances of the card in the other tenant's pods, want 2 (GI 7, 9)" \
    test "$WANT" = 2
XPORT=$(free_port)
tests/tools/page_server.py $XPORT pages "$TMP"/follow{0,1,2,3,4,5}.prom &
SERVER=$!
prometheus_start "- {job_name: dcgm, scrape_interval: 250ms, scrape_timeout: 250ms,
   static_configs: [{targets: ['127.0.0.1:$XPORT']}]}"
sed 's/namespaces: \[model-playground-stg\]/namespaces: [lab-ns]/' \
    "$TESSERA_FIXTURES/meter/lab-isolated.yaml" >"$TMP/intruder.yaml"
printf -- '---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: other}\nspec:\n  contract: isolated\n  namespaces: [model-playground-stg]\n' >>"$TMP/intruder.yaml"

observed() { # DB: the ledger's observed entries
    "$TESSERA" ledger export --db "$1" -o json | python3 -c '
import json, sys
print(sum(e["source"] == "observed" for e in json.load(sys.stdin)["entries"]))'
}
follow() { # DB LABEL RANGE-DB: five windows of 60 steps and more, then SIGTERM
    "$TESSERA" meter prometheus -f "$TMP/intruder.yaml" --db "$1" --url $PROM_URL \
        --interval 1s --delay 1s --follow --from "$FT0" >"$TMP/$2.follow.out" 2>"$TMP/$2.follow.log" &
    FOLLOW=$!
    local deadline=$((SECONDS + 30)) last=0 windows=0
    until [ "$windows" -ge 5 ] && [ "$last" -ge $((FT0 + 300)) ] || [ $SECONDS -ge $deadline ]; do
        sleep 0.2
        windows=$(grep -c 'msg=window ' "$TMP/$2.follow.log")
        last=$(sed -n 's/.*msg=window .*to=\([^ ]*\).*/\1/p' "$TMP/$2.follow.log" | tail -1)
        last=$(date -u -d "${last:-@0}" +%s)
    done
    kill -TERM $FOLLOW; wait $FOLLOW; FOLLOW=
    windows=$(grep -c 'msg=window ' "$TMP/$2.follow.log")
    last=$(sed -n 's/.*msg=window .*to=\([^ ]*\).*/\1/p' "$TMP/$2.follow.log" | tail -1)
    last=$(date -u -d "${last:-@0}" +%s)
    check "$2: follow read $windows windows to $((last - FT0)) s after the first page, want 5 or more past the last ($(tail -2 "$TMP/$2.follow.log"))" \
        [ "$windows" -ge 5 -a "$last" -ge $((FT0 + 300)) ]
    local n
    n=$(observed "$1")
    check "$2: follow recorded $n custody violations in $windows windows, want $WANT (as a range read)" [ "$n" = "$WANT" ]
    # one range read over the steps the follow read
    expect_rc 0 "$TESSERA" meter prometheus -f "$TMP/intruder.yaml" --db "$3" \
        --url $PROM_URL --interval 1s --from "$FT0" --to "$last"
    n=$(observed "$3")
    check "$2: a range read over the same $((last - FT0 + 1)) steps recorded $n custody violations, want $WANT" [ "$n" = "$WANT" ]
}

rows() { # DB FROM TO: "tenant profile alloc" rows
    "$TESSERA" usage -f "$TMP/spec.yaml" --db "$1" --from "$2" --to "$3" -o json | python3 -c '
import json, sys
for r in sorted(json.load(sys.stdin)["rows"], key=lambda r: (r["tenant"], r["profile"])):
    print(r["tenant"], r["profile"], r["allocationMicroGpuHours"])'
}
used() { # DB FROM TO TENANT: its usage-basis micro-GPU-hours
    "$TESSERA" usage -f "$TMP/spec.yaml" --db "$1" --from "$2" --to "$3" -o json | python3 -c '
import json, sys
print(sys.argv[1], sum(r["usageMicroGpuHours"] for r in json.load(sys.stdin)["rows"] if r["tenant"] == sys.argv[1]))' "$4"
}

backend() { # DB LABEL
    local db=$1
    # the window
    expect_rc 1 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$db" --at "$T0" "$TMP/window.prom"
    expect_in "$TMP/out" "3 device scrapes, 3 new samples, 2 lines rejected, 0 custody violations, 2 lines outside the time window (refused)"
    expect_in "$TMP/err" "window.prom:4:1: scrape time 4070908800000 ms (2099-01-01T00:00:00Z) is later than now + --max-ahead: refused"
    expect_in "$TMP/err" "window.prom:5:1: scrape time $T0 ms"
    expect_in "$TMP/err" "is older than --max-age: refused"
    expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$db" --at "$T0" --max-age 36500d \
        --max-ahead 30000d "$TMP/window.prom"
    expect_in "$TMP/out" "5 device scrapes, 2 new samples, 0 lines rejected"

    # the repartition: lab held GI 8 as a 1g.10gb; the scrape shows a 1g.20gb
    expect_rc 0 "$TESSERA" ledger record --db "$db" --tenant lab --gpu-uuid $GPU --gi-id 8 \
        --profile 1g.10gb --node gsrh100-074 --at $((T0 - 86400))
    expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$db" --at "$T0" "$TMP/repartition.prom"
    expect_in "$TMP/out" "123 device scrapes, 123 new samples, 0 lines rejected, 0 custody violations, 41 ledger entries of another profile (not applied)"
    expect_in "$TMP/err" "device $GPU/8: the scrape shows a 1g.20gb, the ledger's latest entry (tenant 'lab'"
    rows "$db" $((T0 + 600)) $((T0 + 1200)) >"$TMP/$2.repartition"
    check "$2: the repartition $(paste -sd' ' "$TMP/$2.repartition"), by the rule $(paste -sd' ' "$TMP/want.repartition")" \
        cmp -s "$TMP/$2.repartition" "$TMP/want.repartition"

    # duplicates: the first value kept in the file, and across files
    expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$db" --at "$T0" "$TMP/dup.prom"
    expect_in "$TMP/out" "123 device scrapes, 123 new samples, 0 lines rejected, 0 custody violations, 41 conflicting duplicates (the first kept)"
    sed 's/ 0.25 / 0.5 /' "$TMP/dup.prom" >"$TMP/dup2.prom"
    expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$db" --at "$T0" "$TMP/dup2.prom"
    expect_in "$TMP/out" "123 device scrapes, 0 new samples, 0 lines rejected, 0 custody violations, 41 conflicting duplicates (the first kept), 123 already stored (the first kept)"
    used "$db" $((T0 + 1800)) $((T0 + 2400)) lab >"$TMP/$2.dup"
    check "$2: the duplicates $(cat "$TMP/$2.dup"), by the rule $(cat "$TMP/want.dup")" \
        cmp -s "$TMP/$2.dup" "$TMP/want.dup"
}
# meter scrape's warnings on its /metrics: a page of NaN
mkdir -p "$TMP/www"
sed -E '/^DCGM_/s/ [^ ]+$/ NaN/' "$F" >"$TMP/www/nan.prom"
HPORT=$(free_port) SPORT=$(free_port)
(cd "$TMP/www" && exec python3 -m http.server "$HPORT" --bind 127.0.0.1 >/dev/null 2>&1) &
PAGES=$!
curl -s -o /dev/null --retry 30 --retry-connrefused --retry-delay 0 "http://127.0.0.1:$HPORT/nan.prom"
"$TESSERA" meter scrape -f "$TMP/spec.yaml" --db "sqlite:$TMP/scrape.db" --interval 300ms \
    --target "http://127.0.0.1:$HPORT/nan.prom" --listen "127.0.0.1:$SPORT" >/dev/null 2>&1 &
SCRAPER=$!
warned() {
    curl -s "http://127.0.0.1:$SPORT/metrics" |
        awk '$1 == "tessera_meter_warnings_total{kind=\"unreadable_utilisation\"}" {print $2}'
}
for _ in $(seq 100); do [ "$(warned)" -ge 6 ] 2>/dev/null && break; sleep 0.1; done
n=$(warned)
kill -TERM $SCRAPER; wait $SCRAPER; SCRAPER=
stored=$(sqlite3 "$TMP/scrape.db" "SELECT count(*) FROM samples WHERE util_ppm = -1")
check "scrape: $n unreadable utilisation on /metrics (want 6 or more), $stored samples stored unknown" \
    test "${n:-0}" -ge 6 -a "$stored" -ge "${n:-0}" -a $((stored % 3)) -eq 0

backend "sqlite:$TMP/s.db" sqlite
# the six pages and an empty one after them scraped (the sixth stored)
pages_scraped $XPORT 7
follow "sqlite:$TMP/f.db" sqlite "sqlite:$TMP/r.db"
if ! URL=$(scripts/pg-test-server start "$PG" "$PORT" 2>"$TMP/start.err"); then
    bad "pg-test-server start failed"; cat "$TMP/start.err"; finish; exit 1
fi
backend "$URL" postgresql
psql "$URL" -AtXqc "CREATE DATABASE follow" >/dev/null && psql "$URL" -AtXqc "CREATE DATABASE rangeread" >/dev/null
follow "${URL%/postgres}/follow" postgresql "${URL%/postgres}/rangeread"
finish
