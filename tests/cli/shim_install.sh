#!/bin/bash
# shim_install.sh - `tessera shim install` puts the shim at --to byte for byte,
# mode 0644, in one rename: a process holding the old file open keeps reading
# the old bytes; what is not a 64-bit ELF shared object, or cannot be read, is
# refused with 2 and nothing written; a folder that does not exist is 1.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
T() { "$TESSERA" "$@"; }
SHIM=$(dirname "$TESSERA")/src/shim/libtessera-cuda.so
mkdir "$TMP/lib"
printf 'old library\n' > "$TMP/lib/libtessera-cuda.so"
exec 3<"$TMP/lib/libtessera-cuda.so"
expect_rc 0 T shim install --from "$SHIM" --to "$TMP/lib/libtessera-cuda.so"
expect_in "$TMP/out" "($(stat -c %s "$SHIM") bytes)"
check "installed byte for byte" cmp -s "$SHIM" "$TMP/lib/libtessera-cuda.so"
check "mode 0644" [ "$(stat -c %a "$TMP/lib/libtessera-cuda.so")" = 644 ]
check "the old file's reader still reads the old bytes" [ "$(cat <&3)" = "old library" ]
exec 3<&-
check "no temporary file left" [ "$(ls "$TMP/lib")" = libtessera-cuda.so ]
# a hostile node path: a link planted at the temporary name the install once
# used (--to.tmp.PID; the init container's pid is predictable) is not followed,
# and a link at --to itself is replaced, not written through
printf 'precious\n' > "$TMP/precious"
run_as_pid() { # LINK-TARGET TO: plant TO.tmp.$$, then become tessera with pid $$
    sh -c 'ln -s "$1" "$2.tmp.$$" && exec "$3" shim install --from "$4" --to "$2"' \
        sh "$1" "$2" "$TESSERA" "$SHIM"
}
expect_rc 0 run_as_pid "$TMP/precious" "$TMP/lib/libtessera-cuda.so"
check "a link at the temporary name is not followed" [ "$(cat "$TMP/precious")" = precious ]
check "the shim is a file, not the planted link" [ ! -L "$TMP/lib/libtessera-cuda.so" ]
check "the shim installed past the planted link" cmp -s "$SHIM" "$TMP/lib/libtessera-cuda.so"
rm -f "$TMP"/lib/libtessera-cuda.so.tmp.*
printf 'precious\n' > "$TMP/precious"
chmod 600 "$TMP/precious"
ln -sf "$TMP/precious" "$TMP/lib/link.so"
expect_rc 0 T shim install --from "$SHIM" --to "$TMP/lib/link.so"
check "a link at --to is replaced" [ ! -L "$TMP/lib/link.so" ]
check "its target is untouched" [ "$(cat "$TMP/precious")" = precious ]
check "its target keeps its mode" [ "$(stat -c %a "$TMP/precious")" = 600 ]
rm "$TMP/lib/link.so"
# not a shim: 2, and the installed one untouched
printf 'MZ not elf' > "$TMP/notelf"
cp "$TESSERA" "$TMP/exe"
for f in "$TMP/notelf" "$TMP/exe" /dev/null; do
    expect_rc 2 T shim install --from "$f" --to "$TMP/lib/libtessera-cuda.so"
    expect_in "$TMP/err" "$f: not an ELF shared object"
done
check "a refused file leaves the shim" cmp -s "$SHIM" "$TMP/lib/libtessera-cuda.so"
expect_rc 2 T shim install --from "$TMP/missing.so" --to "$TMP/lib/x.so"
expect_in "$TMP/err" "$TMP/missing.so: cannot open"
expect_rc 2 T shim install --to "$TMP/lib/x.so"
expect_in "$TMP/err" "needs --from FILE and --to FILE"
expect_rc 2 T shim install --from "$SHIM" --to "$TMP/lib/x.so" extra
expect_in "$TMP/err" "unexpected argument"
expect_rc 2 T shim copy
expect_in "$TMP/err" "unknown subcommand 'copy'"
expect_rc 1 T shim install --from "$SHIM" --to "$TMP/no-such-dir/libtessera-cuda.so"
expect_in "$TMP/err" "cannot create"
finish
