#!/bin/bash
# render_summary.sh - `tessera render` sums up what it wrote instead of
# listing every file: objects by kind, files per folder, and what changed
# against the tree the folder held (counted here independently: PyYAML over
# the written files, find, and a diff of two fresh renders); -v lists the files.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
EX=examples/four-h100.yaml
D=$TMP/tree

expect_rc 0 "$TESSERA" render -f $EX --out-dir "$D"
cp "$TMP/out" "$TMP/first"
check "render printed $(wc -l <"$TMP/first") lines, expected the 4-line summary" \
    [ "$(wc -l <"$TMP/first")" -eq 4 ]
expect_in "$TMP/first" "rendered $(find "$D" -type f ! -name .tessera-render | wc -l) files into $D"
expect_in "$TMP/first" "changes  none before: $D did not exist"
/usr/bin/python3 - "$D" >"$TMP/want" <<'PY'
import collections, os, sys, yaml
kinds, folders, subs = collections.Counter(), collections.Counter(), collections.defaultdict(set)
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        rel = os.path.relpath(os.path.join(root, f), sys.argv[1])
        parts = rel.split("/")
        if len(parts) > 1:
            folders[parts[0]] += 1
            if len(parts) > 2:
                subs[parts[0]].add(parts[1])
        if f.endswith(".yaml"):
            for doc in yaml.safe_load_all(open(os.path.join(root, f))):
                if isinstance(doc, dict) and "kind" in doc:
                    kinds[doc["kind"]] += 1
print(f"  objects  {sum(kinds.values())}: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
print("  folders  " + ", ".join(
    f"{d}/ {n} files" + (f" in {len(subs[d])} folder{'s' if len(subs[d]) != 1 else ''}" if subs[d] else "")
    for d, n in sorted(folders.items())))
PY
sed -n 2,3p "$TMP/first" >"$TMP/got"
check "summary differs from the files: $(diff "$TMP/want" "$TMP/got" | tr '\n' '|')" \
    cmp -s "$TMP/want" "$TMP/got"

# nothing changed
expect_rc 0 "$TESSERA" render -f $EX --out-dir "$D"
n=$(find "$D" -type f ! -name .tessera-render | wc -l)
expect_in "$TMP/out" "changes  since the last render: 0 changed, 0 added, 0 removed, $n unchanged"

# one tenant's replicas: the change counted against a diff of two fresh renders
awk '/name: client-a/ {a=1} a && /replicas: 2/ {sub(/replicas: 2/, "replicas: 1"); a=0} 1' $EX \
    >"$TMP/ex-1.yaml"
expect_rc 0 "$TESSERA" render -f "$TMP/ex-1.yaml" --out-dir "$TMP/fresh"
expect_rc 0 "$TESSERA" render -f "$TMP/ex-1.yaml" --out-dir "$D" -v
want=$(/usr/bin/python3 - "$TMP/fresh" "$TESSERA_SRC/examples/four-h100.yaml" "$D" <<'PY'
import filecmp, os, subprocess, sys, tempfile
new = sys.argv[1]
old = tempfile.mkdtemp()
subprocess.run([os.environ["TESSERA"], "render", "-f", sys.argv[2], "--out-dir", old + "/t"],
               check=True, stdout=subprocess.DEVNULL)
def files(d):
    return {os.path.relpath(os.path.join(r, f), d) for r, _, fs in os.walk(d) for f in fs
            if f != ".tessera-render"}
a, b = files(old + "/t"), files(new)
changed = sum(1 for f in a & b if not filecmp.cmp(f"{old}/t/{f}", f"{new}/{f}", shallow=False))
print(f"{changed} changed, {len(b - a)} added, {len(a - b)} removed, {len(a & b) - changed} unchanged")
PY
)
expect_in "$TMP/out" "changes  since the last render: $want"
check "the change counted nothing: $want" [ "${want%% *}" != 0 ]
# -v: the summary, then every file written
find "$D" -type f ! -name .tessera-render | sort >"$TMP/files"
tail -n +5 "$TMP/out" | sort >"$TMP/listed"
check "-v lists other files than it wrote: $(diff "$TMP/files" "$TMP/listed" | head -3 | tr '\n' '|')" \
    cmp -s "$TMP/files" "$TMP/listed"
finish
