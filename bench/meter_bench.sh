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
# TESSERA names the binary (default build/tessera).
set -eu
cd "$(dirname "$0")/.."
TESSERA=${TESSERA:-build/tessera}
W=$(mktemp -d)
PG=$W/pg
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
