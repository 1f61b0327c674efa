#!/usr/bin/env bash
# ledger_concurrent.sh - 8 writer processes append to one custody ledger at
# once, on SQLite and on a throwaway PostgreSQL (scripts/pg-test-server):
# each records the 4 MIG devices of a real `nvidia-smi -L` output 8 times over,
# so appends interleave. Then `ledger verify` must find every entry
# (8 x 8 x 4 = 256), the chain intact, seq 1..320 without a gap, and each
# writer's entries all present. Before appends were serialised, the head was
# read outside the insert's transaction: "stored as seq N but hashed as M".
# On PostgreSQL, an append rolled back must not leave a hole that breaks the
# next one (the seq is the head's + 1, not the identity counter's). A new
# SQLite file whose write lock another process holds: the writer waits.
source "$TESSERA_SRC/tests/lib.sh"
cd "$TESSERA_SRC" || exit 1

smi="$TESSERA_SRC/tests/fixtures/nvidia-smi/h100-pcie-80gb_nvidia-smi-mig-lgip-lgipp-lgi-L.txt"
WRITERS=8 ROUNDS=8 PER=4
TOTAL=$((WRITERS * ROUNDS * PER))
devices=$(grep -cE '^ +MIG .*UUID: MIG-' "$smi")
check "fixture has $devices MIG devices, expected $PER" [ "$devices" -eq "$PER" ]

# writer DB N: ROUNDS records of every device, as tenant wN
writer() {
    for r in $(seq "$ROUNDS"); do
        "$TESSERA" ledger record --db "$1" --from-nvidia-smi "$smi" --tenant "w$2" \
            --node "n$2" --at "$((1796036400 + r))" >/dev/null 2>>"$TMP/writer$2.err" || return 1
    done
}

# hammer LABEL DB: all writers at once, then verify and count
hammer() {
    local pids=() failed=0
    for w in $(seq "$WRITERS"); do writer "$2" "$w" & pids+=($!); done
    for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
    check "$1: $failed writers failed: $(cat "$TMP"/writer*.err | head -3)" [ "$failed" -eq 0 ]
    expect_rc 0 "$TESSERA" ledger verify --db "$2"
    expect_in "$TMP/out" "ledger intact: $TOTAL entries, head seq $TOTAL "
    "$TESSERA" ledger export --db "$2" -o json >"$TMP/export.json"
    python3 - "$TMP/export.json" "$TOTAL" "$WRITERS" "$((ROUNDS * PER))" >"$TMP/py.out" 2>&1 <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["entries"]
want, writers, each = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
seqs = [r["seq"] for r in rows]
assert seqs == list(range(1, want + 1)), "seq not 1..%d: %s" % (want, seqs[:10])
for i in range(len(rows) - 1):
    assert rows[i + 1]["prev_hash"] == rows[i]["hash"], "chain broken at %d" % seqs[i + 1]
for w in range(1, writers + 1):
    got = sum(1 for r in rows if r["tenant"] == "w%d" % w)
    assert got == each, "writer w%d has %d entries, expected %d" % (w, got, each)
print("ok")
PY
    check "$1: export: $(cat "$TMP/py.out")" grep -qx ok "$TMP/py.out"
    rm -f "$TMP"/writer*.err
}

hammer sqlite "sqlite:$TMP/c.db"

# A new SQLite file whose write lock another process holds (as one creating
# it does): switching it to WAL, a writer read it and then asked for the lock,
# and SQLite answers that SQLITE_BUSY at once, without the busy handler (it
# could deadlock), so the writer failed "database is locked" (1 of 8 writers
# beside scripts/busy-check). It must wait for the lock and record.
/usr/bin/python3 - "$TMP/held.db" <<'PY' &
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
open(sys.argv[1] + ".held", "w").close()
time.sleep(0.5)
c.execute("COMMIT")
PY
holder=$!
for _ in $(seq 100); do [ -e "$TMP/held.db.held" ] && break; sleep 0.05; done
expect_rc 0 "$TESSERA" ledger record --db "sqlite:$TMP/held.db" --from-nvidia-smi "$smi" \
    --tenant w1 --node n1 --at 1796036401
wait "$holder"
expect_rc 0 "$TESSERA" ledger verify --db "sqlite:$TMP/held.db"
expect_in "$TMP/out" "ledger intact: $PER entries"

PG="$TMP/pg"
PORT=$(free_port)
trap 'scripts/pg-test-server stop "$PG" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
if URL=$(scripts/pg-test-server start "$PG" "$PORT" 2>"$TMP/start.err"); then
    ok
    hammer postgresql "$URL"
    # an append rolled back (a writer killed, a lost connection) takes an identity
    # value with it (the INSERT's own error, if any, is beside the point: it is
    # rolled back); the next append must still chain on as seq TOTAL+1
    psql "$URL" -AtXqc "BEGIN; INSERT INTO ledger (ts_ms, node, gpu_uuid, instance_uuid, gi_id,
        profile, placement, tenant, workload, source, hash, prev_hash, mac) VALUES (1, '', 'G',
        '', '', '', '', 't', '', 'plan', '', '', ''); ROLLBACK;" >"$TMP/psql.out" 2>&1
    expect_rc 0 "$TESSERA" ledger record --db "$URL" --tenant after --gpu-uuid GPU-after \
        --at 1796040000
    expect_in "$TMP/out" "recorded seq $((TOTAL + 1)):"
    expect_rc 0 "$TESSERA" ledger verify --db "$URL"
    expect_in "$TMP/out" "ledger intact: $((TOTAL + 1)) entries"
else
    bad "pg-test-server start failed: $(cat "$TMP/start.err")"
fi
finish
