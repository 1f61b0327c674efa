#!/bin/bash
# render_sm.sh - the SM share of the workloads tessera's shim holds:
# examples/mixed-fleet.yaml with smPercent on the time-sliced notebooks (40),
# the shim-enforced fraction report-embeddings (25) and the driver-enforced
# fraction nightly-scoring (15). The first two get `smPercent = N` in their
# limit file and a reason that says what the share is (throughput shaping
# between tenants that accept time-slicing, not latency isolation); the
# third has no limit file and its reason says the share goes unenforced; the
# unchanged example's limit files carry no smPercent; MPS rows keep their
# active thread percentage and pinned-memory cap (DRA: the claim's mpsConfig;
# device plugin: the README's environment for the workload). Needs TESSERA,
# TESSERA_SRC.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC" || exit 1

# The example with an smPercent line after each of the three workloads' names.
awk '{ print }
     /- name: notebooks/ { print "    smPercent: 40" }
     /- name: report-embeddings/ { print "    smPercent: 25" }
     /- name: nightly-scoring/ { print "    smPercent: 15" }' \
    examples/mixed-fleet.yaml >"$TMP/sm.yaml"
check "the spec has three smPercent more" \
    [ "$(grep -c smPercent "$TMP/sm.yaml")" -eq "$(($(grep -c smPercent examples/mixed-fleet.yaml) + 3))" ]

# limits DIR TENANT WORKLOAD: the limit file render wrote for WORKLOAD.
limits() {
    python3 - "$1/tenants/$2/cuda-limits.yaml" "tessera-cuda-limits-$3" <<'PY'
import sys, yaml
for o in yaml.safe_load_all(open(sys.argv[1])):
    if o and o["metadata"]["name"] == sys.argv[2]:
        print(o["data"]["cuda-limits"], end="")
PY
}

for mode in dra device-plugin; do
    D="$TMP/r-$mode"
    expect_rc 0 "$TESSERA" render -f "$TMP/sm.yaml" --out-dir "$D" --device-api $mode
    limits "$D" sandbox notebooks >"$TMP/nb"
    expect_in "$TMP/nb" "memoryLimit = 16Gi"
    expect_in "$TMP/nb" "smPercent = 40"
    limits "$D" analytics report-embeddings >"$TMP/re"
    expect_in "$TMP/re" "smPercent = 25"
    check "$mode: the limit files parse (one smPercent each)" \
        [ "$(cat "$TMP/nb" "$TMP/re" | grep -c '^smPercent = ')" -eq 2 ]
    check "$mode: a driver-enforced fraction has no limit file" \
        bash -c "! grep -q tessera-cuda-limits-nightly-scoring -r '$D'"
done

# The shim reads the rendered file (smPercent included): the card shows the
# 16 GiB cap, and nothing fails closed.
envfile="$(dirname "$TESSERA")/shim-test.env"
if [ -f "$envfile" ]; then
    # shellcheck disable=SC1090
    . "$envfile"
    sed "s|/run/tessera/cuda.region|$TMP/nb.region|; s|/run/tessera-pids/pid-map|$TMP/pid-map|" \
        "$TMP/nb" >"$TMP/nb.limits"
    LD_LIBRARY_PATH="$STANDIN_DIR" TESSERA_STANDIN_GPU="$TMP/gpu.lock" \
        TESSERA_CUDA_LIMITS_FILE="$TMP/nb.limits" \
        LD_PRELOAD="${SHIM_PRELOAD_FIRST:+$SHIM_PRELOAD_FIRST }$SHIM" \
        ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" "$PROBE" info >"$TMP/info" 2>&1
    expect_in "$TMP/info" "total=$((16 << 30)) "
    check "the shim accepts the rendered limit file" bash -c "! grep -q 'failing closed' '$TMP/info'"
else
    bad "no $envfile (tests/shim not built)"
fi

# The unchanged example: no smPercent in any limit file.
expect_rc 0 "$TESSERA" render -f examples/mixed-fleet.yaml --out-dir "$TMP/plain" --device-api dra
limits "$TMP/plain" sandbox notebooks >"$TMP/plain-nb"
expect_in "$TMP/plain-nb" "memoryLimit = 16Gi"
check "no smPercent without one in the spec" bash -c "! grep -rq smPercent '$TMP/plain/tenants'"

# The plan: the shimmed rows carry the share and say what it is; the
# driver-enforced one says it goes unenforced; MPS rows are unchanged.
expect_rc 0 "$TESSERA" plan -f "$TMP/sm.yaml" -o json
cp "$TMP/out" "$TMP/plan.json"
python3 - "$TMP/plan.json" >"$TMP/reasons" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decisions"]:
    print(r["workload"], r["mechanism"], r["smPercent"], r["reason"])
PY
share="throughput shaping between tenants that accept time-slicing, not latency isolation"
expect_in "$TMP/reasons" "notebooks time-slicing 40 "
expect_in "$TMP/reasons" "smPercent 40: tessera's shim holds it to 40% of the card's time, $share"
expect_in "$TMP/reasons" "report-embeddings memory-fraction 25 "
expect_in "$TMP/reasons" "smPercent 25: tessera's shim holds it to 25% of the card's time, $share"
expect_in "$TMP/reasons" "nightly-scoring memory-fraction 0 "
expect_in "$TMP/reasons" "smPercent 15 is not enforced (no shim runs where the driver enforces the cap)"
expect_in "$TMP/reasons" "query-encoder mps 30 "

# MPS, where it is chosen, gets both the active thread percentage and the
# pinned-memory cap (the DRA driver's names for CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
# and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT).
python3 - "$TMP/r-dra/tenants/search/claimtemplates.yaml" >"$TMP/mps" <<'PY'
import sys, yaml
for o in yaml.safe_load_all(open(sys.argv[1])):
    if o:
        p = o["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]
        m = p["sharing"]["mpsConfig"]
        print(o["metadata"]["name"], m["defaultActiveThreadPercentage"],
              m["defaultPinnedDeviceMemoryLimit"])
PY
expect_in "$TMP/mps" "query-encoder 30 6Gi"
expect_in "$TMP/mps" "reranker 20 14Gi"
# The device plugin's daemon splits a card evenly: the rendered README gives
# each MPS workload both values for its containers' environment (caps in MiB).
expect_in "$TMP/r-device-plugin/README.md" "| search-prod/query-encoder | \`30\` | \`0=6144M\` |"
expect_in "$TMP/r-device-plugin/README.md" "| search-prod/reranker | \`20\` | \`0=14336M\` |"
check "no device-plugin MPS section in a DRA render" \
    bash -c "! grep -q 'MPS shares under the device plugin' '$TMP/r-dra/README.md'"
finish
