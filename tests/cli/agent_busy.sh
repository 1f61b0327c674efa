#!/usr/bin/env bash
# agent_busy.sh - `tessera agent apply` checks processes per MIG instance
# (src/agent/busy.c) against the stand-in NVML over
# tests/fixtures/agent/h100-mixed.state, where the plan of
# tests/fixtures/agent/spec.yaml destroys GPU 0's 2g.20gb (GPU instance 5,
# at 4:2) and creates a 1g.20gb there, keeping GPU instances 1 and 13: a
# process on a kept instance does not stop the change; a compute process or
# an MPS client on the destroyed instance refuses it, named, with no
# mutating call; a driver without nvmlDeviceGetMPSComputeRunningProcesses_v3
# (standin-old/) still runs the agent, which says MPS clients go unchecked.
# Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

fx="$TESSERA_SRC/tests/fixtures"
standin="$(dirname "$TESSERA")"
export TESSERA_NVML_LIBRARY="$standin/standin/libnvidia-ml.so.1"
export TESSERA_STANDIN_NVML="$TMP/node.state"
export TESSERA_STANDIN_NVML_LOG="$TMP/calls.log"
A() { "$TESSERA" agent "$@"; }
reset() { cp "$fx/agent/h100-mixed.state" "$TMP/node.state"; : >"$TMP/calls.log"; }
"$TESSERA" plan -f "$fx/agent/spec.yaml" -o json >"$TMP/plan.json"
apply() { A apply --plan "$TMP/plan.json" --node gpu-node-1; }

# a process on the kept 3g.40gb (GPU instance 1): the change goes ahead
reset
echo 'proc;gpu=0;pid=4242;name=python3;gi=1' >>"$TMP/node.state"
expect_rc 0 apply
expect_in "$TMP/out" "done, verified: GPU 0 holds 3g.40gb at 0:4, 1g.20gb at 4:2, 1g.10gb at 6:1"
grep -q '^nvmlGpuInstanceDestroy gpu=0 5 0 -> 0$' "$TMP/calls.log" && ok ||
    bad "instance 5 not destroyed: $(cat "$TMP/calls.log")"
grep -q 'Destroy gpu=0 1 ' "$TMP/calls.log" && bad "the busy kept instance got a call" || ok

# a compute process on the 2g.20gb the change destroys: refused, named
reset
echo 'proc;gpu=0;pid=4343;name=vllm;gi=5' >>"$TMP/node.state"
expect_rc 1 apply
expect_in "$TMP/out" "refused: 1 process running on GPU 0 instances this change destroys: pid 4343 (vllm) on GPU instance 5 (2g.20gb at 4:2)"
[ ! -s "$TMP/calls.log" ] && ok || bad "busy instance got mutating calls: $(cat "$TMP/calls.log")"

# an MPS client there (only NVML's MPS list shows it): refused too
reset
echo 'proc;gpu=0;pid=4444;name=triton;gi=5;mps=1' >>"$TMP/node.state"
expect_rc 1 apply
expect_in "$TMP/out" "pid 4444 (triton, MPS client) on GPU instance 5 (2g.20gb at 4:2)"
[ ! -s "$TMP/calls.log" ] && ok || bad "MPS-busy instance got mutating calls"

# an older driver without the MPS list: the agent runs and says what it
# cannot see (the stand-in's own destroy then refuses: IN_USE, rolled back)
reset
TESSERA_NVML_LIBRARY="$standin/standin-old/libnvidia-ml.so.1" expect_rc 0 apply
expect_in "$TMP/out" "note: $standin/standin-old/libnvidia-ml.so.1 has no nvmlDeviceGetMPSComputeRunningProcesses_v3 (an older driver): MPS clients on an instance are not seen by the busy check"
expect_in "$TMP/out" "done, verified: GPU 0 holds 3g.40gb at 0:4, 1g.20gb at 4:2, 1g.10gb at 6:1"
reset
echo 'proc;gpu=0;pid=4444;name=triton;gi=5;mps=1' >>"$TMP/node.state"
TESSERA_NVML_LIBRARY="$standin/standin-old/libnvidia-ml.so.1" expect_rc 1 apply
expect_in "$TMP/out" "failed: nvmlComputeInstanceDestroy on GPU 0"
expect_in "$TMP/out" "the previous geometry is restored"

finish
