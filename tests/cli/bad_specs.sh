#!/usr/bin/env bash
# labels: slow
# bad_specs.sh - hostile-input tests for `tessera check`.
#
# Every tests/fixtures/bad/NN-name.yaml is a small valid spec with one thing
# wrong (a comment on its first line says what, except in the empty, binary
# and UTF-16 files, which are the thing wrong). Its sidecar NN-name.expect holds two
# lines: the exit code, and the exact first line `tessera check -f FILE`
# must print on stderr. FILE is passed relative to the source tree so the
# message is stable. An optional NN-name.expect-all holds the whole expected
# stderr (for the case that checks several errors are all reported).
# Every case must also leave stdout empty, finish within $BAD_SPECS_TIMEOUT
# seconds, and print no sanitizer report. A few cases are generated at run
# time into a temp dir (a 10 MB file, a missing file, a directory), and a
# few fixtures are replayed under valgrind when it is there (not under ASan).
#
# Environment: TESSERA (the binary), TESSERA_SRC (source tree),
# TESSERA_FIXTURES (tests/fixtures). Ends with "bad_specs: N passed, M
# failed" (tests/lib.sh) and exits 1 when any case fails.
set -u
. "$(dirname "$0")/../lib.sh"

: "${TESSERA:?set TESSERA to the tessera binary}"
SRC=${TESSERA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
FIXTURES=${TESSERA_FIXTURES:-$SRC/tests/fixtures}
TIMEOUT=${BAD_SPECS_TIMEOUT:-20}

cd "$SRC" || exit 1
BAD=$(realpath --relative-to="$SRC" "$FIXTURES/bad")

# run FILE: runs check, sets rc and leaves stdout/stderr in $TMP/out, $TMP/err.
run() {
    timeout "$TIMEOUT" "$TESSERA" check -f "$1" >"$TMP/out" 2>"$TMP/err"
    rc=$?
}

# verdict NAME EXPECTED_RC EXPECTED_FIRST_LINE [EXPECTED_ALL_FILE]
verdict() {
    local name=$1 want_rc=$2 want_line=$3 want_all=${4:-}
    local got_line problems=()
    got_line=$(head -n 1 "$TMP/err")
    if [ "$rc" -eq 124 ]; then
        problems+=("timed out after ${TIMEOUT}s (hang?)")
    elif [ "$rc" -ge 128 ]; then
        problems+=("killed by signal $((rc - 128)) (crash)")
    fi
    [ "$rc" = "$want_rc" ] || problems+=("exit: expected $want_rc, got $rc")
    [ "$got_line" = "$want_line" ] ||
        problems+=("first stderr line: expected '$want_line', got '$got_line'")
    [ -s "$TMP/out" ] && problems+=("stdout not empty: '$(head -c 200 "$TMP/out")'")
    if grep -qE 'Sanitizer|runtime error:' "$TMP/err"; then
        problems+=("sanitizer report: '$(grep -m1 -E 'Sanitizer|runtime error:' "$TMP/err")'")
    fi
    if [ -n "$want_all" ] && ! cmp -s "$want_all" "$TMP/err"; then
        problems+=("full stderr: expected '$(tr '\n' '|' <"$want_all")', got '$(tr '\n' '|' <"$TMP/err")'")
    fi
    if [ ${#problems[@]} -eq 0 ]; then
        ok
    else
        local msg
        msg=$(printf '%s; ' "${problems[@]}")
        bad "$name: ${msg%; }"
    fi
}

# The committed fixtures.
for yaml in "$BAD"/*.yaml; do
    name=$(basename "$yaml" .yaml)
    expect=${yaml%.yaml}.expect
    if [ ! -f "$expect" ]; then
        bad "$name: no $expect"
        continue
    fi
    want_rc=$(sed -n 1p "$expect")
    want_line=$(sed -n 2p "$expect")
    all=${yaml%.yaml}.expect-all
    [ -f "$all" ] || all=
    run "$yaml"
    verdict "$name" "$want_rc" "$want_line" "$all"
done

# 48: a 20 MB file must be refused by size, before any parsing.
big=$TMP/48-twenty-megabytes.yaml
{
    echo "# 20 MB of comments: over the 16 MiB spec limit"
    head -c 20971520 /dev/zero | tr '\0' '#'
} >"$big"
run "$big"
verdict 48-twenty-megabytes 2 "tessera: $big: file is larger than the limit of 16777216 bytes"

# 63: a file that does not exist.
run "$TMP/63-missing.yaml"
verdict 63-missing-file 2 "tessera: $TMP/63-missing.yaml: cannot open: No such file or directory"

# 64: a directory given as the spec.
mkdir "$TMP/64-directory.yaml"
run "$TMP/64-directory.yaml"
verdict 64-directory 2 "tessera: $TMP/64-directory.yaml: read failed: Is a directory"

# valgrind stays clean on the paths that stop early (skipped under ASan,
# which has its own checks): syntax, encoding, limits, several errors,
# cross-document checks, an unplaceable spec.
if command -v valgrind >/dev/null && ! nm "$TESSERA" 2>/dev/null | grep -q __asan_init; then
    for name in 19-namespace-two-tenants 32-alias-bomb 34-invalid-utf8 36-unterminated-quote \
                37-nul-byte 38-empty-file 49-too-many-mig-replicas 50-several-errors; do
        yaml=$BAD/$name.yaml
        timeout 120 valgrind -q --error-exitcode=9 --leak-check=full \
            --errors-for-leak-kinds=definite,indirect "$TESSERA" check -f "$yaml" \
            >/dev/null 2>"$TMP/vg"
        rc=$?
        if [ "$rc" -eq "$(sed -n 1p "${yaml%.yaml}.expect")" ]; then ok; else
            bad "valgrind $name: exit $rc; $(grep -m3 '==' "$TMP/vg" | tr '\n' '|')"; fi
    done
fi

finish
