#!/bin/bash
# meter_invoice.sh - the invoice's money and layout, checked against figures
# computed here (Python's decimal, ROUND_HALF_EVEN), not against what it
# printed before:
#  - every line is rounded to the currency's minor unit once, half to even,
#    and the lines add up to the total exactly, in text, CSV and JSON, on
#    a case where rounding only the sum (or printing lines to six decimals)
#    would drift by a cent; a 1.445 line goes to 1.44 (not half up);
#  - JPY has no decimals; a currency without a known minor unit is refused
#    (exit 2) naming the PriceBook field and its place;
#  - the HTML page (Python's html.parser) carries the provider's and the
#    tenant's display names, the invoice number, the period and issue dates,
#    the currency on every line, both totals, a print style, and nothing
#    that fetches or runs.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
DB=$TMP/i.db
spec() { # currency, h100 price, l40s price
    cat > "$TMP/spec-$1.yaml" <<YAML
apiVersion: tessera.dev/v1alpha1
kind: Fleet
metadata: {name: f}
spec:
  nodes:
  - {name: n1, gpus: [{model: h100-80gb-sxm, count: 3}]}
  - {name: n2, gpus: [{model: l40s, count: 1}]}
---
apiVersion: tessera.dev/v1alpha1
kind: Tenant
metadata: {name: lab}
spec:
  displayName: The <Lab> & "Co"
  contract: shared-trusted
  namespaces: [lab-ns]
---
apiVersion: tessera.dev/v1alpha1
kind: PriceBook
metadata: {name: p}
spec:
  displayName: GPU Cloud 'Nord'
  currency: $1
  prices: [{model: h100-80gb-sxm, perGpuHour: "$2"}, {model: l40s, perGpuHour: "$3"}]
YAML
}
spec EUR 2.91 2.89
spec JPY 250 251
spec ABC 1 1
# an empty store with tessera's schema, then one hour of four devices at half a card,
# 40% engine-active: three H100 MIG profiles (3 lines of 1.455) and an L40S (1.445)
expect_rc 0 "$TESSERA" ledger record --db "sqlite:$DB" --tenant lab --gpu-uuid GPU-0 \
    --at 1700000000
python3 - "$DB" <<'PY'
import sqlite3, sys
sys.path.insert(0, "tests/tools")
from stored_samples import put_sample
db = sqlite3.connect(sys.argv[1])
rows = [("GPU-a", "h100-80gb-sxm", "1g.10gb"), ("GPU-b", "h100-80gb-sxm", "2g.20gb"),
        ("GPU-c", "h100-80gb-sxm", "3g.40gb"), ("GPU-d", "l40s", "")]
for dev, model, prof in rows:
    for t in (1700000000000, 1700003600000):
        put_sample(db, "n1", dev, t, model, prof, "lab", "lab-ns", "pod", 500000, 400000)
db.commit()
PY
I() { "$TESSERA" invoice -f "$TMP/spec-$1.yaml" --db "sqlite:$DB" --tenant lab \
    --period 2023-11 --interval 1h "${@:2}"; }

# ---- JSON, CSV, text: lines rounded half-even once, summing to the total ------
expect_rc 0 I EUR -o json
cp "$TMP/out" "$TMP/eur.json"
expect_rc 0 I EUR -o csv
cp "$TMP/out" "$TMP/eur.csv"
expect_rc 0 I EUR
cp "$TMP/out" "$TMP/eur.txt"
python3 - "$TMP/eur.json" "$TMP/eur.csv" "$TMP/eur.txt" >"$TMP/py.out" 2>&1 <<'PY'
import csv, json, re, sys
from decimal import Decimal as D, ROUND_HALF_EVEN, ROUND_HALF_UP
cent = D("0.01")
price = {"h100-80gb-sxm": D("2.91"), "l40s": D("2.89")}
# one hour at half a card; 40% of it engine-active
want = {m: (D("0.5") * p).quantize(cent, ROUND_HALF_EVEN) for m, p in price.items()}
want_use = {m: (D("0.2") * p).quantize(cent, ROUND_HALF_EVEN) for m, p in price.items()}
assert want["h100-80gb-sxm"] == D("1.46") and want["l40s"] == D("1.44")  # half to even
total = 3 * want["h100-80gb-sxm"] + want["l40s"]
exact = (3 * D("0.5") * price["h100-80gb-sxm"] + D("0.5") * price["l40s"])
assert total == D("5.82") and exact.quantize(cent, ROUND_HALF_UP) == D("5.81")  # the drift
inv = json.load(open(sys.argv[1]))
assert inv["currency"] == "EUR" and inv["currencyExponent"] == 2, inv
assert len(inv["lines"]) == 4, inv["lines"]
for l in inv["lines"]:
    assert l["microGpuHours"] == 500000 and l["usedMicroGpuHours"] == 200000, l
    assert D(l["amountMinor"]) / 100 == want[l["model"]], l
    assert D(l["usageAmountMinor"]) / 100 == want_use[l["model"]], l
assert inv["totalMinor"] == sum(l["amountMinor"] for l in inv["lines"]) == 582, inv
assert inv["usageTotalMinor"] == sum(l["usageAmountMinor"] for l in inv["lines"]), inv
assert inv["usageTotalMinor"] == 100 * (3 * want_use["h100-80gb-sxm"] + want_use["l40s"]), inv
assert "totalCents" not in inv, inv
assert inv["tenantDisplayName"] == 'The <Lab> & "Co"', inv
assert inv["providerDisplayName"] == "GPU Cloud 'Nord'", inv
assert (inv["periodStart"], inv["periodEnd"]) == ("2023-11-01", "2023-11-30"), inv
rows = list(csv.DictReader(open(sys.argv[2], newline="")))
assert len(rows) == 4, rows
assert sum(D(r["amount"]) for r in rows) == total, rows
assert all(D(r["amount"]) == want[r["model"]] for r in rows), rows
assert all(re.fullmatch(r"\d+\.\d\d", r["amount"] + "") for r in rows), rows
assert all(D(r["usage_amount"]) == want_use[r["model"]] for r in rows), rows
text = open(sys.argv[3]).read()
amounts = re.findall(r" (\d+\.\d\d)\n", text)
assert [D(a) for a in amounts] == sorted([want["h100-80gb-sxm"]] * 3 + [want["l40s"]],
                                          reverse=True), text
assert f"Total (allocation basis, billed): {total} EUR" in text, text
assert "ALLOCATED GPU-h" in text and "USED GPU-h" in text and "RATE /GPU-h" in text, text
assert "0.500000" in text and "2.91" in text and "1.455" not in text, text
assert "Usage basis (showback):           %s EUR" % (3 * want_use["h100-80gb-sxm"]
                                                    + want_use["l40s"]) in text, text
print("ok")
PY
check "EUR: $(cat "$TMP/py.out")" grep -qx ok "$TMP/py.out"

# ---- JPY: no decimals ---------------------------------------------------------
expect_rc 0 I JPY -o json
python3 - "$TMP/out" >"$TMP/py.out" 2>&1 <<'PY'
import json, sys
inv = json.load(open(sys.argv[1]))
assert inv["currency"] == "JPY" and inv["currencyExponent"] == 0, inv
# 0.5 h x 250 = 125; 0.5 h x 251 = 125.5 -> 126 (half to even); usage 0.2 h: 50, 50.2 -> 50
got = sorted((l["amountMinor"], l["usageAmountMinor"]) for l in inv["lines"])
assert got == [(125, 50), (125, 50), (125, 50), (126, 50)], got
assert inv["totalMinor"] == 501 and inv["usageTotalMinor"] == 200, inv
print("ok")
PY
check "JPY: $(cat "$TMP/py.out")" grep -qx ok "$TMP/py.out"
expect_rc 0 I JPY
expect_in "$TMP/out" "Total (allocation basis, billed): 501 JPY"
check "JPY text has no decimal amounts: $(grep -E '[0-9]\.[0-9]{2} *$' "$TMP/out")" \
    sh -c "! grep -qE ' [0-9]+\.[0-9]+\$' '$TMP/out'"
expect_rc 0 I JPY -o csv
check "JPY CSV amounts are whole yen" sh -c "cut -d, -f9,10 '$TMP/out' | tail -n +2 | \
    grep -qvE '^[0-9]+,[0-9]+\$' && false || true"
expect_in "$TMP/out" ",125,50"

# ---- a currency without a known minor unit is bad input, named --------------
expect_rc 2 I ABC
expect_in "$TMP/err" "spec-ABC.yaml:"
expect_in "$TMP/err" "PriceBook/p.spec.currency: 'ABC'"

# ---- HTML: the layout's fields, print style, nothing fetched or run ----------
expect_rc 0 I EUR -o html
cp "$TMP/out" "$TMP/eur.html"
python3 - "$TMP/eur.html" >"$TMP/py.out" 2>&1 <<'PY'
import datetime, sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.style, self.fields = set(), [], "", {}
        self.path, self.rows, self.cell, self.term = [], {}, None, None
    def handle_starttag(self, tag, attrs):
        self.tags.add(tag); self.attrs += attrs
        if tag in ("thead", "tbody", "tfoot", "style"):
            self.path.append(tag); self.rows.setdefault(tag, []); self.cell = None
        if tag == "tr":
            self.rows[self.path[-1]].append([])
        if tag in ("td", "th"):
            self.rows[self.path[-1]][-1].append(""); self.cell = True
        if tag in ("dt", "dd"):
            self.cell = None; self.term = (tag, "")
    def handle_endtag(self, tag):
        if tag == "tr":
            self.cell = None
        if tag in ("thead", "tbody", "tfoot", "style"):
            self.path.pop()
    def handle_data(self, d):
        if self.path and self.path[-1] == "style":
            self.style += d
        elif self.cell and self.path:
            self.rows[self.path[-1]][-1][-1] += d.strip()
        elif self.term:
            kind, text = self.term
            self.term = (kind, text + d)
            if kind == "dt":
                self.key = (text + d)
            else:
                self.fields[self.key] = (text + d).strip()
p = P(); p.feed(open(sys.argv[1], encoding="utf-8").read())
f = p.fields
num = 2166136261
for b in b"lab":
    num = ((num ^ b) * 16777619) % 2**32
assert f["Invoice number"] == "TS-202311-%08X" % num, f
assert f["From"] == "GPU Cloud 'Nord'", f
assert f["To"] == 'The <Lab> & "Co"', f
assert f["Period"] == "2023-11-01 to 2023-11-30", f
today = datetime.datetime.now(datetime.timezone.utc).date()
assert f["Issued"] in (str(today), str(today - datetime.timedelta(days=1))), f
body = p.rows["tbody"]
assert len(body) == 4 and all(r[5] == "EUR" for r in body), body
assert sorted(r[6] for r in body) == ["1.44", "1.46", "1.46", "1.46"], body
(foot,) = p.rows["tfoot"]
assert foot[5:] == ["EUR", "5.82", "2.32"], foot  # allocation total, usage-basis total
assert "@media print" in p.style, p.style
assert "script" not in p.tags and "link" not in p.tags and "img" not in p.tags, p.tags
assert p.attrs == [("charset", "utf-8")], p.attrs
assert "url(" not in p.style and "@import" not in p.style, p.style
print("ok")
PY
check "HTML: $(cat "$TMP/py.out")" grep -qx ok "$TMP/py.out"
expect_rc 2 I EUR -o pdf
expect_in "$TMP/err" "-o is text, csv, json, yaml or html"
finish
