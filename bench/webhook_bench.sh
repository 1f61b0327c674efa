#!/bin/bash
# webhook_bench.sh - the admission webhook under load, side by side with
# nginx serving a static AdmissionReview over TLS on the same machine (the
# HTTP+TLS floor). wrk on loopback, 10 s runs:
#   peak      as fast as 2 wrk threads x 32 connections go (tessera, nginx),
#             ROUNDS times (default 3) taking turns, each with the server's CPU
#             time per request (utime + stime of all its threads or workers,
#             which the other load on a shared machine does not change)
#   1000/s    paced to about 1,000 requests/s: p50/p99/p99.9 (tessera)
#   malformed peak load with every 10th body malformed (tessera): no failed requests
# Reports requests/s, latency percentiles and tessera's RSS as a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
TESSERA=${TESSERA:-build/tessera}
SECS=${SECS:-10}
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT

scripts/make-test-cert "$W"

BODY=bench/fixtures/gpu-pod-review.json
"$TESSERA" serve -f examples/four-h100.yaml --tls-cert "$W/tls.crt" --tls-key "$W/tls.key" \
    --listen 127.0.0.1:18443 2>"$W/serve.log" &
TPID=$!
# nginx answers every POST with the response tessera gives for $BODY
RESPONSE=$(curl -s --cacert "$W/ca.crt" --retry 20 --retry-connrefused --retry-delay 0 \
    -H 'Content-Type: application/json' --data-binary @$BODY https://127.0.0.1:18443/validate)
mkdir -p "$W/nginx/logs"
cat > "$W/nginx/nginx.conf" <<CONF
user root;
worker_processes 2;
pid $W/nginx/nginx.pid;
error_log $W/nginx/logs/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_buffer_size 64k;
    server {
        listen 127.0.0.1:18444 ssl;
        ssl_certificate $W/tls.crt;
        ssl_certificate_key $W/tls.key;
        location = /validate { default_type application/json; return 200 '$RESPONSE'; }
    }
}
CONF
nginx -p "$W/nginx" -c "$W/nginx/nginx.conf" -g 'daemon off;' &
NPID=$!
sleep 1

# cpu_ticks PID...: user + system clock ticks of these processes and their children's
cpu_ticks() {
    local t=0 p
    for p in "$@" $(pgrep -P "$(echo "$@" | tr ' ' ',')" || true); do
        t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0)))
    done
    echo $t
}

run() { # name url [env...]
    local name=$1 url=$2
    shift 2
    env BODY=$BODY "$@" wrk -t2 -c${CONNS:-32} -d${SECS}s -s bench/wrk.lua "$url" > "$W/$name.out"
    grep RESULT "$W/$name.out" | sed "s/^RESULT/$name/"
}
echo "## Admission webhook: tessera serve vs nginx over TLS ($(nproc) cores, $(date -u +%Y-%m-%d))"
echo
# peak NAME URL PID: one peak run, with the server's CPU microseconds per request
peak() {
    local t0 t1 hz
    hz=$(getconf CLK_TCK)
    t0=$(cpu_ticks "$3")
    run "$1" "$2" | tr -d '\n'
    t1=$(cpu_ticks "$3")
    awk -v d=$((t1 - t0)) -v hz="$hz" '/RESULT/ { split($6, r, "="); \
        printf " cpu_us_per_req=%.1f\n", d * 1e6 / hz / r[2] }' "$W/$1.out"
}
for i in $(seq "${ROUNDS:-3}"); do
    peak tessera-peak https://127.0.0.1:18443/validate $TPID
    peak nginx-peak https://127.0.0.1:18444/validate $NPID
done
CONNS=2 run tessera-1000rps https://127.0.0.1:18443/validate DELAY_MS=1
run tessera-malformed https://127.0.0.1:18443/validate BAD_EVERY=10
echo "tessera-rss $(grep -E 'VmHWM|VmRSS' /proc/$TPID/status | tr -s ' \t' ' ' | tr '\n' ' ')"
kill -TERM $TPID
wait $TPID || true
