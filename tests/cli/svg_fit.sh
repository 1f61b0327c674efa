#!/bin/bash
# svg_fit.sh - the fleet picture's cell labels are never cut ("...") and fit
# their cells: each label's width, measured with the advance widths of the
# font the picture names (DejaVu Sans, read from the installed TTF files by
# tests/tools/ttf_advance.py, not from tessera's table) at the font size the
# label is drawn in, is at most its cell's width. The worked example and one
# with a 40-character workload name. The time-sliced guest is drawn as a
# (hatched) cell; tenants that use another's pool are shown as its users.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
FONTS=/usr/share/fonts/truetype/dejavu
check "no DejaVu Sans in $FONTS (fonts-dejavu-core)" [ -f $FONTS/DejaVuSans.ttf ]
sed "s/name: summarise-7b-awq/name: summarise-seven-b-awq-with-a-long-name40/" \
    examples/four-h100.yaml >"$TMP/long.yaml"
for spec in examples/four-h100.yaml "$TMP/long.yaml"; do
    expect_rc 0 "$TESSERA" plan -f "$spec" --svg "$TMP/f.svg"
    out=$(PYTHONPATH=tests/tools /usr/bin/python3 - "$TMP/f.svg" $FONTS <<'PY'
import re, sys, xml.etree.ElementTree as ET
from ttf_advance import advances
regular = advances(sys.argv[2] + "/DejaVuSans.ttf")
bold = advances(sys.argv[2] + "/DejaVuSans-Bold.ttf")
base = {"c": (12, bold), "s": (10, regular)}
ns = "{http://www.w3.org/2000/svg}"
els = list(ET.parse(sys.argv[1]).getroot())
rect, n, bad = None, 0, []
for e in els:
    if e.tag == ns + "rect" and "x" in e.attrib:
        rect = e
    elif e.tag == ns + "text" and e.get("class") in base and rect is not None:
        size, font = base[e.get("class")]
        m = re.search(r"font-size:([0-9.]+)px", e.get("style", ""))
        size = float(m.group(1)) if m else size
        w = sum(font(ch) for ch in e.text or "") * size
        cell = float(rect.get("width"))
        cx = float(rect.get("x")) + cell / 2
        n += 1
        if abs(float(e.get("x")) - cx) > 0.2:
            bad.append(f"{e.text!r} not centred on its cell")
        if w > cell:
            bad.append(f"{e.text!r}: {w:.1f} px in a {cell:.1f} px cell")
        if "\u2026" in (e.text or "") or "..." in (e.text or ""):
            bad.append(f"{e.text!r} is cut")
print(n, "; ".join(bad))
PY
)
    check "$spec: labels that do not fit: ${out#* }" [ -z "${out#* }" ]
    check "$spec: no cell labels found ($out)" [ "${out%% *}" -gt 10 ]
done
grep -q "summarise-seven-b-awq-with-a-long-name40 r0" "$TMP/f.svg" && ok || bad "long name cut"

# the time-sliced guest is drawn (a hatched cell with its name), and the tenants
# that only use another's pool are its users in the legend, in the pool owner's colour
/usr/bin/python3 - "$TMP/f.svg" <<'PY' && ok || bad "guest or pool users not drawn"
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
els = list(ET.parse(sys.argv[1]).getroot())
def after(i):
    return [e.text for e in els[i + 1:i + 3] if e.tag == ns + "text"]
guest = [i for i, e in enumerate(els) if e.tag == ns + "rect" and e.get("stroke-dasharray")
         and "platform-dev/notebooks" in after(i)]
assert guest, "no hatched cell for platform-dev/notebooks"
swatch = {}
for i, e in enumerate(els):
    if e.tag == ns + "rect" and e.get("width") == "14":
        swatch[els[i + 1].text] = e.get("fill")
for t in "efgh":
    name = f"rag-{t} uses provider/embedding"
    assert name in swatch, f"no legend entry '{name}'"
    assert swatch[name] == swatch["provider"], f"{name}: {swatch[name]} != {swatch['provider']}"
PY
finish
