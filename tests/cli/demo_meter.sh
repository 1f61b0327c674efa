#!/bin/bash
# demo_meter.sh - the metering part of `make demo` (scripts/demo-meter) as a
# new user sees it: a recorded day of the worked example imported into SQLite
# with the node's inventory in the custody ledger. Checked: every device
# scrape stored, no violation, client-a's invoice equals its two 3g.40gb
# instances (4/8 of a card each) for the day at the list price, computed
# here; the ledger names client-a for its instance and verifies.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
expect_rc 0 scripts/demo-meter "$TESSERA" "$TMP/demo"
# 16 devices (4 + 4 + 7 MIG instances, 1 whole card) x 5,760 scrapes, and the
# notebooks' pod on the fine-tune's card in office hours (08:00-20:00 at 15 s):
# each series is a device scrape, and each is stored: the time-sliced guest's
# pod under its own key, beside the card's owner (docs/metering.md)
ds=$((16 * 86400 / 15 + (20 - 8) * 3600 / 15)) ns=$ds
expect_in "$TMP/out" "$ds device scrapes, $ns new samples, 0 lines rejected, 0 custody violations"
# 2 instances x 1/2 card x (86,400 s - the last 15 s, which no scrape closes)
uh=$(( (2 * 500000 * (86400 - 15) * 1000 + 1800000) / 3600000 ))
hours=$(printf '%d.%06d' $((uh / 1000000)) $((uh % 1000000)))
# one line, rounded to cents once, half to even
n=$((uh * 2900000)) d=10000000000
cents=$((n / d + (2 * (n % d) > d || (2 * (n % d) == d && (n / d) % 2 == 1))))
expect_in "$TMP/out" "$(printf '%-18s %-10s %16s' h100-80gb-sxm 3g.40gb "$hours")"
expect_in "$TMP/out" "Total (allocation basis, billed): $((cents / 100)).$(printf %02d $((cents % 100))) EUR"
expect_in "$TMP/out" "tenant:        client-a"
expect_in "$TMP/out" "workload:      chat-13b"
expect_in "$TMP/out" "ledger intact: 16 entries"
# usage rows in micro-GPU-hours from ms x ppm, rounded half up as usage does
uh_of() { printf '%d.%06d' $((($1 + 1800000) / 3600000 / 1000000)) \
    $((($1 + 1800000) / 3600000 % 1000000)); }
row() { grep -qE "^$1 +h100-80gb-sxm +whole +$2 " "$TMP/out" && ok || bad "no usage row '$1 $2'"; }
# the guest (platform-dev, time-sliced on the provider's card: 1 of 2 clients)
# is charged 1/2 of the card in office hours, its last interval (19:59:45 to
# 20:00, closed by the card's next scrape) included
row platform-dev "$(uh_of $(((20 - 8) * 3600000 * 500000)))"
# the provider pays the card outside office hours and the other half in them,
# less the day's last 15 s that no scrape closes
row provider "$(uh_of $(((24 - 12) * 3600000 * 1000000 + (20 - 8) * 3600000 * 500000 - 15000 * 1000000)))"
# the fine-tune's whole card (no MIG instance) is recorded as its owner's
expect_in "$TMP/out" "recorded seq 16: GPU-"
grep -q "recorded seq 16: GPU-.* - -> provider" "$TMP/out" && ok || bad "whole card not the provider's"
# the time-sliced notebooks (platform-dev, a guest on the fine-tune's card) have
# their pod in office hours: 08:00-20:00 at 15 s, two metrics each
n=$(grep -c 'namespace="platform-dev",pod="notebooks-0"' "$TMP/demo/dcgm-2026-11-02.prom")
check "the day holds $n notebook samples, expected $(((20 - 8) * 3600 / 15 * 2))" \
    [ "$n" -eq $(((20 - 8) * 3600 / 15 * 2)) ]
finish
