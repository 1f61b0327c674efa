#!/bin/bash
# labels: slow
# meter_split.sh - periods split anywhere add up to the whole on shared
# cards whose pods come and go (issue 14), on SQLite and a real PostgreSQL.
# Two hours of 15 s scrapes, some missed: lab's planned card lists lab's pod
# and, now and then, team's intruder (a pod's own next point up to 75 s
# away); an unplanned card lists one or two pods of either tenant. The
# whole is checked against the rule worked out here (each pod's point billed
# 1/N of the card up to its card's next scrape, at most 30 s), and usage
# split at times inside intervals, where a pod's own next point lies beyond
# what the split reads, must add up to it on each row (each half rounded to
# the micro-GPU-hour: within 1).
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
PG="$TMP/pg"
PORT=$(free_port)
trap 'scripts/pg-test-server stop "$PG" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
T0=1767225600 # 2026-01-01T00:00:00Z

cp "$TESSERA_FIXTURES/meter/lab-team.yaml" "$TMP/spec.yaml"

# the history, and the whole's rows "tenant alloc used" by the rule
python3 - "$TMP/churn.prom" "$T0" >"$TMP/want" <<'PY'
import sys
out, t0 = sys.argv[1], int(sys.argv[2]) * 1000
H100 = 'modelName="NVIDIA H100 80GB HBM3"'
cards = {"GPU-0": ('gpu="0",UUID="GPU-0",Hostname="n1"', [("lab-ns", "own")]),
         "GPU-9": ('gpu="0",UUID="GPU-9",Hostname="n9"', [])}
OWNER = {"lab-ns": "lab", "team-ns": "team"}
def pods(card, k):
    if card == "GPU-0":  # lab's pod always, team's intruder in bursts, gone 4 scrapes
        return [("lab-ns", "own")] + ([("team-ns", "in")] if k % 9 in (0, 5, 6) else [])
    return [p for p, on in ((("lab-ns", "a"), k % 7 < 3), (("team-ns", "b"), k % 5 != 1)) if on]
lines, scrapes = [], {c: [] for c in cards}
for k in range(480):
    if k % 13 == 4:
        continue  # a missed scrape: the gap capped at 30 s
    ts = t0 + 15000 * k
    for c, (lab, _) in cards.items():
        ps = pods(c, k)
        if ps:
            scrapes[c].append((ts, ps))
        for ns, pod in ps:
            lines.append('DCGM_FI_DEV_GPU_UTIL{%s,%s,namespace="%s",pod="%s"} 40 %d'
                         % (lab, H100, ns, pod, ts))
open(out, "w").write("\n".join(lines) + "\n")
alloc = {}
for c, ss in scrapes.items():
    for (ts, ps), (nxt, _) in zip(ss, ss[1:]):
        for ns, _ in ps:
            t = OWNER[ns]
            alloc[t] = alloc.get(t, 0) + min(nxt - ts, 30000) * (1000000 // len(ps))
for t in sorted(alloc):
    print(t, (alloc[t] + 1800000) // 3600000, (alloc[t] * 4 // 10 + 1800000) // 3600000)
PY
# rows DB [ARGS]: "tenant alloc used unknown", one a line, sorted
rows() {
    local db=$1; shift
    "$TESSERA" usage -f "$TMP/spec.yaml" --db "$db" -o json "$@" | python3 -c '
import json, sys
for r in sorted(json.load(sys.stdin)["rows"], key=lambda r: r["tenant"]):
    print(r["tenant"], r["allocationMicroGpuHours"], r["usageMicroGpuHours"], r["unknownUsageMicroGpuHours"])'
}
# split DB LABEL: the whole by the rule, and every cut's halves adding up to it
split() {
    rows "$1" >"$TMP/whole"
    check "$2: the whole $(paste -sd' ' "$TMP/whole"), by the rule $(paste -sd' ' "$TMP/want")" \
        [ "$(cut -d' ' -f1-3 "$TMP/whole")" = "$(cat "$TMP/want")" ]
    for cut in 20 620 1357 2590 3605 4444 5401 7000; do
        rows "$1" --to $((T0 + cut)) >"$TMP/a"
        rows "$1" --from $((T0 + cut)) >"$TMP/b"
        if ! python3 - "$TMP/whole" "$TMP/a" "$TMP/b" <<'PY'; then
import sys
whole, a, b = ({l.split()[0]: [int(x) for x in l.split()[1:]] for l in open(f)} for f in sys.argv[1:])
bad = [(t, w, a.get(t), b.get(t)) for t, w in whole.items()
       if any(abs(a.get(t, [0] * 3)[i] + b.get(t, [0] * 3)[i] - w[i]) > 1 for i in range(3))]
print(*bad)
sys.exit(1 if bad else 0)
PY
            bad "$2: cut at +${cut}s: the halves do not add up to the whole"
        else
            ok
        fi
    done
}

expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "sqlite:$TMP/s.db" --at "$T0" "$TMP/churn.prom"
split "sqlite:$TMP/s.db" sqlite

if ! URL=$(scripts/pg-test-server start "$PG" "$PORT" 2>"$TMP/start.err"); then
    bad "pg-test-server start failed"; cat "$TMP/start.err"; finish; exit 1
fi
expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db "$URL" --at "$T0" "$TMP/churn.prom"
split "$URL" postgresql
rows "sqlite:$TMP/s.db" >"$TMP/s.rows"
rows "$URL" >"$TMP/p.rows"
check "PostgreSQL's usage differs from SQLite's" cmp -s "$TMP/s.rows" "$TMP/p.rows"
finish
