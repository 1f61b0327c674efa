#!/bin/bash
# console_bench.sh - part of `make bench`: the console's fleet map at 1,000 GPUs.
# A 1,000-card fleet from the Alibaba trace (bench/trace_spec.py --gpus 1000,
# seed 1), `tessera console` with an operator token, and
# tests/browser/fleet_bench.mjs in Debian's chromium: time to a built map, the
# plan's bytes, hover and focus to the detail panel. Prints a Markdown table.
set -euo pipefail
TESSERA=${TESSERA:-build/tessera}
W=$(mktemp -d)
trap 'kill $PID 2>/dev/null || true; rm -rf "$W"' EXIT
python3 bench/trace_spec.py --gpus 1000 --seed 1 >"$W/spec.yaml"
scripts/make-test-cert "$W" >/dev/null
TOKEN="tsk_$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
printf 'token sha256:%s operator\n' "$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)" \
    >"$W/identities"
PORT=$((10000 + RANDOM % 20000))
"$TESSERA" console -f "$W/spec.yaml" --tls-cert "$W/tls.crt" --tls-key "$W/tls.key" \
    --listen 127.0.0.1:$PORT --tokens "$W/identities" 2>"$W/log" &
PID=$!
curl -s --cacert "$W/ca.crt" --retry 300 --retry-connrefused --retry-delay 1 \
    https://127.0.0.1:$PORT/readyz >/dev/null
echo "## Console at 1,000 GPUs (fleet map in chromium $(/usr/bin/chromium --version 2>/dev/null |
    awk '{print $2}'), $(nproc) cores, $(date -u +%Y-%m-%d))"
echo
BASE=https://127.0.0.1:$PORT OP_TOKEN=$TOKEN RUNS=${RUNS:-3} node tests/browser/fleet_bench.mjs
