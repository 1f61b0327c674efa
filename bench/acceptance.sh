#!/bin/sh
# bench/acceptance.sh - the long acceptance runs `make check` shortens, at full
# length: the fight's A/A control at its default load (2,000 requests, 9
# repeats; check: 1,000 and 5), the SM-share matrix's 18 cases (check: 4
# that hold each axis's values) and the webhook's 2,000 keep-alive
# connections beside the prober (check: 1,000). Each prints its figures and
# its verdict.
set -u
cd "$(dirname "$0")/.."
TESSERA=${TESSERA:-build/tessera}
export TESSERA="$(cd "$(dirname "$TESSERA")" && pwd)/$(basename "$TESSERA")"
export TESSERA_SRC="$PWD" TESSERA_FIXTURES="$PWD/tests/fixtures"
rc=0
echo "## Acceptance runs at full length ($(nproc) cores, $(date -u +%Y-%m-%d), load $(cut -d' ' -f1 /proc/loadavg))"
echo
FIGHT_CONTROL_FULL=1 bash tests/cli/fight_control.sh || rc=1
SHIM_SM_MATRIX=full bash tests/cli/shim_sm.sh || rc=1
WEBHOOK_ROBUST_CONNS=2000 bash tests/cli/webhook_robust.sh || rc=1
exit "$rc"
