#!/bin/bash
# labels: slow nosan
# deploy.sh - deploy/ as kustomize renders it (the install, the base and each
# overlay): every object validates strictly against the Kubernetes 1.35 OpenAPI
# documents, the components agree with each other (tests/tools/check_deploy.py:
# one image, referenced objects, ports, the shim's path, the store's Secret,
# RBAC, security, cert-manager's objects, the console's headless Service to
# the webhook's denials, the NetworkPolicies' ports), and the webhook keeps
# the settings issue 4 asks of it. overlays/postgres: every container that
# opens the store (metering, the console, the agent; not the webhook) mounts
# the CA its URL names, and no tracked file under deploy/ holds a password.
# cert-manager's kinds validate against its CRDs (tests/fixtures/cert-manager;
# tests/e2e/scenarios/75-overlays.sh applies them to a real API server).
# The components (networkpolicy, admission-client-auth) are checked rendered
# onto deploy/; their NetworkPolicies have no schema here: the e2e scenarios
# apply them to a real API server.
# kubectl is required ($KUBECTL: the one tests/e2e/build makes, as make check
# builds it before the tests): without it this test fails, it does not skip.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
V="/usr/bin/python3 tests/tools/validate_openapi.py tests/fixtures/schemas/openapi-1.35"
C="/usr/bin/python3 tests/tools/check_deploy.py"
VERSION=$(sed -n 's/^project(tessera VERSION \([0-9.]*\) .*/\1/p' CMakeLists.txt)
KUBECTL=${KUBECTL:-kubectl}
if ! command -v "$KUBECTL" >/dev/null; then
    bad "kubectl is missing ($KUBECTL): make e2e-build builds it"
    finish
    exit 1
fi
render() { "$KUBECTL" kustomize "$1" >"$2" 2>"$TMP/kerr" || { cat "$TMP/kerr"; return 1; }; }
CRDS="--crds tests/fixtures/cert-manager"
outs=()
for d in deploy deploy/base deploy/overlays/sqlite deploy/overlays/postgres \
    deploy/overlays/cert-manager; do
    out="$TMP/$(echo "$d" | tr / _).yaml"
    outs+=("$out")
    check "kubectl kustomize $d" render "$d" "$out"
    # overlays/postgres: the user makes the Secrets tessera-db and tessera-db-ca
    user=""; [ "$d" = deploy/overlays/postgres ] && user=--user-made
    [ "$d" = deploy/base ] || expect_rc 0 $C "$out" "$VERSION" "$TESSERA" $user
done
# the five outputs in one validator run (its schemas load once; an error names its file)
expect_rc 0 $V $CRDS "${outs[@]}"
expect_in "$TMP/out" "validate_openapi: 5 files, 0 errors"
# `kubectl apply -k deploy/` is the SQLite overlay
check "deploy/ is overlays/sqlite" cmp -s "$TMP/deploy.yaml" "$TMP/deploy_overlays_sqlite.yaml"
# the base alone has no store: its Secret comes with an overlay
expect_rc 1 $C "$TMP/deploy_base.yaml" "$VERSION"
expect_in "$TMP/out" "tessera-meter: meter env TESSERA_DB names Secret tessera-db, which the output lacks"
# the store each overlay configures
grep -A8 '^kind: Secret' "$TMP/deploy.yaml" >/dev/null
check "sqlite overlay: the store is on its volume" /usr/bin/python3 -c '
import base64, sys, yaml
d = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o["kind"] == "Secret"][0]
assert base64.b64decode(d["data"]["url"]) == b"sqlite:/var/lib/tessera/metering.db"
dep = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o["kind"] == "Deployment"
       and o["metadata"]["name"] == "tessera-meter"][0]["spec"]["template"]["spec"]
m = [v for v in dep["containers"][0]["volumeMounts"] if v["mountPath"] == "/var/lib/tessera"]
vol = [v for v in dep["volumes"] if v["name"] == m[0]["name"]][0]
assert vol["persistentVolumeClaim"]["claimName"] == "tessera-metering"
' "$TMP/deploy.yaml"
# overlays/postgres makes no Secret: the user creates tessera-db and
# tessera-db-ca (install.md); without --user-made the checker says they lack
expect_rc 1 $C "$TMP/deploy_overlays_postgres.yaml" "$VERSION"
expect_in "$TMP/out" "tessera-agent: agent env TESSERA_DB names Secret tessera-db, which the output lacks"
expect_in "$TMP/out" "tessera-console: volume db-ca names Secret tessera-db-ca, which the output lacks"
# pg_ca OUTPUT INSTALL.md: every container that reads the store's URL reads it
# from tessera-db and mounts ca.crt of tessera-db-ca where the URL of the
# install guide's `kubectl create secret` says (sslrootcert=); the three that
# open the store (meter, console, agent) do, the webhook does not; the
# console has the memory for it, the webhook keeps the base's
pg_ca() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import sys, yaml
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, "tests/tools")
from install_db_url import urls
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
assert not [o for o in docs if o["kind"] == "Secret"], "the overlay makes a Secret"
urls = urls(open(sys.argv[2]).read())
roots = {u.split("sslrootcert=", 1)[1].split("&")[0] if "sslrootcert=" in u else None for u in urls}
assert len(urls) >= 1 and len(roots) == 1 and None not in roots, "install.md's URLs: %s" % urls
root = roots.pop()
assert all("sslmode=verify-full" in u for u in urls), urls
readers = []
for o in docs:
    if o["kind"] not in ("Deployment", "DaemonSet"):
        continue
    pod = o["spec"]["template"]["spec"]
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    for c in pod.get("initContainers", []) + pod["containers"]:
        env = [e for e in c.get("env", []) if e["name"] == "TESSERA_DB"]
        if not env:
            continue
        who = "%s/%s" % (o["metadata"]["name"], c["name"])
        readers.append(who)
        assert env[0]["valueFrom"]["secretKeyRef"] == {"name": "tessera-db", "key": "url"}, who
        mounts = [m for m in c.get("volumeMounts", [])
                  if root.startswith(m["mountPath"].rstrip("/") + "/")
                  and vols[m["name"]].get("secret", {}).get("secretName") == "tessera-db-ca"]
        assert mounts, "%s: no Secret tessera-db-ca mounted where sslrootcert=%s" % (who, root)
        rel = root[len(mounts[0]["mountPath"].rstrip("/")) + 1:]
        items = vols[mounts[0]["name"]]["secret"].get("items")
        assert ({"key": "ca.crt", "path": rel} in items) if items else rel == "ca.crt", (who, items)
    if o["metadata"]["name"] in ("tessera-console", "tessera-webhook"):
        res = pod["containers"][0]["resources"]
        want = "384Mi" if o["metadata"]["name"] == "tessera-console" else "128Mi"
        assert res["limits"]["memory"] == want and res["requests"]["memory"] == "32Mi", (o["metadata"]["name"], res)
assert sorted(readers) == ["tessera-agent/agent", "tessera-console/console", "tessera-meter/meter"], readers
PY
}
check "postgres overlay: meter, webhook and agent read tessera-db and mount its CA" \
    pg_ca "$TMP/deploy_overlays_postgres.yaml" docs/install.md
# ... and pg_ca fails when one container lacks the CA, or the guide's URL
# names no sslrootcert (the URL the overlay shipped with failed so)
/usr/bin/python3 - "$TMP/deploy_overlays_postgres.yaml" "$TMP/pg-noca.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
ds = [d for d in docs if d["kind"] == "DaemonSet"][0]["spec"]["template"]["spec"]
ds["containers"][0]["volumeMounts"] = [m for m in ds["containers"][0]["volumeMounts"]
                                       if m["name"] != "db-ca"]
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))
PY
expect_rc 1 pg_ca "$TMP/pg-noca.yaml" docs/install.md
expect_in "$TMP/err" "tessera-agent/agent: no Secret tessera-db-ca mounted where sslrootcert=/etc/tessera/db-ca/ca.crt"
sed 's|&sslrootcert=/etc/tessera/db-ca/ca.crt||' docs/install.md >"$TMP/install-noroot.md"
expect_rc 1 pg_ca "$TMP/deploy_overlays_postgres.yaml" "$TMP/install-noroot.md"
expect_in "$TMP/err" "install.md's URLs"
# no tracked file under deploy/ holds a URL with a password (scheme://user:secret@)
password_urls() { grep -sHnE '[a-z][a-z0-9+.-]*://[^/@[:space:]:]+:[^/@[:space:]]+@' "$@"; }
tracked=$(git -C "$TESSERA_SRC" ls-files deploy 2>/dev/null | grep .) || tracked=$(find deploy -type f)
if password_urls $tracked >"$TMP/pw"; then bad "a password under deploy/:"; cat "$TMP/pw"; else ok; fi
printf '%s\n' 'postgres://tessera:CHANGE-ME@db.example:5432/tessera?sslmode=verify-full' \
    'postgres://tessera@db.example:5432/tessera' >"$TMP/db-url"
check "password_urls finds the URL with a password, not the other" \
    [ "$(password_urls "$TMP/db-url" | cut -d: -f2)" = 1 ]
# overlays/cert-manager: deploy/ with cert-manager's Issuers and Certificates
# (the checker's cert-manager rules, broken one at a time below)
check "cert-manager overlay is deploy/ plus cert-manager's objects" /usr/bin/python3 -c '
import sys, yaml
key = lambda d: (d["kind"], d["metadata"]["name"])
base = {key(d): d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
cm = {key(d): d for d in yaml.safe_load_all(open(sys.argv[2])) if d}
extra = {k: d for k, d in cm.items() if k not in base}
assert all(cm[k] == d for k, d in base.items()), "deploy/ objects changed"
assert {d["apiVersion"] for d in extra.values()} == {"cert-manager.io/v1"}, extra.keys()
assert sorted(extra) == [("Certificate", "tessera-ca"), ("Certificate", "tessera-webhook-tls"),
                         ("Issuer", "tessera-ca"), ("Issuer", "tessera-selfsigned")], sorted(extra)
c = extra[("Certificate", "tessera-webhook-tls")]["spec"]
assert (c["duration"], c["renewBefore"]) == ("2160h", "720h"), c
' "$TMP/deploy.yaml" "$TMP/deploy_overlays_cert-manager.yaml"
# each agreement the checker holds, broken once in a copy of the install
# breaks SED-EXPRESSION EXPECTED-MESSAGE: the copy of $O made now, judged by
# judge_breaks at the end: the checker runs on every copy in one python3
# (check_deploy.py --batch: each run as if alone, in a file of its own), and
# each must exit 1 with the message in its output
O="$TMP/deploy.yaml"
BREAK_MSG=()
breaks() {
    local n=${#BREAK_MSG[@]}
    sed "$1" "$O" >"$TMP/broken-$n.yaml"
    printf '%s\t%s\t%s\t%s\n' "$TMP/broken-$n.yaml" "$VERSION" "$TESSERA" "$TMP/broken-$n.out" \
        >>"$TMP/breaks.list"
    BREAK_MSG+=("$2")
}
judge_breaks() {
    local n rc
    $C --batch "$TMP/breaks.list" >"$TMP/batch.out" 2>&1 ||
        bad "check_deploy.py --batch: $(tail -3 "$TMP/batch.out")"
    for ((n = 0; n < ${#BREAK_MSG[@]}; n++)); do
        rc=$(cat "$TMP/broken-$n.out.rc" 2>/dev/null)
        if [ "$rc" = 1 ]; then ok; else
            bad "$C $TMP/broken-$n.yaml $VERSION $TESSERA exited ${rc:-nothing}, expected 1"
            head -5 "$TMP/broken-$n.out.err"
        fi
        expect_in "$TMP/broken-$n.out" "${BREAK_MSG[n]}"
    done
}
breaks "0,/image: tessera:$VERSION/s//image: tessera:latest/" "image tessera:latest, not tessera:$VERSION"
breaks 's|--shim-path=/opt/tessera/lib/|--shim-path=/usr/lib/|' \
    "the webhook's --shim-path ['/usr/lib/libtessera-cuda.so'] is not where the shim is put, /opt/tessera/lib/libtessera-cuda.so"
breaks 's|targetPort: https|targetPort: webhook|' "Service tessera-webhook: targetPort webhook is no port of tessera-webhook"
breaks 's|^          name: tessera-agent-nodes$|          name: tessera-agent-node|' \
    "volume nodes names ConfigMap tessera-agent-node, which the output lacks"
breaks 's|--filename=/etc/tessera/spec/spec.yaml|--filename=/etc/tessera/spec/fleet.yaml|' \
    "--filename=/etc/tessera/spec/fleet.yaml is no key of ConfigMap tessera-spec"
breaks 's|claimName: tessera-metering|claimName: metering|' \
    "names PersistentVolumeClaim metering, which the output lacks"
breaks 's|readOnlyRootFilesystem: true|readOnlyRootFilesystem: false|' \
    "readOnlyRootFilesystem must be true"
breaks 's|port: health|port: healthz|' "readinessProbe port healthz is no container port"
breaks '0,/allowPrivilegeEscalation: false/s//privileged: true/' "tessera-console/console: privileged"
breaks 's|privileged: true|privileged: false|' \
    "tessera-agent/agent: privileged, and no capability list that suggests less"
breaks 's|priorityClassName: tessera-webhook|priorityClassName: high|' \
    "priorityClassName high is not in the install"
breaks 's|secretName: tessera-webhook-tls|secretName: webhook-tls|' \
    "names Secret webhook-tls, which the output lacks"
# every container runs a verb of the binary with options its --help lists
breaks 's|--health-listen=|--health-port=|' \
    "tessera-webhook/webhook: \`tessera serve\` has no option --health-port"
breaks 's|- --interval=15s|- --period=15s|' \
    "tessera-meter/meter: \`tessera meter scrape\` has no option --period"
breaks 's|- --from=/opt|- --source=/opt|' \
    "tessera-agent/shim: \`tessera shim install\` has no option --source"
breaks 's|^        - scrape$|        - scrap|' "tessera-meter/meter: \`tessera meter scrap\` is no command"
# the console reads every webhook replica's /denials through a headless Service
breaks 's|^  clusterIP: None$|  clusterIP: 10.96.0.99|' \
    "Service tessera-webhook-probes: not headless (clusterIP: None)"
breaks 's|tessera-webhook-probes.tessera-system.svc:8081/denials|tessera-webhook-probes.tessera-system.svc:8443/denials|' \
    "tessera-console: --denials-from port 8443 is not the webhook's --health-listen port 8081"
breaks 's|tessera-webhook-probes.tessera-system.svc:8081|tessera-webhook-health.tessera-system.svc:8081|' \
    "tessera-console: --denials-from names Service tessera-system/tessera-webhook-health, which the output lacks"
breaks 's|tessera-webhook-probes.tessera-system.svc:8081|tessera-webhook.tessera-system.svc:8081|' \
    "Service tessera-webhook: not headless"
breaks '0,/^      - args:$/s||      - command: [/bin/sh]\n        args:|' \
    "a command overrides the image's entrypoint, tessera"
# and so does every tessera command line the install guide and webhook.md give
expect_rc 0 $C --commands "$TESSERA" docs/install.md docs/webhook.md
expect_in "$TMP/out" "0 problems"
sed 's|--out-dir out|--outdir out|; s|^tessera check -f|tessera lint -f|' docs/install.md \
    >"$TMP/install.md"
expect_rc 1 $C --commands "$TESSERA" "$TMP/install.md"
L1=$(grep -n -- '--outdir out' "$TMP/install.md" | cut -d: -f1)
L2=$(grep -n '^tessera lint' "$TMP/install.md" | cut -d: -f1)
expect_in "$TMP/out" "$TMP/install.md:$L1: \`tessera render\` has no option --outdir"
expect_in "$TMP/out" "$TMP/install.md:$L2: \`tessera lint\` is no command of the binary"
# RBAC beyond the table (check_deploy.py): a Role for the agent, unbound, then
# bound; the meter's Role with a verb more than --discover needs
cat "$O" - >"$TMP/role.yaml" <<'YAML'
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tessera-agent, namespace: tessera-system}
rules: [{apiGroups: [""], resources: [nodes], verbs: [get]}]
YAML
expect_rc 0 $V "$TMP/role.yaml"
expect_rc 1 $C "$TMP/role.yaml" "$VERSION"
expect_in "$TMP/out" "Role tessera-agent: bound by no RoleBinding"
cat "$TMP/role.yaml" - >"$TMP/bound.yaml" <<'YAML'
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tessera-agent, namespace: tessera-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tessera-agent}
subjects: [{kind: ServiceAccount, name: tessera-agent, namespace: tessera-system}]
YAML
expect_rc 1 $C "$TMP/bound.yaml" "$VERSION"
expect_in "$TMP/out" "ServiceAccount tessera-agent is granted [('*', '', 'pods', 'list'), ('*', '', 'pods/eviction', 'create'), ('tessera-system', '', 'nodes', 'get')], the RBAC table says [('*', '', 'pods', 'list'), ('*', '', 'pods/eviction', 'create')]"
/usr/bin/python3 - "$O" "$TMP/watch.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
role = [d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] == "tessera-meter-discover"]
role[0]["rules"][0]["verbs"].append("watch")
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))
PY
expect_rc 1 $C "$TMP/watch.yaml" "$VERSION"
expect_in "$TMP/out" "ServiceAccount tessera-meter is granted"

O="$TMP/deploy_overlays_cert-manager.yaml"
breaks 's|^  - tessera-webhook.tessera-system.svc$|  - tessera-webhook.default.svc|' \
    "Certificate tessera-webhook-tls: dnsNames ['tessera-webhook.default.svc', 'tessera-webhook', 'tessera-webhook.tessera-system', 'tessera-webhook.tessera-system.svc.cluster.local'] lack tessera-webhook.tessera-system.svc"
breaks 's|^  secretName: tessera-webhook-tls$|  secretName: webhook-tls|' \
    "Certificate tessera-webhook-tls writes Secret webhook-tls, the webhook mounts ['tessera-webhook-tls']"
breaks 's|inject-ca-from: tessera-system/tessera-webhook-tls|inject-ca-from: tessera-system/webhook|' \
    "inject-ca-from 'tessera-system/webhook' names no Certificate of the output"
breaks 's|^    secretName: tessera-ca$|    secretName: ca|' \
    "Issuer tessera-ca: its Secret ca is made by no CA Certificate (isCA) of the output"
breaks 's|renewBefore: 720h|renewBefore: 2400h|' \
    "Certificate tessera-webhook-tls: duration 2160h and renewBefore 2400h: both set, renewal before the end"
breaks 's|^    name: tessera-selfsigned$|    name: selfsigned|' \
    "Certificate tessera-ca: its Issuer selfsigned is not in the output"
sed 's|renewBefore: 720h|renewBefor: 720h|; 0,/algorithm: ECDSA/s//algorithm: EC/' "$O" >"$TMP/bad-cm.yaml"
expect_rc 1 $V $CRDS "$TMP/bad-cm.yaml"
expect_in "$TMP/out" "(Certificate tessera-ca) spec.privateKey.algorithm: 'EC' is not one of ['RSA', 'ECDSA', 'Ed25519']"
expect_in "$TMP/out" "(Certificate tessera-webhook-tls) spec: Additional properties are not allowed ('renewBefor' was unexpected)"

# the components onto deploy/, as deploy/install and install.md take them:
# networkpolicy (the API server alone reaches the webhook's TLS port, the
# namespaces that are not a tenant's every other port, nobody else any) and
# admission-client-auth (the webhook's two flags, the CA's Secret mounted
# where the flag names it; the user makes that Secret)
mkdir -p "$TMP/comp"
cat >"$TMP/comp/kustomization.yaml" <<EOF
resources:
- $(realpath --relative-to "$TMP/comp" deploy)
components:
- $(realpath --relative-to "$TMP/comp" deploy/components/networkpolicy)
- $(realpath --relative-to "$TMP/comp" deploy/components/admission-client-auth)
EOF
check "kubectl kustomize deploy/ with the components" render "$TMP/comp" "$TMP/comp.yaml"
expect_rc 0 $C "$TMP/comp.yaml" "$VERSION" "$TESSERA" --user-made=tessera-admission-client-ca
expect_in "$TMP/out" " 0 problems"
check "the components change the webhook and add NetworkPolicies, nothing else" /usr/bin/python3 -c '
import sys, yaml
key = lambda d: (d["kind"], d["metadata"]["name"])
base = {key(d): d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
comp = {key(d): d for d in yaml.safe_load_all(open(sys.argv[2])) if d}
changed = sorted(k for k in comp if comp[k] != base.get(k))
assert changed == [("Deployment", "tessera-webhook")] + [("NetworkPolicy", n) for n in (
    "tessera-apiserver", "tessera-cluster-services", "tessera-console", "tessera-default-deny")], changed
assert set(base) <= set(comp)
pod = comp[("Deployment", "tessera-webhook")]["spec"]["template"]["spec"]
c = pod["containers"][0]
flags = [a for a in c["args"] if a.startswith("--admission-client")]
assert flags == ["--admission-client-ca=/etc/tessera/admission-client-ca/ca.crt",
                 "--admission-client=kube-apiserver-webhook-client"], flags
m = [m for m in c["volumeMounts"] if m["mountPath"] == "/etc/tessera/admission-client-ca"]
v = [v for v in pod["volumes"] if v["name"] == m[0]["name"]][0]["secret"]
assert m[0]["readOnly"] and v == {"secretName": "tessera-admission-client-ca",
                                  "items": [{"key": "ca.crt", "path": "ca.crt"}]}, v
' "$TMP/deploy.yaml" "$TMP/comp.yaml"
# without the user's Secret the checker says so
expect_rc 1 $C "$TMP/comp.yaml" "$VERSION"
expect_in "$TMP/out" "tessera-webhook: volume admission-client-ca names Secret tessera-admission-client-ca, which the output lacks"
O="$TMP/comp.yaml"
breaks 's|- port: 8083$|- port: 8084|' \
    "tessera-meter/meter port health (8083): no NetworkPolicy lets in the namespaces that are not a tenant's"
breaks 's|- port: 8444$|- port: 8445|' \
    "tessera-console/console port https (8444): no NetworkPolicy lets in the namespaces that are not a tenant's"
breaks 's|- port: 8443$|- port: 8081|' \
    "tessera-webhook/webhook port https (8443): no NetworkPolicy lets in the API server (an ipBlock)"
breaks '0,/operator: DoesNotExist/s//operator: Exists/' "which may be a tenant's"
/usr/bin/python3 - "$O" "$TMP/np-open.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in docs:
    if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "tessera-cluster-services":
        del d["spec"]["ingress"][0]["ports"]  # every port: the webhook's too
docs = [d for d in docs if d["metadata"]["name"] != "tessera-default-deny"]
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))
PY
expect_rc 1 $C "$TMP/np-open.yaml" "$VERSION" --user-made=tessera-admission-client-ca
expect_in "$TMP/out" "tessera-webhook/webhook port https (8443): NetworkPolicy lets in non-tenant, only ipBlock should reach it"
expect_in "$TMP/out" "NetworkPolicy: none denies every pod's ingress"
O="$TMP/deploy.yaml"

# the strict schema check catches unknown and mistyped fields
sed 's/^  replicas: 2/  replicas: 2\n  replica: 3/; s/^    port: 443/    port: "443"/' \
    "$O" >"$TMP/bad.yaml"
expect_rc 1 $V "$TMP/bad.yaml"
expect_in "$TMP/out" "(Deployment tessera-webhook) spec: Additional properties are not allowed ('replica' was unexpected)"
expect_in "$TMP/out" "(Service tessera-webhook) spec.ports.0.port: '443' is not of type 'integer'"

# the image's version is the project's; the worked example's spec is what
# deploy/base ships (they cannot drift)
check "base image tag is $VERSION" grep -qx "  newTag: $VERSION" deploy/base/kustomization.yaml
check "deploy/base/spec.yaml is the worked example" cmp -s examples/four-h100.yaml deploy/base/spec.yaml
check "deploy/ ships no plan" test ! -e deploy/base/plan.json
# the agent DaemonSet mounts the ConfigMap `tessera render` writes for the
# agents (cluster/agent-nodes.yaml) and reads its own node's key of it
expect_rc 0 "$TESSERA" render -f deploy/base/spec.yaml --out-dir "$TMP/render"
if /usr/bin/python3 - "$O" "$TMP/render" deploy/base/spec.yaml <<'PY'
import json, os, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
ds = [d for d in docs if d["kind"] == "DaemonSet"][0]
pod = ds["spec"]["template"]["spec"]
c = [c for c in pod["containers"] if c["name"] == "agent"][0]
cm = list(yaml.safe_load_all(open(os.path.join(sys.argv[2], "cluster", "agent-nodes.yaml"))))[0]
assert cm["metadata"]["namespace"] == ds["metadata"]["namespace"], cm["metadata"]
vol = [v for v in pod["volumes"] if v.get("configMap", {}).get("name") == cm["metadata"]["name"]]
assert len(vol) == 1 and vol[0]["configMap"]["optional"] is True, vol
mount = [m["mountPath"] for m in c["volumeMounts"] if m["name"] == vol[0]["name"]][0]
args = [a for a in c["args"] if a.startswith("--node-config=")]
assert args == ["--node-config=" + mount.rstrip("/") + "/$(NODE_NAME).json"], args
env = {e["name"]: e for e in c["env"]}
assert env["NODE_NAME"]["valueFrom"] == {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}, env
fleet = [d for d in yaml.safe_load_all(open(sys.argv[3])) if d and d["kind"] == "Fleet"][0]
nodes = {n["name"] for n in fleet["spec"]["nodes"]}
assert set(cm["data"]) == {n + ".json" for n in nodes}, (sorted(cm["data"]), nodes)
for key, text in cm["data"].items():
    assert json.loads(text)["node"] + ".json" == key, key
PY
then ok; else bad "the agents' ConfigMap and the DaemonSet disagree"; fi

if /usr/bin/python3 - "$O" <<'PY'
import sys, yaml
docs = {d["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
docs["Deployment"] = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Deployment"
                      and d["metadata"]["name"] == "tessera-webhook"][0]
dep = docs["Deployment"]["spec"]
assert dep["replicas"] == 2
# spread preferred, never required: one node runs both replicas, two nodes
# can upgrade (tests/e2e/scenarios/80-rollout.sh rolls them out)
pod = dep["template"]["spec"]
aff = pod["affinity"]["podAntiAffinity"]
assert "requiredDuringSchedulingIgnoredDuringExecution" not in aff, aff
assert aff["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
assert all(c["whenUnsatisfiable"] == "ScheduleAnyway" for c in pod["topologySpreadConstraints"])
assert dep["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}, dep["strategy"]
assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
pdb = docs["PodDisruptionBudget"]["spec"]
assert pdb["maxUnavailable"] == 1 and "minAvailable" not in pdb, pdb
assert pdb["unhealthyPodEvictionPolicy"] == "AlwaysAllow", pdb
wh = docs["ValidatingWebhookConfiguration"]["webhooks"][0]
assert wh["admissionReviewVersions"] == ["v1"] and wh["sideEffects"] == "None"
assert wh["failurePolicy"] == "Fail" and wh["timeoutSeconds"] == 5
assert wh["namespaceSelector"]["matchExpressions"][0]["key"] == "tessera.dev/tenant"
res = {(g, r) for rule in wh["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
for want in [("", "pods"), ("resource.k8s.io", "resourceclaims"),
             ("resource.k8s.io", "resourceclaimtemplates"), ("apps", "deployments"),
             ("batch", "jobs"), ("batch", "cronjobs"), ("apps", "statefulsets")]:
    assert want in res, want
assert wh["clientConfig"]["service"]["path"] == "/validate"
ann = docs["ValidatingWebhookConfiguration"]["metadata"]["annotations"]
assert ann["cert-manager.io/inject-ca-from"] == "tessera-system/tessera-webhook-tls"
ds = docs["DaemonSet"]["spec"]["template"]["spec"]
assert ds["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
assert ds["containers"][0]["env"][0] == {"name": "NODE_NAME",
                                         "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}}
PY
then ok; else bad "webhook and agent settings"; fi

judge_breaks
finish
