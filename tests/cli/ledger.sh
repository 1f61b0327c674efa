#!/usr/bin/env bash
# ledger.sh - `tessera ledger` end to end on SQLite: record a real
# `nvidia-smi -L` output (H100 PCIe, 4 MIG devices), reassign one instance,
# ask who held it before and after, history, export CSV and JSON (parsed with
# python3), an independent sha256sum of entry 1's documented canonical bytes
# (src/ledger/ledger.h), verify (exit 0), tamper the file with the sqlite3
# CLI (skipped when absent) and verify again (exit 1 naming the seq), and
# bad TIME / bad arguments (exit 2). Needs TESSERA and TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

smi="$TESSERA_SRC/tests/fixtures/nvidia-smi/h100-pcie-80gb_nvidia-smi-mig-lgip-lgipp-lgi-L.txt"
gpu=GPU-7cd6d4d6-9fa8-13be-3c42-09a1b2280a02
mig=MIG-da06d78f-7534-56a0-a062-62fef012be91
db="sqlite:$TMP/l.db"
key="$TMP/key"
printf 'not-in-the-database\n' >"$key"
L() { "$TESSERA" ledger "$@"; }

# record: nvidia-smi import, then a reassignment one hour later
expect_rc 0 L record --db "$db" --from-nvidia-smi "$smi" --tenant client-a --node n1 \
    --at 2026-11-30T10:00:00Z --hmac-key-file "$key"
expect_in "$TMP/out" "recorded seq 4: $gpu MIG-6d96b431-44ba-5360-80b0-9359561c927d -> client-a"
expect_rc 0 L record --db "$db" --tenant client-b --gpu-uuid "$gpu" --instance-uuid "$mig" \
    --gi-id 2 --profile 3g.40gb --placement 0:4 --node n1 --workload 'serve, "eu"' \
    --at 2026-11-30T12:00:00+01:00 --hmac-key-file "$key"
expect_in "$TMP/out" "recorded seq 5:"
expect_rc 0 L record --db "$db" --from-nvidia-smi "$smi" --at 1796040000 --hmac-key-file "$key"
expect_in "$TMP/out" "-> unassigned"

# who, before and after the reassignment
expect_rc 1 L who --db "$db" --instance "$mig" --at 2026-11-30T09:59:59Z
expect_in "$TMP/err" "no custody record for $mig"
expect_rc 0 L who --db "$db" --instance "$mig" --at 2026-11-30T10:59:59Z
expect_in "$TMP/out" "tenant:        client-a"
expect_rc 0 L who --db "$db" --instance "$mig" --at 1796036400
expect_in "$TMP/out" "tenant:        client-b"
expect_in "$TMP/out" 'workload:      serve, "eu"'
expect_rc 0 L who --db "$db" --instance "$mig" --at 2026-11-30T13:00:00+01:00
expect_in "$TMP/out" "tenant:        unassigned"

# history
expect_rc 0 L history --db "$db" --tenant client-a
[ "$(grep -c ' client-a ' "$TMP/out")" -eq 4 ] && ok || bad "history client-a: want 4 rows"
expect_rc 0 L history --db "$db" --tenant client-b --from 2026-11-30T11:00:00Z \
    --to 2026-11-30T11:00:01Z -o json
python3 - "$TMP/out" <<'PY' && ok || bad "history json"
import json, sys
e = json.load(open(sys.argv[1]))["entries"]
assert [x["seq"] for x in e] == [5], e
PY
expect_rc 0 L history --db "$db" --tenant client-b --from 2026-11-30T11:00:01Z
[ "$(wc -l <"$TMP/out")" -eq 1 ] && ok || bad "history after --from: want the header only"

# export
expect_rc 0 L export --db "$db" -o csv
cp "$TMP/out" "$TMP/export.csv"
expect_in "$TMP/export.csv" 'seq,time,ts_ms,node,gpu_uuid,instance_uuid,gi_id,profile,placement,tenant,workload,source,prev_hash,hash,mac'
expect_in "$TMP/export.csv" ',client-b,"serve, ""eu""",plan,'
python3 - "$TMP/export.csv" <<'PY' && ok || bad "export csv parse"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert len(rows) == 9 and rows[4]["workload"] == 'serve, "eu"' and rows[4]["gi_id"] == "2", rows
assert all(len(r["mac"]) == 64 for r in rows)
PY
expect_rc 0 L export --db "$db" -o json
python3 - "$TMP/out" <<'PY' && ok || bad "export json parse"
import json, sys
e = json.load(open(sys.argv[1]))["entries"]
assert len(e) == 9 and e[0]["prev_hash"] == "0" * 64
assert all(e[i]["prev_hash"] == e[i - 1]["hash"] for i in range(1, 9))
assert e[4]["tenant"] == "client-b" and e[4]["time"] == "2026-11-30T11:00:00Z"
PY

# entry 1's hash, computed independently from ledger.h's layout
ns() { printf '%d:%s,' "${#1}" "$1"; }
want=$( { printf '%064d' 0; ns tessera-ledger-v1; ns 1; ns 1796032800000; ns n1; ns "$gpu"
          ns "$mig"; ns ""; ns 3g.40gb; ns ""; ns client-a; ns ""; ns nvidia-smi; } |
        sha256sum | cut -d' ' -f1)
got=$(sed -n 2p "$TMP/export.csv" | cut -d, -f14)
[ "$want" = "$got" ] && ok || bad "entry 1 hash: sha256sum says $want, tessera $got"

# verify
expect_rc 0 L verify --db "$db"
expect_in "$TMP/out" "ledger intact: 9 entries, head seq 9"
expect_rc 0 L verify --db "$db" --hmac-key-file "$key"
expect_in "$TMP/out" "macs checked"
printf 'wrong\n' >"$TMP/wrong"
expect_rc 1 L verify --db "$db" --hmac-key-file "$TMP/wrong"
expect_in "$TMP/out" "ledger broken at seq 1: mac mismatch"

# tampering
if command -v sqlite3 >/dev/null; then
    cp "$TMP/l.db" "$TMP/t1.db"
    sqlite3 "$TMP/t1.db" "UPDATE ledger SET tenant = 'client-c' WHERE seq = 5"
    expect_rc 1 L verify --db "sqlite:$TMP/t1.db"
    expect_in "$TMP/out" "ledger broken at seq 5: hash mismatch"
    cp "$TMP/l.db" "$TMP/t2.db"
    sqlite3 "$TMP/t2.db" "DELETE FROM ledger WHERE seq = 3"
    expect_rc 1 L verify --db "sqlite:$TMP/t2.db"
    expect_in "$TMP/out" "ledger broken at seq 4: seq gap"
    cp "$TMP/l.db" "$TMP/t3.db"
    sqlite3 "$TMP/t3.db" "UPDATE ledger SET seq = -1 WHERE seq = 6;
        UPDATE ledger SET seq = 6 WHERE seq = 7; UPDATE ledger SET seq = 7 WHERE seq = -1"
    expect_rc 1 L verify --db "sqlite:$TMP/t3.db"
    expect_in "$TMP/out" "ledger broken at seq 6: prev_hash"
else
    echo "sqlite3 CLI not installed: skipping the tampering checks"
fi

# bad TIME, bad arguments
expect_rc 2 L who --db "$db" --instance "$mig" --at yesterday
expect_in "$TMP/err" "bad time 'yesterday'"
expect_rc 2 L who --db "$db" --instance "$mig" --at 2026-11-30T10:00:00
expect_rc 2 L history --db "$db" --tenant client-a --from 2026-02-30T00:00:00Z
expect_rc 2 L record --db "$db" --tenant t --gpu-uuid G --at 1e9
expect_rc 2 L record --db "$db" --tenant t --gpu-uuid G --source guess --at 1
expect_in "$TMP/err" "not one of plan, observed, nvidia-smi"
expect_rc 2 L record --db "$db" --gpu-uuid G --at 1
expect_in "$TMP/err" "--tenant is required"
expect_rc 2 L record --db "$db" --tenant t --gpu-uuid G --gi-id x --at 1
expect_rc 2 L who --db "$db" --instance "$mig"
expect_rc 2 L who --db "$db" --instance "$mig" --at 1 --tenant x
expect_rc 2 L export --db "$db" -o xml
expect_rc 2 L verify
expect_rc 2 L verify --db "mysql://x"
expect_rc 2 L frobnicate
expect_rc 2 L
for v in record who history export verify; do
    expect_rc 0 L "$v" --help
    expect_in "$TMP/out" "usage: tessera ledger"
done
expect_rc 0 L verify --db "$db"  # nothing above changed the chain
finish
