#!/usr/bin/env bash
# catalog_import_split.sh - `tessera catalog import` of one A30 gives one
# GpuModel however its real nvidia-smi outputs (tests/fixtures/nvidia-smi:
# -lgip, -lgipp, -lgi of the same card) are split into files or ordered,
# memory included; and an -lgi output of another card (a real A100 one,
# profile ID 9 = 3g.20gb, which an A30 has not) passed with them is an error
# naming that file, line and column (exit 2), not ignored.
. "$(dirname "$0")/../lib.sh"
F="$TESSERA_FIXTURES/nvidia-smi"
lgip="$F/a30-24gb_mig-lgip-all-used.txt" lgipp="$F/a30-24gb_mig-lgipp.txt"
lgi="$F/a30-24gb_mig-lgi-4x1g6gb.txt" a100lgi="$F/a100-40gb_mig-lgi-2x3g20gb.txt"
printf 'GPU 0: NVIDIA A30 (UUID: GPU-00000000-0000-0000-0000-000000000a30)\n' >"$TMP/L.txt"
imp() { "$TESSERA" catalog import --name a30-imported "$@"; }

# the reference: the three outputs in one file, as the combined fixture has them
cat "$TMP/L.txt" "$lgip" "$lgipp" "$lgi" >"$TMP/all.txt"
expect_rc 0 imp "$TMP/all.txt"
cp "$TMP/out" "$TMP/one.yaml"
expect_in "$TMP/one.yaml" "memoryGiB: 23.50"
expect_in "$TMP/one.yaml" "- {name: 2g.12gb, id: 5, computeSlices: 2, memoryGiB: 11.69"
n=0
for split in "$TMP/L.txt $lgip $lgipp $lgi" "$lgi $lgipp $TMP/L.txt $lgip" \
    "$TMP/L.txt $lgip $lgipp" "$lgipp $lgip $TMP/L.txt"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    expect_rc 0 imp $split
    check "split $n ($split) differs from the one-file import: $(diff "$TMP/one.yaml" "$TMP/out" | head -4)" \
        cmp -s "$TMP/one.yaml" "$TMP/out"
done

# the -lgip output cut inside a profile's two-line row (after line 6), and
# every ordered choice of the five pieces (325): those with -L, both halves
# of -lgip and -lgipp give the one-file model byte for byte (the profiles in
# -lgip's order, 23.50 GiB: it once followed the order of the files); the
# others are refused with exit 2 and a message.
head -6 "$lgip" >"$TMP/A.txt"
tail -n +7 "$lgip" >"$TMP/B.txt"
cp "$lgipp" "$TMP/P.txt"
cp "$lgi" "$TMP/I.txt"
good=0 bad=0
while read -r order; do
    files=()
    for ((i = 0; i < ${#order}; i++)); do files+=("$TMP/${order:i:1}.txt"); done
    rc=0
    imp "${files[@]}" >"$TMP/o.yaml" 2>"$TMP/o.err" || rc=$?
    if [[ $order == *L* && $order == *A* && $order == *B* && $order == *P* ]]; then
        good=$((good + 1))
        # (the diff only for the message of a failure: 144 orderings pass)
        if cmp -s "$TMP/one.yaml" "$TMP/o.yaml"; then ok; else
            bad "$order: rc $rc, differs: $(diff "$TMP/one.yaml" "$TMP/o.yaml" | head -4)"
        fi
    else
        bad=$((bad + 1))
        check "$order: rc $rc, want 2 and a message" test "$rc" = 2 -a -s "$TMP/o.err"
    fi
done < <(python3 -c 'import itertools as t
for k in range(1, 6):
    for o in t.permutations("LABPI", k): print("".join(o))')
check "325 orderings: $good whole, $bad refused" test $((good + bad)) = 325 -a "$good" = 144

# another card's -lgi: an error at its profile's row
expect_rc 2 imp "$TMP/L.txt" "$lgip" "$lgipp" "$a100lgi"
expect_in "$TMP/err" "$a100lgi:6:12: nvidia-smi mig -lgi names profile ID 9 (3g.20gb), which GPU 0's -lgip table does not have"
check "an error and still a document" [ ! -s "$TMP/out" ]
# first in the list, the same
expect_rc 2 imp "$a100lgi" "$TMP/L.txt" "$lgip" "$lgipp"
expect_in "$TMP/err" "$a100lgi:6:12:"
# an -lgi row whose profile ID the -lgip has under another name
sed 's/MIG 1g.6gb          14/MIG 2g.12gb         14/' "$lgi" >"$TMP/renamed-lgi.txt"
expect_rc 2 imp "$TMP/L.txt" "$lgip" "$lgipp" "$TMP/renamed-lgi.txt"
expect_in "$TMP/err" "renamed-lgi.txt:6:"
expect_in "$TMP/err" "profile ID 14 (2g.12gb), which GPU 0's -lgip table calls otherwise"
finish
