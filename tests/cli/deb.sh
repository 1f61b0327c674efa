#!/bin/bash
# labels: slow nosan
# deb.sh - the Debian package (scripts/build-deb, `make deb`) built from this
# build's tessera and shim: lintian reports no error and no warning (and does
# report them on a copy broken the four ways the package once was: files in
# /opt, no copyright file, no changelog, a maintainer at localhost); its fields
# (name, the project's version, this machine's architecture, the maintainer),
# exactly the files it should hold; the copyright file machine-readable, GPL-3+
# as LICENSE is, whose text is Debian's GPL-3; the changelog in Debian's format,
# one entry per CHANGELOG.md section from the version's down, each with that
# section's words and date; and Depends
# naming the package of each library the two ELF files need directly (read
# here with objdump, not from dpkg-shlibdeps) and nothing else, each
# installed here at a version that satisfies it. dpkg installs it into a
# scratch root with a scratch database holding only the Depends packages as
# installed here (this machine's own database is left alone), and refuses it
# when one is missing or too old. Installed, it runs: the version,
# the worked example's plan exactly as the build's binary prints it, the man
# page, the bash completion, and its shim preloaded into the probe on the
# stand-in driver. Bad arguments exit 2 naming the culprit (a version without
# a CHANGELOG.md section too), a malformed CHANGELOG.md heading exits 1 naming
# its line. Without lintian (scripts/install-deps check) the test fails.
# Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

envfile="$(dirname "$TESSERA")/shim-test.env"
[ -f "$envfile" ] || { bad "no $envfile (tests/shim not built)"; finish; exit; }
# shellcheck disable=SC1090
. "$envfile"
VERSION=$(sed -n 's/^project(tessera VERSION \([0-9.]*\) .*/\1/p' "$TESSERA_SRC/CMakeLists.txt")
ARCH=$(dpkg --print-architecture)
TRIPLET=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
SHIM_PATH=usr/lib/$TRIPLET/tessera/libtessera-cuda.so
MAINTAINER="tessera maintainers <maintainers@tessera.dev>"
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
expect_rc 2 "$BUILD" "$TESSERA" "$SHIM" 9.9.9 "$OUT"
expect_in "$TMP/err" "version '9.9.9' has no section '## 9.9.9 - YYYY-MM-DD' in CHANGELOG.md"
expect_rc 2 "$BUILD" "$TESSERA"
check "a refused build left files: $(ls -A "$OUT")" [ -z "$(ls -A "$OUT")" ]
# A CHANGELOG.md whose older section's heading has no date: exit 1 at its line.
mkdir -p "$TMP/tree/scripts/package" "$TMP/bad-out"
cp "$BUILD" "$TMP/tree/scripts/"
cp "$TESSERA_SRC/scripts/package/copyright" "$TMP/tree/scripts/package/"
sed 's/^## 0\.1\.0 - .*/## 0.1.0/' "$TESSERA_SRC/CHANGELOG.md" >"$TMP/tree/CHANGELOG.md"
line=$(grep -nx '## 0.1.0' "$TMP/tree/CHANGELOG.md" | cut -d: -f1)
expect_rc 1 "$TMP/tree/scripts/build-deb" "$TESSERA" "$SHIM" "$VERSION" "$TMP/bad-out"
expect_in "$TMP/err" "CHANGELOG.md:$line: not \"## X.Y.Z - YYYY-MM-DD\": ## 0.1.0"
check "a failed build left files: $(ls -A "$TMP/bad-out")" [ -z "$(ls -A "$TMP/bad-out")" ]

expect_rc 0 "$BUILD" "$TESSERA" "$SHIM" "$VERSION" "$OUT"
check "build-deb printed '$(cat "$TMP/out")', expected $DEB" [ "$(cat "$TMP/out")" = "$DEB" ]
check "only the package is left in $OUT: $(ls -A "$OUT")" \
    [ "$(ls -A "$OUT")" = "$(basename "$DEB")" ]
field() { dpkg-deb -f "$DEB" "$1"; }
check "Package '$(field Package)'" [ "$(field Package)" = tessera ]
check "Version '$(field Version)', expected $VERSION" [ "$(field Version)" = "$VERSION" ]
check "Architecture '$(field Architecture)'" [ "$(field Architecture)" = "$ARCH" ]
check "Maintainer '$(field Maintainer)', expected $MAINTAINER" [ "$(field Maintainer)" = "$MAINTAINER" ]

# Exactly these files.
dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ {print $6}' | sort >"$TMP/files"
printf '%s\n' "./$SHIM_PATH" ./usr/bin/tessera \
    ./usr/share/bash-completion/completions/tessera ./usr/share/man/man1/tessera.1.gz \
    ./usr/share/zsh/vendor-completions/_tessera ./usr/share/doc/tessera/copyright \
    ./usr/share/doc/tessera/changelog.gz | sort >"$TMP/want"
check "files: $(diff "$TMP/want" "$TMP/files" | grep '^[<>]' | tr '\n' ' ')" \
    cmp -s "$TMP/want" "$TMP/files"

# lintian: no error, no warning (info and pedantic tags are printed, not
# counted), no override in the package. The same package as it once was (the
# shim in /opt, no copyright file, no changelog, a maintainer at localhost)
# must get each of those tags: lintian runs only the checks that emit them
# there (--tags; every check: 4.3 CPU s, those: 2.0). The two lintian runs go
# side by side.
# lint DEB NAME [OPTION...]: lintian's tags for DEB in $TMP/NAME.lint, its
# stderr in $TMP/NAME.err.
lint() {
    lintian --tag-display-limit 0 -I --pedantic --show-overrides "${@:3}" "$1" \
        >"$TMP/$2.lint" 2>"$TMP/$2.err"
}
BROKEN_TAGS=dir-or-file-in-opt,no-copyright-file,no-changelog,bogus-mail-host
if ! command -v lintian >/dev/null; then
    bad "lintian is not installed (scripts/install-deps check)"
else
    dpkg-deb -R "$DEB" "$TMP/broken"
    mkdir -p "$TMP/broken/opt/tessera/lib"
    mv "$TMP/broken/$SHIM_PATH" "$TMP/broken/opt/tessera/lib/"
    rm "$TMP/broken/usr/share/doc/tessera/copyright" "$TMP/broken/usr/share/doc/tessera/changelog.gz"
    sed -i "s|^Maintainer: .*|Maintainer: tessera developers <tessera@localhost>|" \
        "$TMP/broken/DEBIAN/control"
    rm "$TMP/broken/DEBIAN/md5sums"
    dpkg-deb --root-owner-group --build "$TMP/broken" "$TMP/broken.deb" >/dev/null
    lint "$TMP/broken.deb" broken --tags "$BROKEN_TAGS" &
    lint "$DEB" good
    wait
    [ -s "$TMP/good.lint" ] && sed 's/^/deb: lintian: /' "$TMP/good.lint"
    check "lintian: $(grep -E '^[EWO]: ' "$TMP/good.lint" | tr '\n' ' ')" \
        [ -z "$(grep -E '^[EWO]: ' "$TMP/good.lint")" ]
    check "lintian failed: $(grep -v 'root privileges' "$TMP/good.err" | head -3)" \
        [ -z "$(grep -v 'root privileges' "$TMP/good.err")" ]
    for tag in "E: tessera: dir-or-file-in-opt [opt/tessera/lib/libtessera-cuda.so]" \
        "E: tessera: no-copyright-file" "E: tessera: no-changelog usr/share/doc/tessera/changelog.gz" \
        "E: tessera: bogus-mail-host Maintainer tessera@localhost"; do
        expect_in "$TMP/broken.lint" "$tag"
    done
fi

# The copyright file: machine-readable (DEP-5), the license of every file
# GPL-3+, as LICENSE (the GPL version 3, "or later" in README.md) is, and
# Debian's GPL-3 that it points to is LICENSE's text.
dpkg-deb --fsys-tarfile "$DEB" | tar -xOf - ./usr/share/doc/tessera/copyright >"$TMP/copyright"
check "copyright is not machine-readable: $(head -1 "$TMP/copyright")" \
    [ "$(head -1 "$TMP/copyright")" = \
    "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" ]
awk -v RS= '/^Files: \*\n/' "$TMP/copyright" >"$TMP/files-all"
expect_in "$TMP/files-all" "License: GPL-3+"
expect_in "$TMP/copyright" '/usr/share/common-licenses/GPL-3'
check "LICENSE is not the GPL version 3" grep -q '^ *Version 3, 29 June 2007$' \
    "$TESSERA_SRC/LICENSE"
expect_in "$TESSERA_SRC/README.md" "GPL-3.0-or-later"
check "LICENSE differs from Debian's GPL-3" cmp -s "$TESSERA_SRC/LICENSE" \
    /usr/share/common-licenses/GPL-3

# The changelog: Debian's format (dpkg-parsechangelog reads it), one entry per
# CHANGELOG.md section from VERSION's down (version, the heading's date, the
# maintainer), each entry's words those of its section.
dpkg-deb --fsys-tarfile "$DEB" | tar -xOf - ./usr/share/doc/tessera/changelog.gz |
    gzip -dc >"$TMP/changelog"
dpkg-parsechangelog -l "$TMP/changelog" --all --format rfc822 >"$TMP/entries" 2>"$TMP/parse.err"
check "dpkg-parsechangelog: $(head -3 "$TMP/parse.err")" [ ! -s "$TMP/parse.err" ]
sed -n "/^## $VERSION - /,\$ s/^## \([0-9.]*\) - \(.*\)/\1 \2/p" "$TESSERA_SRC/CHANGELOG.md" \
    >"$TMP/sections"
check "CHANGELOG.md has no section for $VERSION" [ -s "$TMP/sections" ]
awk -v m="$MAINTAINER" '/^Version: / {v = $2} /^Maintainer: / {ok = (substr($0, 13) == m)}
    /^Date: / {print v, $0, ok}' "$TMP/entries" >"$TMP/got"
while read -r v d; do
    echo "$v Date: $(LC_ALL=C date -u -R -d "$d") 1"
done <"$TMP/sections" >"$TMP/want"
check "changelog entries (version, date, maintainer ok): $(tr '\n' '|' <"$TMP/got"), expected \
$(tr '\n' '|' <"$TMP/want")" cmp -s "$TMP/want" "$TMP/got"
while read -r v d; do
    sed -n "/^## $v - /,/^## /{/^## /d;p}" "$TESSERA_SRC/CHANGELOG.md" | sed 's/^- //' |
        tr -s ' \n' '  ' | sed 's/^ //;s/ $//' >"$TMP/md"
    sed -n "/^tessera ($v) /,/^ -- /{/^tessera /d;/^ -- /d;p}" "$TMP/changelog" |
        sed 's/^  \* //' | tr -s ' \n' '  ' | sed 's/^ //;s/ $//' >"$TMP/deb"
    check "the changelog's $v differs from CHANGELOG.md's: $(cmp "$TMP/md" "$TMP/deb")" \
        cmp -s "$TMP/md" "$TMP/deb"
    check "CHANGELOG.md's $v is empty" [ -s "$TMP/md" ]
done <"$TMP/sections"
awk 'length > 80 && !/^ -- /' "$TMP/changelog" >"$TMP/long"
check "changelog lines (but the trailers) over 80 columns: $(head -2 "$TMP/long")" [ ! -s "$TMP/long" ]

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
for elf in "$ROOT/usr/bin/tessera" "$ROOT/$SHIM_PATH"; do
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
preload="${SHIM_PRELOAD_FIRST:+$SHIM_PRELOAD_FIRST }$ROOT/$SHIM_PATH"
printf 'version = 1\nmemoryLimit = 1Mi\nregion = %s\n' "$TMP/cuda.region" >"$TMP/limits"
expect_rc 0 env LD_LIBRARY_PATH="$STANDIN_DIR" TESSERA_STANDIN_GPU="$TMP/gpu.lock" \
    TESSERA_CUDA_LIMITS_FILE="$TMP/limits" LD_PRELOAD="$preload" \
    ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" "$PROBE" info
expect_in "$TMP/out" "rc=0 free=1048576 total=1048576 device_total=1048576"
finish
