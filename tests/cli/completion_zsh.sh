#!/bin/bash
# labels: slow nosan
# completion_zsh.sh - `tessera completion zsh` in zsh's own completion
# system. Without a screen (tests/tools/zsh_complete.zsh: zsh on a terminal
# of its own, compadd wrapped), the script loaded both ways the help names
# (sourced, and as the file _tessera on $fpath, where the first Tab loads it):
#   - commands with the summaries of --help, subcommands with the words of
#     each usage line;
#   - for every command and subcommand, exactly the options of its --help,
#     each described by its --help text;
#   - the values of -o, --solver and the other options whose table lists
#     them, each accepted by the command, a bogus one refused;
#   - tenants read from the spec given with -f (a quoted name too), else
#     TESSERA_SPEC; GPU models as `catalog list` names them, with their
#     display names and those of a --catalog file; files, and only folders
#     where a folder is wanted.
# A stripped copy of the script must fail the description check (the check
# can fail). Then in a real terminal (tmux), Tab is pressed and the screen
# read: the first Tab must complete, a command without completion must not.
. "$(dirname "$0")/../lib.sh"
for tool in zsh tmux python3; do
    command -v "$tool" >/dev/null || {
        bad "$tool is not installed (scripts/install-deps check)"
        finish
    }
done
# the terminals go with the test, however it ends
trap 'for s in "$TMP"/tmux-*.sock; do tmux -S "$s" kill-server; done 2>/dev/null; rm -rf "$TMP"' EXIT
T=$TESSERA
EX=$TESSERA_SRC/examples/four-h100.yaml
CAPTURE=$TESSERA_SRC/tests/tools/zsh_complete.zsh
BIN=$TMP/bin
mkdir -p "$BIN" "$TMP/fpath" "$TMP/home" "$TMP/work/a-folder"
ln -s "$T" "$BIN/tessera"
expect_rc 0 "$T" completion zsh
cp "$TMP/out" "$TMP/fpath/_tessera"
cp "$TMP/out" "$TMP/tessera.zsh"
touch "$TMP/work/spec-one.yaml"
cp "$EX" "$TMP/work/my spec.yaml"

check "the zsh script is not zsh: $(zsh -n "$TMP/tessera.zsh" 2>&1 | head -3)" zsh -n "$TMP/tessera.zsh"
check "the first line is not #compdef tessera" [ "$(head -1 "$TMP/tessera.zsh")" = "#compdef tessera" ]
check "the zsh script still goes through bash's" \
    [ -z "$(grep -E 'bashcompinit|_bash_complete|COMPREPLY' "$TMP/tessera.zsh")" ]

# ---- the answers of zsh's completion ----------------------------------------

# complete_zsh MODE SCRIPT LINE...: each LINE completed in $TMP/work; the
# answers of the i-th in $TMP/zc/i ("MATCH<TAB>DESCRIPTION" lines)
complete_zsh() {
    rm -rf "$TMP/zc"
    mkdir "$TMP/zc"
    ZC_READ=() GOT=() DESC=()
    local mode=$1 script=$2
    shift 2
    (cd "$TMP/work" && PATH=$BIN:/usr/bin:/bin zsh -f "$CAPTURE" "$mode" "$script" "$TMP/zc" "$@")
}
# zc_read I: line I's answers read once (hundreds of checks read them: no
# process a check): GOT[I], its matches sorted once each (cut -f1 | sort -u),
# and DESC[I<TAB>MATCH], the description of MATCH's first line (its second
# tab-separated field, as awk -F'\t' reads it)
declare -A ZC_READ GOT DESC
zc_read() {
    [ -n "${ZC_READ[$1]}" ] && return
    ZC_READ[$1]=1
    GOT[$1]=$(cut -f1 "$TMP/zc/$1" | sort -u)
    local line m d
    while IFS= read -r line || [ -n "$line" ]; do
        m=${line%%$'\t'*} d=
        [[ $line == *$'\t'* ]] && d=${line#*$'\t'} && d=${d%%$'\t'*}
        [ -n "${DESC[$1$'\t'$m]+set}" ] || DESC[$1$'\t'$m]=$d
    done <"$TMP/zc/$1"
}
# got I: the matches of line I, sorted, once each
got() { zc_read "$1" && printf '%s' "${GOT[$1]}${GOT[$1]:+$'\n'}"; }
# described I MATCH: the description zsh gives MATCH in line I
described() { zc_read "$1" && printf '%s' "${DESC[$1$'\t'$2]}${DESC[$1$'\t'$2]:+$'\n'}"; }
# described_is I MATCH WANT: as [ "$(described I MATCH)" = WANT ], without a subshell
described_is() { zc_read "$1" && [ "${DESC[$1$'\t'$2]}" = "$3" ]; }
# words WORD...: sorted, one a line
words() { printf '%s\n' "$@" | sort -u; }
# same WHAT I WORD...: line I offered exactly WORD...
same() {
    local what=$1 i=$2 want
    shift 2
    zc_read "$i"
    want=$(words "$@")
    check "$what: offered ${GOT[$i]//$'\n'/ } , not ${want//$'\n'/ } " [ "${GOT[$i]}" = "$want" ]
}
# help_described CMD...: "OPTION<TAB>DESCRIPTION" for each option of CMD --help
# (-k and --name), the description's lines joined by a space
help_described() {
    "$T" "$@" --help | awk '
        function flush() {
            if (name != "") print name "\t" desc
            if (short != "") print short "\t" desc
            name = short = desc = ""
        }
        /^  (-[a-zA-Z], |    )--[a-z0-9-]+/ {
            flush()
            if ($0 ~ /^  -[a-zA-Z], /) short = substr($0, 3, 2)
            match($0, /--[a-z0-9-]+/)
            name = substr($0, RSTART, RLENGTH)
            rest = substr($0, RSTART + RLENGTH)
            sub(/^ [^ ]+/, "", rest) # the value, FILE
            gsub(/^ +| +$/, "", rest)
            desc = rest
            next
        }
        name != "" && /^   +[^ ]/ {
            t = $0
            gsub(/^ +| +$/, "", t)
            desc = desc == "" ? t : desc " " t
            next
        }
        { flush() }
        END { flush() }'
}
# tenants_of SPEC: the names of its Tenant documents (read by PyYAML, not tessera)
tenants_of() {
    python3 -c 'import sys, yaml
print(*[d["metadata"]["name"] for d in yaml.safe_load_all(open(sys.argv[1]))
        if d and d.get("kind") == "Tenant"])' "$1"
}
# subcommands CMD: the words after `tessera CMD` in its usage lines
subcommands() {
    "$T" "$1" --help | sed -nE "s/^(usage:|      ) +tessera $1 ([a-z][a-z|]*)( .*)?$/\2/p" |
        tr '|' '\n' | sort -u
}

commands=$("$T" --help | sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p')
check "tessera --help lists no commands" [ -n "$commands" ]
paths=() # every command without subcommands, else each of its subcommands
for c in $commands; do
    subs=$(subcommands "$c")
    [ -z "$subs" ] && paths+=("$c")
    for s in $subs; do paths+=("$c $s"); done
done

# one zsh for the whole list: the lines, and what each must answer
lines=("tessera " "tessera --")
for p in "${paths[@]}"; do lines+=("tessera $p -"); done
for c in $commands; do lines+=("tessera $c "); done
values=(
    # LINE TO COMPLETE|WORDS IT MUST OFFER|A COMMAND THAT TAKES EACH (@: the word)
    "tessera plan -o |text json yaml|plan -f $EX -o @"
    "tessera plan --solver |auto exact heuristic|plan -f $EX --solver @"
    "tessera plan --prefer |fewer-drains fewer-cards lower-cost|plan -f $EX --prefer @"
    "tessera usage -o |text json yaml|usage -f $EX --db sqlite:$TMP/none.db -o @"
    "tessera invoice --output |text csv json yaml html|invoice -f $EX --db sqlite:$TMP/none.db --tenant client-a --period 2026-01 -o @"
    "tessera ledger history -o |text json yaml|ledger history --db sqlite:$TMP/none.db --tenant client-a -o @"
    "tessera ledger export -o |csv json yaml|ledger export --db sqlite:$TMP/none.db -o @"
    "tessera agent inventory -o |text json yaml|agent inventory -o @"
    "tessera agent watch --log-format |text json|agent watch --log-format @ --no-such-option"
    "tessera meter scrape --log-format |text json|meter scrape --log-format @ --no-such-option"
    "tessera fight -o |text json yaml|fight -o @ --no-such-option"
    "tessera render --device-api |dra device-plugin both|render -f $EX --out-dir $TMP/r-@ --device-api @"
    "tessera cert --key-type |ecdsa-p256 rsa-2048 rsa-3072|cert --dir $TMP/c-@ --key-type @"
)
nvalues=${#values[@]}
for v in "${values[@]}"; do lines+=("${v%%|*}"); done
tenant_at=${#lines[@]}
lines+=("tessera invoice -f $EX --tenant " "tessera ledger record --filename='my spec.yaml' --tenant "
    "tessera token new --tenant " "!export TESSERA_SPEC=$TESSERA_SRC/examples/mixed-fleet.yaml"
    "tessera token new --tenant " "tessera ledger history -f$EX --tenant ")
# the models of the built-in catalog and of one more file
awk 'BEGIN { RS = "\n---\n" } /name: h100-80gb-sxm}/ { print }' \
    "$TESSERA_SRC/src/catalog/builtin.yaml" |
    sed 's/name: h100-80gb-sxm}/name: lab-card}/; s/displayName: .*/displayName: "Lab card: test"/' \
        >"$TMP/work/lab.yaml"
model_at=${#lines[@]}
lines+=("tessera catalog show " "tessera catalog show --catalog lab.yaml la")
file_at=${#lines[@]}
lines+=("tessera plan -f spec-o" "tessera render --out-dir " "tessera catalog import " "tesserx ")

for mode in source fpath; do
    complete_zsh "$mode" "$TMP/tessera.zsh" "${lines[@]}"
    check "$mode: no answer in time: $(grep -h TIMEOUT "$TMP"/zc/[0-9]* | head -3)" \
        [ -z "$(grep -h TIMEOUT "$TMP"/zc/[0-9]*)" ]
    # commands and their summaries, the top's options
    same "$mode: tessera <Tab>" 1 $commands
    "$T" --help | sed -n '/^commands:/,/^$/s/^  \([a-z]*\)  *\(.*\)$/\1\t\2/p' >"$TMP/summaries"
    while IFS=$'\t' read -r c summary; do
        check "$mode: '$c' described as '${DESC[1$'\t'$c]}', not '$summary'" \
            described_is 1 "$c" "$summary"
    done <"$TMP/summaries"
    same "$mode: tessera --<Tab>" 2 --help --version
    check "$mode: --version has no description" [ -n "$(described 2 --version)" ]
    # every command's and subcommand's options, with the text of its --help
    i=3
    for p in "${paths[@]}"; do
        # (each path's --help read once, in the first mode, for both)
        help=$TMP/help-$i
        # shellcheck disable=SC2086
        [ -e "$help" ] || help_described $p >"$help"
        check "tessera $p --help lists no options" [ -s "$help" ]
        same "$mode: tessera $p -<Tab>" "$i" $(cut -f1 "$help")
        zc_read "$i"
        while IFS=$'\t' read -r o want; do
            check "$mode: tessera $p $o described as '${DESC[$i$'\t'$o]}', not '$want'" \
                described_is "$i" "$o" "$want"
        done <"$help"
        i=$((i + 1))
    done
    # the subcommands of each command, as its usage lines name them
    for c in $commands; do
        subs=$(subcommands "$c")
        if [ -n "$subs" ]; then
            # shellcheck disable=SC2086
            same "$mode: tessera $c <Tab>" "$i" $subs
        else
            check "$mode: tessera $c <Tab> offered $(got "$i" | tr '\n' ' ')" \
                [ -z "$(got "$i" | grep -v '^-')" ]
        fi
        i=$((i + 1))
    done
    # the values of options that have a fixed set
    for v in "${values[@]}"; do
        want=${v#*|}
        # shellcheck disable=SC2086
        same "$mode: '${v%%|*}<Tab>'" "$i" ${want%%|*}
        i=$((i + 1))
    done
    # tenants: from -f (quoted, = and attached too), else TESSERA_SPEC
    same "$mode: tenants of -f" $((tenant_at + 1)) $(tenants_of "$EX")
    check "$mode: tenants of a quoted -f: $(got $((tenant_at + 2)) | tr '\n' ' ')" \
        [ "$(got $((tenant_at + 2)))" = "$(got $((tenant_at + 1)))" ]
    same "$mode: tenants without a spec" $((tenant_at + 3))
    same "$mode: tenants of TESSERA_SPEC" $((tenant_at + 5)) \
        $(tenants_of "$TESSERA_SRC/examples/mixed-fleet.yaml")
    check "$mode: -f$EX lost to TESSERA_SPEC" \
        [ "$(got $((tenant_at + 6)))" = "$(got $((tenant_at + 1)))" ]
    # GPU models, each with its display name
    same "$mode: tessera catalog show <Tab>" $((model_at + 1)) \
        $("$T" catalog list | awk 'NR > 1 {print $1}')
    check "$mode: h100-80gb-sxm described as '$(described $((model_at + 1)) h100-80gb-sxm)'" \
        [ "$(described $((model_at + 1)) h100-80gb-sxm)" = "NVIDIA H100 80GB SXM5" ]
    same "$mode: a --catalog file's model" $((model_at + 2)) lab-card
    check "$mode: lab-card described as '$(described $((model_at + 2)) lab-card)'" \
        [ "$(described $((model_at + 2)) lab-card)" = "Lab card: test" ]
    # files, and folders only where a folder is wanted
    same "$mode: a file after -f" $((file_at + 1)) spec-one.yaml
    same "$mode: --out-dir offers folders" $((file_at + 2)) a-folder
    same "$mode: catalog import offers files" $((file_at + 3)) a-folder lab.yaml 'my\ spec.yaml' \
        spec-one.yaml # (quoted for the command line)
    check "$mode: a command without completion got tessera's" \
        [ -z "$(got $((file_at + 4)) | grep -x plan)" ]
done

# each value offered is taken: its command does not answer as to a bogus one
for ((j = 0; j < nvalues; j++)); do
    v=${values[j]}
    cmd=${v##*|}
    want=${v#*|}
    # shellcheck disable=SC2086
    "$T" ${cmd//@/no-such-value} >/dev/null 2>"$TMP/bogus"
    check "a bogus value was taken: $cmd" [ $? -eq 2 ]
    # first lines read by the shell, not head and sed (no word holds a character
    # sed's pattern would read otherwise)
    first_bogus= && { IFS= read -r first_bogus <"$TMP/bogus" || true; }
    for w in ${want%%|*}; do
        # shellcheck disable=SC2086
        "$T" ${cmd//@/$w} >/dev/null 2>"$TMP/err"
        first= && { IFS= read -r first <"$TMP/err" || true; }
        check "'$w' is refused as the bogus value is: ${cmd//@/$w}: $first" \
            [ "${first//"$w"/no-such-value}" != "$first_bogus" ]
    done
done

# the check can fail: a script without descriptions or values is caught
sed -E "s/'\[[^]]*\]/'/; s/:\(text json yaml\)'/: '/" "$TMP/tessera.zsh" >"$TMP/stripped.zsh"
complete_zsh source "$TMP/stripped.zsh" "tessera plan --wi" "tessera plan -o "
check "a stripped script still described --wide" [ -z "$(described 1 --wide)" ]
check "a stripped script still offered -o's values" [ -z "$(got 2)" ]

# ---- a real terminal --------------------------------------------------------

# start_zsh MODE: a fresh zsh in a detached terminal, the script loaded by MODE
# (source or fpath), in $TMP/work; waits for its prompt.
start_zsh() {
    {
        echo "PS1='READY> '"
        [ "$1" = fpath ] && echo "fpath=($TMP/fpath \$fpath)"
        echo "autoload -Uz compinit && compinit -u -d $TMP/home/.zcompdump"
        [ "$1" = source ] && echo "source $TMP/tessera.zsh"
        echo "path=($BIN \$path); cd $TMP/work"
    } >"$TMP/home/.zshrc"
    SOCK=$TMP/tmux-$1.sock # a server each: a new one on a killed one's socket can die
    tmux -S "$SOCK" -f /dev/null new-session -d -x 200 -y 50 \
        "env -i HOME=$TMP/home ZDOTDIR=$TMP/home TERM=screen PATH=/usr/bin:/bin zsh -i"
    screen_has "READY>" 20 # (capture-pane drops trailing blanks)
}
# screen_has TEXT SECONDS: the terminal shows TEXT within SECONDS
screen_has() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        tmux -S "$SOCK" capture-pane -p >"$TMP/screen" 2>/dev/null
        grep -qF -- "$1" "$TMP/screen" && return 0
        sleep 0.1
    done
    return 1
}
# tab_line TYPED: type TYPED, press Tab once; the prompt line afterwards. A
# marker typed after the Tab shows when zsh has handled it (keys are read in
# order), so nothing sleeps for a guessed time; each call's marker is its
# own (the last call's may still be on the screen; each call runs in a
# subshell of its own pid), and is cut off again.
tab_line() {
    local mark="@@${BASHPID}@@"
    tmux -S "$SOCK" send-keys -l "$1"
    tmux -S "$SOCK" send-keys Tab
    tmux -S "$SOCK" send-keys -l "$mark"
    screen_has "$mark" 20 || echo "(no answer to Tab in 20 s)"
    grep -F "READY> " "$TMP/screen" | grep -F "$mark" | tail -1 | sed "s/$mark *\$//; s/ *\$//"
    tmux -S "$SOCK" send-keys C-u
}

for mode in source fpath; do
    if ! start_zsh "$mode"; then
        bad "$mode: zsh did not show its prompt: $(cat "$TMP/screen" 2>&1)"
        continue
    fi
    got=$(tab_line "tessera led")
    check "$mode: 'tessera led<Tab>' gave '$got'" [ "$got" = "READY> tessera ledger" ]
    got=$(tab_line "tessera ledger ver")
    check "$mode: 'tessera ledger ver<Tab>' gave '$got'" [ "$got" = "READY> tessera ledger verify" ]
    got=$(tab_line "tessera plan --wi")
    check "$mode: 'tessera plan --wi<Tab>' gave '$got'" [ "$got" = "READY> tessera plan --wide" ]
    got=$(tab_line "tessera plan -f spec-o")
    check "$mode: a file after -f: '$got'" [ "$got" = "READY> tessera plan -f spec-one.yaml" ]
    got=$(tab_line "tessera plan --solver heu")
    check "$mode: a value after --solver: '$got'" [ "$got" = "READY> tessera plan --solver heuristic" ]
    # negative control: no completion is loaded for this name, so nothing changes
    got=$(tab_line "tesserx led")
    check "$mode: the control completed: '$got'" [ "$got" = "READY> tesserx led" ]
    tmux -S "$SOCK" kill-server
done
finish
