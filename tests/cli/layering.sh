#!/bin/bash
# layering.sh - the modules depend one way, as docs/ARCHITECTURE.md says:
#   1. the "Modules" table (module -> may use) equals the DEPS CMake declares
#      (build/modules.txt) and the private link edges of `cmake --graphviz`;
#   2. every #include "mod/..." in src/ names the module itself or one below
#      it (its chain in the table); the shim may include util only;
#   3. in a scratch copy of the tree, a module builds, and the same module
#      with one upward include (and one sideways include) fails to build with
#      the header not found.
. "$(dirname "$0")/../lib.sh"
SRC=${TESSERA_SRC:?}
BUILD=$(dirname "$TESSERA")

# "module: dep dep" lines from the ARCHITECTURE.md table, sorted deps.
doc_table() {
    awk -F'|' '/^## Modules/{on=1} /^## Layering/{on=0}
        on && /^\| [a-z]+ \| `/ {
            m=$2; d=$4; gsub(/ /,"",m); gsub(/,/," ",d); print m ":" d }' \
        "$SRC/docs/ARCHITECTURE.md" | normalise
}
# sort each line's deps so "a: c b" equals "a: b c"
normalise() {
    while IFS=: read -r m deps; do
        echo "$m: $(echo $deps | tr ' ' '\n' | sed '/^$/d' | sort | tr '\n' ' ' | sed 's/ $//')"
    done | sort
}

doc_table > "$TMP/doc"
normalise < "$BUILD/modules.txt" > "$TMP/cmake"
check "ARCHITECTURE.md lists no module" test -s "$TMP/doc"
if diff "$TMP/doc" "$TMP/cmake" > "$TMP/diff"; then ok; else
    bad "docs/ARCHITECTURE.md's module table differs from CMakeLists.txt (< doc, > cmake)"
    cat "$TMP/diff"
fi

# 1b. the link edges CMake generated, from a fresh configure of a copy.
SCRATCH="$TMP/tree"
mkdir -p "$SCRATCH"
cp -r "$SRC/CMakeLists.txt" "$SRC/cmake" "$SRC/src" "$SCRATCH/"
mkdir -p "$SCRATCH/tests" "$SCRATCH/fuzz"
: > "$SCRATCH/tests/CMakeLists.txt"
cmake -S "$SCRATCH" -B "$SCRATCH/b" -G Ninja --graphviz="$TMP/g.dot" > "$TMP/cfg.log" 2>&1
check "configuring a copy of the tree failed: $(tail -3 "$TMP/cfg.log")" test -f "$TMP/g.dot"
# (tessera_all, the interface target of every module, is not a module)
sed -n 's|.*// tessera_\([a-z]*\) -> tessera_\([a-z]*\)$|\1 \2|p' "$TMP/g.dot" | sort -u |
    grep -v '^all ' |
    awk '{d[$1]=d[$1] " " $2} END {for (m in d) print m ":" d[m]}' | normalise > "$TMP/links"
# modules without module deps (util) have no edge: compare only those with deps
grep -v ': *$' "$TMP/cmake" > "$TMP/cmake_deps"
if diff "$TMP/cmake_deps" "$TMP/links" > "$TMP/diff"; then ok; else
    bad "CMake's link edges differ from build/modules.txt (< declared, > linked)"
    cat "$TMP/diff"
fi

# 2. every include within the module's chain.
declare -A DEPS CHAIN
while IFS=: read -r m deps; do DEPS[$m]=$deps; done < "$TMP/doc"
chain() {
    local out="$1" d
    for d in ${DEPS[$1]}; do out="$out $(chain "$d")"; done
    echo "$out"
}
for m in "${!DEPS[@]}"; do CHAIN[$m]=" $(chain "$m" | tr ' ' '\n' | sort -u | tr '\n' ' ') "; done
CHAIN[shim]=" shim util "
CHAIN[cli]=" cli ${!DEPS[*]} "
for dir in "$SRC"/src/*/; do
    m=$(basename "$dir")
    if [ -z "${CHAIN[$m]:-}" ]; then bad "src/$m is in no row of ARCHITECTURE.md's table"; continue; fi
    while IFS=: read -r file line inc; do
        # the module an include names, read by bash (not a sed a line: 589 lines)
        [[ $inc =~ .*'#include "'([a-z_]*)/ ]] || continue
        used=${BASH_REMATCH[1]}
        [ -n "$used" ] || continue
        case "${CHAIN[$m]}" in
            *" $used "*) ok ;;
            *) bad "${file#$SRC/}:$line includes $used/, which is not below $m" ;;
        esac
    done < <(grep -Hn '^#include "[a-z_]*/' "$dir"*.[ch] 2>/dev/null)
done

# 3. an upward include fails to build; the unchanged module builds.
expect_rc 0 ninja -C "$SCRATCH/b" tessera_spec
cp "$SCRATCH/src/spec/model.c" "$TMP/model.c"
echo '#include "plan/plan.h"' >> "$SCRATCH/src/spec/model.c"
ninja -C "$SCRATCH/b" tessera_spec > "$TMP/up.log" 2>&1
check "spec/model.c including plan/plan.h (upward) still builds" test $? -ne 0
expect_in "$TMP/up.log" "plan/plan.h: No such file or directory"
cp "$TMP/model.c" "$SCRATCH/src/spec/model.c"
expect_rc 0 ninja -C "$SCRATCH/b" tessera_admit
echo '#include "render/render.h"' >> "$SCRATCH/src/admit/policy.c"
ninja -C "$SCRATCH/b" tessera_admit > "$TMP/side.log" 2>&1
check "admit/policy.c including render/render.h (sideways) still builds" test $? -ne 0
expect_in "$TMP/side.log" "render/render.h: No such file or directory"
finish
