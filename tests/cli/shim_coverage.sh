#!/usr/bin/env bash
# shim_coverage.sh - docs/shim.md's coverage table against CUDA 13.0's
# cuda.h: the entry points the page's rules select (its "select:" line,
# over the names its rules extract) each have a row, every row names a
# function cuda.h declares, once, and the rows marked hooked are exactly
# src/shim/hooks.def. The header is tests/fixtures/shim/cuda-13.0-api.txt
# (the lines of cuda.h the rules read, SOURCES.md there) and, when present
# and of the same CUDA version, /usr/local/cuda/include/cuda.h itself
# (TESSERA_CUDA_H overrides the path). Needs TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

doc="$TESSERA_SRC/docs/shim.md"
hooks="$TESSERA_SRC/src/shim/hooks.def"
fixture="$TESSERA_SRC/tests/fixtures/shim/cuda-13.0-api.txt"
header="${TESSERA_CUDA_H:-/usr/local/cuda/include/cuda.h}"

# entry_points FILE: the names FILE says the driver exports (docs/shim.md's
# rules): each prototype "CUresult CUDAAPI NAME(" (line breaks count as
# blanks); both sides of "#define A B"; for "#define A __CUDA_API_PTSZ(B)"
# (or PTDS) A, B and B_ptsz (B_ptds).
entry_points() {
    {
        tr '\n' ' ' <"$1" | grep -oE 'CUresult CUDAAPI[[:space:]]+cu[A-Za-z0-9_]+\(' |
            sed -E 's/.*[[:space:]](cu[A-Za-z0-9_]+)\($/\1/'
        grep -E '^[[:space:]]*#[[:space:]]*define[[:space:]]+cu[A-Za-z0-9_]+[[:space:]]' "$1" |
            sed -E 's/^[[:space:]]*#[[:space:]]*define[[:space:]]+//' | awk '
            $2 ~ /^cu[A-Za-z0-9_]+$/ { print $1; print $2; next }
            match($2, /^__CUDA_API_PT(SZ|DS)\(cu[A-Za-z0-9_]+\)$/) {
                sfx = tolower(substr($2, 12, 4)); b = substr($2, 17, length($2) - 17)
                print $1; print b; print b "_" sfx }'
    } | sort -u
}

# none MESSAGE LIST: passes when LIST (names, one a line) is empty.
none() { if [ -z "$2" ]; then ok; else bad "$1 $(echo "$2" | tr '\n' ' ')"; fi; }

cuda_version() { sed -nE 's/^#define CUDA_VERSION ([0-9]+).*/\1/p' "$1" | head -1; }

# The coverage section's rows: "NAME HOOKED" (HOOKED yes or no), one a line.
rows() {
    awk '/^### Coverage/ { on = 1; next } on && /^##/ { exit } on' "$doc" |
        awk -F'|' '/^\| `cu/ { n = $2; h = $3; gsub(/[ `]/, "", n); gsub(/ /, "", h); print n, h }'
}

select_re=$(awk '/^### Coverage/ { on = 1 } on && /^select: / { sub(/^select: /, ""); print; exit }' "$doc")
if [ -z "$select_re" ]; then bad "$doc: no 'select:' line in the coverage section"; finish; exit; fi
rows >"$TMP/rows"
cut -d' ' -f1 "$TMP/rows" | sort >"$TMP/named"
sort -u "$TMP/named" >"$TMP/named.u"
awk '$2 == "yes" { print $1 }' "$TMP/rows" | sort -u >"$TMP/hooked"
grep -oE '^SHIM_HOOK\(cu[A-Za-z0-9_]+\)' "$hooks" | sed -E 's/SHIM_HOOK\((.*)\)/\1/' | sort -u \
    >"$TMP/hooks"

# covers LABEL FILE: every entry point FILE's names select has a row.
covers() {
    entry_points "$2" >"$TMP/exported"
    grep -E "$select_re" "$TMP/exported" >"$TMP/selected"
    local n missing
    n=$(wc -l <"$TMP/selected")
    check "$1: only $n entry points selected (the rules read nothing?)" [ "$n" -ge 60 ]
    missing=$(comm -23 "$TMP/selected" "$TMP/named.u")
    none "$1: entry points with no row in $doc's coverage table:" "$missing"
    echo "$1: $n entry points selected of $(wc -l <"$TMP/exported") exported"
}

check "$fixture: not CUDA 13.0" [ "$(cuda_version "$fixture")" = 13000 ]
covers "fixture" "$fixture"
cp "$TMP/exported" "$TMP/exported.fixture"

# Every row names a function cuda.h declares, once; a hooked row is in hooks.def and back.
unknown=$(comm -23 "$TMP/named.u" "$TMP/exported.fixture")
none "rows naming no entry point of cuda.h 13.0:" "$unknown"
dups=$(uniq -d "$TMP/named")
none "rows given twice:" "$dups"
odd=$(awk '$2 != "yes" && $2 != "no" { print $1 }' "$TMP/rows")
none "rows whose second column is not yes or no:" "$odd"
only_doc=$(comm -23 "$TMP/hooked" "$TMP/hooks")
none "marked hooked in $doc but not in hooks.def:" "$only_doc"
only_def=$(comm -13 "$TMP/hooked" "$TMP/hooks")
none "in hooks.def but not marked hooked in $doc:" "$only_def"

if [ ! -r "$header" ]; then
    echo "SKIP: no $header here: checked against the fixture only"
elif [ "$(cuda_version "$header")" != 13000 ]; then
    echo "SKIP: $header is CUDA $(cuda_version "$header"), the table is of 13000: checked against the fixture only"
else
    covers "$header" "$header"
    check "$fixture names what $header exports" cmp -s "$TMP/exported" "$TMP/exported.fixture"
fi
finish
