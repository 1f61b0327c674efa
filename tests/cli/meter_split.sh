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
# usage_json DB NAME [ARGS]: `tessera usage -o json ARGS` of DB in $TMP/u/NAME.json
usage_json() {
    local db=$1 name=$2
    shift 2
    "$TESSERA" usage -f "$TMP/spec.yaml" --db "$db" -o json "$@" >"$TMP/u/$name.json"
}
CUTS="20 620 1357 2590 3605 4444 5401 7000"
# split DB LABEL: the whole by the rule, and every cut's halves adding up to it.
# The usages are taken first, then judged in one python3: the whole's rows
# "tenant alloc used unknown" (sorted) in $TMP/whole-LABEL, a line
# "cut N ok" or "cut N bad DETAILS" for each cut
split() {
    rm -rf "$TMP/u" && mkdir "$TMP/u"
    usage_json "$1" whole
    for cut in $CUTS; do
        usage_json "$1" "a$cut" --to $((T0 + cut))
        usage_json "$1" "b$cut" --from $((T0 + cut))
    done
    python3 - "$TMP/u" "$TMP/whole-$2" $CUTS >"$TMP/cuts" 2>&1 <<'PY'
import json, sys
d, wholef, cuts = sys.argv[1], sys.argv[2], sys.argv[3:]
def rows(name):  # {tenant: [alloc, used, unknown]}, or None when it is no usage
    try:
        rs = json.load(open("%s/%s.json" % (d, name)))["rows"]
    except Exception as e:
        return None
    return {r["tenant"]: [r["allocationMicroGpuHours"], r["usageMicroGpuHours"],
                          r["unknownUsageMicroGpuHours"]] for r in rs}
whole = rows("whole")
with open(wholef, "w") as f:
    for t in sorted(whole or {}):
        print(t, *whole[t], file=f)
for cut in cuts:
    a, b = rows("a" + cut), rows("b" + cut)
    if whole is None or a is None or b is None:
        print("cut", cut, "bad", "no usage:", "whole" if whole is None else "a" if a is None else "b")
        continue
    bad = [(t, w, a.get(t), b.get(t)) for t, w in whole.items()
           if any(abs(a.get(t, [0] * 3)[i] + b.get(t, [0] * 3)[i] - w[i]) > 1 for i in range(3))]
    print("cut", cut, "bad" if bad else "ok", *bad)
PY
    check "$2: the whole $(paste -sd' ' "$TMP/whole-$2"), by the rule $(paste -sd' ' "$TMP/want")" \
        [ "$(cut -d' ' -f1-3 "$TMP/whole-$2")" = "$(cat "$TMP/want")" ]
    for cut in $CUTS; do
        if grep -qx "cut $cut ok" "$TMP/cuts"; then ok; else
            bad "$2: cut at +${cut}s: the halves do not add up to the whole"
            grep "^cut $cut \|Error" "$TMP/cuts" | head -3
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
# the wholes of both stores, as split took them (nothing was stored since)
check "PostgreSQL's usage differs from SQLite's" cmp -s "$TMP/whole-sqlite" "$TMP/whole-postgresql"
finish
