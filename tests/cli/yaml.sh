#!/bin/bash
# yaml.sh - `-o yaml` wherever `-o json` exists (plan, usage, invoice, ledger
# history and export; agent inventory and fight share the same writer): the
# YAML, read back by PyYAML, is the same data as the JSON, read by Python's
# json, including strings a YAML reader would otherwise take for booleans,
# numbers or null; and a verb given a format it has not (invoice -o pdf) says
# which formats it has.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
EX=examples/four-h100.yaml

# same FILE.json FILE.yaml: the two documents hold the same data
same() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys, yaml
j = json.load(open(sys.argv[1]))
y = yaml.safe_load(open(sys.argv[2]))
if j != y:
    def walk(a, b, path):
        if type(a) != type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
            print(f"{path}: json {a!r} yaml {b!r}"); return True
        if isinstance(a, dict):
            return any(walk(a.get(k), b.get(k), f"{path}.{k}") for k in set(a) | set(b))
        if isinstance(a, list):
            return len(a) != len(b) and print(f"{path}: lengths") or any(
                walk(x, z, f"{path}[{i}]") for i, (x, z) in enumerate(zip(a, b)))
        if a != b:
            print(f"{path}: json {a!r} yaml {b!r}"); return True
    walk(j, y, "$")
    sys.exit(1)
PY
}

# compare NAME CMD...: CMD -o json and CMD -o yaml give the same data
compare() {
    local name=$1; shift
    expect_rc 0 "$@" -o json
    cp "$TMP/out" "$TMP/$name.json"
    expect_rc 0 "$@" -o yaml
    cp "$TMP/out" "$TMP/$name.yaml"
    check "$name: -o yaml is JSON text, not YAML" [ "$(head -c1 "$TMP/$name.yaml")" != "{" ]
    check "$name: -o yaml and -o json differ: $(same "$TMP/$name.json" "$TMP/$name.yaml")" \
        same "$TMP/$name.json" "$TMP/$name.yaml"
}

compare plan "$TESSERA" plan -f $EX

# usage and invoice on a small store
F=tests/fixtures/dcgm/nvidia-dcgm-exporter-issue512-h100-80gb-hbm3-mig-1g10gb-pods.prom
DB=sqlite:$TMP/m.db
cat "$TESSERA_FIXTURES/meter/lab.yaml" "$TESSERA_FIXTURES/meter/lab-prices.yaml" >"$TMP/spec.yaml"
for t in 1700000000 1700000015 1700000030; do
    expect_rc 0 "$TESSERA" meter import -f "$TMP/spec.yaml" --db $DB --at $t $F
done
compare usage "$TESSERA" usage -f "$TMP/spec.yaml" --db $DB
compare invoice "$TESSERA" invoice -f "$TMP/spec.yaml" --db $DB --tenant lab --period 2023-11

# the ledger, with workload names a YAML 1.1 reader would turn into other types
L=sqlite:$TMP/l.db
n=0
for w in yes on null 0x1F 1:30 1e3 .inf "~" "- x" "#c" "a: b" "007" ""; do
    n=$((n + 1))
    expect_rc 0 "$TESSERA" ledger record --db $L --tenant lab --gpu-uuid GPU-$n \
        --workload "$w" --at $((1700000000 + n))
done
compare export "$TESSERA" ledger export --db $L
compare history "$TESSERA" ledger history --db $L --tenant lab
check "the ledger's export lost workload names" grep -q '"0x1F"' "$TMP/export.yaml"

# formats are named when a verb is given one it has not
expect_rc 2 "$TESSERA" plan -f $EX -o xml
expect_in "$TMP/err" "text, json or yaml"
expect_rc 2 "$TESSERA" usage -f "$TMP/spec.yaml" --db $DB -o xml
expect_in "$TMP/err" "text, json or yaml"
expect_rc 2 "$TESSERA" invoice -f "$TMP/spec.yaml" --db $DB --tenant lab --period 2023-11 -o pdf
expect_in "$TMP/err" "no format 'pdf': -o is text, csv, json, yaml or html (no PDF writer"
expect_rc 2 "$TESSERA" ledger export --db $L -o xml
expect_in "$TMP/err" "csv, json or yaml"
for verb in plan usage invoice fight "agent inventory" "ledger history"; do
    expect_rc 0 "$TESSERA" $verb --help
    expect_in "$TMP/out" "yaml"
done
finish
