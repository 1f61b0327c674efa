#!/usr/bin/zsh -f
# zsh_complete.zsh - what zsh's own completion system offers, read without a
# screen: a fresh interactive zsh on a terminal of its own (zsh/zpty) runs
# compinit, loads the completion script, and for each LINE types it and
# presses Tab. compadd, which every completion function ends in, is wrapped
# to write each match it is given, with the description zsh would list
# beside it, before adding it as usual.
#
#   zsh_complete.zsh MODE SCRIPT OUT LINE...
#
# MODE: source (SCRIPT sourced after compinit) or fpath (SCRIPT installed as
# the file _tessera on $fpath, autoloaded at the first Tab). The matches of
# the i-th LINE go to OUT/i, one "MATCH<TAB>DESCRIPTION" a line (the
# description empty when there is none). A LINE that starts with '!' is run
# as a command instead (typed, then Enter), e.g. "!export TESSERA_SPEC=...".
# The zsh runs with PATH=$PATH, HOME=OUT/home, in the current folder.
emulate -L zsh
zmodload zsh/zpty || { print -u2 "zsh_complete: no zsh/zpty"; exit 3 }
(( $# >= 3 )) || { print -u2 "usage: zsh_complete.zsh MODE SCRIPT OUT LINE..."; exit 2 }
mode=$1 script=$2 out=$3
shift 3
home=$out/home
mkdir -p $home/fpath || exit 3
[[ $mode == fpath ]] && cp $script $home/fpath/_tessera

# The terminal's zsh: no prompt, wide lines (descriptions are cut to the
# terminal's width), Tab bound to a widget that completes, marks the end in
# $CAPTURE, and neither inserts nor lists.
{
    print -r -- "fpath=(${(q)home}/fpath \$fpath)"
    cat <<'EOF'
PS1='' PS2='' RPS1=''
stty columns 4000
unsetopt zle_bracketed_paste
autoload -Uz compinit && compinit -u -D
zstyle ':completion:*' list-grouped false
compadd() {
    local -a __m __d
    local __i __s
    if (( ${@[(I)-[OAD]]} )); then
        builtin compadd "$@"
        return
    fi
    __i=${@[(i)-d]}
    (( __i < $# )) && __d=("${(@P)${@[__i+1]}}")
    builtin compadd -O __m -D __d "$@"
    for (( __i = 1; __i <= $#__m; __i++ )); do
        __s=
        [[ $__d[__i] == *[[:space:]]--\ * ]] && __s=${__d[__i]#*[[:space:]]-- }
        print -r -- "$__m[__i]"$'\t'"$__s" >>| $CAPTURE
    done
    builtin compadd "$@"
}
_capture() {
    : >| $CAPTURE
    _main_complete
    print -r -- __DONE__ >>| $CAPTURE
    compstate[insert]=''
    compstate[list]=''
}
zle -C capture complete-word _capture
bindkey '^I' capture
EOF
    [[ $mode == source ]] && print -r -- "source ${(q)script:A}"
    print -r -- "print -r -- READY"
} >$home/.zshrc

zpty term env HOME=$home ZDOTDIR=$home CAPTURE=$out/capture zsh -i
zpty -r term _ '*READY*' || { print -u2 "zsh_complete: zsh did not start"; exit 3 }

# done_within SECONDS: the widget (or the command) wrote its end mark
done_within() {
    local i
    for (( i = 0; i < $1 * 20; i++ )); do
        [[ -f $out/capture ]] && grep -qx __DONE__ $out/capture && return 0
        sleep 0.05
    done
    return 1
}

integer n=0
for line in "$@"; do
    (( n++ ))
    rm -f $out/capture
    if [[ $line == '!'* ]]; then
        zpty -w term "${line#!}; print -r -- __DONE__ >| \$CAPTURE"
    else
        zpty -w -n term "$line"$'\t'
    fi
    if ! done_within 20; then
        # the zsh is stuck: this line and the rest have no answer
        for line in "$@[n,-1]"; do
            print -r -- "TIMEOUT"$'\t'"no answer to: $line" >$out/$n
            (( n++ ))
        done
        break
    fi
    grep -vx __DONE__ $out/capture >$out/$n
    [[ $line == '!'* ]] || zpty -w -n term $'\C-u'
done
zpty -d term
