#!/bin/bash
# meter_bad.sh - hostile and odd dcgm-exporter bodies, through `tessera meter
# import` and the live scraper: truncated bodies, binary garbage, a body of
# about 100 MB generated on the fly and streamed (peak RSS measured with
# /usr/bin/time -v must stay far below the body), label values with escaped
# quotes and newlines (and a raw newline that breaks a line), unknown metric
# names, a namespace of no tenant (kept as "unattributed"), and clocks going
# backwards (an earlier scrape time after a later one: stored, counted once,
# integrated in time order). Bad lines are named file:line:column, exit 1;
# nothing crashes, nothing good is lost.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
F=tests/fixtures/dcgm/nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom
HPORT=$(free_port)
trap 'kill $HPID 2>/dev/null; rm -rf "$TMP"' EXIT
ASAN=0
ldd "$TESSERA" 2>/dev/null | grep -q libasan && ASAN=1
cp "$TESSERA_FIXTURES/meter/lab.yaml" "$TMP/spec.yaml"
imp() { # RC NAME DB-NAME AT FILE: import, check the exit code
    expect_rc "$1" "$TESSERA" meter import -f "$TMP/spec.yaml" --db "sqlite:$TMP/$2.db" --at "$3" "$4"
}
q() { sqlite3 "$TMP/$1.db" "$2"; }

# ---- truncated bodies: the cut line is named, the whole lines are kept ----------
head -c 900 $F > "$TMP/cut.prom"        # inside the labels of the 4th sample line: no newline
imp 1 cut 1700000000 "$TMP/cut.prom"
expect_in "$TMP/err" "cut.prom:5:103: the line has no newline: the body was cut short"
expect_in "$TMP/out" "lines rejected"
check "cut: rows $(q cut 'SELECT count(*) FROM samples')" [ "$(q cut 'SELECT count(*) FROM samples')" -ge 1 ]
printf 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-t",namespace="model-playground-stg"' > "$TMP/cut2.prom"
imp 1 cut2 1700000000 "$TMP/cut2.prom"
expect_in "$TMP/err" "cut2.prom:1:"
expect_in "$TMP/out" "0 device scrapes, 0 new samples, 1 lines rejected"
: > "$TMP/empty.prom"
imp 0 empty 1700000000 "$TMP/empty.prom"
expect_in "$TMP/out" "0 device scrapes, 0 new samples, 0 lines rejected"

# ---- binary garbage ----------------------------------------------------------------
head -c 65536 /dev/urandom > "$TMP/garbage.prom"
printf 'x{UUID="GPU-\0nul"} 1\n\x80\xff{}\n' >> "$TMP/garbage.prom"
imp 1 garbage 1700000000 "$TMP/garbage.prom"
expect_in "$TMP/err" "garbage.prom:"
check "garbage: no summary line: $(head -c 200 "$TMP/out")" grep -q "lines rejected" "$TMP/out"

# ---- escaped quotes and newlines in label values; a raw newline breaks a line ------
L='gpu="0",UUID="GPU-q",modelName="NVIDIA H100 80GB HBM3",Hostname="h\"o\\st",GPU_I_PROFILE="1g.10gb",GPU_I_ID="3"'
{
    printf 'DCGM_FI_DEV_GPU_UTIL{%s,namespace="model-playground-stg",pod="a\\"b\\nc\\\\d"} 40\n' "$L"
    printf 'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-raw",namespace="x",pod="line\nbreak"} 1\n'
} > "$TMP/quotes.prom"
imp 1 quotes 1700000000 "$TMP/quotes.prom"
expect_in "$TMP/err" "quotes.prom:2:"
expect_in "$TMP/err" "quotes.prom:3:"
check "escaped labels stored wrong: $(q quotes "SELECT node||'|'||pod||'|'||tenant FROM samples")" \
    [ "$(q quotes "SELECT hex(node)||'|'||hex(pod)||'|'||tenant FROM samples WHERE device='GPU-q/3'")" = \
      "$(printf 'h"o\\st' | xxd -p -u)|$(printf 'a"b\nc\\d' | xxd -p -u | tr -d '\n')|lab" ]

# ---- unknown metric names; a namespace of no tenant --------------------------------
{
    printf 'MY_OWN_METRIC{UUID="GPU-u",gpu="1",modelName="NVIDIA H100 80GB HBM3",namespace="nobodys-ns",pod="p"} 7\n'
    printf 'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-u",gpu="1",modelName="NVIDIA H100 80GB HBM3",namespace="nobodys-ns",pod="p"} 50\n'
    printf 'no_labels_at_all 3\n'
} > "$TMP/unknown.prom"
imp 0 unknown 1700000000 "$TMP/unknown.prom"
expect_in "$TMP/out" "1 device scrapes, 1 new samples, 0 lines rejected"
imp 0 unknown 1700000015 "$TMP/unknown.prom"
expect_rc 0 "$TESSERA" usage -f "$TMP/spec.yaml" --db "sqlite:$TMP/unknown.db" -o json
expect_in "$TMP/out" '"tenant": "unattributed"'
expect_in "$TMP/out" '"usageMicroGpuHours": 2083'   # 15 s x 1 card x 0.50 = 2083.3

# ---- clocks going backwards --------------------------------------------------------
D='DCGM_FI_DEV_GPU_UTIL{UUID="GPU-c",gpu="0",modelName="NVIDIA H100 80GB HBM3",namespace="model-playground-stg",pod="p"}'
printf '%s 20 1700000030000\n%s 80 1700000000000\n%s 40 1700000015000\n' \
    "$D" "$D" "$D" > "$TMP/back.prom"
imp 0 back 0 "$TMP/back.prom"
expect_in "$TMP/out" "3 new samples, 0 lines rejected"
# a later file: an earlier time, and a time stored before with another value (not taken)
printf '%s 10 1699999985000\n%s 99 1700000000000\n' "$D" "$D" > "$TMP/earlier.prom"
imp 0 back 0 "$TMP/earlier.prom"
expect_in "$TMP/out" "2 device scrapes, 1 new samples, 0 lines rejected"
imp 0 back 0 "$TMP/back.prom"                                # again: nothing new
expect_in "$TMP/out" "0 new samples"
check "backwards: rows" [ "$(q back 'SELECT count(*) FROM samples')" -eq 4 ]
expect_rc 0 "$TESSERA" usage -f "$TMP/spec.yaml" --db "sqlite:$TMP/back.db" -o json
# in time order: -15 s (0.10), 0 s (0.80, the first stored of that time), 15 s (0.40), 30 s
if python3 - "$TMP/out" <<'PY'
import json, sys
(row,) = json.load(open(sys.argv[1]))["rows"]
assert row["tenant"] == "lab" and row["allocationMicroGpuHours"] == (45000 * 10**6 + 1800000) // 3600000, row
assert row["usageMicroGpuHours"] == (15000 * (100000 + 800000 + 400000) + 1800000) // 3600000, row
PY
then ok; else bad "backwards clock: usage not integrated in time order"; fi

# ---- about 100 MB, generated on the fly and streamed -----------------------------
HOURS=12; [ $ASAN -eq 1 ] && HOURS=2
python3 tests/tools/gen_history.py --hours 0.01 --out /dev/null --spec "$TMP/hspec.yaml" \
    --expect /dev/null   # the spec first: the import reads it before the body
python3 tests/tools/gen_history.py --hours $HOURS --out - --expect "$TMP/hwant.json" | /usr/bin/time -v "$TESSERA" meter import -f "$TMP/hspec.yaml" \
    --db "sqlite:$TMP/big.db" --at 0 /dev/stdin >"$TMP/out" 2>"$TMP/err"
check "streamed import failed: $(tail -3 "$TMP/err")" grep -q "Exit status: 0" "$TMP/err"
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$TMP/err")
echo "meter_bad: ${HOURS} h history ($((HOURS * 8))+ MB) streamed through import: peak RSS ${rss} KiB"
expect_in "$TMP/out" "$((HOURS * 240 * 64)) device scrapes, $((HOURS * 240 * 64)) new samples, 0 lines rejected"
if [ $ASAN -eq 0 ]; then
    check "import peak RSS ${rss} KiB: not far below the body" [ "${rss:-999999}" -lt 65536 ]
else
    echo "meter_bad: ASan build: RSS bound not checked (shadow memory and quarantine)"
fi

# the same through the scraper: 100 MB chunked from a server that makes it up as it goes
cat > "$TMP/stream.py" <<'PY'
import http.server, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
line = (b'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-s",modelName="NVIDIA H100 80GB HBM3",'
        b'namespace="model-playground-stg",pod="p",padding="' + b'x' * 120 + b'"} 1\n')
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200)
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        chunk = line * 4096
        for _ in range(n // len(chunk)):
            self.wfile.write(b'%x\r\n%s\r\n' % (len(chunk), chunk))
        self.wfile.write(b'0\r\n\r\n')
http.server.HTTPServer(('127.0.0.1', port), H).serve_forever()
PY
MB=100; [ $ASAN -eq 1 ] && MB=20
python3 "$TMP/stream.py" "$HPORT" $((MB * 1000 * 1000)) &
HPID=$!
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$HPORT) 2>/dev/null && break; sleep 0.1; done
/usr/bin/time -v "$TESSERA" meter scrape -f "$TMP/spec.yaml" --db "sqlite:$TMP/sbig.db" \
    --target "http://127.0.0.1:$HPORT/metrics" --interval 200ms --count 1 --timeout 60s \
    >"$TMP/out" 2>"$TMP/err"
check "streamed scrape failed: $(grep -m3 -E 'error|Exit' "$TMP/err")" grep -q "Exit status: 0" "$TMP/err"
expect_in "$TMP/err" "devices=1 new_samples=1 rejected_lines=0"
expect_in "$TMP/err" "msg=exposition-skipped"
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$TMP/err")
echo "meter_bad: ${MB} MB body scraped: peak RSS ${rss} KiB"
[ $ASAN -eq 0 ] && check "scrape peak RSS ${rss} KiB: not far below ${MB} MB" [ "${rss:-999999}" -lt 65536 ]
finish
