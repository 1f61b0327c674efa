# tests/e2e/cluster.sh - a real Kubernetes control plane on loopback for the
# end-to-end tests: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and KWOK (simulated nodes: it keeps their leases and marks
# the pods bound to them Running), all built by tests/e2e/build from the Go
# module proxy. No containers: every part is a process of this machine.
#
# Source it after tests/lib.sh, then:
#   cp_start         start everything, wait until the API serves and the
#                    controllers run; sets KUBECONFIG, CP_DIR, CP_BIN
#   kc ARGS...       kubectl against it
#   cp_stop          stop everything (also run on exit, and by a watchdog if
#                    the test itself is killed: no process is left behind)
# The API server routes webhook and aggregated-API calls to a Service's
# endpoints (--enable-aggregator-routing), so a webhook can run as a plain
# process on a test host (netns_host) behind a Service without selector.

CP_BIN=${CP_BIN:-$(cd "$(dirname "$TESSERA")/.." && pwd)/build-e2e/bin}
CP_PIDS=()

# cp_daemon NAME CMD...: CMD in the background, its output in $CP_DIR/NAME.log.
cp_daemon() {
    local name=$1; shift
    setsid "$@" >"$CP_DIR/$name.log" 2>&1 &
    CP_PIDS+=($!)
    echo $! >>"$CP_DIR/pids"
    disown $!
}

# cp_fail WHAT: the control plane did not come up; show the logs and stop.
cp_fail() {
    bad "control plane: $1"
    for f in "$CP_DIR"/*.log; do echo "== $f"; tail -15 "$f"; done
    finish
    exit 1
}

# cp_wait SECONDS WHAT CMD...: retry CMD until it succeeds or SECONDS pass.
cp_wait() {
    local limit=$1 what=$2; shift 2
    local deadline=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || cp_fail "$what (not after ${limit} s)"
        sleep 0.3
    done
}

# eventually SECONDS CMD...: CMD succeeds within SECONDS (retried); unlike
# cp_wait, a timeout is the caller's failure to report, not the run's end
eventually() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.5
    done
}

# cp_cert NAME CN [O] [SAN]: a key and a certificate signed by the test CA.
cp_cert() {
    local d=$CP_DIR/pki name=$1 cn=$2 o=${3:-} san=${4:-}
    local subj="/CN=$cn${o:+/O=$o}"
    openssl req -newkey rsa:2048 -nodes -subj "$subj" -keyout "$d/$name.key" \
        -out "$d/$name.csr" 2>/dev/null
    {
        echo "basicConstraints=CA:FALSE"
        if [ -n "$san" ]; then
            echo "subjectAltName=$san"
            echo "extendedKeyUsage=serverAuth"
        else
            echo "extendedKeyUsage=clientAuth"
        fi
    } >"$d/$name.ext"
    openssl x509 -req -in "$d/$name.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
        -days 2 -extfile "$d/$name.ext" -out "$d/$name.crt" 2>/dev/null
}

# cp_kubeconfig NAME: a kubeconfig for the client certificate NAME.
cp_kubeconfig() {
    cat >"$CP_DIR/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$CP_API_PORT
    certificate-authority: $CP_DIR/pki/ca.crt
users:
- name: $1
  user:
    client-certificate: $CP_DIR/pki/$1.crt
    client-key: $CP_DIR/pki/$1.key
contexts:
- name: e2e
  context: {cluster: e2e, user: $1}
current-context: e2e
EOF
}

cp_pki() {
    mkdir -p "$CP_DIR/pki"
    local d=$CP_DIR/pki
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=e2e-ca" \
        -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
    cp_cert apiserver kube-apiserver "" \
        "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:127.0.0.1,IP:10.96.0.1"
    cp_cert admin e2e-admin system:masters
    cp_cert controller-manager system:kube-controller-manager
    cp_cert scheduler system:kube-scheduler
    # KWOK writes node and pod status for every simulated node
    cp_cert kwok e2e-kwok system:masters
    # the API server's identity to admission webhooks (cp_admission_config)
    cp_cert webhook-client kube-apiserver-webhook-client
    openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
    openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
}

cp_start_etcd() {
    CP_ETCD_PORT=$(free_port)
    local peer
    peer=$(free_port)
    cp_daemon etcd "$CP_BIN/etcd" --data-dir "$CP_DIR/etcd" --name e2e \
        --listen-client-urls "http://127.0.0.1:$CP_ETCD_PORT" \
        --advertise-client-urls "http://127.0.0.1:$CP_ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$peer" \
        --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
        --initial-cluster "e2e=http://127.0.0.1:$peer" \
        --unsafe-no-fsync --quota-backend-bytes=1073741824 --log-level=warn
    cp_wait 30 "etcd did not answer" curl -sf "http://127.0.0.1:$CP_ETCD_PORT/health"
}

# cp_admission_config: the API server authenticates to tessera's webhook with
# the client certificate webhook-client (docs/webhook.md, "Only the API
# server"): a kubeconfig whose user is named after the webhook's Service
cp_admission_config() {
    local d=$CP_DIR/pki
    cat >"$CP_DIR/webhook-client.kubeconfig" <<EOF
apiVersion: v1
kind: Config
users:
- name: tessera-webhook.tessera-system.svc
  user:
    client-certificate: $d/webhook-client.crt
    client-key: $d/webhook-client.key
EOF
    cat >"$CP_DIR/admission.yaml" <<EOF
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $CP_DIR/webhook-client.kubeconfig
EOF
}

cp_start_apiserver() {
    CP_API_PORT=$(free_port)
    local d=$CP_DIR/pki
    cp_admission_config
    # no endpoint reconciler: it would publish 127.0.0.1 as the kubernetes
    # Service's endpoint, which endpoint validation refuses
    cp_daemon kube-apiserver "$CP_BIN/kube-apiserver" \
        --etcd-servers "http://127.0.0.1:$CP_ETCD_PORT" \
        --bind-address 127.0.0.1 --secure-port "$CP_API_PORT" --advertise-address 127.0.0.1 \
        --endpoint-reconciler-type none \
        --tls-cert-file "$d/apiserver.crt" --tls-private-key-file "$d/apiserver.key" \
        --client-ca-file "$d/ca.crt" \
        --admission-control-config-file "$CP_DIR/admission.yaml" \
        --service-account-issuer "https://kubernetes.default.svc" \
        --service-account-key-file "$d/sa.pub" \
        --service-account-signing-key-file "$d/sa.key" \
        --service-cluster-ip-range 10.96.0.0/16 \
        --authorization-mode Node,RBAC --allow-privileged=true \
        --enable-aggregator-routing=true \
        --profiling=false --enable-priority-and-fairness=false \
        --storage-media-type application/vnd.kubernetes.protobuf \
        --v=1
    cp_kubeconfig admin
    export KUBECONFIG=$CP_DIR/admin.kubeconfig
    cp_wait 90 "kube-apiserver not ready" kc get --raw /readyz
}

cp_start_controllers() {
    local d=$CP_DIR/pki
    cp_kubeconfig controller-manager
    cp_kubeconfig scheduler
    cp_kubeconfig kwok
    cp_daemon kube-controller-manager "$CP_BIN/kube-controller-manager" \
        --kubeconfig "$CP_DIR/controller-manager.kubeconfig" \
        --authentication-kubeconfig "$CP_DIR/controller-manager.kubeconfig" \
        --authorization-kubeconfig "$CP_DIR/controller-manager.kubeconfig" \
        --service-account-private-key-file "$d/sa.key" --root-ca-file "$d/ca.crt" \
        --use-service-account-credentials=true \
        --cluster-signing-cert-file "$d/ca.crt" --cluster-signing-key-file "$d/ca.key" \
        --leader-elect=false --secure-port 0 --controllers '*' \
        --node-monitor-grace-period 40s --v=1
    cp_daemon kube-scheduler "$CP_BIN/kube-scheduler" \
        --kubeconfig "$CP_DIR/scheduler.kubeconfig" \
        --authentication-kubeconfig "$CP_DIR/scheduler.kubeconfig" \
        --authorization-kubeconfig "$CP_DIR/scheduler.kubeconfig" \
        --leader-elect=false --secure-port 0 --v=1
    # KWOK keeps the nodes annotated kwok.x-k8s.io/node=fake alive (leases,
    # Ready) and moves the pods bound to them through Running, with the stages
    # its own release ships (node: fast + heartbeat with lease; pod: fast)
    cp_kwok_stages >"$CP_DIR/kwok-stages.yaml" || cp_fail "KWOK's stages"
    cp_daemon kwok "$CP_BIN/kwok" --kubeconfig "$CP_DIR/kwok.kubeconfig" \
        --config "$CP_DIR/kwok-stages.yaml" \
        --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
        --cidr 10.214.0.0/16 --node-ip 10.214.255.1 --server-address "127.0.0.1:$(free_port)"
    # the service-account controller runs once default has its account
    cp_wait 90 "kube-controller-manager made no service account" \
        kc -n default get serviceaccount default
}

# cp_kwok_stages: the Stage objects of the KWOK release tests/e2e/kwok pins,
# from its module's kustomize/stage folders.
cp_kwok_stages() {
    local dir s
    dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok) || return 1
    for s in node/fast node/heartbeat-with-lease pod/fast; do
        "$CP_BIN/kubectl" kustomize "$dir/kustomize/stage/$s" || return 1
        echo "---"
    done
}

# cp_start: the whole control plane, stopped on exit.
cp_start() {
    for b in etcd kube-apiserver kube-controller-manager kube-scheduler kwok kubectl; do
        [ -x "$CP_BIN/$b" ] || cp_fail "$CP_BIN/$b missing: run tests/e2e/build (make e2e does)"
    done
    CP_DIR=$TMP/cp
    mkdir -p "$CP_DIR"
    : >"$CP_DIR/pids"
    trap 'cp_stop; rm -rf "$TMP"' EXIT
    trap 'exit 130' INT TERM
    cp_watchdog
    cp_host_address
    cp_pki
    cp_start_etcd
    cp_start_apiserver
    cp_start_controllers
}

# cp_host_address: CP_HOST_IP, an address of this (test-private) network
# namespace that the API server accepts as an endpoint, for the services the
# tests run here (the webhook); loopback addresses are refused as endpoints.
cp_host_address() {
    CP_HOST_IP=10.213.0.1
    ip addr add "$CP_HOST_IP/32" dev lo || cp_fail "cannot add $CP_HOST_IP to lo"
}

# cp_watchdog: when this shell dies without running its trap (SIGKILL from
# ctest's timeout), a watchdog stops the processes it started.
cp_watchdog() {
    local parent=$$
    (
        trap '' HUP
        while kill -0 "$parent" 2>/dev/null; do sleep 1; done
        while read -r p; do kill -TERM -- "-$p" 2>/dev/null; done <"$CP_DIR/pids"
        sleep 3
        while read -r p; do kill -KILL -- "-$p" 2>/dev/null; done <"$CP_DIR/pids"
        netns_cleanup
    ) </dev/null >/dev/null 2>&1 &
    disown
}

cp_stop() {
    local p
    # a scenario's own background loops first, then the daemons
    for p in $(jobs -p); do kill "$p" 2>/dev/null; done
    for p in $(tac "$CP_DIR/pids" 2>/dev/null); do kill -TERM -- "-$p" 2>/dev/null; done
    for p in $(cat "$CP_DIR/pids" 2>/dev/null); do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL -- "-$p" 2>/dev/null
    done
    netns_cleanup
    CP_PIDS=()
}

kc() { "$CP_BIN/kubectl" --request-timeout=30s "$@"; }

# ---- test hosts: network namespaces with an address the API server accepts
# as an endpoint (loopback is refused), each joined to this machine by a veth
# pair. NETNS_PREFIX names them so cleanup finds its own.
NETNS_PREFIX=${NETNS_PREFIX:-te2e$$}
NETNS_COUNT=0

# netns_host NAME: a test host, its address in NETNS_ADDR (not printed: a
# command substitution's subshell would lose the host count). Host N is
# 10.213.N.2, the test's side 10.213.N.1 (a /30 of its own, nothing else
# routed).
netns_host() {
    NETNS_COUNT=$((NETNS_COUNT + 1))
    local ns=$NETNS_PREFIX-$1 n=$NETNS_COUNT
    local outer=${NETNS_PREFIX:0:8}o$n inner=${NETNS_PREFIX:0:8}i$n
    ip netns add "$ns" || return 1
    echo "$ns" >>"$CP_DIR/netns"
    ip link add "$outer" type veth peer name "$inner"
    ip link set "$inner" netns "$ns"
    ip addr add "10.213.$n.1/30" dev "$outer"
    ip link set "$outer" up
    ip -n "$ns" addr add "10.213.$n.2/30" dev "$inner"
    ip -n "$ns" link set "$inner" up
    ip -n "$ns" link set lo up
    NETNS_ADDR=10.213.$n.2
}

netns_cleanup() {
    local ns
    [ -f "$CP_DIR/netns" ] || return 0
    while read -r ns; do
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done <"$CP_DIR/netns"
    rm -f "$CP_DIR/netns"
}

# ---- simulated nodes (KWOK) ----

# kwok_node NAME [LABELS-JSON] [TAINTS-JSON]: a Node KWOK keeps Ready, with
# room for 110 pods; LABELS-JSON is extra labels ({"k": "v"}), TAINTS-JSON a
# list of taints.
kwok_node() {
    local name=$1 labels=${2:-'{}'} taints=${3:-'[]'}
    /usr/bin/python3 - "$name" "$labels" "$taints" <<'PY' | kc apply -f - >/dev/null
import json, sys
name, labels, taints = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
labels.update({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
               "kubernetes.io/arch": "amd64", "type": "kwok"})
room = {"cpu": "32", "memory": "256Gi", "pods": "110"}
print(json.dumps({"apiVersion": "v1", "kind": "Node",
                  "metadata": {"name": name, "labels": labels,
                               "annotations": {"kwok.x-k8s.io/node": "fake",
                                               "node.alpha.kubernetes.io/ttl": "0"}},
                  "spec": {"taints": taints},
                  "status": {"allocatable": room, "capacity": room}}))
PY
}

# kwok_nodes_clear: delete every simulated node (their pods go with them).
kwok_nodes_clear() {
    kc delete nodes -l type=kwok --wait=true >/dev/null 2>&1
}
