#!/bin/bash
# meter_bench.sh - metering figures for `make bench` (bench/run), as Markdown:
#   parse   the Prometheus text parser alone (bench/expo_bench.c, built here
#           with cc -O2 from src/meter/expo.c) on a day of 64 GPUs (about
#           200 MB, tests/tools/gen_history.py), side by side with `wc -l` on
#           the same file, both from the page cache (the read floor)
#   ingest  `tessera meter import` of that day into a fresh SQLite file and
#           into a throwaway PostgreSQL (scripts/pg-test-server: fsync off),
#           wall time, samples/s, CPU seconds of tessera and of the
#           PostgreSQL server (its postmaster and backends, from /proc), peak
#           RSS; then `tessera usage` over it. With TESSERA_BASE (another
#           build, e.g. main's) each store is also filled by that binary, in
#           the same run, side by side.
#   python  a plain Python parse of the same file (split each line into
#           name, labels and value), the issue's yardstick
#   512     HOURS512 (default 4) hours of 512 GPUs (gen_history.py --wide
#           448), one file an hour, imported hour after hour into one SQLite
#           file and one PostgreSQL database: each hour's rate as the table
#           grows (wall, and per CPU second of tessera and the server), peak
#           RSS; wc -l and the Python parse of one hour's file beside them
#   tenants 1,000 tenants (bench/meter_tenants.py: HOURS_T, default 2, hours
#           of 512 GPUs, every tenant billed) imported into both stores:
#           January's invoices before (TESSERA_BASE, which integrates the
#           month per invoice: INVOICES_BASE, default 10, timed and scaled
#           to 1,000) and after (the usage aggregate: the first invoice
#           integrates and keeps the month, the next ones read it; and
#           --out-dir, all 1,000 in one run), the sum of the 1,000 invoices
#           against `tessera usage`
# TESSERA names the binary (default build/tessera).
set -eu
cd "$(dirname "$0")/.."
TESSERA=${TESSERA:-build/tessera}
W=$(mktemp -d)
PG=$W/pg
HOURS512=${HOURS512:-4}
HOURS_T=${HOURS_T:-2}
INVOICES_BASE=${INVOICES_BASE:-10}
trap 'scripts/pg-test-server stop "$PG" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT

cc -O2 -std=c17 -D_GNU_SOURCE -Isrc bench/expo_bench.c src/meter/expo.c -lm -o "$W/expo_bench"
python3 tests/tools/gen_history.py --hours 24 --out "$W/day.prom" --spec "$W/spec.yaml" \
    --expect "$W/want.json"
BYTES=$(stat -c %s "$W/day.prom")
SAMPLES=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples"])' "$W/want.json")
MB=$(awk -v b="$BYTES" 'BEGIN { printf "%.1f", b / 1e6 }')
cat "$W/day.prom" >/dev/null # into the page cache

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
best_wc=999999
for _ in 1 2 3; do
    t=$(date +%s%N); wc -l "$W/day.prom" >/dev/null; m=$(ms "$t")
    [ "$m" -lt "$best_wc" ] && best_wc=$m
done
best_parse=999999
for _ in 1 2 3; do
    t=$(date +%s%N); "$W/expo_bench" "$W/day.prom" >"$W/parse.out"; m=$(ms "$t")
    [ "$m" -lt "$best_parse" ] && best_parse=$m
done
read -r _ lines samples errors _ _ <"$W/parse.out"
t=$(date +%s%N)
python3 -c '
import sys
n = 0
for line in open(sys.argv[1], "rb"):
    if line[:1] == b"#" or not line.strip(): continue
    head, _, rest = line.rpartition(b"}")
    name, _, labels = head.partition(b"{")
    fields = rest.split()
    float(fields[0]); n += 1
print(n)' "$W/day.prom" >/dev/null
python_ms=$(ms "$t")

# cpu_ticks: CPU used so far by the PostgreSQL cluster in $PG (clock ticks):
# the postmaster with its reaped children, and its live children
cpu_ticks() {
    local pm t c
    [ -f "$PG/data/postmaster.pid" ] || { echo 0; return; }
    pm=$(head -1 "$PG/data/postmaster.pid")
    t=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pm/stat")
    for c in $(pgrep -P "$pm"); do
        t=$((t + $(awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null || echo 0)))
    done
    echo "$t"
}

# import BIN DB LABEL: time an import of the day into DB, then `tessera usage` over it
import() {
    local p0 p1 secs cpu srv rss
    p0=$(cpu_ticks)
    /usr/bin/time -f '%e %U %S %M' -o "$W/time.out" "$1" meter import -f "$W/spec.yaml" \
        --db "$2" --at 0 "$W/day.prom" >"$W/import.out" 2>"$W/import.err"
    sleep 1 # the import's backend exits: counted once the postmaster has reaped it
    p1=$(cpu_ticks)
    read -r secs u s rss <"$W/time.out"
    cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
    srv=$(awk -v a="$p0" -v b="$p1" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / hz }')
    t=$(date +%s%N)
    "$1" usage -f "$W/spec.yaml" --db "$2" -o json >"$W/usage.json"
    usage_ms=$(ms "$t")
    same=$(python3 -c 'import json,sys; print("yes" if json.load(open(sys.argv[1]))["rows"] == json.load(open(sys.argv[2]))["rows"] else "NO")' "$W/want.json" "$W/usage.json")
    printf '| %s | %.2f | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$3" "$secs" \
        "$(awk -v n="$SAMPLES" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')" "$cpu" "$srv" \
        "$(awk -v n="$SAMPLES" -v c="$cpu" -v d="$srv" 'BEGIN { printf "%.0f", n / (c + d) }')" \
        "$((rss / 1024))" "$(awk -v m="$usage_ms" 'BEGIN { printf "%.2f", m / 1000 }')" "$same" \
        "$(cut -d' ' -f1 /proc/loadavg)"
}

# both BINLABEL DB...: import with the base binary (when given) and this one
both() {
    local label=$1 db=$2 base_db=$3
    [ -n "${TESSERA_BASE:-}" ] && import "$TESSERA_BASE" "$base_db" "$label, base"
    import "$TESSERA" "$db" "$label"
}

echo "## Metering: parse and ingest a day of 64 GPUs ($(nproc) cores, $(date -u +%Y-%m-%d))"
echo
echo "One exposition file: 5,760 scrapes x 64 devices, $lines lines, $samples samples, $MB MB."
echo
echo "| reader | seconds (best of 3) | MB/s | share of wc -l |"
echo "|---|---|---|---|"
awk -v b="$BYTES" -v w="$best_wc" -v p="$best_parse" 'BEGIN {
    printf "| wc -l (read floor) | %.3f | %.0f | 100%% |\n", w / 1000, b / 1e6 / (w / 1000)
    printf "| expo parser alone | %.3f | %.0f | %.0f%% |\n", p / 1000, b / 1e6 / (p / 1000), 100 * w / p }'
awk -v b="$BYTES" -v w="$best_wc" -v p="$python_ms" 'BEGIN {
    printf "| Python split + float, once | %.3f | %.0f | %.0f%% |\n", p / 1000, b / 1e6 / (p / 1000), 100 * w / p }'
echo
echo "$SAMPLES device-scrapes; CPU: tessera's user + system, and the PostgreSQL server's; per CPU s counts both."
echo
echo "| store | import s | samples/s (wall) | tessera CPU s | server CPU s | samples per CPU s | peak RSS MiB | usage s | usage = reference | load (1 min) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
both "SQLite (WAL, synchronous=NORMAL)" "sqlite:$W/day.db" "sqlite:$W/base.db"
if URL=$(scripts/pg-test-server start "$PG" $((10000 + RANDOM % 20000)) 2>"$W/pg.err"); then
    psql "$URL" -qXc "CREATE DATABASE base" >/dev/null
    both "PostgreSQL (throwaway, fsync off)" "$URL" "${URL%/*}/base"
else
    echo "| PostgreSQL | skipped: $(head -1 "$W/pg.err") |"
fi
[ "$errors" -eq 0 ] || echo "(the parser rejected $errors lines)"

# read_speed FILE: "wc_ms python_ms" for FILE (wc -l best of 3, Python once)
read_speed() {
    local best=999999 t m
    for _ in 1 2 3; do
        t=$(date +%s%N); wc -l "$1" >/dev/null; m=$(ms "$t")
        [ "$m" -lt "$best" ] && best=$m
    done
    t=$(date +%s%N)
    python3 -c '
import sys
for line in open(sys.argv[1], "rb"):
    if line[:1] == b"#" or not line.strip(): continue
    head, _, rest = line.rpartition(b"}")
    name, _, labels = head.partition(b"{")
    float(rest.split()[0])' "$1"
    echo "$best $(ms "$t")"
}

# hourly BIN DB LABEL: import the 512-GPU hours one after another into DB
hourly() {
    local h p0 p1 secs u s rss srv n=$((512 * 240)) bin=$1
    shift
    for h in $(seq 0 $((HOURS512 - 1))); do
        p0=$(cpu_ticks)
        /usr/bin/time -f '%e %U %S %M' -o "$W/time.out" "$bin" meter import \
            -f "$W/spec512.yaml" --db "$1" --at 0 "$W/h$h.prom" >/dev/null 2>"$W/import.err"
        sleep 1
        p1=$(cpu_ticks)
        read -r secs u s rss <"$W/time.out"
        srv=$(awk -v a="$p0" -v b="$p1" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / hz }')
        [ "${2%%,*}" = SQLite ] && srv=0
        awk -v l="$2" -v h="$h" -v n="$n" -v w="$secs" -v u="$u" -v s="$s" -v d="$srv" \
            -v r="$rss" -v ld="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
            printf "| %s | %d | %.2f | %.0f | %.2f | %.2f | %.0f | %.0f | %d | %s |\n", l, h + 1, w,
                n / w, u + s, d, n / (u + s), n / (u + s + d), r / 1024, ld }'
    done
}

echo
echo "## Metering at 512 GPUs: ingest hour after hour ($(nproc) cores, $(date -u +%Y-%m-%d))"
echo
for h in $(seq 0 $((HOURS512 - 1))); do
    python3 tests/tools/gen_history.py --hours 1 --wide 448 --start $((1767225600000 + h * 3600000)) \
        --out "$W/h$h.prom" --spec "$W/spec512.yaml" --expect /dev/null
done
read -r wc_ms py_ms <<<"$(read_speed "$W/h0.prom")"
BYTES=$(stat -c %s "$W/h0.prom")
echo "One hour of 512 GPUs: 240 scrapes x 512 devices = 122,880 device-scrapes, $(wc -l <"$W/h0.prom") lines,"
echo "$(awk -v b="$BYTES" 'BEGIN { printf "%.1f", b / 1e6 }') MB a file; $HOURS512 such files, imported one after the other into one database."
echo "wc -l reads one in $(awk -v m="$wc_ms" 'BEGIN { printf "%.3f", m / 1000 }') s ($(awk -v b="$BYTES" -v m="$wc_ms" 'BEGIN { printf "%.0f", 122880 / (m / 1000) }') device-scrapes/s),"
echo "the Python split + float in $(awk -v m="$py_ms" 'BEGIN { printf "%.2f", m / 1000 }') s ($(awk -v m="$py_ms" 'BEGIN { printf "%.0f", 122880 / (m / 1000) }') device-scrapes/s); load $(cut -d' ' -f1 /proc/loadavg)."
echo
echo "| store | hour | import s | samples/s (wall) | tessera CPU s | server CPU s | samples per tessera CPU s | samples per CPU s (both) | peak RSS MiB | load (1 min) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
[ -n "${TESSERA_BASE:-}" ] && hourly "$TESSERA_BASE" "sqlite:$W/h512base.db" "SQLite, base"
hourly "$TESSERA" "sqlite:$W/h512.db" SQLite
if [ -f "$PG/data/postmaster.pid" ]; then
    psql "$URL" -qXc "CREATE DATABASE h512" >/dev/null
    psql "$URL" -qXc "CREATE DATABASE h512base" >/dev/null
    [ -n "${TESSERA_BASE:-}" ] && hourly "$TESSERA_BASE" "${URL%/*}/h512base" "PostgreSQL, base"
    hourly "$TESSERA" "${URL%/*}/h512" PostgreSQL
fi
rm -f "$W"/h*.prom "$W"/h512.db*

# invoices DB BIN N: seconds for N tenants' January invoices, one run each
invoices() {
    local t i
    t=$(date +%s%N)
    for i in $(seq 0 $(($3 - 1))); do
        "$2" invoice $TSPEC --db "$1" --tenant "$(printf 't%04d' "$i")" --period 2026-01 -o json >/dev/null
    done
    awk -v m="$(ms "$t")" 'BEGIN { printf "%.2f", m / 1000 }'
}

# tenants DB LABEL: the 1,000-tenant invoice figures on DB (base first: it
# opens the store before the aggregate's migration)
tenants() {
    local before="-" first next all sum usage t
    "${TESSERA_BASE:-$TESSERA}" meter import $TSPEC --db "$1" --at 0 "$W/t.prom" >/dev/null
    [ -n "${TESSERA_BASE:-}" ] && before=$(invoices "$1" "$TESSERA_BASE" "$INVOICES_BASE")
    first=$(invoices "$1" "$TESSERA" 1)
    next=$(invoices "$1" "$TESSERA" 20)
    rm -rf "$W/out" && mkdir "$W/out"
    t=$(date +%s%N)
    "$TESSERA" invoice $TSPEC --db "$1" --period 2026-01 --out-dir "$W/out" -o json
    all=$(awk -v m="$(ms "$t")" 'BEGIN { printf "%.2f", m / 1000 }')
    sum=$(python3 -c 'import glob, json; print(sum(l["microGpuHours"] for f in glob.glob("'"$W"'/out/*.json") for l in json.load(open(f))["lines"]))')
    usage=$("$TESSERA" usage $TSPEC --db "$1" -o json | python3 -c 'import json, sys; print(sum(r["allocationMicroGpuHours"] for r in json.load(sys.stdin)["rows"]))')
    awk -v l="$2" -v b="$before" -v nb="$INVOICES_BASE" -v f="$first" -v n="$next" -v a="$all" \
        -v same="$([ "$sum" = "$usage" ] && echo yes || echo "NO ($sum, $usage)")" \
        -v ld="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
        pb = b == "-" ? "-" : sprintf("%.2f", b / nb)
        tb = b == "-" ? "-" : sprintf("%.0f", b / nb * 1000)
        printf "| %s | %s | %s | %.2f | %.3f | %.0f | %.2f | %s | %s |\n", l, pb, tb, f, n / 20,
            f + n / 20 * 999, a, same, ld }'
}

echo
echo "## Invoices for 1,000 tenants ($(nproc) cores, $(date -u +%Y-%m-%d))"
echo
mkdir -p "$W/tspec"
python3 bench/meter_tenants.py --tenants 1000 --gpus 512 --hours "$HOURS_T" --out "$W/t.prom" \
    --spec-dir "$W/tspec"
TSPEC="-f $W/tspec/fleet.yaml -f $W/tspec/tenants-0.yaml -f $W/tspec/tenants-1.yaml"
echo "$HOURS_T hours of 512 GPUs in January, $((512 * 240 * HOURS_T)) device-scrapes, each device on another of the"
echo "1,000 tenants every hour. Before: $INVOICES_BASE invoices by TESSERA_BASE, one run each, scaled to 1,000."
echo "After: the first invoice (integrates and keeps the month), the mean of the next 20 (each its own"
echo "run: spec, plan, store, aggregate), 1,000 runs estimated from both, and \`invoice --out-dir\` (one run)."
echo
echo "| store | before: s per invoice | before: 1,000 invoices s | after: first s | after: next, s each | after: 1,000 runs s | --out-dir, 1,000 s | sum of invoices = usage | load (1 min) |"
echo "|---|---|---|---|---|---|---|---|---|"
tenants "sqlite:$W/t.db" SQLite
if [ -f "$PG/data/postmaster.pid" ]; then
    psql "$URL" -qXc "CREATE DATABASE tenants" >/dev/null
    tenants "${URL%/*}/tenants" PostgreSQL
fi
