#!/bin/bash
# hardening.sh - the two files that ship (tessera and libtessera-cuda.so) are
# built hardened (cmake/hardening.cmake), read from the ELF files with readelf,
# not from the build's flags:
#   pie      tessera is a position-independent executable: type DYN with a
#            PT_INTERP segment (a shared library has none)
#   relro    a GNU_RELRO segment
#   now      BIND_NOW in the dynamic section (FLAGS BIND_NOW or FLAGS_1 NOW)
#   canary   __stack_chk_fail imported (-fstack-protector-strong)
#   fortify  a fortified __*_chk function of libc imported (-D_FORTIFY_SOURCE=2),
#            expected only in an optimised build without sanitizers (the build
#            type and TESSERA_SANITIZE are read from the build's CMakeCache.txt)
# First the checks themselves meet a scratch program compiled here with all
# flags and then with each one left out: each variant must fail exactly the
# check its missing flag breaks. Fails when readelf or the compiler is missing.
# Needs TESSERA, TESSERA_SRC; shim-test.env beside $TESSERA.
source "$TESSERA_SRC/tests/lib.sh"

BUILD=$(dirname "$TESSERA")
envfile="$BUILD/shim-test.env"
[ -f "$envfile" ] || { bad "no $envfile (tests/shim not built)"; finish; exit; }
# shellcheck disable=SC1090
. "$envfile"
command -v readelf >/dev/null || { bad "readelf is not installed (binutils)"; finish; exit; }
cache() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt"; }
CC=$(cache CMAKE_C_COMPILER)
[ -x "$CC" ] || { bad "the build's C compiler '$CC' is not there"; finish; exit; }

# Each check prints what it found and succeeds when FILE has the property.
pie() {
    local type
    type=$(readelf -hW "$1" | awk '$1 == "Type:" {print $2}')
    if [ "$type" != DYN ]; then echo "ELF type $type, not DYN"; return 1; fi
    readelf -lW "$1" | grep -qE '^ +INTERP ' || { echo "type DYN but no PT_INTERP"; return 1; }
}
relro() { readelf -lW "$1" | grep -qE '^ +GNU_RELRO ' || { echo "no GNU_RELRO segment"; return 1; }; }
now() {
    readelf -dW "$1" | grep -qE '\((FLAGS|FLAGS_1)\) +.*\b(BIND_NOW|NOW)\b' ||
        { echo "no BIND_NOW or NOW flag in the dynamic section"; return 1; }
}
# imports FILE: the undefined dynamic symbols, without their versions.
imports() { readelf -W --dyn-syms "$1" | awk '$7 == "UND" {sub(/@.*/, "", $8); print $8}'; }
canary() { imports "$1" | grep -qx __stack_chk_fail || { echo "__stack_chk_fail not imported"; return 1; }; }
fortify() {
    imports "$1" | grep -E '^__[a-z0-9_]+_chk$' | grep -qvx __stack_chk_fail ||
        { echo "no fortified __*_chk function imported"; return 1; }
}
CHECKS="pie relro now canary fortify"

# expect FILE LABEL FAILING CHECK...: each CHECK passes on FILE, except the one
# named FAILING ('none': all pass), which must fail.
expect() {
    local file=$1 label=$2 failing=$3 c why got want
    shift 3
    for c in "$@"; do
        if why=$($c "$file"); then got=pass; else got=fail; fi
        if [ "$c" = "$failing" ]; then want=fail; else want=pass; fi
        if [ $got = $want ]; then
            ok
        elif [ $want = fail ]; then
            bad "$label: $c passed, expected it to fail"
        else
            bad "$label: $c: $why"
        fi
    done
}

# The checks against a program built with every flag, then without each one.
cat >"$TMP/probe.c" <<'C'
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    char buf[64];
    memcpy(buf, argv[0], strlen(argv[0]) % sizeof buf);
    snprintf(buf, sizeof buf, "%d %s", argc, argc > 1 ? argv[1] : "");
    puts(buf);
    return 0;
}
C
all="-fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIE -pie -Wl,-z,relro -Wl,-z,now"
probe() { # NAME FLAGS...: the probe compiled with FLAGS
    "$CC" -O2 -o "$TMP/$1" "$TMP/probe.c" "${@:2}" 2>"$TMP/cc.err" ||
        { bad "$CC $* failed: $(head -3 "$TMP/cc.err")"; return 1; }
}
# variant NAME FAILING FLAGS...: the probe without one flag fails that check only.
variant() { probe "$1" "${@:3}" && expect "$TMP/$1" "probe $1" "$2" $CHECKS; }
# shellcheck disable=SC2086
{
    variant all none $all
    variant no-canary canary ${all/-fstack-protector-strong/-fno-stack-protector}
    variant no-fortify fortify ${all/-D_FORTIFY_SOURCE=2/-U_FORTIFY_SOURCE}
    variant no-pie pie ${all/-fPIE -pie/-fno-PIE -no-pie}
    variant no-relro relro ${all/-Wl,-z,relro/-Wl,-z,norelro}
    variant lazy now ${all/-Wl,-z,now/-Wl,-z,lazy}
}
# A shared library has no PT_INTERP: pie refuses one.
# shellcheck disable=SC2086
probe lib.so -shared -fPIC ${all/-fPIE -pie/} && expect "$TMP/lib.so" "probe lib.so" pie pie

# tessera and the shim. FORTIFY only where the build applies it.
type=$(cache CMAKE_BUILD_TYPE) sanitize=$(cache TESSERA_SANITIZE)
shipped="relro now canary"
case "$type:$sanitize" in
Release:OFF | RelWithDebInfo:OFF | MinSizeRel:OFF) shipped="$shipped fortify" ;;
*) echo "hardening: build type '$type', TESSERA_SANITIZE=$sanitize: FORTIFY not expected" ;;
esac
# shellcheck disable=SC2086
{
    expect "$TESSERA" tessera none pie $shipped
    expect "$SHIM" libtessera-cuda.so none $shipped
}
finish
