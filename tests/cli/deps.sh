#!/bin/bash
# deps.sh - the one list of Debian packages (scripts/install-deps) against
# what uses it: README's dependency list is the script's --markdown output;
# each make target installs only its own group (the demo none of the servers,
# benchmarks or fuzzers); every library CMake requires is in the build group
# (asked of dpkg, not of the list); README's hand-build command, run as
# written into a scratch build folder, configures and plans a full build.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
DEPS=scripts/install-deps

# README's block between the markers equals the script's output.
sed -n '/^<!-- BEGIN scripts\/install-deps --markdown -->$/,/^<!-- END/p' README.md |
    sed '1d;$d' >"$TMP/readme"
$DEPS --markdown >"$TMP/script"
check "README.md's dependency list differs from '$DEPS --markdown': $(diff "$TMP/readme" \
    "$TMP/script" | head -3 | tr '\n' '|')" cmp -s "$TMP/readme" "$TMP/script"
check "README.md has no generated dependency list" [ -s "$TMP/readme" ]

# The demo installs what it runs, nothing for tests, benchmarks or fuzzing.
$DEPS --list demo >"$TMP/demo"
for heavy in postgresql nginx-light prometheus wrk clang valgrind libclang-rt-14-dev; do
    if grep -qx "$heavy" "$TMP/demo"; then bad "the demo group installs $heavy"; else ok; fi
done
for need in openssl curl python3 python3-yaml; do # scripts/demo-webhook, demo-day.py
    check "the demo group lacks $need" grep -qx "$need" "$TMP/demo"
done
# Each group holds the build group; the benchmark and test tools are where they run.
$DEPS --list build >"$TMP/build"
for g in demo check bench fuzz package cross all; do
    $DEPS --list $g >"$TMP/$g"
    check "group $g lacks some of build: $(comm -23 <(sort "$TMP/build") <(sort "$TMP/$g"))" \
        [ -z "$(comm -23 <(sort "$TMP/build") <(sort "$TMP/$g"))" ]
done
# The cross group (make image-arm64) adds arm64 to dpkg's architectures: make
# check and make deps do without it.
for g in check all; do
    check "group $g installs arm64 packages: $(grep ':arm64$' "$TMP/$g" | tr '\n' ' ')" \
        [ -z "$(grep ':arm64$' "$TMP/$g")" ]
done
check "cross lacks the cross compiler" grep -qx gcc-aarch64-linux-gnu "$TMP/cross"
for p in wrk nginx-light glpk-utils; do check "bench lacks $p" grep -qx $p "$TMP/bench"; done
for p in postgresql prometheus clang valgrind librsvg2-bin python3-jsonschema buildah dpkg-dev \
    nginx-light iproute2 debootstrap; do
    check "check lacks $p" grep -qx $p "$TMP/check"
done
expect_rc 2 $DEPS --list nonsense
expect_in "$TMP/err" "unknown group 'nonsense'"

# Each make target asks for its own group and no other.
for target in demo check bench fuzz image deb image-arm64; do
    make -s -n -C "$TESSERA_SRC" BUILD="$TMP/nobuild" $target 2>/dev/null |
        sed -n 's/^scripts\/install-deps //p' | sort -u | tr '\n' ' ' >"$TMP/groups"
    want=$(printf '%s\n' build $target | sort -u | tr '\n' ' ')
    [ $target = fuzz ] && want="fuzz "
    [ $target = image ] || [ $target = deb ] && want="build package "
    [ $target = image-arm64 ] && want="build cross package "
    check "make $target installs groups '$(cat "$TMP/groups")', expected '$want'" \
        [ "$(cat "$TMP/groups")" = "$want" ]
done

# Every pkg-config module and library CMake requires comes from a build package.
for m in $(sed -n 's/^pkg_check_modules([A-Z0-9_]* REQUIRED IMPORTED_TARGET \([^)]*\))/\1/p' \
    CMakeLists.txt tests/CMakeLists.txt); do
    pkg=$(dpkg -S "$(pkg-config --variable=pcfiledir "$m")/$m.pc" 2>/dev/null | sed 's/[:].*//')
    check "pkg-config module $m (package '$pkg') is not in the build group" \
        grep -qx "${pkg:-none}" "$TMP/build"
done
for lib in $(sed -n 's/^find_library([A-Z_]* \([a-z0-9]*\) REQUIRED)/\1/p' CMakeLists.txt); do
    pkg=$(dpkg -S "/usr/lib/$(gcc -print-multiarch)/lib$lib.so" 2>/dev/null | sed 's/[:].*//')
    check "library $lib (package '$pkg') is not in the build group" grep -qx "${pkg:-none}" \
        "$TMP/build"
done

# README's hand build, as written, with its build folder in a scratch place:
# configure, and ninja's commands for tessera (TESSERA_HANDBUILD=full builds it all).
cmd=$(sed -n '/^## Building by hand/,/^```$/p' README.md | grep -m1 '^cmake ')
check "README.md's hand build '$cmd' is not 'cmake -S . -B build -G Ninja && ninja ...'" [ "${cmd#cmake -S . -B build -G Ninja && ninja -C build && }" != "$cmd" ]
configure=${cmd%% && ninja*}
build=$(echo "$cmd" | sed 's/.* && \(ninja -C build\) && .*/\1/')
[ "${TESSERA_HANDBUILD:-}" = full ] || build="$build -t commands tessera"
expect_rc 0 ${configure/-B build/-B $TMP/hand}
expect_rc 0 ${build/-C build/-C $TMP/hand}
check "the hand build does not link tessera" grep -q -- '-o tessera ' "$TMP/out"
finish
