#!/bin/bash
# deb.sh - the Debian package (scripts/build-deb, `make deb`) built from this
# build's tessera and shim: its fields (name, the project's version, this
# machine's architecture), exactly the files it should hold, and Depends
# naming the package of each library the two ELF files need directly (read
# here with objdump, not from dpkg-shlibdeps) and nothing else, each
# installed here at a version that satisfies it. dpkg installs it into a
# scratch root with a scratch database holding only the Depends packages as
# installed here (this machine's own database is left alone), and refuses it
# when one is missing or too old. Installed, it runs: the version,
# the worked example's plan exactly as the build's binary prints it, the man
# page, the bash completion, and its shim preloaded into the probe on the
# stand-in driver. Bad arguments exit 2 naming the culprit.
# Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

envfile="$(dirname "$TESSERA")/shim-test.env"
[ -f "$envfile" ] || { bad "no $envfile (tests/shim not built)"; finish; exit; }
# shellcheck disable=SC1090
. "$envfile"
VERSION=$(sed -n 's/^project(tessera VERSION \([0-9.]*\) .*/\1/p' "$TESSERA_SRC/CMakeLists.txt")
ARCH=$(dpkg --print-architecture)
BUILD="$TESSERA_SRC/scripts/build-deb"
OUT="$TMP/debs"
DEB="$OUT/tessera_${VERSION}_$ARCH.deb"
ROOT="$TMP/root"
mkdir -p "$OUT"

# Bad arguments: exit 2, the message names what is wrong; nothing written.
expect_rc 2 "$BUILD" "$TMP/no-tessera" "$SHIM" "$VERSION" "$OUT"
expect_in "$TMP/err" "$TMP/no-tessera: no such file"
expect_rc 2 "$BUILD" "$TESSERA" "$SHIM" "$VERSION" "$TMP/no-folder"
expect_in "$TMP/err" "$TMP/no-folder: no such folder"
expect_rc 2 "$BUILD" "$TESSERA" "$SHIM" "v1" "$OUT"
expect_in "$TMP/err" "version 'v1' is not MAJOR.MINOR.PATCH"
expect_rc 2 "$BUILD" "$TESSERA"
check "a refused build left files: $(ls -A "$OUT")" [ -z "$(ls -A "$OUT")" ]

expect_rc 0 "$BUILD" "$TESSERA" "$SHIM" "$VERSION" "$OUT"
check "build-deb printed '$(cat "$TMP/out")', expected $DEB" [ "$(cat "$TMP/out")" = "$DEB" ]
check "only the package is left in $OUT: $(ls -A "$OUT")" \
    [ "$(ls -A "$OUT")" = "$(basename "$DEB")" ]
field() { dpkg-deb -f "$DEB" "$1"; }
check "Package '$(field Package)'" [ "$(field Package)" = tessera ]
check "Version '$(field Version)', expected $VERSION" [ "$(field Version)" = "$VERSION" ]
check "Architecture '$(field Architecture)'" [ "$(field Architecture)" = "$ARCH" ]
check "no Maintainer" [ -n "$(field Maintainer)" ]

# Exactly these files.
dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ {print $6}' | sort >"$TMP/files"
printf '%s\n' ./opt/tessera/lib/libtessera-cuda.so ./usr/bin/tessera \
    ./usr/share/bash-completion/completions/tessera ./usr/share/man/man1/tessera.1.gz \
    ./usr/share/zsh/vendor-completions/_tessera | sort >"$TMP/want"
check "files: $(diff "$TMP/want" "$TMP/files" | grep '^[<>]' | tr '\n' ' ')" \
    cmp -s "$TMP/want" "$TMP/files"

# db DIR: a dpkg database holding the Depends packages as this machine has them.
db() {
    mkdir -p "$1/info" "$1/updates" "$1/triggers"
    touch "$1/available"
    for p in $(dpkg-deb -f "$DEB" Depends | tr ',' '\n' | awk '{print $1}'); do
        # (qualified: a library may be installed for arm64 too, scripts/install-deps cross)
        { dpkg-query -s "$p:$ARCH" 2>/dev/null || dpkg-query -s "$p"; } && echo
    done >"$1/status"
}
# install DB: dpkg -i into $ROOT with database DB (no maintainer scripts to chroot).
# dpkg unpacks before it checks, so each try starts from an empty root.
install() {
    rm -rf "$ROOT" && mkdir -p "$ROOT"
    dpkg --admindir="$1" --instdir="$ROOT" --force-script-chrootless -i "$DEB" 2>&1
}
db "$TMP/db-old"
sed -i '/^Package: libc6$/,/^$/s/^Version: .*/Version: 2.31-13/' "$TMP/db-old/status"
expect_rc 1 install "$TMP/db-old"
expect_in "$TMP/out" "tessera depends on libc6 (>= "
db "$TMP/db-missing"
sed -i '/^Package: libglpk40$/,/^$/d' "$TMP/db-missing/status"
expect_rc 1 install "$TMP/db-missing"
expect_in "$TMP/out" "tessera depends on libglpk40"
db "$TMP/db"
expect_rc 0 install "$TMP/db"
check "dpkg does not have tessera installed: $(dpkg-query --admindir="$TMP/db" -W -f='${Status}' \
    tessera)" [ "$(dpkg-query --admindir="$TMP/db" -W -f='${Status}' tessera)" = \
    "install ok installed" ]
check "Installed-Size $(field Installed-Size), du says $(du -sk "$ROOT" | cut -f1)" \
    [ "$(field Installed-Size)" = "$(du -sk "$ROOT" | cut -f1)" ]

# Depends: one entry per package of a library the ELF files need (NEEDED),
# plus ca-certificates (the TLS clients' bundle); each satisfied here.
for elf in "$ROOT/usr/bin/tessera" "$ROOT/opt/tessera/lib/libtessera-cuda.so"; do
    for soname in $(objdump -p "$elf" | awk '$1 == "NEEDED" {print $2}'); do
        # "libc.so.6 => /lib/.../libc.so.6 (0x...)", or the loader: "/lib64/ld-...so.2 (0x...)"
        path=$(ldd "$elf" | awk -v s="$soname" '$1 == s {print $3} $1 ~ "/" s "$" {print $1}')
        [ -n "$path" ] || { bad "$elf: $soname not found here"; continue; }
        path=$(readlink -f "$path")
        dpkg-query -S "$path" 2>/dev/null || dpkg-query -S "${path#/usr}" || bad "$path: no package"
    done >>"$TMP/owners"
done
sed 's/[:,].*//' "$TMP/owners" | sort -u >"$TMP/needed"
echo ca-certificates >>"$TMP/needed"
sort -u -o "$TMP/needed" "$TMP/needed"
field Depends | tr ',' '\n' | sed 's/^ *//' >"$TMP/depends"
sed 's/ .*//' "$TMP/depends" | sort >"$TMP/named"
check "Depends names $(tr '\n' ' ' <"$TMP/named"), the libraries need $(tr '\n' ' ' \
    <"$TMP/needed")" \
    cmp -s "$TMP/named" "$TMP/needed"
while read -r pkg op version; do
    have=$(deb_version "$pkg")
    [ -n "$have" ] || { bad "Depends: $pkg is not installed here"; continue; }
    [ -z "$op" ] && { ok; continue; }
    op=${op#(} version=${version%)}
    case $op in '>=') op=ge ;; '>>') op=gt ;; '=') op=eq ;; *) bad "Depends: $pkg $op?" ;; esac
    dpkg --compare-versions "$have" "$op" "$version" && ok ||
        bad "Depends: $pkg $op $version, installed $have"
done <"$TMP/depends"

# The unpacked package runs.
expect_rc 0 "$ROOT/usr/bin/tessera" --version
expect_in "$TMP/out" "$VERSION"
expect_rc 0 "$ROOT/usr/bin/tessera" plan -f "$TESSERA_SRC/examples/four-h100.yaml"
"$TESSERA" plan -f "$TESSERA_SRC/examples/four-h100.yaml" >"$TMP/plan.build" 2>&1
check "the package's plan differs from the build's" cmp -s "$TMP/plan.build" "$TMP/out"
check "the plan is empty" [ -s "$TMP/plan.build" ]
gzip -dc "$ROOT/usr/share/man/man1/tessera.1.gz" >"$TMP/man"
expect_in "$TMP/man" ".TH TESSERA 1"
expect_rc 0 bash -c ". '$ROOT/usr/share/bash-completion/completions/tessera' && complete -p tessera"
preload="${SHIM_PRELOAD_FIRST:+$SHIM_PRELOAD_FIRST }$ROOT/opt/tessera/lib/libtessera-cuda.so"
printf 'version = 1\nmemoryLimit = 1Mi\nregion = %s\n' "$TMP/cuda.region" >"$TMP/limits"
expect_rc 0 env LD_LIBRARY_PATH="$STANDIN_DIR" TESSERA_STANDIN_GPU="$TMP/gpu.lock" \
    TESSERA_CUDA_LIMITS_FILE="$TMP/limits" LD_PRELOAD="$preload" \
    ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" "$PROBE" info
expect_in "$TMP/out" "rc=0 free=1048576 total=1048576 device_total=1048576"
finish
