# 80-rollout.sh - the webhook Deployment of deploy/ on 1, 2 and 3 simulated
# nodes, with and without every worker tainted for GPU work only: each
# rollout and each upgrade completes, and at least one replica is Ready
# throughout an upgrade (the configuration fails closed: no ready replica,
# no tenant pod). Needs 10-apply.sh's deploy/. Last: it applies deploy/
# again, which gives the webhook's Service back its selector (20-webhook.sh
# routed it to the webhook on this host).

WH="-n tessera-system deployment/tessera-webhook"

# ready_pods: the webhook's pods that are Ready now
ready_pods() {
    kc -n tessera-system get pods -l app.kubernetes.io/name=tessera-webhook \
        -o jsonpath='{range .items[*]}{.metadata.deletionTimestamp}{" "}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
        grep -c '^ True$'
}

# upgrade WHAT: a new template (as a new image would), watched until done;
# fails when it does not finish in 90 s or when no replica was Ready at
# some moment of it.
upgrade() {
    local what=$1 min=99 n
    UPGRADES=$((${UPGRADES:-0} + 1))
    kc -n tessera-system patch deployment tessera-webhook --type merge \
        -p "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{\"e2e.tessera.dev/upgrade\":\"$UPGRADES\"}}}}}" \
        >/dev/null || { bad "$what: new template"; return; }
    local deadline=$((SECONDS + 90)) done=""
    while [ $SECONDS -lt $deadline ]; do
        n=$(ready_pods)
        [ "$n" -lt "$min" ] && min=$n
        if kc rollout status $WH --timeout 1s >/dev/null 2>&1; then done=1; break; fi
    done
    if [ -n "$done" ]; then ok; else
        bad "$what: the upgrade did not finish in 90 s"
        kc -n tessera-system get pods -l app.kubernetes.io/name=tessera-webhook -o wide
        kc -n tessera-system describe pods -l app.kubernetes.io/name=tessera-webhook | grep -A3 Events | head -20
    fi
    check "$what: a replica was Ready throughout the upgrade (fewest: $min)" [ "$min" -ge 1 ]
}

# from no node at all (the earlier scenarios' gpu-node-1 goes, and its pods
# with it), the webhook as deploy/install installs it: run again, it gives the
# Service its selector back (endpoints to its pods)
kwok_nodes_clear
kc -n tessera-system delete pods --all --force --grace-period=0 >/dev/null 2>&1
kc apply --server-side --force-conflicts --field-manager=tessera-install -k "$TMP/install/install" \
    >/dev/null || bad "deploy/ again"
for n in 1 2 3; do
    kwok_node "e2e-node-$n"
    if kc rollout status $WH --timeout 90s >/dev/null 2>&1; then ok; else
        bad "rollout on $n node(s) did not finish"; kc -n tessera-system get pods -o wide; fi
    upgrade "$n node(s)"
    # every worker a GPU node tainted for GPU work only
    for i in $(seq "$n"); do
        kc taint node "e2e-node-$i" nvidia.com/gpu=present:NoSchedule --overwrite >/dev/null
    done
    upgrade "$n tainted GPU node(s)"
    for i in $(seq "$n"); do kc taint node "e2e-node-$i" nvidia.com/gpu- >/dev/null; done
done
# two replicas on three nodes: spread over two
hosts=$(kc -n tessera-system get pods -l app.kubernetes.io/name=tessera-webhook \
    -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | wc -l)
check "the replicas are spread over nodes ($hosts)" [ "$hosts" -eq 2 ]

# deploy/install run again on the cluster as it is now, waiting for every
# component: the webhook, the console, metering (its SQLite volume: a
# PersistentVolume here, where no provisioner runs) and the agent on the
# spec's GPU node. The console's tokens Secret from 10-apply.sh's run is
# kept: no new token is minted.
# First the webhook's Service is routed to 20-webhook.sh's webhook again: the
# install re-applies the rendered tree, which the webhook checks (its pods
# here are KWOK's, unreachable); the install gives the selector back.
wh_route_here
kwok_node gpu-node-1 '{"nvidia.com/gpu.present": "true"}' '[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]'
kc apply -f - >/dev/null <<EOF || bad "PersistentVolume"
apiVersion: v1
kind: PersistentVolume
metadata: {name: e2e-metering}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /var/lib/e2e-metering}
EOF
# The install's own default wait (300 s a component): at 120 s KWOK's agent
# pod, Running 1/1 after 2m7s, was not yet counted ready on a machine
# busy with other builds (stop 43).
if install --spec "$TESSERA_SRC/examples/four-h100.yaml" --image $IMAGE --apiserver-cidr "$CP_HOST_IP/32" \
    --timeout 300 >"$TMP/inst.out" 2>&1; then ok; else
    bad "deploy/install with its wait failed"; tail -20 "$TMP/inst.out"
    kc -n tessera-system get pods -o wide; fi
for w in deployment/tessera-webhook deployment/tessera-console deployment/tessera-meter daemonset/tessera-agent; do
    expect_in "$TMP/inst.out" "waiting for $w"
done
ready=$(kc -n tessera-system get deployment tessera-console -o jsonpath='{.status.readyReplicas}')
check "the console ready after the install's wait ($ready replica)" [ "$ready" = 1 ]
check "no new token: the console's Secret was there" sh -c "! grep -q tsk_ '$TMP/inst.out'"
