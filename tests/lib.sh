# lib.sh - helpers for the shell tests: a pass/fail counter, checks that
# print what they expected and what they got, and a summary line in the
# "N passed, M failed, K skipped" form CI reads (scripts/test-skips counts the
# SKIPPED lines). Source it; call `finish` last.
# the environment defaults of -f, --catalog and --db (tests/cli/env.sh sets its own)
unset TESSERA_SPEC TESSERA_CATALOG TESSERA_DB
PASS=0
FAIL=0
SKIP=0
TEST_NAME=${TEST_NAME:-$(basename "$0" .sh)}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ok()   { PASS=$((PASS + 1)); }
# skip WHY: a check this machine cannot judge, said loudly with what was
# measured; counted, never a pass (scripts/test-skips lists them after ctest).
skip() { SKIP=$((SKIP + 1)); echo "SKIPPED: $*"; }
bad()  { FAIL=$((FAIL + 1)); echo "FAIL: $*"; }

# expect_rc WANT CMD...: run CMD, compare its exit code.
expect_rc() {
    want=$1; shift
    "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    if [ "$got" -eq "$want" ]; then ok; else
        bad "$* exited $got, expected $want"; head -5 "$TMP/err"; fi
}

# check MESSAGE CMD...: passes when CMD succeeds; MESSAGE says what failed.
check() { local msg=$1; shift; if "$@"; then ok; else bad "$msg"; fi; }
# twice CMD...: CMD, and once more when it fails (not when it skips: a
# skip is counted once), both figures printed; fails when both do. For the
# timing experiments (shim_sm.sh, shim_inflight.sh): a 3 s split on 2
# shared cores is a noisy measurement (one matrix case passed 0.15 in 2 of
# 26 runs while its traced steady state stays under 0.13, docs/shim.md); a
# fault that is real fails both.
twice() {
    "$@"
    local rc=$?
    case $rc in 0 | 3) return $rc ;; esac
    echo "measuring ${3:-it} once more"
    "$@"
}
# judge WHAT CMD...: CMD's verdict counted: 0 passes, 3 is a skip its judge
# has printed (SKIPPED, with the measured contention), else WHAT fails.
judge() {
    local what=$1
    shift
    "$@"
    case $? in
    0) ok ;;
    3) SKIP=$((SKIP + 1)) ;;
    *) bad "$what" ;;
    esac
}


# expect_in FILE TEXT: FILE contains TEXT (fixed string).
expect_in() {
    if grep -qF -- "$2" "$1"; then ok; else bad "'$2' not in $1"; head -20 "$1"; fi
}

finish() {
    echo "$TEST_NAME: $PASS passed, $FAIL failed, $SKIP skipped"
    [ "$FAIL" -eq 0 ]
}

# deb_version PKG: the version of Debian package PKG installed for this
# machine's architecture (or for all), empty when it is not. Plain
# `dpkg-query -W PKG` prints one per architecture once dpkg multiarch has
# installed a library for another (scripts/install-deps cross: arm64).
deb_version() {
    dpkg-query -W -f='${Architecture}\t${Version}\n' "$1" 2>/dev/null |
        awk -F'\t' -v a="$(dpkg --print-architecture)" '$1 == a || $1 == "all" {print $2; exit}'
}

# use_standin_cuda: run the CUDA driver API against the build's stand-in
# libcuda (tests/standin/cuda) with a private card lock and 256 MiB of card
# memory. The stand-in is part of every build, so its absence fails the test.
# Sets $build (the build folder).
use_standin_cuda() {
    build=$(cd "$(dirname "$TESSERA")" && pwd)
    local standin="$build/tests/standin/cuda"
    if [ ! -e "$standin/libcuda.so.1" ]; then
        bad "stand-in driver not built ($standin)"
        finish
        exit 1
    fi
    export LD_LIBRARY_PATH="$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export TESSERA_STANDIN_GPU="$TMP/gpu.lock" TESSERA_STANDIN_TOTAL_MEM=256M
}

# use_shim_probes: the shim's test programs (tests/shim writes shim-test.env
# beside $TESSERA: SHIM, PROBE, STANDIN_DIR, SHIM_PRELOAD_FIRST), the
# stand-in card in $TMP, no CUDA limit taken from the caller's environment,
# and $preload: what LD_PRELOAD must hold (libasan first in the sanitized
# build, whose leak check is then off: the probe is not the code under test).
use_shim_probes() {
    local envfile
    envfile="$(dirname "$TESSERA")/shim-test.env"
    if [ ! -f "$envfile" ]; then bad "no $envfile (tests/shim not built)"; finish; exit 1; fi
    # shellcheck disable=SC1090
    . "$envfile"
    export TESSERA_STANDIN_GPU="$TMP/gpu.lock"
    unset TESSERA_CUDA_MEMORY_LIMIT TESSERA_CUDA_SM_PERCENT TESSERA_CUDA_REGION TESSERA_CUDA_PID_MAP
    preload="${SHIM_PRELOAD_FIRST:+$SHIM_PRELOAD_FIRST }$SHIM"
    if [ -n "$SHIM_PRELOAD_FIRST" ]; then export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"; fi
}

# use_standin_nvml: NVML is the build's stand-in (tests/standin/nvml), its card
# state $TMP/node.state (a copy of the H100 node of tests/fixtures/agent,
# h100-mixed.state, which reset_standin_nvml restores), its call log
# $TMP/calls.log.
use_standin_nvml() {
    export TESSERA_NVML_LIBRARY="$(dirname "$TESSERA")/standin/libnvidia-ml.so.1"
    export TESSERA_STANDIN_NVML="$TMP/node.state"
    export TESSERA_STANDIN_NVML_LOG="$TMP/calls.log"
    reset_standin_nvml
}
reset_standin_nvml() {
    cp "$(dirname "${BASH_SOURCE[0]}")/fixtures/agent/h100-mixed.state" "$TMP/node.state"
    : >"$TMP/calls.log"
}

# inventory_geometry FILE GPU: GPU's instances in a NodeInventory (agent inventory
# -o json), as "profile@start:size+computeInstances ..."
inventory_geometry() {
    python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
g = [g for g in d["gpus"] if g["index"] == int(sys.argv[2])][0]
print(" ".join("%s@%d:%d+%d" % (x["profile"], x["placement"]["start"], x["placement"]["size"],
                                len(x["computeInstances"])) for x in g["gpuInstances"]))
PY
}

# pages_scraped PORT N: wait (40 s at most) until tests/tools/page_server.py on
# PORT has served N pages; fails the test and exits otherwise.
pages_scraped() {
    local deadline=$((SECONDS + 40))
    until [ "$(cat "$TMP/$1.count" 2>/dev/null)" -ge "$2" ] 2>/dev/null; do
        if [ $SECONDS -ge $deadline ]; then
            bad "Prometheus did not scrape the $2 pages in 40 s"; tail -5 "$TMP/prometheus.log"
            finish; exit
        fi
        sleep 0.5
    done
    ok
}

# free_port: a loopback port nobody listens on, below the kernel's ephemeral
# range, so that an outgoing connection of a test running beside this one
# cannot take it between now and the listen.
free_port() {
    /usr/bin/python3 - <<'PY'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(500):
    port = random.randrange(10000, low)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        print(port)
        break
    except OSError:
        pass
    finally:
        s.close()
else:
    raise SystemExit("free_port: no free loopback port below %d after 500 tries" % low)
PY
}

# dead_port: a loopback port that refuses connections for as long as this test
# runs: bound, never listening, by a sleeper that exits with the test's shell.
# No server of a test beside this one can take it, as it could a port merely
# free now (a follower meant to find nothing there once read another test's
# exporter page, in a fresh make check at load 8).
dead_port() {
    local f="$TMP/dead_port.$RANDOM"
    /usr/bin/python3 - "$f" "$$" <<'PY' >/dev/null 2>&1 &
import os, socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while os.path.exists("/proc/" + sys.argv[2]):
    time.sleep(1)
PY
    while [ ! -s "$f" ]; do sleep 0.05; done
    cat "$f"
}

# The tests' certificates (scripts/make-test-cert, client_cert) have ECDSA P-256
# keys, as `tessera cert` makes by default: an RSA-2048 key took 0.2-0.7 CPU s
# to make here, about 80 of them a ctest run. A test that needs an RSA key
# (webhook_tls.sh: the ECDHE-RSA suites) sets MAKE_TEST_CERT_KEY=rsa for its call.
export MAKE_TEST_CERT_KEY=ec

# client_cert OUT CA-DIR CN EKU [SAN]: a TLS client certificate OUT.crt (key
# OUT.key, ECDSA P-256) for CN, signed by CA-DIR/ca.crt and ca.key (scripts/make-test-cert),
# valid two days, with the extended key usage EKU (clientAuth, serverAuth...; ""
# for none) and the subjectAltName SAN if given. Both servers take a client
# certificate only with clientAuth: the console's API identities, the API
# server's reviews to the webhook (--admission-client-ca).
client_cert() {
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$3" \
        -keyout "$1.key" -out "$1.csr" 2>/dev/null
    : >"$1.ext"
    [ -z "$4" ] || echo "extendedKeyUsage=$4" >>"$1.ext"
    [ -z "${5:-}" ] || echo "subjectAltName=$5" >>"$1.ext"
    openssl x509 -req -in "$1.csr" -CA "$2/ca.crt" -CAkey "$2/ca.key" -CAcreateserial -days 2 \
        -extfile "$1.ext" -out "$1.crt" 2>/dev/null
}

# ---- Debian's Prometheus (prometheus.sh, meter_prometheus.sh, grafana.sh) ----
PROMETHEUS=/usr/bin/prometheus

# need_prometheus: fail the test at once when Prometheus is not installed.
need_prometheus() {
    [ -x $PROMETHEUS ] && return 0
    bad "$PROMETHEUS missing (scripts/install-deps installs it)"
    finish
    exit 1
}

# prometheus_start SCRAPE_CONFIGS: Prometheus on a free loopback port scraping every
# second what SCRAPE_CONFIGS (YAML items of scrape_configs) say, its TSDB, config and
# log in $TMP; sets PROM (its pid, for the caller to kill) and PROM_URL.
prometheus_start() {
    local port
    port=$(free_port)
    PROM_URL=http://127.0.0.1:$port
    printf '%s\n' "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}" \
        "scrape_configs:" "$1" > "$TMP/prometheus.yml"
    $PROMETHEUS --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
        --web.listen-address=127.0.0.1:$port >"$TMP/prometheus.log" 2>&1 &
    PROM=$!
}

# prometheus_up N SECONDS: wait until Prometheus has N targets, every one up (scraped, its
# page valid); false, with what Prometheus says, after SECONDS.
prometheus_up() {
    local deadline=$((SECONDS + $2))
    until curl -s --max-time 2 "$PROM_URL/api/v1/targets" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
t = json.load(sys.stdin)["data"]["activeTargets"]
sys.exit(not (len(t) == int(sys.argv[1]) and all(x["health"] == "up" for x in t)))' "$1" \
        2>/dev/null; do
        if [ $SECONDS -ge $deadline ]; then
            curl -s --max-time 2 "$PROM_URL/api/v1/targets" | head -c 1500; echo
            tail -5 "$TMP/prometheus.log"
            return 1
        fi
        sleep 0.5
    done
}

# image_prereqs NAME: the image tests' preconditions. Skipped, with a line
# that says so, in the sanitized build (the image is built from the plain
# build's binary); failed without buildah or root. Returns 1 when the caller
# stops (then `finish; exit`).
image_prereqs() {
    if ldd "$TESSERA" | grep -q 'libasan'; then
        echo "$1: skipped in the sanitized build (the image is built from the plain build's binary)"
        return 1
    fi
    command -v buildah >/dev/null || { bad "buildah is not installed (scripts/install-deps check)"; return 1; }
    [ "$(id -u)" -eq 0 ] || { bad "the image test needs root (chroot, buildah storage)"; return 1; }
}

# demo_day DIR: the demo day (what scripts/demo-meter writes: the day's
# exporter pages, the inventory, the metering store) in DIR: a copy of the one
# ctest makes once a build (the fixture setup_demo_day, DEMO_DAY; a test asks
# for it with the label demo-day), else made here.
demo_day() {
    if [ -n "${DEMO_DAY:-}" ] && [ -s "$DEMO_DAY/metering.db" ]; then
        cp -r "$DEMO_DAY" "$1"
    else
        (cd "$TESSERA_SRC" && scripts/demo-meter "$TESSERA" "$1")
    fi
}

# ---- a node's pods as the agent sees them (agent_enforce*.sh, agent_evict.sh) ----
# need_pod_cgroups NAME: CG, the cgroup v1 pids hierarchy's kubepods (the
# kubelet's cgroupfs layout), writable here; else "NAME: SKIPPED: ..." and
# exit 0. The test fills PIDS (processes to kill) and CGS (cgroups it made);
# pod_cleanup removes both, and kubepods when this test made it.
need_pod_cgroups() {
    CG=/sys/fs/cgroup/pids/kubepods
    MADE_CG=
    [ -d "$CG" ] || MADE_CG=1
    local probe="$CG/burstable/tessera-test-$$"
    if ! mkdir -p "$probe" 2>/dev/null || ! [ -w "$probe/cgroup.procs" ]; then
        rmdir "$probe" 2>/dev/null
        skip "$1: cannot create cgroups under $CG (needs root and cgroup v1 pids)"
        finish
        exit 0
    fi
    rmdir "$probe"
    PIDS=()
    CGS=()
}
pod_cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    for d in "${CGS[@]}"; do rmdir "$d" 2>/dev/null; done
    for d in "${CGS[@]}"; do rmdir "$(dirname "$d")" 2>/dev/null; done
    [ -n "$MADE_CG" ] && rmdir "$CG/burstable" "$CG" 2>/dev/null
}
# pod_uid N: a pod UID made from the number N
pod_uid() { printf '%08d-0000-4000-8000-%012d' "$1" "$1"; }
# kubelet_limits POD TEXT: pod POD's configMap volume under $KUBELET holding
# cuda-limits = TEXT (printf %b), laid out as the kubelet's atomic writer does
# (..data -> ..<time>/, cuda-limits -> ..data/cuda-limits)
kubelet_limits() {
    local v="$KUBELET/pods/$(pod_uid "$1")/volumes/kubernetes.io~configmap/tessera-limits"
    mkdir -p "$v/..2026_01_01_00_00_00.000000001"
    printf '%b' "$2" >"$v/..2026_01_01_00_00_00.000000001/cuda-limits"
    ln -sfn ..2026_01_01_00_00_00.000000001 "$v/..data"
    ln -sfn ..data/cuda-limits "$v/cuda-limits"
}
# alive PID / dead PID: a process that runs (a zombie counts as dead)
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
dead() { ! alive "$1"; }
