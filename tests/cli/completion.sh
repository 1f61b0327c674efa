#!/bin/bash
# completion.sh - `tessera completion bash|zsh` and `tessera docs man` hold
# exactly the options --help prints: for every command and subcommand, the
# long options of its --help equal what bash completion offers after `--`
# (run through bash's own completion variables, COMP_WORDS and COMP_CWORD),
# and each appears in its man page section; commands and subcommand words
# complete; the man page is valid roff; --version is documented.
. "$(dirname "$0")/../lib.sh"
T=$TESSERA
SCRIPT=$TMP/tessera.bash
mkdir "$TMP/empty" # where completion runs: no file names among the words
expect_rc 0 "$T" completion bash
cp "$TMP/out" "$SCRIPT"
expect_rc 0 "$T" docs man
cp "$TMP/out" "$TMP/tessera.1"

# complete WORD...: what the completion offers for the last word, sorted, one a line
complete_words() {
    (cd "$TMP/empty" && bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _tessera
             printf "%s\n" "${COMPREPLY[@]}"' _ "$SCRIPT" tessera "$@") | sort
}
# help_options CMD...: the long options CMD --help lists, sorted
help_options() {
    "$T" "$@" --help | sed -nE 's/^  (-[a-zA-Z], |    )--([a-z0-9-]+).*/--\2/p' | sort -u
}

commands=$("$T" --help | sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p')
check "tessera --help lists no commands" [ -n "$commands" ]
check "command words: $(complete_words '' | tr '\n' ' ')" \
    [ "$(complete_words '' | tr '\n' ' ')" = "$(printf '%s\n' $commands --help --version |
        sort | tr '\n' ' ')" ]

# paths: every command without subcommands, else each of its subcommands
for c in $commands; do
    subs=$(complete_words "$c" '' | grep -v '^-' | tr '\n' ' ')
    paths="$c"
    [ -n "$subs" ] && paths=""
    for s in $subs; do paths="${paths:+$paths|}$c $s"; done
    IFS='|'
    for p in $paths; do
        IFS=' '
        # shellcheck disable=SC2086
        help_options $p >"$TMP/help"
        # shellcheck disable=SC2086
        complete_words $p -- | grep -- '^--' >"$TMP/comp"
        check "tessera $p: --help and completion differ: $(diff "$TMP/help" "$TMP/comp" |
            grep '^[<>]' | tr '\n' ' ')" cmp -s "$TMP/help" "$TMP/comp"
        check "tessera $p --help lists no options" [ -s "$TMP/help" ]
    done
    IFS=' '
    # the man page: the command's section names each option of its --help
    sed -n "/^\.SS \"tessera $c\"/,/^\.S[SH] /p" "$TMP/tessera.1" | sed 's/\\-/-/g' >"$TMP/sec"
    check "man page: no section for tessera $c" [ -s "$TMP/sec" ]
    for o in $(help_options "$c"); do
        check "man page: tessera $c lacks $o" grep -q -- "$o\b" "$TMP/sec"
    done
done
check "subcommands of ledger: $(complete_words ledger '' | tr '\n' ' ')" \
    [ "$(complete_words ledger '' | grep -v '^-' | tr '\n' ' ')" = \
        "export history record verify who " ]
check "meter scrape options not offered" grep -qx -- --target <(complete_words meter scrape --t)
check "--tenant is not offered to ledger verify" \
    [ -z "$(complete_words ledger verify --te)" ]
# the two servers: the webhook offers none of the console's options, nor the console the webhook's
for o in --tokens --client-ca --db --current --inventory --denials-from; do
    check "serve offers $o" [ -z "$(complete_words serve -- | grep -x -- "$o")" ]
    check "console lacks $o" grep -qx -- "$o" <(complete_words console --)
done
for o in --admission-client-ca --admission-client --reserve-for --shim-path; do
    check "console offers $o" [ -z "$(complete_words console -- | grep -x -- "$o")" ]
    check "serve lacks $o" grep -qx -- "$o" <(complete_words serve --)
done
# a value after an option that takes one completes as a file name
touch "$TMP/spec-one.yaml"
check "a file after -f is not offered" grep -qx "$TMP/spec-one.yaml" \
    <(complete_words plan -f "$TMP/spec-on")

# zsh: a native script of its own (tests/cli/completion_zsh.sh drives it in zsh)
expect_rc 0 "$T" completion zsh
expect_in "$TMP/out" "#compdef tessera"
check "the zsh script lacks its function" grep -q '^_tessera() {' "$TMP/out"
check "the zsh script uses bash's" [ -z "$(grep -E 'bashcompinit|COMPREPLY' "$TMP/out")" ]
# the zsh script's own helper: the tenants of a spec, one a line
expect_rc 0 "$T" completion --tenants -f "$TESSERA_SRC/examples/mixed-fleet.yaml"
check "completion --tenants: $(tr '\n' ' ' <"$TMP/out")" \
    [ "$(tr '\n' ' ' <"$TMP/out")" = "bank lab search analytics sandbox shop " ]
TESSERA_SPEC=$TESSERA_SRC/examples/mixed-fleet.yaml expect_rc 0 "$T" completion --tenants
check "completion --tenants from TESSERA_SPEC: $(wc -l <"$TMP/out") lines" [ "$(wc -l <"$TMP/out")" = 6 ]
expect_rc 2 "$T" completion --tenants
expect_in "$TMP/err" "no spec given"
printf 'kind: Tenant\n' >"$TMP/broken.yaml"
expect_rc 2 "$T" completion --tenants -f "$TMP/broken.yaml"
check "completion --tenants printed a tenant of a broken spec" [ ! -s "$TMP/out" ]
expect_rc 2 "$T" completion --tenants zsh
expect_in "$TMP/err" "--tenants takes no operand"
expect_rc 2 "$T" completion fish
expect_in "$TMP/err" "unknown shell 'fish' (bash or zsh)"
expect_rc 2 "$T" completion

# the man page is valid roff and documents --version and the environment
check "groff warns on the man page: $(groff -man -Tutf8 -ww -z "$TMP/tessera.1" 2>&1 | head -3)" \
    [ -z "$(groff -man -Tutf8 -ww -z "$TMP/tessera.1" 2>&1)" ]
sed 's/\\-/-/g' "$TMP/tessera.1" >"$TMP/man.txt"
for want in "--version" TESSERA_SPEC TESSERA_DB TESSERA_CATALOG "EXIT STATUS"; do
    expect_in "$TMP/man.txt" "$want"
done
check "the man page's version is not tessera --version's" \
    grep -q "\"$("$T" --version)\"" "$TMP/tessera.1"
finish
