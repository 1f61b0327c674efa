#!/bin/bash
# labels: slow
# meter_agg.sh - the usage aggregate an invoice reads stays exactly equal to
# its samples (issue 32), on SQLite and a real PostgreSQL. January's last
# two hours on two cards (lab's GPU-0, team's GPU-9), some scrapes missed.
# Each stage's invoices (microGpuHours per tenant) are checked against the
# rule worked out here from the scrapes stored so far (each scrape billed up
# to its card's next one, at most 30 s, clipped to January; a card's last
# scrape not billed until a later one is stored):
#   1. the first invoice integrates the month and keeps it (one window in
#      agg_periods), the second reads it; --verify finds it equal;
#   2. GPU-9, down from 23:59:50, comes back at 01:00 on February 1st, past
#      the window's reach: its last January interval (10 s) is billed once
#      the reader finds the tail's later scrape;
#   3. scrapes GPU-0 missed in January (gaps of 45 s, billed 30 s) arrive
#      late: the batch removes the window, the invoice is integrated again
#      (15 s more for each gap filled);
#   4. an aggregate edited in the database is read as it is (the invoice
#      shows the edit) and --verify exits 1 naming it.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PG="$TMP/pg"
PORT=$(free_port)
trap 'scripts/pg-test-server stop "$PG" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
T0=1769896800 # 2026-01-31T22:00:00Z
END=1769904000 # 2026-02-01T00:00:00Z
cat "$TESSERA_FIXTURES/meter/lab-team.yaml" "$TESSERA_FIXTURES/meter/lab-prices.yaml" \
    >"$TMP/spec.yaml"

# stage S: the scrapes of stage S into $TMP/S.prom, and every stage's
# scrapes so far into $TMP/S.all ("card ns ts_ms" lines)
python3 - "$TMP" "$T0" <<'PY'
import sys
tmp, t0 = sys.argv[1], int(sys.argv[2]) * 1000
CARD = {"GPU-0": ('gpu="0",UUID="GPU-0",Hostname="n1"', "lab-ns", "own"),
        "GPU-9": ('gpu="0",UUID="GPU-9",Hostname="n9"', "team-ns", "t")}
two_h = 480
missed = {k for k in range(two_h) if k % 17 in (5, 6)}  # GPU-0's gaps of 45 s (30 s billed)
stages = {1: [], 2: [], 3: []}
for k in range(two_h):
    ts = t0 + 15000 * k
    if k not in missed:
        stages[1].append(("GPU-0", ts))
    elif k // 17 % 2:
        stages[3].append(("GPU-0", ts))  # half of the gaps filled late (stage 3: +15 s each)
    if ts <= t0 + 2 * 3600000 - 10000:
        stages[1].append(("GPU-9", ts))  # up to 23:59:45, and one at 23:59:50
stages[1].append(("GPU-9", t0 + 2 * 3600000 - 10000))
stages[2] = [("GPU-9", t0 + 3 * 3600000 + 15000 * j) for j in range(4)]  # back at 01:00
done = []
for s in (1, 2, 3):
    with open("%s/%d.prom" % (tmp, s), "w") as f:
        for card, ts in stages[s]:
            lab, ns, pod = CARD[card]
            f.write('DCGM_FI_DEV_GPU_UTIL{%s,modelName="NVIDIA H100 80GB HBM3",namespace="%s",'
                    'pod="%s"} 40 %d\n' % (lab, ns, pod, ts))
    done += stages[s]
    with open("%s/%d.all" % (tmp, s), "w") as f:
        f.writelines("%s %s %d\n" % (c, CARD[c][1], ts) for c, ts in sorted(set(done)))
PY
# want S: "tenant microGpuHours" of January after stage S, by the rule
# (worked out once a stage: $TMP/S.all is written once, both stores read it)
want() {
    [ -s "$TMP/want-$1" ] || want_rule "$1" >"$TMP/want-$1"
    cat "$TMP/want-$1"
}
want_rule() {
    python3 - "$TMP/$1.all" "$END" <<'PY'
import sys
end = int(sys.argv[2]) * 1000
owner = {"lab-ns": "lab", "team-ns": "team"}
by = {}
for l in open(sys.argv[1]):
    card, ns, ts = l.split()
    by.setdefault(card, []).append((int(ts), owner[ns]))
num = {}
for pts in by.values():
    pts.sort()
    for (ts, t), (nxt, _) in zip(pts, pts[1:]):
        part = max(0, min(nxt, ts + 30000, end) - ts)
        num[t] = num.get(t, 0) + part * 1000000
for t in sorted(num):
    print(t, (num[t] + 1800000) // 3600000)
PY
}
# got DB: "tenant microGpuHours" from January's invoices (both read by one python3)
got() {
    for t in lab team; do
        "$TESSERA" invoice -f "$TMP/spec.yaml" --db "$1" --tenant $t --period 2026-01 -o json \
            >"$TMP/invoice-$t.json"
    done
    python3 -c 'import json, sys
for t in sys.argv[2:]:
    d = json.load(open(sys.argv[1] % t))
    print(t, sum(l["microGpuHours"] for l in d["lines"]))' "$TMP/invoice-%s.json" lab team
}
# windows DB: the number of windows the aggregate holds
windows() {
    case $1 in
    sqlite:*) sqlite3 "${1#sqlite:}" 'SELECT COUNT(*) FROM agg_periods WHERE done = 1' ;;
    *) psql "$1" -qtAXc 'SELECT COUNT(*) FROM agg_periods WHERE done = 1' ;;
    esac
}
differs() { ! cmp -s "$1" "$2"; }
sql() { case $1 in sqlite:*) sqlite3 "${1#sqlite:}" "$2" ;; *) psql "$1" -qtAXc "$2" ;; esac; }
import() { expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$1" --at "$T0" "$TMP/$2.prom"; }
# stage DB LABEL S: after stage S, the invoices equal the rule, twice
stage() {
    want "$3" >"$TMP/want"
    got "$1" >"$TMP/got1"
    got "$1" >"$TMP/got2"
    check "$2 stage $3: invoices $(paste -sd' ' "$TMP/got1"), by the rule $(paste -sd' ' "$TMP/want")" \
        cmp -s "$TMP/got1" "$TMP/want"
    check "$2 stage $3: a second reading differs" cmp -s "$TMP/got2" "$TMP/want"
    check "$2 stage $3: the aggregate holds $(windows "$1") windows, not 1" [ "$(windows "$1")" = 1 ]
    expect_rc 0 "$TESSERA" invoice -f "$TMP/spec.yaml" --db "$1" --tenant lab --period 2026-01 \
        --verify -o json
}
run() {
    local db=$1 label=$2
    import "$db" 1
    stage "$db" "$label" 1
    cp "$TMP/want" "$TMP/want1"
    import "$db" 2
    stage "$db" "$label" 2
    check "$label: GPU-9's last 10 s of January not billed after it came back" \
        differs "$TMP/want1" "$TMP/want"
    cp "$TMP/want" "$TMP/want2"
    import "$db" 3
    stage "$db" "$label" 3
    check "$label: the late scrapes change nothing billed" differs "$TMP/want2" "$TMP/want"
    "$TESSERA" invoice -f "$TMP/spec.yaml" --db "$db" --tenant lab --period 2026-01 -o json \
        >"$TMP/$label.lab.json"
    # drift: the aggregate edited by hand (one GPU-hour more for lab)
    sql "$db" "UPDATE agg_totals SET alloc_num = CAST(CAST(alloc_num AS BIGINT) + 3600000000000
               AS TEXT) WHERE tenant = 'lab' AND kind = 0" >/dev/null
    got "$db" >"$TMP/edited"
    want 3 | awk '$1 == "lab" { $2 += 1000000 } { print }' >"$TMP/want"
    check "$label: the invoice does not read the aggregate ($(paste -sd' ' "$TMP/edited"))" \
        cmp -s "$TMP/edited" "$TMP/want"
    expect_rc 1 "$TESSERA" invoice -f "$TMP/spec.yaml" --db "$db" --tenant lab --period 2026-01 \
        --verify -o json
    expect_in "$TMP/err" "differs from the samples"
}

run "sqlite:$TMP/s.db" sqlite
if ! URL=$(scripts/pg-test-server start "$PG" "$PORT" 2>"$TMP/start.err"); then
    bad "pg-test-server start failed"; cat "$TMP/start.err"; finish; exit 1
fi
run "$URL" postgresql
check "PostgreSQL's invoice differs from SQLite's" cmp -s "$TMP/sqlite.lab.json" "$TMP/postgresql.lab.json"
finish
