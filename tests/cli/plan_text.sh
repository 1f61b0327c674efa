#!/bin/bash
# plan_text.sh - the plan as text reads at any width: columns as wide as their
# widest cell (a 40-character workload name does not shift the others), each
# reason wrapped under its row within $COLUMNS (a row itself is as wide as
# its cells: never cut; words intact: the wrapped
# lines joined are the JSON's reason), one line a row with --wide or when no
# width is known (a pipe without $COLUMNS).
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
LONG=summarise-seven-b-awq-with-a-long-name40
check "the long name is not 40 characters" [ ${#LONG} -eq 40 ]
sed "s/name: summarise-7b-awq/name: $LONG/" examples/four-h100.yaml >"$TMP/long.yaml"

for cols in 60 80 120; do
    COLUMNS=$cols expect_rc 0 "$TESSERA" plan -f "$TMP/long.yaml"
    sed -n '/^Decisions$/,/^$/p' "$TMP/out" | sed '1d;$d' >"$TMP/dec-$cols"
    # a reason line fits; a row is as wide as its cells (never cut)
    longest=$(grep '^    ' "$TMP/dec-$cols" | awk '{ if (length($0) > n) n = length($0) } END { print n }')
    check "COLUMNS=$cols: a reason line of $longest columns" [ "$longest" -le $cols ]
    check "COLUMNS=$cols: no reason under the rows" [ "$longest" -gt 20 ]
    check "COLUMNS=$cols: trailing blanks" [ -z "$(grep ' $' "$TMP/dec-$cols")" ]
done

# the columns: each heading starts where its cells start, on every row
/usr/bin/python3 - "$TMP/dec-80" "$LONG" <<'PY' && ok || bad "columns not aligned"
import sys
lines = open(sys.argv[1]).read().splitlines()
head, rows = lines[0], [l for l in lines[1:] if not l.startswith("    ")]
starts = [head.index(h) for h in ("TENANT", "WORKLOAD", "MECHANISM", "PROFILE", "GPU MODEL", "RULE")]
assert any(sys.argv[2] in r for r in rows), "the long name is missing"
for r in rows:
    for s in starts[1:]:
        assert r[s - 1] == " " and r[s] != " ", f"row {r!r} not aligned at {s}"
PY

# the wrapped reasons, joined, are the JSON's reasons, in order
expect_rc 0 "$TESSERA" plan -f "$TMP/long.yaml" -o json
/usr/bin/python3 - "$TMP/dec-60" "$TMP/out" <<'PY' && ok || bad "wrapped reasons differ from the JSON's"
import json, sys
reasons, cur = [], None
for l in open(sys.argv[1]).read().splitlines()[1:]:
    if l.startswith("    "):
        cur.append(l[4:])
    else:
        cur = []
        reasons.append(cur)
got = [" ".join(r) for r in reasons]
want = [d["reason"] for d in json.load(open(sys.argv[2]))["decisions"]]
assert got == want, (got[:1], want[:1])
PY

# --wide, and a pipe without COLUMNS: one line a row, the reason last
n=$(/usr/bin/python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["decisions"]))' "$TMP/out")
for how in wide pipe; do
    if [ $how = wide ]; then COLUMNS=60 expect_rc 0 "$TESSERA" plan -f "$TMP/long.yaml" --wide
    else (unset COLUMNS; expect_rc 0 "$TESSERA" plan -f "$TMP/long.yaml"); fi
    rows=$(sed -n '/^Decisions$/,/^$/p' "$TMP/out" | sed '1,2d;$d' | wc -l)
    check "$how: $rows decision lines, expected $n" [ "$rows" -eq "$n" ]
    expect_in "$TMP/out" "RULE REASON"
done
expect_rc 0 "$TESSERA" plan --help
expect_in "$TMP/out" "--wide"
finish
