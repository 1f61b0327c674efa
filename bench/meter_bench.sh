#!/bin/bash
# meter_bench.sh - metering figures for `make bench` (bench/run), as Markdown:
#   parse   the Prometheus text parser alone (bench/expo_bench.c, built here
#           with cc -O2 from src/meter/expo.c) on a day of 64 GPUs (about
#           200 MB, tests/tools/gen_history.py), side by side with `wc -l` on
#           the same file, both from the page cache (the read floor)
#   ingest  `tessera meter import` of that day into a fresh SQLite file and
#           into a throwaway PostgreSQL (scripts/pg-test-server: fsync off),
#           wall time, samples/s and peak RSS; then `tessera usage` over it
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

# import DB LABEL: time an import of the day into DB, then `tessera usage` over it
import() {
    /usr/bin/time -v "$TESSERA" meter import -f "$W/spec.yaml" --db "$1" --at 0 "$W/day.prom" \
        >"$W/import.out" 2>"$W/import.err"
    secs=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$W/import.err" \
        | awk -F: '{ print $(NF-1) * 60 + $NF }')
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$W/import.err")
    t=$(date +%s%N)
    "$TESSERA" usage -f "$W/spec.yaml" --db "$1" -o json >"$W/usage.json"
    usage_ms=$(ms "$t")
    same=$(python3 -c 'import json,sys; print("yes" if json.load(open(sys.argv[1]))["rows"] == json.load(open(sys.argv[2]))["rows"] else "NO")' "$W/want.json" "$W/usage.json")
    printf '| %s | %s | %.2f | %s | %s | %s | %s |\n' "$2" "$SAMPLES" "$secs" \
        "$(awk -v n="$SAMPLES" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')" \
        "$((rss / 1024))" "$(awk -v m="$usage_ms" 'BEGIN { printf "%.2f", m / 1000 }')" "$same"
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
echo
echo "| store | device-scrapes | import s | samples/s | peak RSS MiB | usage s | usage = reference |"
echo "|---|---|---|---|---|---|---|"
import "sqlite:$W/day.db" "SQLite (WAL, synchronous=NORMAL)"
if URL=$(scripts/pg-test-server start "$PG" $((10000 + RANDOM % 20000)) 2>"$W/pg.err"); then
    import "$URL" "PostgreSQL (throwaway, fsync off)"
else
    echo "| PostgreSQL | skipped: $(head -1 "$W/pg.err") |"
fi
[ "$errors" -eq 0 ] || echo "(the parser rejected $errors lines)"
