#!/bin/bash
# alerts.sh - deploy/alerts: the PrometheusRule's groups are valid Prometheus
# rules (promtool check rules) and fire as documented (promtool test rules:
# 20 days left warns, 2 days left is critical too, 60 days is quiet, an
# unreadable certificate warns). promtool comes with Debian's prometheus. The
# series the rules read is the webhook's: `tessera serve` writes it on its
# probes' port (--health-listen), the serving certificate's notAfter as openssl
# reads it.
. "$(dirname "$0")/../lib.sh"
cd "$TESSERA_SRC"
if ! command -v promtool >/dev/null; then
    bad "promtool missing (scripts/install-deps check installs prometheus)"; finish; exit 1
fi
/usr/bin/python3 - deploy/alerts/prometheusrule.yaml "$TMP/rules.yaml" <<'PY'
import sys, yaml
rule = yaml.safe_load(open(sys.argv[1]))
assert rule["kind"] == "PrometheusRule", rule["kind"]
yaml.safe_dump({"groups": rule["spec"]["groups"]}, open(sys.argv[2], "w"))
PY
expect_rc 0 promtool check rules "$TMP/rules.yaml"
# time() is 0 at the start of a promtool test, so an expiry timestamp of N
# seconds is N seconds left
day=86400
rotate="Rotate it (tessera cert, or cert-manager): once it expires the API server refuses every pod in tenant namespaces."
cat >"$TMP/test.yaml" <<END
rule_files: [$TMP/rules.yaml]
evaluation_interval: 1m
tests:
- interval: 1m
  input_series:
  - {series: 'tessera_tls_certificate_expiry_timestamp_seconds{pod="w20"}', values: '$((20 * day))x200'}
  - {series: 'tessera_tls_certificate_expiry_timestamp_seconds{pod="w2"}', values: '$((2 * day))x200'}
  - {series: 'tessera_tls_certificate_expiry_timestamp_seconds{pod="w60"}', values: '$((60 * day))x200'}
  - {series: 'tessera_tls_certificate_expiry_timestamp_seconds{pod="none"}', values: '0x200'}
  alert_rule_test:
  - eval_time: 2h
    alertname: TesseraWebhookCertificateExpiresSoon
    exp_alerts:
    - exp_labels: {severity: warning, pod: w20}
      exp_annotations:
        summary: "The webhook's serving certificate ends in less than 21 days"
        description: "w20 serves a certificate that expires in 19d 22h 0m 0s. $rotate"
    - exp_labels: {severity: warning, pod: w2}
      exp_annotations:
        summary: "The webhook's serving certificate ends in less than 21 days"
        description: "w2 serves a certificate that expires in 1d 22h 0m 0s. $rotate"
    - exp_labels: {severity: critical, pod: w2}
      exp_annotations:
        summary: "The webhook's serving certificate ends in less than 3 days"
        description: "w2: 1d 22h 0m 0s left. Tenant pods will be refused when it ends."
  - eval_time: 2h
    alertname: TesseraWebhookCertificateUnreadable
    exp_alerts:
    - exp_labels: {severity: warning, pod: none}
      exp_annotations:
        summary: "A webhook replica cannot read the end date of its certificate"
END
expect_rc 0 promtool test rules "$TMP/test.yaml"
[ "$FAIL" -eq 0 ] || cat "$TMP/out" "$TMP/err"

# the series is on the webhook's /metrics, where Prometheus scrapes it
scripts/make-test-cert "$TMP/c" >/dev/null
PORT=$(free_port) HPORT=$(free_port)
"$TESSERA" serve -f examples/four-h100.yaml --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" \
    --listen 127.0.0.1:$PORT --health-listen 127.0.0.1:$HPORT 2>"$TMP/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do curl -sf http://127.0.0.1:$HPORT/readyz >/dev/null 2>&1 && break; sleep 0.1; done
want=$(date -u -d "$(openssl x509 -in "$TMP/c/tls.crt" -noout -enddate | cut -d= -f2)" +%s)
got=$(curl -s http://127.0.0.1:$HPORT/metrics |
    awk '$1 == "tessera_tls_certificate_expiry_timestamp_seconds" {printf "%d", $2}')
check "the webhook's tessera_tls_certificate_expiry_timestamp_seconds ${got:-missing}, openssl's notAfter $want" \
    [ "${got:-0}" = "$want" ]
kill $SERVER
wait $SERVER 2>/dev/null
finish
