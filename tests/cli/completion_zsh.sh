#!/bin/bash
# completion_zsh.sh - `tessera completion zsh` in a real interactive zsh: a
# terminal (tmux) runs zsh with compinit, the script is loaded both ways the
# help names (sourced, and as the file _tessera on $fpath), Tab is pressed and
# the screen is read. The first Tab must complete; a command the script does
# not know must not (the negative control shows the screen check can fail).
. "$(dirname "$0")/../lib.sh"
for tool in zsh tmux; do
    command -v "$tool" >/dev/null || {
        bad "$tool is not installed (scripts/install-deps check)"
        finish
    }
done
# the terminals go with the test, however it ends
trap 'for s in "$TMP"/tmux-*.sock; do tmux -S "$s" kill-server; done 2>/dev/null; rm -rf "$TMP"' EXIT
T=$TESSERA
BIN=$TMP/bin
mkdir -p "$BIN" "$TMP/fpath" "$TMP/home" "$TMP/work"
ln -s "$T" "$BIN/tessera"
expect_rc 0 "$T" completion zsh
cp "$TMP/out" "$TMP/fpath/_tessera"
cp "$TMP/out" "$TMP/tessera.zsh"
touch "$TMP/work/spec-one.yaml"

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
# tab_line TYPED: type TYPED, press Tab once; the prompt line afterwards
tab_line() {
    tmux -S "$SOCK" send-keys -l "$1"
    tmux -S "$SOCK" send-keys Tab
    sleep 1
    screen_has "READY> $1" 5
    tmux -S "$SOCK" capture-pane -p | grep -F 'READY> ' | tail -1 | sed 's/ *$//'
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
    # negative control: no completion is loaded for this name, so nothing changes
    got=$(tab_line "tesserx led")
    check "$mode: the control completed: '$got'" [ "$got" = "READY> tesserx led" ]
    tmux -S "$SOCK" kill-server
done
finish
