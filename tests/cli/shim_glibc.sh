#!/usr/bin/env bash
# labels: slow
# shim_glibc.sh - the CUDA shim loads into tenant images with glibc 2.28 and
# later (src/shim/glibc_compat.h):
# 1. the built shim requires no glibc symbol version above 2.28 (read from
#    the file with readelf), and names libdl.so.2 and libpthread.so.0, where
#    glibc below 2.34 keeps dlopen and pthread_create;
# 2. in an old Debian root made with debootstrap (buster, glibc 2.28, where
#    the mirror still has it, else bullseye, 2.31; made once a machine, 46-61 s,
#    and kept in TESSERA_OLDROOT_CACHE, default ~/.cache/tessera-oldroot, as
#    the control plane's binaries are kept: a fresh clone or build folder
#    finds it made; empty: under the build folder), preloaded into the root's own
#    programs: the loader loads it with no version error and runs its init,
#    perl loads XS modules through the shim's dlsym, and a CUDA caller
#    (tests/shim/shim_oldroot.c) on the stand-in driver is held to the limit.
# Part 2 needs root (chroot, unshare) and debootstrap with the machine's
# Debian mirror (the first .../debian URI of its apt sources, or
# SHIM_GLIBC_MIRROR); SHIM_GLIBC_SUITES overrides the suites tried. The
# sanitized build checks part 1 only: its shim needs the sanitizer runtime,
# which the old root has not. Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

use_shim_probes
MAX=2.28

# glibc_versions FILE: the GLIBC_x.y versions FILE requires, one a line.
glibc_versions() {
    readelf -V -W "$1" | sed -n 's/.*Name: GLIBC_\([0-9][0-9.]*\) .*/\1/p' | sort -u -V
}
# newer A B: A is a later version than B.
newer() { [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -1)" = "$1" ]; }

# ---- 1. the versions the built shim requires ----
glibc_versions "$SHIM" >"$TMP/versions"
check "readelf -V lists no GLIBC version for $SHIM" test -s "$TMP/versions"
while read -r v; do
    if newer "$v" $MAX; then
        bad "$SHIM requires GLIBC_$v (above $MAX): $(objdump -T "$SHIM" |
            awk -v v="(GLIBC_$v)" '$0 ~ v {printf "%s ", $NF}')"
    else ok; fi
done <"$TMP/versions"
# the symbols' own versions agree (objdump -T reads the other table)
objdump -T "$SHIM" | sed -n 's/.*(GLIBC_\([0-9][0-9.]*\)).*/\1/p' | sort -u -V >"$TMP/objdump"
check "objdump -T and readelf -V disagree: $(tr '\n' ' ' <"$TMP/objdump")" \
    cmp -s "$TMP/objdump" "$TMP/versions"
readelf -d "$SHIM" >"$TMP/dynamic"
expect_in "$TMP/dynamic" "[libdl.so.2]"
expect_in "$TMP/dynamic" "[libpthread.so.0]"

if [ -n "$SHIM_PRELOAD_FIRST" ]; then
    echo "$TEST_NAME: sanitized build: the old root is tried by the plain build only"
    finish
    exit
fi

# ---- 2. an old Debian root ----
cache=${TESSERA_OLDROOT_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/tessera-oldroot}
[ -n "$cache" ] || cache="$(dirname "$TESSERA")/shim-glibc"
mkdir -p "$cache" || { bad "cannot make $cache (TESSERA_OLDROOT_CACHE)"; finish; exit; }
exec 9>"$cache/lock"
flock 9

# the machine's Debian mirror: the first apt source whose path is /debian
apt_mirror() {
    {
        sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | tr ' ' '\n'
        sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p' \
            /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
    } | grep -m1 '/debian/\?$'
}

# make_root SUITE: $cache/SUITE made by debootstrap, once; its stamp records
# how long that took and its size. False (debootstrap's error in
# $cache/SUITE.log) when the mirror does not have SUITE.
make_root() {
    local dir="$cache/$1" start=$SECONDS
    [ -f "$dir/.tessera-root" ] && return 0
    rm -rf "$dir.tmp"
    if ! debootstrap --variant=minbase "$1" "$dir.tmp" "$mirror" >"$cache/$1.log" 2>&1; then
        rm -rf "$dir.tmp"
        return 1
    fi
    echo "made in $((SECONDS - start)) s, $(du -sh "$dir.tmp" | cut -f1)" >"$dir.tmp/.tessera-root"
    mv "$dir.tmp" "$dir"
}

root=""
suites=${SHIM_GLIBC_SUITES:-buster bullseye}
for suite in $suites; do # a root made before is used first
    if [ -f "$cache/$suite/.tessera-root" ]; then root="$cache/$suite"; break; fi
done
if [ -z "$root" ]; then
    if [ "$(id -u)" -ne 0 ]; then bad "debootstrap and chroot need root"; finish; exit; fi
    command -v debootstrap >/dev/null ||
        { bad "debootstrap missing (scripts/install-deps installs it)"; finish; exit; }
    mirror=${SHIM_GLIBC_MIRROR:-$(apt_mirror)}
    [ -n "$mirror" ] || { bad "no Debian mirror in /etc/apt/sources.list*"; finish; exit; }
    for suite in $suites; do
        if make_root "$suite"; then root="$cache/$suite"; break; fi
    done
fi
if [ -z "$root" ]; then bad "debootstrap made none of: $suites"; finish; exit; fi
for suite in $suites; do # say which suites could not be had
    [ "$cache/$suite" = "$root" ] && break
    [ -f "$cache/$suite.log" ] &&
        echo "$TEST_NAME: not tested on $suite: $(grep '^E:' "$cache/$suite.log" | tail -1)"
done
echo "$TEST_NAME: root $(basename "$root"), $(cat "$root/.tessera-root")"

# in_root VAR=VALUE... PROGRAM ARGS: PROGRAM of the root, in a pid and mount
# namespace of its own (its /proc mounted there only), with only those variables.
in_root() {
    unshare --mount --pid --fork --mount-proc="$root/proc" \
        chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin "$@"
}
# the root is kept between runs: nothing an earlier run (an earlier shim's
# region version) left in its /tmp may decide this one
rm -rf "$root/tessera-test" "$root/tmp/cuda.region" "$root/tmp/gpu.lock"
mkdir -p "$root/tessera-test"
cp "$SHIM" "$OLDROOT_CALLER" "$OLDROOT_STANDIN" "$root/tessera-test/"
shim=/tessera-test/$(basename "$SHIM")

# the root's glibc is older than the shim's build machine's, and older than 2.34
in_root /usr/bin/ldd --version >"$TMP/ldd" 2>&1
old=$(sed -n '1s/.* \([0-9][0-9.]*\)$/\1/p' "$TMP/ldd")
check "the root's glibc ($old) is not older than 2.34" newer 2.34 "${old:-9}"

# the loader loads the shim, binds all its symbols at once and runs its init,
# and says nothing else
expect_rc 0 in_root LD_BIND_NOW=1 LD_DEBUG=files LD_PRELOAD="$shim" /bin/true
expect_in "$TMP/err" "calling init: $shim"
expect_in "$TMP/err" "file=libpthread.so.0 [0];  needed by $shim"
check "the loader complained: $(grep -v '^ *[0-9]*:' "$TMP/err" | head -3)" \
    test -z "$(grep -v '^ *[0-9]*:' "$TMP/err")"

# perl's XS modules come through dlsym, the shim's, which must find the old real one
expect_rc 0 in_root LD_PRELOAD="$shim" perl -MPOSIX -e 'print POSIX::floor(7.5) * 6, "\n"'
check "perl under the shim printed '$(cat "$TMP/out")', not 42" test "$(cat "$TMP/out")" = 42
check "perl under the shim wrote on stderr: $(head -3 "$TMP/err")" test ! -s "$TMP/err"

# CUDA: two 48 MiB allocations under a 64 MiB limit on a 256 MiB card, the
# second refused (2, out of memory); the total shown is the limit
chunk=$((48 << 20))
cuda=(TESSERA_STANDIN_GPU=/tmp/gpu.lock TESSERA_STANDIN_TOTAL_MEM=256M
    TESSERA_OLDROOT_CHUNK=$chunk LD_LIBRARY_PATH=/tessera-test)
expect_rc 0 in_root "${cuda[@]}" TESSERA_CUDA_MEMORY_LIMIT=64Mi \
    TESSERA_CUDA_REGION=/tmp/cuda.region LD_PRELOAD="$shim /tessera-test/libshim_oldroot.so" \
    /bin/true
expect_in "$TMP/err" "oldroot: glibc=$old"
expect_in "$TMP/err" "oldroot: first=0 second=2 total=$((64 << 20)) again=0"
# the same caller without the shim: the stand-in alone gives both
expect_rc 0 in_root "${cuda[@]}" LD_PRELOAD=/tessera-test/libshim_oldroot.so /bin/true
expect_in "$TMP/err" "oldroot: first=0 second=0 total=$((256 << 20)) again=0"

finish
