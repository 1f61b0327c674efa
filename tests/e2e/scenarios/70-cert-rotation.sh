# 70-cert-rotation.sh - the webhook's serving certificate rotated twice while
# reviews flow through the API server: once from the same CA (caBundle
# unchanged), once onto a new CA (`tessera cert --new-ca`: caBundle holds
# both while the replicas move). No review may be dropped or refused. The
# new files reach the webhook as the kubelet updates a Secret volume: after
# the manifest is applied, swapped in at once. Needs 20-webhook.sh's webhook.

# reviews: dry-run tenant pods through the API server and the webhook without
# pause until $TMP/reviews-stop exists; each failure's message goes to
# $TMP/review-failures
reviews() {
    local i=0 parent=$$
    while [ ! -e "$TMP/reviews-stop" ] && [ -d "$CP_DIR" ] && kill -0 "$parent" 2>/dev/null; do
        i=$((i + 1))
        pod client-a-prod "rot-$i" | kc create --dry-run=server -f - >/dev/null 2>>"$TMP/review-failures" ||
            echo "review $i failed" >>"$TMP/review-failures"
        echo "$i" >"$TMP/review-count"
    done
}

# rotate [--new-ca]: a new certificate made beside the served one, the
# manifest applied, then the files swapped in (what the kubelet does about a
# minute after a Secret changes)
rotate() {
    rm -rf "$TMP/wh-tls-next"
    cp -a "$TMP/wh-tls" "$TMP/wh-tls-next"
    "$TESSERA" cert --dir "$TMP/wh-tls-next" "$@" >"$TMP/cert-next.yaml" || { bad "tessera cert $*"; return; }
    kc apply --server-side --field-manager=tessera-cert -f "$TMP/cert-next.yaml" >/dev/null ||
        bad "cert manifest $*"
    sleep 2
    for f in tls.key tls.crt; do
        cp "$TMP/wh-tls-next/$f" "$TMP/wh-tls/$f.new" && mv "$TMP/wh-tls/$f.new" "$TMP/wh-tls/$f"
    done
}

# metric NAME: its value on the webhook's /metrics (its probes' port,
# 20-webhook.sh's $WH_HEALTH; the TLS port answers /validate and the probes
# only)
metric() {
    curl -s "http://$WH_HEALTH/metrics" | awk -v m="$1" '$1 == m {print $2}'
}

: >"$TMP/review-failures"
rm -f "$TMP/reviews-stop"
before=$(metric tessera_tls_reloads_total)
exp0=$(metric tessera_tls_certificate_expiry_timestamp_seconds)
reloaded() { [ "$(metric tessera_tls_reloads_total)" -ge "$1" ]; }
reviews &
flow=$!
sleep 2
rotate
cp_wait 30 "the webhook did not load the new certificate" reloaded $((before + 1))
sleep 2
rotate --new-ca
cp_wait 30 "the webhook did not load the new CA's certificate" reloaded $((before + 2))
# reviews go on past the second swap: each is now served with the new CA's
# certificate
sleep 3
touch "$TMP/reviews-stop"
wait "$flow"
n=$(cat "$TMP/review-count")
check "reviews flowed during the rotations ($n)" [ "$n" -ge 10 ]
if [ -s "$TMP/review-failures" ]; then bad "reviews failed during rotation:"; head -5 "$TMP/review-failures"; else ok; fi
after=$(metric tessera_tls_reloads_total)
check "the webhook loaded both new certificates ($before -> $after reloads)" [ "$((after - before))" -ge 2 ]
# the expiry metric follows the certificate in use (tessera cert: 365 days)
exp1=$(metric tessera_tls_certificate_expiry_timestamp_seconds)
now=$(date +%s)
check "expiry metric $exp1 is about a year ahead and moved ($exp0)" \
    [ "$exp1" -gt $((now + 360 * 86400)) -a "$exp1" -lt $((now + 370 * 86400)) -a "$exp1" -ge "$exp0" ]
# and the API server trusts only the new CA's certificate after the move:
# the caBundle holds the old and the new CA
bundle=$(kc get validatingwebhookconfiguration tessera -o jsonpath='{.webhooks[0].clientConfig.caBundle}' |
    base64 -d | grep -c 'BEGIN CERTIFICATE')
check "caBundle holds the old and the new CA ($bundle)" [ "$bundle" -eq 2 ]
