#!/bin/bash
# version.sh - `tessera --version` and `tessera version` print "tessera X.Y.Z"
# where X.Y.Z is project(VERSION) in CMakeLists.txt (the one place it is
# written) and the newest entry of CHANGELOG.md; --help says how to get it.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1

cmake_v=$(sed -n 's/^project(tessera VERSION \([0-9][0-9.]*\)[ )].*/\1/p' CMakeLists.txt)
log_v=$(sed -n 's/^## \([0-9][0-9.]*\)\b.*/\1/p' CHANGELOG.md | head -1)
check "CMakeLists.txt has no project(tessera VERSION X.Y.Z)" [ -n "$cmake_v" ]
check "CHANGELOG.md has no '## X.Y.Z' entry" [ -n "$log_v" ]
check "CHANGELOG.md's newest entry is $log_v, CMakeLists.txt says $cmake_v" \
    [ "$log_v" = "$cmake_v" ]

for arg in --version version; do
    expect_rc 0 "$TESSERA" $arg
    check "tessera $arg printed '$(cat "$TMP/out")', expected 'tessera $cmake_v'" \
        [ "$(cat "$TMP/out")" = "tessera $cmake_v" ]
done
expect_rc 0 "$TESSERA" --help
expect_in "$TMP/out" "--version"
finish
