#!/bin/bash
# plan_trace.sh - bench/trace_spec.py, the generator of trace-derived specs:
# on a 48-pod sample of the Alibaba 2023 trace (tests/fixtures/plan/trace/),
# every pod once, the spec it writes plans, and each pod class becomes the
# workload the mapping in bench/trace_spec.py (and bench/RESULTS.md) says (counted here from the CSV
# with awk, not from the generator); malformed traces exit 2 naming the place.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
CSV=tests/fixtures/plan/trace/openb_gpu_pods_sample.csv
GEN="python3 bench/trace_spec.py"

expect_rc 0 $GEN --gpus 128 --all --trace $CSV
cp "$TMP/out" "$TMP/spec.yaml"
expect_rc 0 "$TESSERA" plan -f "$TMP/spec.yaml" -o json
cp "$TMP/out" "$TMP/plan.json"

# from the CSV: GPU pods; whole-GPU pods and their GPUs; fractional LS and BE pods
count() { awk -F, "NR > 1 && \$2 > 0 && ($1) { n += $2 } END { print n + 0 }" $CSV; }
pods=$(count 1 1)
whole=$(count '$2 > 1 || $3 == 1000' 1)
whole_gpus=$(count '$2 > 1 || $3 == 1000' '$2')
be=$(count '$2 == 1 && $3 < 1000 && $4 == "BE"' 1)
ls=$(count '$2 == 1 && $3 < 1000 && $4 != "BE"' 1)
check "sample has every class ($pods pods: $whole whole, $ls LS, $be BE)" \
    test "$pods" -eq 48 -a "$whole" -gt 0 -a "$ls" -gt 0 -a "$be" -gt 0

got=$(python3 - "$TMP/plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
d = p["decisions"]
whole = [x for x in d if x["mechanism"] == "whole"]
print(len(d), len(whole), sum(x["gpus"] for x in whole),
      sum(x["mechanism"] in ("mig", "mps") for x in d),
      sum(x["mechanism"] == "time-slicing" for x in d),
      p["summary"]["gpusTotal"], int(p["summary"]["gpusUsed"] >= p["summary"]["lowerBound"]))
PY
)
want="$pods $whole $whole_gpus $ls $be 128 1"
check "decisions, whole, GPUs, LS, BE, fleet, used>=bound: want '$want', got '$got'" \
    test "$got" = "$want"

# the same seed gives the same spec; another seed another draw
$GEN --gpus 100 --seed 7 >"$TMP/a.yaml" && $GEN --gpus 100 --seed 7 >"$TMP/b.yaml"
check "same seed, same spec" cmp -s "$TMP/a.yaml" "$TMP/b.yaml"
$GEN --gpus 100 --seed 8 >"$TMP/c.yaml"
check "another seed, another spec" bash -c "! cmp -s '$TMP/a.yaml' '$TMP/c.yaml'"

# bad input: exit 2, the message names the file and line, or the option
printf 'name,num_gpu,gpu_milli,qos\np0,1,500,LS\np1,one,500,LS\n' >"$TMP/bad.csv"
expect_rc 2 $GEN --gpus 8 --trace "$TMP/bad.csv"
expect_in "$TMP/err" "$TMP/bad.csv:3: num_gpu and gpu_milli must be integers"
printf 'name,num_gpu,gpu_milli,qos\np0,1,1500,LS\n' >"$TMP/big.csv"
expect_rc 2 $GEN --gpus 8 --trace "$TMP/big.csv"
expect_in "$TMP/err" "$TMP/big.csv:2: num_gpu must be >= 0 and gpu_milli in 0..1000"
printf 'name,num_gpu,qos\np0,1,LS\n' >"$TMP/col.csv"
expect_rc 2 $GEN --gpus 8 --trace "$TMP/col.csv"
expect_in "$TMP/err" "$TMP/col.csv:1: no 'gpu_milli' column"
printf 'name,num_gpu,gpu_milli,qos\np0,0,0,BE\n' >"$TMP/cpu.csv"
expect_rc 2 $GEN --gpus 8 --trace "$TMP/cpu.csv"
expect_in "$TMP/err" "$TMP/cpu.csv: no GPU pods"
expect_rc 2 $GEN --gpus 0
expect_in "$TMP/err" "--gpus must be at least 1"

finish
