#!/bin/bash
# meter_hostile.sh - text taken from scrapes and from ledger arguments stays
# text in every output. A store holding hostile label values (an HTML
# payload, a spreadsheet formula, a newline and a terminal escape, bytes that
# are not UTF-8: written before the parser checked UTF-8, or by an older
# tessera) is read by usage and invoice in each format:
#  - JSON keeps every row (invalid bytes as \xNN) and its hours add up to the
#    usage total; the invoice JSON's lines are the usage rows of the tenant;
#  - CSV parses (Python's csv module) to exactly one record per line, with
#    formulas neutralised by a leading apostrophe;
#  - HTML parses (Python's html.parser) to no element but the page's own,
#    the payload shows as text; when Debian's chromium is installed, the
#    page is loaded headless and its title is unchanged by the payload;
#  - text tables and ledger history: one line per row, control bytes \xNN;
#  - a custody violation's stderr line with a pod name holding "\n" is one
#    line.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
DB=$TMP/h.db
cat "$TESSERA_FIXTURES/meter/lab.yaml" "$TESSERA_FIXTURES/meter/lab-prices.yaml" >"$TMP/spec.yaml"
# an empty store with tessera's schema, then the hostile rows put in directly
expect_rc 0 "$TESSERA" ledger record --db "sqlite:$DB" --tenant lab --gpu-uuid GPU-0 \
    --at 1700000000
python3 - "$DB" <<'PY'
import sqlite3, sys
sys.path.insert(0, "tests/tools")
from stored_samples import put_sample
db = sqlite3.connect(sys.argv[1])
rows = [  # device, model, profile (bytes: any)
    (b"GPU-a", b"NVIDIA H100 80GB HBM3", b'<img src=x onerror="document.title=\'pwned\'">'),
    (b"GPU-b", b"NVIDIA H100 \xff\xfe", b"1g.10gb"),
    (b"GPU-c", b'=HYPERLINK("http://e.example/","x")', b"-2+3"),
    (b"GPU-d", b"line1\nFORGED line", b"\x1b[31mred"),
]
for dev, model, prof in rows:
    for i in range(3):  # 0, 15, 30 s: 30 s charged per device
        put_sample(db, b"n1", dev, 1700000000000 + 15000 * i, model, prof, "lab", "ns", "pod",
                   1000000, 500000)
db.commit()
PY
U() { "$TESSERA" usage -f "$TMP/spec.yaml" --db "sqlite:$DB" "$@"; }
I() { "$TESSERA" invoice -f "$TMP/spec.yaml" --db "sqlite:$DB" --tenant lab --period 2023-11 "$@"; }

# ---- JSON: no row dropped, totals are the sum of the rows ------------------
expect_rc 0 U -o json
cp "$TMP/out" "$TMP/usage.json"
expect_rc 0 I -o json
cp "$TMP/out" "$TMP/invoice.json"
python3 - "$TMP/usage.json" "$TMP/invoice.json" >"$TMP/py.out" 2>&1 <<'PY'
import json, sys
u = json.load(open(sys.argv[1]))["rows"]
inv = json.load(open(sys.argv[2]))
assert len(u) == 4, u
models = sorted(r["model"] for r in u)
assert "NVIDIA H100 \\xff\\xfe" in models, models
assert "line1\nFORGED line" in models, models
each = 30 * 10**6 // 3600  # 30 s of a whole card, micro-GPU-hours
assert all(r["allocationMicroGpuHours"] == each for r in u), u
assert len(inv["lines"]) == 4, inv["lines"]
assert sum(l["microGpuHours"] for l in inv["lines"]) == 4 * each, inv
from decimal import Decimal, ROUND_HALF_EVEN  # each line rounded once, half to even
priced = [l for l in inv["lines"] if l["pricePerGpuHourMicro"] >= 0]
assert all(l["amountMinor"] is None for l in inv["lines"] if l not in priced), inv
assert inv["totalMinor"] == sum(int((Decimal(l["microGpuHours"] * l["pricePerGpuHourMicro"])
                                     / 10**10).quantize(1, ROUND_HALF_EVEN))
                                for l in priced), inv
print("ok")
PY
check "JSON: $(cat "$TMP/py.out")" grep -qx ok "$TMP/py.out"

# ---- CSV: RFC 4180, one record a line, formulas neutralised -----------------
expect_rc 0 I -o csv
cp "$TMP/out" "$TMP/invoice.csv"
python3 - "$TMP/invoice.csv" >"$TMP/py.out" 2>&1 <<'PY'
import csv, sys
raw = open(sys.argv[1], newline="", encoding="utf-8").read()
assert raw.count("\r\n") == 5 and "\n" not in raw.replace("\r\n", ""), repr(raw)
rows = list(csv.reader(raw.splitlines()))
assert len(rows) == 5 and all(len(r) == 11 for r in rows), rows
for r in rows[1:]:
    for f in r:
        assert f[:1] not in ("=", "+", "-", "@", "\t", "\r"), r
by_model = {r[3]: r for r in rows[1:]}
assert "'=HYPERLINK(\"http://e.example/\",\"x\")" in by_model, by_model
assert by_model["'=HYPERLINK(\"http://e.example/\",\"x\")"][4] == "'-2+3", by_model
assert "line1\\x0aFORGED line" in by_model, by_model
print("ok")
PY
check "CSV: $(cat "$TMP/py.out")" grep -qx ok "$TMP/py.out"

# ---- HTML: the payload is text ------------------------------------------------
expect_rc 0 I -o html
cp "$TMP/out" "$TMP/invoice.html"
python3 - "$TMP/invoice.html" >"$TMP/py.out" 2>&1 <<'PY'
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    tags, attrs, text = set(), [], []
    def handle_starttag(self, tag, attrs):
        self.tags.add(tag); self.attrs += attrs
    def handle_data(self, d):
        self.text.append(d)
p = P(); p.feed(open(sys.argv[1], encoding="utf-8").read())
assert p.tags <= {"meta", "title", "style", "h1", "dl", "dt", "dd", "table", "thead", "tbody",
                  "tfoot", "tr", "th", "td", "p"}, p.tags
assert p.attrs == [("charset", "utf-8")], p.attrs
assert '<img src=x onerror="document.title=\'pwned\'">' in p.text, p.text
print("ok")
PY
check "HTML: $(cat "$TMP/py.out")" grep -qx ok "$TMP/py.out"
# Debian's chromium (scripts/install-deps check) opens the page: no script ran
check "chromium is installed (scripts/install-deps check)" command -v chromium
timeout 60 chromium --headless --no-sandbox --disable-gpu --dump-dom \
    "file://$TMP/invoice.html" >"$TMP/dom.html" 2>/dev/null || true
expect_in "$TMP/dom.html" "<title>Invoice lab</title>"
if grep -q "<img" "$TMP/dom.html"; then bad "chromium: the payload became an element"; else ok; fi

# ---- text: one line per row, control bytes escaped ---------------------------
expect_rc 0 U
check "usage text: $(wc -l <"$TMP/out") lines, expected 5" [ "$(wc -l <"$TMP/out")" -eq 5 ]
expect_in "$TMP/out" 'line1\x0aFORGED line'
expect_in "$TMP/out" '\x1b[31mred'
expect_in "$TMP/out" 'NVIDIA H100 \xff\xfe'
expect_rc 0 I
check "invoice text: $(wc -l <"$TMP/out") lines, expected 11" [ "$(wc -l <"$TMP/out")" -eq 11 ]
expect_in "$TMP/out" 'line1\x0aFORGED line'

# ---- ledger: history text one line per entry; JSON export keeps bad bytes ----
expect_rc 0 "$TESSERA" ledger record --db "sqlite:$DB" --tenant lab --gpu-uuid GPU-1 \
    --workload $'w\n2 2023-11-14T22:13:20Z FORGED' --node $'n\x1b[2J\xff' --at 1700000001
expect_rc 0 "$TESSERA" ledger history --db "sqlite:$DB" --tenant lab
check "history: $(wc -l <"$TMP/out") lines, expected 3" [ "$(wc -l <"$TMP/out")" -eq 3 ]
expect_in "$TMP/out" 'w\x0a2 2023-11-14T22:13:20Z FORGED'
expect_rc 0 "$TESSERA" ledger export --db "sqlite:$DB" -o json
expect_in "$TMP/out" '"node": "n\u001B[2J\\xff"'
expect_rc 0 "$TESSERA" ledger who --db "sqlite:$DB" --instance GPU-1 --at 1700000002
expect_in "$TMP/out" 'w\x0a2 2023-11-14T22:13:20Z FORGED'

# ---- stderr: a violation naming a pod with a newline is one line ---------------
cp "$TESSERA_FIXTURES/meter/custody.yaml" "$TMP/cust.yaml"
L='gpu="0",UUID="GPU-c",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",GPU_I_PROFILE="3g.40gb",GPU_I_ID="2"'
printf 'DCGM_FI_DEV_GPU_UTIL{%s,namespace="other-ns",pod="p\\nFORGED line"} 40\n' "$L" \
    >"$TMP/intruder.prom"
expect_rc 0 "$TESSERA" meter import -f "$TMP/cust.yaml" --db "sqlite:$TMP/v.db" \
    --at 1700000015 "$TMP/intruder.prom"
expect_in "$TMP/err" "custody violation: GPU-c/2 on 3g.40gb (node n1) at 2023-11-14T22:13:35Z: pod other-ns/p\\x0aFORGED line of tenant 'other'"
check "a raw newline reached stderr: $(cat "$TMP/err")" [ "$(wc -l <"$TMP/err")" -eq 1 ]
finish
