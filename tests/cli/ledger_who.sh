#!/usr/bin/env bash
# ledger_who.sh - `ledger who --instance GPU-...` on a MIG card names every
# holder (one per MIG instance, from a real `nvidia-smi -L` with 4 instances)
# and tells custody (plan, nvidia-smi, inventory entries) from observation
# ("observed" entries: pods seen on a device, custody violations), which
# never count as holders. An observation older than the instance's current
# custody is history, not shown.
source "$TESSERA_SRC/tests/lib.sh"
smi="$TESSERA_SRC/tests/fixtures/nvidia-smi/h100-pcie-80gb_nvidia-smi-mig-lgip-lgipp-lgi-L.txt"
gpu=GPU-7cd6d4d6-9fa8-13be-3c42-09a1b2280a02
mapfile -t migs < <(grep -oE 'MIG-[0-9a-f-]+' "$smi")
check "fixture: ${#migs[@]} MIG instances, expected 4" [ "${#migs[@]}" -eq 4 ]
db="sqlite:$TMP/w.db"
L() { "$TESSERA" ledger "$@"; }
rec() { expect_rc 0 L record --db "$db" --gpu-uuid "$gpu" --node n1 "$@"; }

expect_rc 0 L record --db "$db" --from-nvidia-smi "$smi" --tenant client-a --node n1 \
    --at 2026-11-30T10:00:00Z
rec --instance-uuid "${migs[0]}" --tenant early-intruder --source observed --at 2026-11-30T10:30:00Z
rec --instance-uuid "${migs[0]}" --tenant client-b --at 2026-11-30T11:00:00Z
rec --instance-uuid "${migs[1]}" --tenant client-c --at 2026-11-30T11:00:00Z
rec --instance-uuid "${migs[2]}" --tenant intruder --source observed --at 2026-11-30T11:30:00Z

# counts: "tenant:" lines by section, computed from the output's two sections
section() { awk -v s="$1" '/^(custody|observed)/ {on = index($0, s) == 1} on && /^tenant:/ {print $2}' "$TMP/out" | sort | tr '\n' ' '; }

expect_rc 0 L who --db "$db" --instance "$gpu" --at 2026-11-30T12:00:00Z
expect_in "$TMP/out" "custody (holders): 4"
check "holders: '$(section custody)'" [ "$(section custody)" = "client-a client-a client-b client-c " ]
expect_in "$TMP/out" "observed (seen on the device, not custody): 1"
check "observed: '$(section observed)'" [ "$(section observed)" = "intruder " ]

# before the reassignments: four times client-a, the early observation shown
expect_rc 0 L who --db "$db" --instance "$gpu" --at 2026-11-30T10:45:00Z
check "holders at 10:45: '$(section custody)'" [ "$(section custody)" = "client-a client-a client-a client-a " ]
check "observed at 10:45: '$(section observed)'" [ "$(section observed)" = "early-intruder " ]

# one instance: its holder only
expect_rc 0 L who --db "$db" --instance "${migs[2]}" --at 2026-11-30T12:00:00Z
check "holder of ${migs[2]}: '$(section custody)'" [ "$(section custody)" = "client-a " ]
check "observed on ${migs[2]}: '$(section observed)'" [ "$(section observed)" = "intruder " ]

# only an observation: no holder, said so, exit 0
expect_rc 0 L record --db "$db" --gpu-uuid GPU-lone --tenant x --source observed --at 2026-11-30T10:00:00Z
expect_rc 0 L who --db "$db" --instance GPU-lone --at 2026-11-30T12:00:00Z
expect_in "$TMP/out" "custody (holders): 0"
# nothing at all: exit 1
expect_rc 1 L who --db "$db" --instance GPU-none --at 2026-11-30T12:00:00Z
expect_in "$TMP/err" "no custody record for GPU-none"
finish
