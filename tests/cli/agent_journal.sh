#!/usr/bin/env bash
# agent_journal.sh - `tessera agent apply --journal FILE` against the
# stand-in NVML: the apply is killed (SIGKILL, the stand-in's KILL_AFTER
# knob) right after its 3rd mutating call, which leaves GPU 0's new 1g.20gb
# at 4:2 without its compute instance; the journal is left behind; the next
# apply with the same journal destroys the half-made instance, finishes the
# change and removes the journal. Without --journal the half-made instance
# matches the plan and stays without a compute instance (what the journal
# is for). A journal that is not one: exit 2 naming the file, nothing
# changed. Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

fx="$TESSERA_SRC/tests/fixtures"
use_standin_nvml
A() { "$TESSERA" agent "$@"; }
reset() { reset_standin_nvml; }
gpu0() { A inventory --node gpu-node-1 -o json >"$TMP/inv.json" && inventory_geometry "$TMP/inv.json" 0; }
HALF="3g.40gb@0:4+1 1g.20gb@4:2+0 1g.10gb@6:1+1"
WANT="3g.40gb@0:4+1 1g.20gb@4:2+1 1g.10gb@6:1+1"
"$TESSERA" plan -f "$fx/agent/spec.yaml" -o json >"$TMP/plan.json"

# killed mid-change: the journal stays, GPU 0 is half made
reset
TESSERA_STANDIN_NVML_KILL_AFTER=3 expect_rc 137 A apply --plan "$TMP/plan.json" \
    --node gpu-node-1 --journal "$TMP/journal.json"
check "no journal left by the crash" test -s "$TMP/journal.json"
[ "$(gpu0)" = "$HALF" ] && ok || bad "after the crash GPU 0 is $(gpu0)"

# the next apply with the journal recovers, then completes the change
expect_rc 0 A apply --plan "$TMP/plan.json" --node gpu-node-1 --journal "$TMP/journal.json"
expect_in "$TMP/out" "GPU 0: destroyed half-made 1g.20gb at 4:2 (no compute instance)"
expect_in "$TMP/out" "recovered the change a crash cut short ($TMP/journal.json)"
expect_in "$TMP/out" "done, verified: GPU 0 holds 3g.40gb at 0:4, 1g.20gb at 4:2, 1g.10gb at 6:1"
check "journal left after recovery" test ! -e "$TMP/journal.json"
[ "$(gpu0)" = "$WANT" ] && ok || bad "after recovery GPU 0 is $(gpu0)"

# a clean apply with --journal leaves no journal behind
reset
expect_rc 0 A apply --plan "$TMP/plan.json" --node gpu-node-1 --journal "$TMP/journal.json"
check "journal left after a clean apply" test ! -e "$TMP/journal.json"

# without --journal the crash leaves the half-made instance for good
reset
TESSERA_STANDIN_NVML_KILL_AFTER=3 expect_rc 137 A apply --plan "$TMP/plan.json" --node gpu-node-1
expect_rc 0 A apply --plan "$TMP/plan.json" --node gpu-node-1
[ "$(gpu0)" = "$HALF" ] && ok || bad "without a journal GPU 0 is $(gpu0)"

# a journal that is not one: exit 2 naming it, no NVML change
reset
echo '{"gpu": "zero"}' >"$TMP/bad.json"
expect_rc 2 A apply --plan "$TMP/plan.json" --node gpu-node-1 --journal "$TMP/bad.json"
expect_in "$TMP/err" "$TMP/bad.json"
[ ! -s "$TMP/calls.log" ] && ok || bad "a bad journal made mutating calls"

# a dry run neither reads nor writes the journal
expect_rc 0 A apply --plan "$TMP/plan.json" --node gpu-node-1 --dry-run --journal "$TMP/bad.json"
check "dry run changed the journal" grep -q zero "$TMP/bad.json"
finish
