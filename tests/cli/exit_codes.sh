#!/bin/bash
# exit_codes.sh - one exit-code rule for every verb (cli_exit in
# src/cli/common.c, `tessera --help`, README "Exit codes"): 0 ok, 1 the job
# failed, 2 bad usage or bad input. Every verb and subcommand answers --help
# with 0 and its usage, an unknown option with 2, an option that belongs to
# another subcommand with 2 and "does not apply"; a spec that cannot be read
# or is invalid gives 2 whichever verb reads it; a fleet that cannot hold the
# spec gives 1; an output that cannot be written gives 1; the inputs of serve
# and console (spec, TLS key and certificate, identities, CAs) are read before
# they listen, and are inputs; each refuses the other's options.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1
T() { "$TESSERA" "$@"; }

for v in plan check render serve console usage invoice docs fight "meter import" "meter scrape" \
    "catalog list" "catalog show" "catalog import" "agent inventory" "agent apply" "agent watch" \
    "ledger record" "ledger who" "ledger history" "ledger export" "ledger verify" completion \
    cert "shim install" token; do
    expect_rc 0 T $v --help
    expect_in "$TMP/out" "usage: tessera"
    expect_in "$TMP/out" "--help"
    expect_rc 2 T $v --no-such-option
done
for v in plan render serve console meter usage invoice catalog agent ledger shim token; do
    expect_rc 0 T $v --help
    expect_rc 2 T $v frobnicate
done
expect_rc 2 T frobnicate
# each verb's help is its own: usage and invoice do not print each other's
T usage --help > "$TMP/h.usage"
T invoice --help > "$TMP/h.invoice"
check "usage --help shows invoice's synopsis" sh -c "! grep -q 'tessera invoice -f' '$TMP/h.usage'"
check "usage --help shows meter import's" sh -c "! grep -q 'tessera meter import -f' '$TMP/h.usage'"
check "invoice --help shows usage's synopsis" sh -c "! grep -q 'tessera usage -f' '$TMP/h.invoice'"
expect_in "$TMP/h.usage" "usage: tessera usage -f SPEC"
expect_in "$TMP/h.invoice" "usage: tessera invoice -f SPEC"
# bad words are named, not only answered with the usage text
expect_rc 2 T catalog frob
expect_in "$TMP/err" "unknown subcommand 'frob'"
expect_rc 2 T catalog
expect_in "$TMP/err" "missing subcommand"
expect_rc 2 T catalog show
expect_in "$TMP/err" "show takes one MODEL"
expect_rc 2 T docs foo
expect_in "$TMP/err" "unknown reference 'foo'"
printf '{\n' > "$TMP/cut.json"
expect_rc 2 T ledger record --db "sqlite:$TMP/l.db" --inventory "$TMP/cut.json"
check "a JSON error at column 0 (columns count from 1)" sh -c "! grep -q 'cut.json:[0-9]*:0:' '$TMP/err'"
expect_rc 2 T

# an option of another subcommand
expect_rc 2 T usage -f examples/four-h100.yaml --db "sqlite:$TMP/u.db" --tenant x
expect_in "$TMP/err" "option '--tenant' does not apply"
expect_rc 2 T agent inventory --plan "$TMP/p.json"
expect_in "$TMP/err" "does not apply"
expect_rc 2 T ledger who --db "sqlite:$TMP/l.db" --gpu-uuid G
expect_in "$TMP/err" "ledger who: option '--gpu-uuid' does not apply"
expect_rc 2 T catalog list --name x
expect_in "$TMP/err" "does not apply"

# a spec that cannot be read, or is invalid: 2 in every verb that reads one
TESSERA_NVML_LIBRARY="$(dirname "$TESSERA")/standin/libnvidia-ml.so.1" \
    TESSERA_STANDIN_NVML=tests/fixtures/agent/h100-mixed.state \
    "$TESSERA" agent inventory --node gpu-node-1 -o json >"$TMP/inv.json"
check "no inventory from the stand-in NVML" [ -s "$TMP/inv.json" ]
cp tests/fixtures/bad/03-negative-memory.yaml "$TMP/bad.yaml"
for spec in /nonexistent.yaml "$TMP/bad.yaml"; do
    expect_rc 2 T plan -f "$spec"
    expect_rc 2 T check -f "$spec"
    expect_rc 2 T render -f "$spec" --out-dir "$TMP/out-dir"
    expect_rc 2 T usage -f "$spec" --db "sqlite:$TMP/u.db"
    expect_rc 2 T invoice -f "$spec" --db "sqlite:$TMP/u.db" --tenant t --period 2026-11
    expect_rc 2 T meter import -f "$spec" --db "sqlite:$TMP/u.db" --at 1 /dev/null
    expect_rc 2 T ledger record --db "sqlite:$TMP/l.db" --inventory "$TMP/inv.json" -f "$spec"
done
# an input file that cannot be read is bad input too
expect_rc 2 T ledger record --db "sqlite:$TMP/l.db" --from-nvidia-smi /nonexistent.txt
expect_rc 2 T ledger record --db "sqlite:$TMP/l.db" --inventory /nonexistent.json
expect_rc 2 T plan -f examples/four-h100.yaml --current /nonexistent.json
expect_rc 2 T agent apply --plan /nonexistent.json --node n
expect_rc 2 T catalog import /nonexistent.txt
# serve: its inputs (spec, key, certificate) are read before it listens
scripts/make-test-cert "$TMP/tls" >/dev/null
for args in "--tls-cert $TMP/tls/tls.crt --tls-key /nonexistent.key" \
    "--tls-cert /nonexistent.crt --tls-key $TMP/tls/tls.key" \
    "--tls-cert $TMP/bad.yaml --tls-key $TMP/tls/tls.key"; do
    # shellcheck disable=SC2086
    expect_rc 2 T serve -f examples/four-h100.yaml $args --listen 127.0.0.1:1
done
expect_rc 2 T serve -f "$TMP/bad.yaml" --tls-cert "$TMP/tls/tls.crt" --tls-key "$TMP/tls/tls.key" \
    --listen 127.0.0.1:1
check "a spec that fails at start talks of a previous policy" \
    sh -c "! grep -q 'previous policy' '$TMP/err'"
expect_in "$TMP/err" "spec did not load"
# console: the same inputs, and its identities file (TO: a server that starts
# after all is stopped, and fails the check, instead of serving for ever)
TO() { timeout 20 "$TESSERA" "$@"; }
"$TESSERA" token new --operator | sed -n 2p >"$TMP/tokens"
TLS=(--tls-cert "$TMP/tls/tls.crt" --tls-key "$TMP/tls/tls.key")
for args in "--tls-cert $TMP/tls/tls.crt --tls-key /nonexistent.key" \
    "--tls-cert /nonexistent.crt --tls-key $TMP/tls/tls.key" \
    "--tls-cert $TMP/bad.yaml --tls-key $TMP/tls/tls.key"; do
    # shellcheck disable=SC2086
    expect_rc 2 TO console -f examples/four-h100.yaml $args --tokens "$TMP/tokens" --listen 127.0.0.1:1
done
expect_rc 2 TO console -f "$TMP/bad.yaml" "${TLS[@]}" --tokens "$TMP/tokens" --listen 127.0.0.1:1
expect_in "$TMP/err" "spec did not load"
expect_rc 2 TO console -f examples/four-h100.yaml "${TLS[@]}" --tokens /nonexistent.tokens \
    --listen 127.0.0.1:1
expect_in "$TMP/err" "/nonexistent.tokens: cannot open"
expect_rc 2 TO console -f examples/four-h100.yaml "${TLS[@]}" --tokens "$TMP/tokens" \
    --client-ca /nonexistent-ca.crt --listen 127.0.0.1:1
expect_in "$TMP/err" "/nonexistent-ca.crt: cannot open"
expect_rc 2 TO console -f examples/four-h100.yaml "${TLS[@]}" --listen 127.0.0.1:1
expect_in "$TMP/err" "console needs -f SPEC, --tls-cert and --tls-key and --tokens"
expect_rc 2 TO console -f examples/four-h100.yaml "${TLS[@]}" --tokens "$TMP/tokens" \
    --denials-from https://127.0.0.1:8081/denials --listen 127.0.0.1:1
expect_in "$TMP/err" "--denials-from: 'https://127.0.0.1:8081/denials' is not an http:// URL"
# serve: the API server's CA, read before it listens
expect_rc 2 TO serve -f examples/four-h100.yaml "${TLS[@]}" --admission-client-ca /nonexistent-ca.crt \
    --listen 127.0.0.1:1
expect_in "$TMP/err" "/nonexistent-ca.crt: cannot open"
expect_rc 2 TO serve -f examples/four-h100.yaml "${TLS[@]}" --admission-client-ca "$TMP/bad.yaml" \
    --listen 127.0.0.1:1
expect_in "$TMP/err" "$TMP/bad.yaml: no PEM certificate in it"
expect_rc 2 TO serve -f examples/four-h100.yaml "${TLS[@]}" --admission-client apiserver \
    --listen 127.0.0.1:1
expect_in "$TMP/err" "--admission-client needs --admission-client-ca"
# each refuses the other's options
for opt in "--tokens $TMP/tokens" "--client-ca $TMP/tls/ca.crt" "--db sqlite:$TMP/u.db" \
    "--interval 15s" "--metering-refresh 1s" "--current $TMP/p.json" "--inventory $TMP/inv.json" \
    "--denials-from http://127.0.0.1:8081/denials"; do
    # shellcheck disable=SC2086
    expect_rc 2 TO serve -f examples/four-h100.yaml "${TLS[@]}" $opt --listen 127.0.0.1:1
    expect_in "$TMP/err" "unrecognized option '${opt%% *}'"
done
for opt in "--admission-client-ca $TMP/tls/ca.crt" "--admission-client apiserver" \
    "--reserve-for 10.0.0.1" "--reserved 10" "--runtime-class nvidia" "--shim-path /x.so"; do
    # shellcheck disable=SC2086
    expect_rc 2 TO console -f examples/four-h100.yaml "${TLS[@]}" --tokens "$TMP/tokens" $opt \
        --listen 127.0.0.1:1
    expect_in "$TMP/err" "unrecognized option '${opt%% *}'"
done

# the job failed: the fleet cannot hold the spec; an output cannot be written
sed 's/count: 4/count: 1/' examples/four-h100.yaml > "$TMP/small.yaml"
expect_rc 1 T check -f "$TMP/small.yaml"
expect_rc 1 T plan -f "$TMP/small.yaml"
expect_rc 1 T plan -f examples/four-h100.yaml --svg /nonexistent-dir/x.svg
finish
