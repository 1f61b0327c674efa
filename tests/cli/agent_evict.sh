#!/usr/bin/env bash
# agent_evict.sh - `agent watch`'s `evict` client (src/agent/kube.c) against
# a fake Kubernetes API over HTTPS (a throwaway CA; the server below answers
# as the API server does and as a hostile one might), with REAL processes in
# REAL cgroups (kubepods/burstable/pod<UID>/<ID>) over their memory limit
# and onMemoryViolation = evict:
#   1  a pod the node lists: one GET of the node's pods (metadata only, the
#      bearer token, fieldSelector spec.nodeName) and one POST of a policy/v1
#      Eviction with the UID as precondition; evicted, the process left alone;
#   2  a pod whose eviction the API refuses (429, a disruption budget):
#      killed, counted as refused;
#   3  a pod whose name in the answer is not a DNS name (../x): no POST,
#      killed; 4  a UID the node does not list: killed;
#   5  an answer over 8 MiB: refused, killed;
#   6  a server whose certificate another CA signed: no request made, killed;
#   7  no --kube-api outside a pod: killed, said why;
#   8  in-cluster: the API from KUBERNETES_SERVICE_HOST/_PORT: evicted; a
#      host that is not one: killed;
# and --kube-api that is not https:// is bad usage. The e2e scenario
# 85-evict runs the same against the real API server.
# Needs root (cgroups); without a writable cgroup v1 pids hierarchy it says
# SKIPPED. Needs TESSERA, TESSERA_SRC.
source "$TESSERA_SRC/tests/lib.sh"

need_pod_cgroups agent_evict

use_standin_nvml
unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
PORT=$(free_port)
API_PORT=$(free_port)
URL="http://127.0.0.1:$PORT"
WPID=
SPID=
cleanup() {
    [ -n "$WPID" ] && kill -9 "$WPID" 2>/dev/null
    [ -n "$SPID" ] && kill -9 "$SPID" 2>/dev/null
    pod_cleanup
    rm -rf "$TMP"
}
trap cleanup EXIT

"$TESSERA_SRC/scripts/make-test-cert" "$TMP/pki"
"$TESSERA_SRC/scripts/make-test-cert" "$TMP/other"
echo "tok-$$" >"$TMP/token"

# The fake API: the node's pods (as metadata), evictions; every request to
# requests.log; $TMP/mode "huge" makes the list answer 9 MiB.
cat >"$TMP/api.py" <<'PY'
import json, ssl, sys, http.server
tmp, port, token = sys.argv[1], int(sys.argv[2]), open(sys.argv[1] + "/token").read().strip()
def uid(n): return "%08d-0000-4000-8000-%012d" % (n, n)
PODS = [("team-a", "trainer", uid(1)), ("team-b", "guarded", uid(2)), ("team-c", "../x", uid(3))]
class H(http.server.BaseHTTPRequestHandler):
    def answer(self, code, doc):
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log(self, body=""):
        with open(tmp + "/requests.log", "a") as f:
            f.write("%s %s accept=%s auth=%s body=%s\n" % (self.command, self.path,
                    self.headers.get("Accept"), self.headers.get("Authorization"), body))
    def denied(self):
        if self.headers.get("Authorization") == "Bearer " + token:
            return False
        self.answer(401, {"kind": "Status", "message": "Unauthorized", "code": 401})
        return True
    def do_GET(self):
        self.log()
        if self.denied():
            return
        mode = open(tmp + "/mode").read().strip()
        if mode == "huge":
            self.answer(200, {"kind": "PartialObjectMetadataList", "items": [],
                              "pad": "x" * (9 << 20)})
            return
        self.answer(200, {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                          "items": [{"metadata": {"namespace": ns, "name": n, "uid": u}}
                                    for ns, n, u in PODS]})
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        self.log(body)
        if self.denied():
            return
        if "/guarded/" in self.path:
            self.answer(429, {"kind": "Status", "code": 429, "reason": "TooManyRequests",
                              "message": "Cannot evict pod as it would violate the pod's "
                                         "disruption budget.\n"})
        else:
            self.answer(201, {"kind": "Status", "status": "Success", "code": 201})
    def log_message(self, *a):
        pass
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(tmp + "/pki/tls.crt", tmp + "/pki/tls.key")
s = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
s.handle_error = lambda *a: None  # a client that hangs up (the 9 MiB answer refused)
s.serve_forever()
PY
echo normal >"$TMP/mode"
python3 "$TMP/api.py" "$TMP" "$API_PORT" &
SPID=$!

cat >"$TMP/node.state" <<'EOF'
gpu;uuid=GPU-e9000000-0000-4000-8000-000000000000;name=NVIDIA H100 80GB HBM3;pci=00000000:1B:00.0;memory_mib=81559;mig=0;pending=0;compute_mode=0
seq;n=1
EOF
cat >"$TMP/node-config.json" <<'EOF'
{"apiVersion": "tessera.dev/v1alpha1", "kind": "NodeConfig", "node": "gpu-node-9",
 "gpus": [{"index": 0, "model": "h100-80gb-sxm", "mode": "time-slicing", "instances": []}]}
EOF
KUBELET="$TMP/kubelet"
# over POD CTR: a process of the pod's container at 4 GiB against 1Gi, evict
over() {
    local d="$CG/burstable/pod$(pod_uid "$1")/$2"
    mkdir -p "$d"
    kubelet_limits "$1" "version = 1\nmemoryLimit = 1Gi\ntenant = t$1\nonMemoryViolation = evict\n"
    CGS+=("$d")
    sleep 600 &
    LAST=$!
    disown "$LAST"
    PIDS+=("$LAST")
    echo "$LAST" >"$d/cgroup.procs"
    { cat "$TMP/node.state"; echo "proc;gpu=0;pid=$LAST;name=python3;mem=$((4 << 30))"; } \
        >"$TMP/state.tmp"
    mv "$TMP/state.tmp" "$TMP/node.state"
}
metric() { curl -s "$URL/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
# watch ARGS...: the agent on gpu-node-9 with ARGS, its log watch.log
watch() {
    "$TESSERA" agent watch --node-config "$TMP/node-config.json" --kubelet-root "$KUBELET" \
        --listen "127.0.0.1:$PORT" --interval-ms 1000 "$@" 2>"$TMP/watch.log" &
    WPID=$!
}
stop() { kill -TERM "$WPID"; wait "$WPID" 2>/dev/null; WPID=; }
wait_log() {
    for i in $(seq 100); do grep -qF -- "$1" "$TMP/watch.log" && { ok; return; }; sleep 0.1; done
    bad "'$1' not in watch.log"
    cat "$TMP/watch.log"
}
API=(--kube-api "https://127.0.0.1:$API_PORT/" --kube-token-file "$TMP/token")
for i in $(seq 50); do curl -s --cacert "$TMP/pki/ca.crt" "https://127.0.0.1:$API_PORT/" >/dev/null && break; sleep 0.1; done

# 1-4 in one round
over 1 a1a1a1a1; P1=$LAST
over 2 a2a2a2a2; P2=$LAST
over 3 a3a3a3a3; P3=$LAST
over 4 a4a4a4a4; P4=$LAST
watch "${API[@]}" --kube-ca-file "$TMP/pki/ca.crt"
wait_log "tenant=t4 workload=unknown kind=memory"
for i in $(seq 50); do dead "$P2" && dead "$P3" && dead "$P4" && break; sleep 0.1; done
expect_in "$TMP/watch.log" "tenant=t1 workload=unknown kind=memory action=evict result=\"evicted the pod\""
expect_in "$TMP/watch.log" "tenant=t2 workload=unknown kind=memory action=kill result=\"eviction failed (evicting team-b/guarded: HTTP 429 (a PodDisruptionBudget allows no disruption now): Cannot evict pod as it would violate the pod's disruption budget. ), killed 1 process\""
expect_in "$TMP/watch.log" "eviction failed (pod $(pod_uid 3): its name or namespace is not a DNS name), killed 1 process"
expect_in "$TMP/watch.log" "eviction failed (pod $(pod_uid 4) is not among node gpu-node-9's pods), killed 1 process"
check "P1 (evicted) killed" alive "$P1"
check "P2 (429) alive" dead "$P2"
check "P3 (hostile name) alive" dead "$P3"
check "P4 (not on the node) alive" dead "$P4"
check "evictions ok" test "$(metric 'tessera_agent_enforce_evictions_total{result="ok"}')" = 1
check "evictions refused" test "$(metric 'tessera_agent_enforce_evictions_total{result="refused"}')" = 1
check "evictions failed" test "$(metric 'tessera_agent_enforce_evictions_total{result="failed"}')" = 2
sleep 1.2 # a round more: P1 still over, one episode, no second eviction
stop
check "one eviction posted for P1: $(grep -c 'POST .*/trainer/' "$TMP/requests.log")" \
    test "$(grep -c 'POST /api/v1/namespaces/team-a/pods/trainer/eviction' "$TMP/requests.log")" = 1
check "a POST for the hostile name" sh -c "! grep -q 'POST .*\.\./x' '$TMP/requests.log'"
expect_in "$TMP/requests.log" "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-9 accept=application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json auth=Bearer tok-$$"
expect_in "$TMP/requests.log" "body={\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"trainer\",\"namespace\":\"team-a\"},\"deleteOptions\":{\"preconditions\":{\"uid\":\"$(pod_uid 1)\"}}}"
kill -9 "$P1"

# 5. an answer over 8 MiB
echo huge >"$TMP/mode"
over 5 a5a5a5a5; P5=$LAST
watch "${API[@]}" --kube-ca-file "$TMP/pki/ca.crt"
wait_log "eviction failed (GET /api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-9: an answer over 8388608 bytes), killed 1 process"
stop
check "P5 alive" dead "$P5"

# 6. the server's certificate from another CA: nothing sent
: >"$TMP/requests.log"
over 6 a6a6a6a6; P6=$LAST
watch "${API[@]}" --kube-ca-file "$TMP/other/ca.crt"
wait_log "killed 1 process"
stop
expect_in "$TMP/watch.log" "tenant=t6 workload=unknown kind=memory action=kill result=\"eviction failed (GET /api/v1/pods"
check "P6 alive" dead "$P6"
check "a request reached the server past a bad certificate" test ! -s "$TMP/requests.log"

# 7. outside a pod, no --kube-api
over 7 a7a7a7a7; P7=$LAST
watch
wait_log "eviction failed (no Kubernetes API: KUBERNETES_SERVICE_HOST is not set (not in a pod) and no --kube-api), killed 1 process"
stop
check "P7 alive" dead "$P7"

# 8. in-cluster: the API from KUBERNETES_SERVICE_HOST/_PORT (the files named)
echo normal >"$TMP/mode"
over 1 a8a8a8a8; P8=$LAST
KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$API_PORT \
    watch --kube-token-file "$TMP/token" --kube-ca-file "$TMP/pki/ca.crt"
wait_log 'tenant=t1 workload=unknown kind=memory action=evict result="evicted the pod" pod_uid=00000001-0000-4000-8000-000000000001 container=a8a8a8a8'
stop
check "P8 (evicted, in-cluster) killed" alive "$P8"
over 1 a9a9a9a9
P9=$LAST
KUBERNETES_SERVICE_HOST='127.0.0.1/x?' KUBERNETES_SERVICE_PORT=$API_PORT watch
wait_log "eviction failed (KUBERNETES_SERVICE_HOST/_PORT are not a host and port), killed 1 process"
stop

expect_rc 2 "$TESSERA" agent watch --node-config "$TMP/node-config.json" --kube-api "http://127.0.0.1:$API_PORT"
expect_in "$TMP/err" "is not an https:// URL"
finish
