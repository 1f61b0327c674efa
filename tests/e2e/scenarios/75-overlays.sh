# 75-overlays.sh - the overlays a user applies instead of deploy/, sent to the
# real API server as a server-side dry-run apply: every object accepted, its
# schema checked by the API server itself. Sourced by tests/e2e/run; needs
# nothing from the scenarios before it.
# - deploy/overlays/postgres, after the commands of docs/install.md's step 5
#   (run as written: the password read from stdin, the CA from a file) made
#   the Secrets tessera-db and tessera-db-ca it names;
# - deploy/overlays/cert-manager: refused while the API server knows no
#   cert-manager kinds; accepted once cert-manager's CRDs
#   (tests/fixtures/cert-manager, v1.21.2) are installed, which then refuse
#   an unknown field and a value outside an enum;
# - the PostgreSQL overlay with the cert-manager Component, as install.md
#   combines them.
# cert-manager's controller, cainjector and webhook are not run: nothing
# issues the certificate or fills caBundle here, and the checks cert-manager's
# own webhook adds to the schema's are tests/tools/check_deploy.py's part.

# dry_apply WHAT DIR: every object of `kubectl kustomize DIR` accepted by
# `kubectl apply --server-side --dry-run=server -k DIR` (--force-conflicts:
# earlier scenarios changed deploy/'s objects under other field managers; a
# dry run takes nothing from them)
dry_apply() {
    local what=$1 dir=$2 want got
    want=$(kc kustomize "$dir" | grep -c '^kind: ')
    if ! kc apply --server-side --dry-run=server --force-conflicts -k "$dir" >"$TMP/dry.out" 2>&1; then
        bad "$what: refused"; grep -v 'serverside-applied (server dry run)$' "$TMP/dry.out" | head -20
        return 1
    fi
    got=$(grep -c 'serverside-applied (server dry run)$' "$TMP/dry.out")
    check "$what: $got of $want objects accepted" [ "$got" -eq "$want" -a "$want" -gt 0 ]
}

# the GPU operator's namespace, a prerequisite (10-apply makes it too)
kc get namespace gpu-operator >/dev/null 2>&1 || kc create namespace gpu-operator >/dev/null

# ---- deploy/overlays/postgres, with the Secrets of install.md's step 5
# the shell block that creates them, run in a folder with deploy/ and the CA
# file it names, kubectl being this control plane's
step5=$TMP/step5
mkdir -p "$step5/bin"
ln -s "$TESSERA_SRC/deploy" "$step5/deploy"
printf '#!/bin/sh\nexec "%s" --request-timeout=30s "$@"\n' "$CP_BIN/kubectl" >"$step5/bin/kubectl"
chmod +x "$step5/bin/kubectl"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=e2e-db-ca \
    -keyout "$step5/db-ca.key" -out "$step5/db-ca.pem" 2>/dev/null
/usr/bin/python3 - "$TESSERA_SRC/docs/install.md" >"$step5/step5.sh" <<'PY' || bad "install.md: no step-5 block"
import re, sys
blocks = re.findall(r"^```sh\n(.*?)^```", open(sys.argv[1]).read(), re.S | re.M)
print([b for b in blocks if "secret generic tessera-db-ca" in b][0])
PY
pass='e2e-pa%40ss'
if (cd "$step5" && PATH=$step5/bin:$PATH bash -e step5.sh <<<"$pass") >"$TMP/step5.out" 2>&1; then ok; else
    bad "install.md's step-5 commands failed"; cat "$step5/step5.sh" "$TMP/step5.out"; fi
# (their namespace, for what follows, should they have failed before making it)
kc get namespace tessera-system >/dev/null 2>&1 ||
    kc apply --server-side -f "$TESSERA_SRC/deploy/base/namespace.yaml" >/dev/null
want=$(/usr/bin/python3 "$TESSERA_SRC/tests/tools/install_db_url.py" "$TESSERA_SRC/docs/install.md")
want=${want//\$DBPASS/$pass}
got=$(kc -n tessera-system get secret tessera-db -o jsonpath='{.data.url}' | base64 -d)
check "Secret tessera-db holds the guide's URL ($got)" [ -n "$got" -a "$got" = "$want" ]
check "Secret tessera-db-ca holds the CA file" cmp -s "$step5/db-ca.pem" \
    <(kc -n tessera-system get secret tessera-db-ca -o jsonpath='{.data.ca\.crt}' | base64 -d)
dry_apply "deploy/overlays/postgres" "$TESSERA_SRC/deploy/overlays/postgres"

# ---- deploy/overlays/cert-manager
cm=$TESSERA_SRC/deploy/overlays/cert-manager
if kc apply --server-side --dry-run=server -k "$cm" >"$TMP/nocrd.out" 2>&1; then
    bad "cert-manager overlay accepted without cert-manager's CRDs"
else
    expect_in "$TMP/nocrd.out" 'no matches for kind "Certificate" in version "cert-manager.io/v1"'
fi
kc apply --server-side -f "$TESSERA_FIXTURES/cert-manager" >"$TMP/cm-crd.out" 2>&1 ||
    { bad "cert-manager's CRDs"; cat "$TMP/cm-crd.out"; }
check "cert-manager's CRDs established" kc wait --for condition=established --timeout 60s \
    crd/certificates.cert-manager.io crd/issuers.cert-manager.io
dry_apply "deploy/overlays/cert-manager" "$cm"
# the API server checks them against the CRDs' schemas
kc kustomize "$cm" >"$TMP/cm.yaml"
sed 's/^  renewBefore: 720h$/  renewBefor: 720h/' "$TMP/cm.yaml" >"$TMP/cm-field.yaml"
sed '0,/^    algorithm: ECDSA$/s//    algorithm: EC/' "$TMP/cm.yaml" >"$TMP/cm-enum.yaml"
for f in field enum; do
    kc apply --server-side --dry-run=server -f "$TMP/cm-$f.yaml" >"$TMP/cm-$f.out" 2>&1 &&
        bad "a Certificate with a wrong $f accepted"
done
expect_in "$TMP/cm-field.out" ".spec.renewBefor: field not declared in schema"
expect_in "$TMP/cm-enum.out" 'spec.privateKey.algorithm: Unsupported value: "EC"'

# ---- PostgreSQL with the cert-manager Component (install.md's kustomization)
mkdir -p "$TMP/pg-cm"
cat >"$TMP/pg-cm/kustomization.yaml" <<EOF
resources:
- $(realpath --relative-to "$TMP/pg-cm" "$TESSERA_SRC/deploy/overlays/postgres")
components:
- $(realpath --relative-to "$TMP/pg-cm" "$cm/component")
EOF
dry_apply "postgres overlay with the cert-manager Component" "$TMP/pg-cm"
check "it has the Certificates" grep -q 'certificate.cert-manager.io/tessera-webhook-tls serverside-applied' \
    "$TMP/dry.out"

# leave no Secret for the scenarios after this one
kc -n tessera-system delete secret tessera-db tessera-db-ca >/dev/null 2>&1
