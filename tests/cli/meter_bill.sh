#!/bin/bash
# labels: slow
# meter_bill.sh - the wrong bills of issue 14, through `tessera meter import`
# and `tessera usage`, each checked against figures worked out here:
# every pod listed on a device charged (an intruder listed after the owner
# billed and reported), unknown utilisation in its own column, a MIG pod on
# a card planned whole to another tenant a custody violation, a sample
# without pod labels that contradicts the plan's card left unattributed and
# reported, two periods that split the time adding up to the whole to the
# micro-GPU-hour, a last line cut short rejected with its place, a label
# that is not UTF-8 rejecting its line only (SQLite and PostgreSQL), and
# 5,000 devices per scrape time in shuffled order equal to the sorted file.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PG="$TMP/pg"
PORT=$(free_port)
trap 'scripts/pg-test-server stop "$PG" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
T0=1767225600 # 2026-01-01T00:00:00Z
H100='modelName="NVIDIA H100 80GB HBM3",Hostname="n1"'

# The plan of this spec: n1 GPU 0 MIG with team's 1g.10gb, GPU 1 whole to lab.
{ # lab-team.yaml on two GPUs, and a workload for team (its last document)
    sed 's/count: 1}/count: 2}/' "$TESSERA_FIXTURES/meter/lab-team.yaml"
    cat <<'EOF'
  workloads:
  - {name: a, kind: inference, memoryHighWaterGiB: 8, p99Ms: 100, trust: untrusted}
EOF
} >"$TMP/spec.yaml"
check "the spec has two GPUs" grep -q 'count: 2}' "$TMP/spec.yaml"
imp() { # imp RC DB FILE
    expect_rc "$1" "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$2" --at "$T0" "$3"
}
# usage_rows DB [ARGS]: the Usage rows as "tenant model profile alloc used unknown"
usage_rows() {
    local db=$1; shift
    "$TESSERA" usage -f "$TMP/spec.yaml" --db "$db" -o json "$@" | python3 -c '
import json, sys
for r in json.load(sys.stdin)["rows"]:
    print(r["tenant"], r["model"], r["profile"] or "whole", r["allocationMicroGpuHours"],
          r["usageMicroGpuHours"], r.get("unknownUsageMicroGpuHours", "none"))'
}
q() { sqlite3 "$TMP/$1.db" "$2"; }

# ---- lab's whole card: lab's pod and an intruder listed after it --------------------
{
    for k in 0 1 2; do
        ts=$(((T0 + 15 * k) * 1000))
        echo "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-1\",$H100,namespace=\"lab-ns\",pod=\"own\"} 50 $ts"
        echo "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-1\",$H100,namespace=\"team-ns\",pod=\"in\"} 50 $ts"
    done
} >"$TMP/pods.prom"
imp 0 "sqlite:$TMP/pods.db" "$TMP/pods.prom"
expect_in "$TMP/out" "6 device scrapes, 6 new samples, 0 lines rejected, 1 custody violations"
expect_in "$TMP/err" "pod team-ns/in of tenant 'team' on a device planned for 'lab'"
# 30 s of half a card each, half busy: 30 x 0.5 / 3600 h = 4167 micro-GPU-hours, 2083 used
usage_rows "sqlite:$TMP/pods.db" >"$TMP/rows"
expect_in "$TMP/rows" "lab h100-80gb-sxm whole 4167 2083 0"
expect_in "$TMP/rows" "team h100-80gb-sxm whole 4167 2083 0"

# ---- unknown utilisation: missing, lower-case, negative, +Inf: never "used" ---------
{
    for k in 0 1 2; do
        ts=$(((T0 + 15 * k) * 1000))
        echo "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-1\",$H100} 100 $ts"
        echo "dcgm_fi_dev_gpu_util{gpu=\"1\",UUID=\"GPU-1\",$H100} 10 $ts"
        echo "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-1\",$H100} -1 $ts"
        echo "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"1\",UUID=\"GPU-1\",$H100} +Inf $ts"
    done
} >"$TMP/unknown.prom"
imp 0 "sqlite:$TMP/unknown.db" "$TMP/unknown.prom"
usage_rows "sqlite:$TMP/unknown.db" >"$TMP/rows"
# lab's whole card by the plan, 30 s: 8333 allocated, 0 used, 8333 unknown
expect_in "$TMP/rows" "lab h100-80gb-sxm whole 8333 0 8333"
"$TESSERA" usage -f "$TMP/spec.yaml" --db "sqlite:$TMP/unknown.db" >"$TMP/text"
expect_in "$TMP/text" "UNKNOWN USE"

# ---- a MIG pod of team on lab's whole card ------------------------------------------
echo "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-1\",$H100,GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"9\",namespace=\"team-ns\",pod=\"mig\"} 1" \
    >"$TMP/mig.prom"
imp 0 "sqlite:$TMP/mig.db" "$TMP/mig.prom"
expect_in "$TMP/out" "1 custody violations"
expect_in "$TMP/err" "pod team-ns/mig of tenant 'team' on a device planned for 'lab'"

# ---- no pod labels, and the scrape contradicts the plan's card -----------------------
{
    for k in 0 1 2; do
        ts=$(((T0 + 15 * k) * 1000))
        echo "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\",modelName=\"NVIDIA GeForce RTX 4090\",Hostname=\"n1\"} 50 $ts"
    done
} >"$TMP/rtx.prom"
imp 0 "sqlite:$TMP/rtx.db" "$TMP/rtx.prom"
expect_in "$TMP/err" "device GPU-0: the scrape shows a NVIDIA GeForce RTX 4090, the plan a h100-80gb-sxm on node n1 GPU 0: billed as unattributed"
usage_rows "sqlite:$TMP/rtx.db" >"$TMP/rows"
expect_in "$TMP/rows" "unattributed NVIDIA GeForce RTX 4090 whole 8333 4167 0"
check "team billed for a card the scrape does not show: $(cat "$TMP/rows")" \
    bash -c "! grep -q '^team' '$TMP/rows'"

# ---- periods: two hours of 15 s scrapes of lab's card, split anywhere ----------------
for k in $(seq 0 479); do
    echo "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-1\",$H100} 25 $(((T0 + 15 * k) * 1000))"
done >"$TMP/day.prom"
imp 0 "sqlite:$TMP/day.db" "$TMP/day.prom"
# the columns from the end: allocated, used, unknown (a model name has spaces)
col() { awk "{print \$(NF - $1)}"; }
whole=$(usage_rows "sqlite:$TMP/day.db" | col 2)
# 479 intervals of 15 s = 7185 s = 1995833 micro-GPU-hours
check "the whole: $whole" [ "$whole" = 1995833 ]
for cut in 3600 3607 5000 7185; do
    a=$(usage_rows "sqlite:$TMP/day.db" --to $((T0 + cut)) | col 2)
    b=$(usage_rows "sqlite:$TMP/day.db" --from $((T0 + cut)) | col 2)
    want_a=$(((cut * 1000000 + 1800) / 3600))
    check "cut at +${cut}s: $a + $b, want $want_a + the rest of $whole" \
        [ "${a:-0}" = "$want_a" -a $((${a:-0} + ${b:-0})) -eq "$whole" ]
done

# ---- a last line cut short: rejected at its place, never a sample in 1970 -----------
printf 'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-1"} 5 %s\nDCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-1"} 5 17672' \
    $((T0 * 1000)) >"$TMP/cut.prom"
imp 1 "sqlite:$TMP/cut.db" "$TMP/cut.prom"
expect_in "$TMP/err" "cut.prom:2:51: the line has no newline: the body was cut short"
check "cut: stored $(q cut 'SELECT group_concat(ts_ms) FROM samples')" \
    [ "$(q cut 'SELECT group_concat(ts_ms) FROM samples')" = "$((T0 * 1000))" ]

# ---- a label that is not UTF-8: that line rejected, the rest stored, both backends ---
printf 'DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-a"} 1\nDCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-b",pod="caf\xe9",namespace="x"} 1\nDCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-c"} 1\n' \
    >"$TMP/latin1.prom"
imp 1 "sqlite:$TMP/latin1.db" "$TMP/latin1.prom"
expect_in "$TMP/err" "latin1.prom:2:50: not UTF-8"
expect_in "$TMP/out" "2 device scrapes, 2 new samples, 1 lines rejected"
got=$(q latin1 'SELECT group_concat(device) FROM (SELECT device FROM samples ORDER BY device)')
check "sqlite rows: $got" [ "$got" = "GPU-a,GPU-c" ]

# ---- 5,000 devices per scrape time, the file shuffled ------------------------------
python3 - "$TMP/big.prom" "$TMP/shuffled.prom" "$T0" <<'PY'
import random, sys
t0 = int(sys.argv[3]) * 1000
lines = []
for k in range(3):
    for d in range(5000):
        lab = '{gpu="%d",UUID="GPU-big-%d",Hostname="h%d"}' % (d % 8, d, d // 8)
        lines.append("DCGM_FI_DEV_FB_USED%s %d %d" % (lab, d, t0 + 15000 * k))
        lines.append("DCGM_FI_DEV_GPU_UTIL%s %d %d" % (lab, (d + k) % 101, t0 + 15000 * k))
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
random.seed(14)
random.shuffle(lines)
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PY
imp 0 "sqlite:$TMP/sorted.db" "$TMP/big.prom"
expect_in "$TMP/out" "15000 device scrapes, 15000 new samples, 0 lines rejected"
imp 0 "sqlite:$TMP/shuffled.db" "$TMP/shuffled.prom"
expect_in "$TMP/out" "15000 device scrapes, 15000 new samples, 0 lines rejected"
for db in sorted shuffled; do
    q $db "SELECT device, ts_ms, tenant, share_ppm, util_ppm FROM samples ORDER BY device, ts_ms" \
        >"$TMP/$db.rows"
done
check "shuffled rows differ from sorted" cmp -s "$TMP/sorted.rows" "$TMP/shuffled.rows"
# used: sum over devices of 15 s x ((d + 0) + (d + 1)) % 101 / 100, worked out in Python
want=$(python3 -c 'print((sum(15000 * 10000 * ((d % 101) + ((d + 1) % 101)) for d in range(5000)) + 1800000) // 3600000)')
got=$(usage_rows "sqlite:$TMP/shuffled.db" | col 1)
check "used micro-GPU-hours of 5,000 devices: $got, want $want" [ "$got" = "$want" ]

# ---- the reference computation (tests/tools/gen_history.py, closed form): 5,003
# device-scrapes per scrape time (4,936 more whole GPUs), a card listing two tenants' pods,
# a card without utilisation, every tenth scrape time arriving late; then split in two
# periods at a time inside an interval, each row's two halves adding up to the whole
python3 tests/tools/gen_history.py --hours 0.1 --wide 4936 --extras --out "$TMP/ref.prom" \
    --spec "$TMP/ref.yaml" >"$TMP/ref.json" || bad "gen_history.py failed"
expect_rc 0 "$TESSERA" meter import -f "$TMP/ref.yaml" --db "sqlite:$TMP/ref.db" --at 0 "$TMP/ref.prom"
expect_in "$TMP/out" "120072 device scrapes, 120072 new samples, 0 lines rejected"
"$TESSERA" usage -f "$TMP/ref.yaml" --db "sqlite:$TMP/ref.db" -o json >"$TMP/ref.got"
MID=$((1767225600 + 3 * 60 + 7)) # 3 min 7 s in: inside an interval
"$TESSERA" usage -f "$TMP/ref.yaml" --db "sqlite:$TMP/ref.db" -o json --to $MID >"$TMP/ref.a"
"$TESSERA" usage -f "$TMP/ref.yaml" --db "sqlite:$TMP/ref.db" -o json --from $MID >"$TMP/ref.b"
if python3 - "$TMP/ref.json" "$TMP/ref.got" "$TMP/ref.a" "$TMP/ref.b" <<'PY'
import json, sys
want = json.load(open(sys.argv[1]))["rows"]
got, a, b = (json.load(open(f))["rows"] for f in sys.argv[2:5])
bad = [("want", w, "got", g) for w, g in zip(want, got) if w != g] + ([len(want), len(got)] if len(want) != len(got) else [])
key = lambda r: (r["tenant"], r["model"], r["profile"])
half = {}
for r in a + b:
    for f in ("allocationMicroGpuHours", "usageMicroGpuHours", "unknownUsageMicroGpuHours"):
        half[key(r) + (f,)] = half.get(key(r) + (f,), 0) + r[f]
for w in want:
    for f in ("allocationMicroGpuHours", "usageMicroGpuHours", "unknownUsageMicroGpuHours"):
        if abs(half.get(key(w) + (f,), 0) - w[f]) > 1:  # each half rounded to the micro-unit
            bad.append(("split", key(w), f, half.get(key(w) + (f,), 0), w[f]))
if not any(w["unknownUsageMicroGpuHours"] for w in want):
    bad.append("no unknown hours in the reference")
for x in bad:
    print(*x)
sys.exit(1 if bad else 0)
PY
then ok; else bad "usage differs from the reference computation"; fi

# ---- PostgreSQL: the non-UTF-8 line rejected, the rest stored -----------------------
if ! URL=$(scripts/pg-test-server start "$PG" "$PORT" 2>"$TMP/start.err"); then
    bad "pg-test-server start failed"; cat "$TMP/start.err"; finish; exit 1
fi
imp 1 "$URL" "$TMP/latin1.prom"
expect_in "$TMP/err" "latin1.prom:2:50: not UTF-8"
expect_in "$TMP/out" "2 device scrapes, 2 new samples, 1 lines rejected"
got=$(psql "$URL" -AtXqc "SELECT string_agg(device, ',' ORDER BY device) FROM samples")
check "postgres rows: $got" [ "$got" = "GPU-a,GPU-c" ]
imp 0 "$URL" "$TMP/pods.prom"
usage_rows "$URL" --from "$T0" >"$TMP/rows"
expect_in "$TMP/rows" "team h100-80gb-sxm whole 4167 2083 0"
finish
