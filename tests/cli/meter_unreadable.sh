#!/bin/bash
# meter_unreadable.sh - a device whose only utilisation values are NaN or
# +-Inf is billed on the allocation basis like any other (issue 32): an hour
# of the real H100 MIG scrape (tests/fixtures/dcgm, issue 512: GPU_I_ID 7 and
# 9 lab's pods, 8 without pods) with GI 7's values all NaN and GI 9's all
# -Inf or +Inf, GI 8 readable. Each instance is 1/8 of the card for 239
# intervals of 15 s; lab's two instances go to the unknown column, not to
# the usage basis; the import summary counts the unreadable device-times;
# the invoice prices them. Figures worked out here; SQLite and PostgreSQL.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PG="$TMP/pg"
PORT=$(free_port)
trap 'scripts/pg-test-server stop "$PG" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
F=tests/fixtures/dcgm/nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom
T0=1793577600 # 2026-11-02T00:00:00Z
cat "$TESSERA_FIXTURES/meter/lab.yaml" "$TESSERA_FIXTURES/meter/lab-prices.yaml" >"$TMP/spec.yaml"

# the hour, and "tenant alloc used unknown" by the rule, then the invoice's cents
python3 - "$F" "$TMP/hour.prom" "$T0" >"$TMP/want" <<'PY'
import re, sys
src, out, t0 = sys.argv[1], sys.argv[2], int(sys.argv[3]) * 1000
lines = [l.rstrip("\n") for l in open(src) if l.startswith("DCGM_")]
value = {"7": lambda k: "NaN", "9": lambda k: "+Inf" if k % 2 else "-Inf", "8": lambda k: "0.25"}
body = []
for k in range(240):
    for l in lines:
        m = re.match(r'(\S+\{.*\}) (\S+)$', l)
        gi = re.search(r'GPU_I_ID="(\d+)"', l).group(1)
        body.append("%s %s %d" % (m.group(1), value[gi](k), t0 + 15000 * k))
open(out, "w").write("\n".join(body) + "\n")
num = 239 * 15000 * 125000  # ms x ppm of one instance over the hour
uh = lambda n: (n + 1800000) // 3600000
print("lab", uh(2 * num), 0, uh(2 * num))
print("unattributed", uh(num), uh(num // 4), 0)
cents = (uh(2 * num) * 2900000 + 5 * 10**9) // 10**10  # micro-GPU-h x micro-EUR, to cents
print("invoice", cents)
PY
rows() {
    "$TESSERA" usage -f "$TMP/spec.yaml" --db "$1" -o json | python3 -c '
import json, sys
for r in sorted(json.load(sys.stdin)["rows"], key=lambda r: r["tenant"]):
    print(r["tenant"], r["allocationMicroGpuHours"], r["usageMicroGpuHours"], r["unknownUsageMicroGpuHours"])'
}
# backend DB LABEL
backend() {
    expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$1" --at "$T0" "$TMP/hour.prom"
    expect_in "$TMP/out" "720 device scrapes, 720 new samples, 0 lines rejected, 0 custody violations, 480 unreadable utilisation"
    rows "$1" >"$TMP/$2.rows"
    grep -v invoice "$TMP/want" >"$TMP/want.rows"
    check "$2: usage $(paste -sd' ' "$TMP/$2.rows"), by the rule $(paste -sd' ' "$TMP/want.rows")" \
        cmp -s "$TMP/$2.rows" "$TMP/want.rows"
    expect_rc 0 "$TESSERA" invoice -f "$TMP/spec.yaml" --db "$1" --tenant lab --period 2026-11 -o json
    got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totalMinor"])' "$TMP/out")
    want=$(sed -n 's/^invoice //p' "$TMP/want")
    check "$2: lab's invoice is $got cents, by the rule $want" [ "$got" = "$want" ]
}
backend "sqlite:$TMP/s.db" sqlite
if ! URL=$(scripts/pg-test-server start "$PG" "$PORT" 2>"$TMP/start.err"); then
    bad "pg-test-server start failed"; cat "$TMP/start.err"; finish; exit 1
fi
backend "$URL" postgresql
finish
