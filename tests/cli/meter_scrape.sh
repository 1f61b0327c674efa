#!/bin/bash
# labels: slow
# meter_scrape.sh - `tessera meter scrape` against real HTTP servers on
# loopback: a throwaway nginx serving recorded dcgm-exporter scrapes
# (tests/fixtures/dcgm) over HTTP and HTTPS (scripts/make-test-cert), and a
# small Python server for what nginx cannot do (a 500 then a 200, an answer
# that never comes, a 20 MB chunked body). Checks: three aligned rounds
# stored (rows = rounds x devices, usage equal to a reference integration of
# the stored rows, each target's last body kept byte for byte); 404, 500
# retried, refused, timeout, TLS without --cacert, bodies over the cap: each
# a clear error naming the URL, exit 1, nothing stored; SIGTERM ends the run
# cleanly; bad flags exit 2.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
FIX=$TESSERA_SRC/tests/fixtures/dcgm
if ! command -v nginx >/dev/null; then
    bad "nginx missing (scripts/install-deps check installs nginx-light)"; finish; exit 1
fi
H100=nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom   # 3 devices
A30=nvidia-dcgm-exporter-issue317-a30-mig-1g6gb-x4.prom                  # 6 devices
P_HTTP=$(free_port) P_TLS=$(free_port) P_STUB=$(free_port) P_DEAD=$(dead_port)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$TMP"' EXIT

cp "$TESSERA_FIXTURES/meter/lab.yaml" "$TMP/spec.yaml"

# ---- servers ---------------------------------------------------------------
scripts/make-test-cert "$TMP/tls" >/dev/null 2>&1 || bad "make-test-cert failed"
mkdir -p "$TMP/nginx/logs"
USER_LINE=""; [ "$(id -u)" -eq 0 ] && USER_LINE="user root;"
cat > "$TMP/nginx/nginx.conf" <<CONF
$USER_LINE
worker_processes 1;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/logs/error.log;
events { worker_connections 64; }
http {
    access_log off;
    types { text/plain prom; }
    server {
        listen 127.0.0.1:$P_HTTP;
        listen 127.0.0.1:$P_TLS ssl;
        ssl_certificate $TMP/tls/tls.crt;
        ssl_certificate_key $TMP/tls/tls.key;
        root $FIX;
        location = /fail500 { return 500 'overloaded\n'; }
    }
}
CONF
nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" -g 'daemon off;' 2>"$TMP/nginx.err" &
PIDS+=($!)

cat > "$TMP/stub.py" <<'PY'
import http.server, socketserver, sys, time
port, body = int(sys.argv[1]), open(sys.argv[2], 'rb').read()
seen = {'flaky': 0}
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def reply(self, code, data):
        self.send_response(code)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        if self.path == '/flaky':          # odd requests fail, even ones work
            seen['flaky'] += 1
            return self.reply(500 if seen['flaky'] % 2 else 200, b'busy\n' if seen['flaky'] % 2 else body)
        if self.path == '/hang':           # accepted, never answered
            time.sleep(30)
            return
        if self.path == '/big':            # 20 MB, chunked (no length known up front)
            self.send_response(200)
            self.send_header('Transfer-Encoding', 'chunked')
            self.end_headers()
            chunk = b'# padding of a very large exposition, ignored by the parser\n' * 8192
            try:
                for _ in range(40):
                    self.wfile.write(b'%x\r\n%s\r\n' % (len(chunk), chunk))
                self.wfile.write(b'%x\r\n%s\r\n0\r\n\r\n' % (len(body), body))
            except OSError:
                pass
            return
        self.reply(404, b'no\n')
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(('127.0.0.1', port), H).serve_forever()
PY
python3 "$TMP/stub.py" "$P_STUB" "$FIX/$H100" &
PIDS+=($!)

for u in "http://127.0.0.1:$P_HTTP/$H100" "http://127.0.0.1:$P_STUB/none"; do
    curl -s -o /dev/null --retry 30 --retry-connrefused --retry-delay 0 --retry-max-time 20 \
        --max-time 5 "$u" \
        || { bad "server for $u did not start"; cat "$TMP/nginx.err"; finish; exit 1; }
done

# ---- helpers ---------------------------------------------------------------
# scrape RC DB ARGS...: run the scraper (-f and --db given), check its exit code.
scrape() {
    want=$1 db=$2; shift 2
    "$TESSERA" meter scrape -f "$TMP/spec.yaml" --db "sqlite:$TMP/$db.db" "$@" \
        >"$TMP/out" 2>"$TMP/err"
    got=$?
    if [ "$got" -eq "$want" ]; then ok; else
        bad "meter scrape $* exited $got, expected $want"; head -5 "$TMP/err" "$TMP/out"; fi
}
rows() { sqlite3 "$TMP/$1.db" "SELECT count(*) FROM samples" 2>/dev/null || echo 0; }
log_has() { if grep -qE -- "$1" "$TMP/err"; then ok; else bad "log lacks /$1/"; cat "$TMP/err"; fi; }

# ---- three rounds over HTTP and HTTPS --------------------------------------
scrape 0 good --target "http://127.0.0.1:$P_HTTP/$H100" --target "https://localhost:$P_TLS/$A30" \
    --cacert "$TMP/tls/ca.crt" --interval 1s --count 3
expect_in "$TMP/out" "rounds=3 scrapes=6 failed=0 rejected=0 new_samples=27 lost=0"
check "expected 6 scrape lines with status 200" \
    [ "$(grep -c 'level=info msg=scrape .*status=200 ' "$TMP/err")" -eq 6 ]
log_has "msg=scrape round=3 target=https://localhost:$P_TLS/$A30 status=200 bytes=1306 attempts=1 devices=6 new_samples=6 rejected_lines=0 ms=[0-9]+$"
check "rows: $(rows good), expected 3 rounds x 9 devices" [ "$(rows good)" -eq 27 ]
# rounds are aligned to the second: every stored time lies in its own second
check "scrape times not one per round" \
    [ "$(sqlite3 "$TMP/good.db" 'SELECT count(DISTINCT ts_ms / 1000) FROM samples')" -eq 3 ]
expect_rc 0 "$TESSERA" usage -f "$TMP/spec.yaml" --db "sqlite:$TMP/good.db" -o json
cp "$TMP/out" "$TMP/usage.json"
if python3 - "$TMP/good.db" "$TMP/usage.json" "$FIX/$H100" "$FIX/$A30" \
    "http://127.0.0.1:$P_HTTP/$H100" "https://localhost:$P_TLS/$A30" <<'PY'
import json, sqlite3, sys
db, usage, f1, f2, u1, u2 = sys.argv[1:]
c = sqlite3.connect(db)
# the last body of each target, byte for byte
bodies = dict(c.execute("SELECT source, body FROM expositions"))
assert bodies == {u1: open(f1, 'rb').read(), u2: open(f2, 'rb').read()}, sorted(bodies)
# tenants as the spec says; shares as the catalog says (1g.10gb = 1/8, A30 1g.6gb = 1/4)
rows = c.execute("SELECT device, ts_ms, tenant, model, profile, share_ppm FROM samples "
                 "ORDER BY device, ts_ms").fetchall()
want_share = {"1g.10gb": 125000, "1g.6gb": 250000}
assert all(r[5] == want_share[r[4]] for r in rows), rows
assert sorted({r[2] for r in rows}) == ["lab", "unattributed"], rows
# usage names models by catalog key (builtin.yaml's productNames)
KEY = {"NVIDIA A30": "a30", "NVIDIA H100 80GB HBM3": "h100-80gb-sxm"}
want = {}
for a, b in zip(rows, rows[1:]):
    if a[0] == b[0]:
        k = (a[2], KEY[a[3]], a[4])
        want[k] = want.get(k, 0) + min(b[1] - a[1], 30000) * a[5]
want = {k: (v + 1800000) // 3600000 for k, v in want.items()}
got = {(r["tenant"], r["model"], r["profile"]): r["allocationMicroGpuHours"]
       for r in json.load(open(usage))["rows"]}
assert got == want, (got, want)
assert len(got) == 3, got
assert len({r[0] for r in rows}) == 9, rows
PY
then ok; else bad "stored bodies or usage differ from the reference"; fi

# ---- failures: each a clear error, exit 1, nothing stored --------------------
scrape 1 f404 --target "http://127.0.0.1:$P_HTTP/missing.prom" --interval 200ms --count 1
log_has "level=error msg=scrape round=1 target=http://127.0.0.1:$P_HTTP/missing.prom status=404 .*attempts=1 .*error=\"GET http://127.0.0.1:$P_HTTP/missing.prom: HTTP status 404"
expect_in "$TMP/out" "rounds=1 scrapes=1 failed=1"

start=$(date +%s%N)
scrape 1 f500 --target "http://127.0.0.1:$P_HTTP/fail500" --interval 200ms --count 1 --retries 2
ms=$(( ($(date +%s%N) - start) / 1000000 ))
log_has "status=500 .*attempts=3 .*HTTP status 500: overloaded \(3 attempts\)"
check "retries of a 500 took ${ms} ms: expected the 0.5 s + 1 s backoff" [ "$ms" -ge 1500 ]

scrape 0 flaky --target "http://127.0.0.1:$P_STUB/flaky" --interval 200ms --count 1 --retries 1
log_has "level=info msg=scrape .*status=200 .*attempts=2 devices=3 new_samples=3 "
check "flaky: rows $(rows flaky)" [ "$(rows flaky)" -eq 3 ]

scrape 1 refused --target "http://user:s3cret@127.0.0.1:$P_DEAD/metrics" --interval 200ms \
    --count 1 --retries 1
log_has "status=0 .*attempts=2 .*error=\"GET http://\*\*\*@127.0.0.1:$P_DEAD/metrics: .*connect"
check "the password shows in the log" bash -c "! grep -q s3cret '$TMP/err'"

start=$(date +%s%N)
scrape 1 hang --target "http://127.0.0.1:$P_STUB/hang" --interval 200ms --count 1 --timeout 1s \
    --retries 0
ms=$(( ($(date +%s%N) - start) / 1000000 ))
log_has "attempts=1 .*error=\"GET http://127.0.0.1:$P_STUB/hang: .*[Tt]imed out"
check "timeout took ${ms} ms" [ "$ms" -ge 1000 ] && check "timeout took ${ms} ms" [ "$ms" -lt 4000 ]

scrape 1 tls --target "https://localhost:$P_TLS/$A30" --interval 200ms --count 1
log_has "attempts=1 .*error=\"GET https://localhost:$P_TLS/$A30: .*[Cc]ertificate"
scrape 0 tls --target "https://localhost:$P_TLS/$A30" --interval 200ms --count 1 --insecure
for db in f404 f500 refused hang; do check "$db: rows stored" [ "$(rows $db)" -eq 0 ]; done

# bodies over the cap: with a Content-Length, and chunked (found while streaming)
scrape 1 cap --target "http://127.0.0.1:$P_HTTP/$H100" --interval 200ms --count 1 --max-body 1K
log_has "error=\"GET http://127.0.0.1:$P_HTTP/$H100: body larger than 1024 bytes: refused"
scrape 1 cap --target "http://127.0.0.1:$P_STUB/big" --interval 200ms --count 1 --max-body 1M
log_has "attempts=1 .*body larger than 1048576 bytes: refused"
check "cap: rows stored" [ "$(rows cap)" -eq 0 ]
# 20 MB under the default cap: metered, but not kept for /metrics (16 MiB)
scrape 0 big --target "http://127.0.0.1:$P_STUB/big" --interval 200ms --count 1
log_has "msg=scrape .*status=200 bytes=[0-9]{8} attempts=1 devices=3 new_samples=3 "
log_has "level=error msg=exposition-skipped .*body over 16777216 bytes"
check "big: an exposition kept" [ "$(sqlite3 "$TMP/big.db" 'SELECT count(*) FROM expositions')" -eq 0 ]

# ---- SIGTERM: the round in progress finishes, exit 0 -------------------------
# (with --listen: /healthz, /readyz and /metrics answer while it runs)
P_STAT=$(free_port)
"$TESSERA" meter scrape -f "$TMP/spec.yaml" --db "sqlite:$TMP/term.db" --interval 1s \
    --target "http://127.0.0.1:$P_HTTP/$H100" --listen "127.0.0.1:$P_STAT" \
    >"$TMP/out" 2>"$TMP/err" &
spid=$!
sleep 2.5
curl -s "http://127.0.0.1:$P_STAT/metrics" >"$TMP/metrics"
check "scrape /healthz" curl -sf "http://127.0.0.1:$P_STAT/healthz" -o /dev/null
check "scrape /readyz" curl -sf "http://127.0.0.1:$P_STAT/readyz" -o /dev/null
kill -TERM $spid
start=$(date +%s%N)
wait $spid
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "SIGTERM: exit $rc" [ "$rc" -eq 0 ]
check "SIGTERM: took ${ms} ms to stop" [ "$ms" -lt 1500 ]
rounds=$(sed -n 's/^rounds=\([0-9]*\) .*/\1/p' "$TMP/out")
check "SIGTERM: rounds '$rounds'" [ "${rounds:-0}" -ge 2 ]
check "SIGTERM: rows $(rows term) for $rounds rounds" [ "$(rows term)" -eq $((rounds * 3)) ]
# /metrics, read before the stop: a good scrape at least (the round in flight at the
# read may end after it), no more than the run made
good=$(awk '$1 == "tessera_scrape_scrapes_total{result=\"ok\"}" {print $2}' "$TMP/metrics")
check "scrape /metrics ok count '$good' for $rounds rounds" \
    [ "${good:-0}" -ge 1 -a "${good:-0}" -le "${rounds:-0}" ]
expect_in "$TMP/metrics" 'tessera_scrape_scrapes_total{result="failed"} 0'

# ---- bad usage: exit 2 ----------------------------------------------------------
S=(-f "$TMP/spec.yaml" --db "sqlite:$TMP/u.db")
T="http://127.0.0.1:$P_HTTP/$H100"
expect_rc 2 "$TESSERA" meter scrape "${S[@]}"
expect_in "$TMP/err" "needs -f SPEC, --db DB and --target URL"
expect_rc 2 "$TESSERA" meter scrape "${S[@]}" --target "ftp://127.0.0.1/x"
expect_in "$TMP/err" "--target 'ftp://127.0.0.1/x': not an http:// or https:// URL"
expect_rc 2 "$TESSERA" meter scrape "${S[@]}" --target "$T" --interval 0s
expect_in "$TMP/err" "bad value '0s' for --interval"
expect_rc 2 "$TESSERA" meter scrape "${S[@]}" --target "$T" --interval soon
expect_rc 2 "$TESSERA" meter scrape "${S[@]}" --target "$T" --retries -1
expect_rc 2 "$TESSERA" meter scrape "${S[@]}" --target "$T" --count 0
expect_rc 2 "$TESSERA" meter scrape "${S[@]}" --target "$T" --max-body 12Q
expect_rc 2 "$TESSERA" meter scrape "${S[@]}" --target "$T" --bogus
expect_rc 2 "$TESSERA" meter scrape "${S[@]}" --target "$T" --log-format xml
expect_in "$TMP/err" "bad value 'xml' for --log-format"
expect_rc 2 "$TESSERA" meter scrape "${S[@]}" --target "$T" --count 1 --listen nonsense
expect_in "$TMP/err" "--listen"
expect_rc 2 "$TESSERA" meter scrape "${S[@]}" --target "$T" extra-arg
expect_rc 2 "$TESSERA" meter scrape -f "$TMP/spec.yaml" --db "mysql://x/y" --target "$T" --count 1
expect_rc 0 "$TESSERA" meter scrape --help
expect_in "$TMP/out" "--retries"
expect_rc 0 "$TESSERA" meter --help
expect_in "$TMP/out" "tessera meter scrape -f SPEC --db DB --target URL"
finish
