/*
 * test_cert.c - the serving certificate (serve/cert.c), read back with GnuTLS's
 * own parser: a new CA and leaf verify, the leaf names exactly the DNS names
 * asked for and is no CA; a kept CA signs the next leaf unchanged; a kept CA
 * that is not one, does not match its key or expires first is refused as
 * input; the Service's DNS names and the labels refused; the manifest carries
 * each PEM in base64.
 */
#include "helpers.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "serve/cert.h"

static const char *const names[] = {"hook.ns.svc", "hook", "hook.ns", "hook.ns.svc.cluster.local"};

static struct serve_cert_opts opts(void)
{
    struct serve_cert_opts o = {.dns = names,
                                .ndns = 4,
                                .days = 30,
                                .ca_days = 60,
                                .key = SERVE_KEY_ECDSA_P256,
                                .now = time(NULL)};
    return o;
}

static gnutls_x509_crt_t parse(const char *pem)
{
    gnutls_x509_crt_t c;
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)strlen(pem)};
    assert_int_equal(gnutls_x509_crt_init(&c), 0);
    assert_int_equal(gnutls_x509_crt_import(c, &d, GNUTLS_X509_FMT_PEM), 0);
    return c;
}

/* 0 when leaf verifies against ca. */
static unsigned verify(const char *leaf_pem, const char *ca_pem)
{
    gnutls_x509_crt_t leaf = parse(leaf_pem), ca = parse(ca_pem);
    unsigned status = 1;
    assert_int_equal(gnutls_x509_crt_verify(leaf, &ca, 1, 0, &status), 0);
    gnutls_x509_crt_deinit(leaf);
    gnutls_x509_crt_deinit(ca);
    return status;
}

static int is_ca(const char *pem)
{
    gnutls_x509_crt_t c = parse(pem);
    unsigned critical, ca = 0;
    gnutls_x509_crt_get_basic_constraints(c, &critical, &ca, NULL);
    gnutls_x509_crt_deinit(c);
    return (int)ca;
}

static void test_new_chain(void **state)
{
    (void)state;
    struct serve_cert_opts o = opts();
    struct serve_cert c;
    struct ts_error e = {0};
    assert_int_equal(serve_cert_make(&o, &c, &e), TS_OK);
    assert_int_equal(verify(c.cert, c.ca_cert), 0);
    assert_true(is_ca(c.ca_cert));
    assert_false(is_ca(c.cert));
    gnutls_x509_crt_t leaf = parse(c.cert);
    for (unsigned i = 0; i < 5; i++) {
        char san[300];
        size_t len = sizeof(san);
        int rc = gnutls_x509_crt_get_subject_alt_name(leaf, i, san, &len, NULL);
        if (i == 4) {
            assert_int_equal(rc, GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE);
            break;
        }
        assert_int_equal(rc, GNUTLS_SAN_DNSNAME);
        assert_string_equal(san, names[i]);
    }
    time_t left = gnutls_x509_crt_get_expiration_time(leaf) - o.now;
    assert_true(left > 30 * 86400 - 5 && left <= 30 * 86400);
    gnutls_x509_crt_deinit(leaf);
    assert_non_null(strstr(c.key, "-----BEGIN PRIVATE KEY-----"));
    serve_cert_free(&c);
}

static void test_kept_ca(void **state)
{
    (void)state;
    struct serve_cert_opts o = opts();
    struct serve_cert first, next;
    struct ts_error e = {0};
    assert_int_equal(serve_cert_make(&o, &first, &e), TS_OK);
    o.ca_cert = first.ca_cert;
    o.ca_key = first.ca_key;
    o.key = SERVE_KEY_RSA_2048;
    assert_int_equal(serve_cert_make(&o, &next, &e), TS_OK);
    assert_string_equal(next.ca_cert, first.ca_cert);
    assert_string_not_equal(next.cert, first.cert);
    assert_string_not_equal(next.key, first.key);
    assert_int_equal(verify(next.cert, first.ca_cert), 0);
    serve_cert_free(&first);
    serve_cert_free(&next);
}

/* The kept CA (cert, key) is refused with TS_INVALID and msg. */
static void refused(const char *cert, const char *key, unsigned days, const char *msg)
{
    struct serve_cert_opts o = opts();
    struct serve_cert c;
    struct ts_error e = {0};
    o.ca_cert = cert;
    o.ca_key = key;
    o.days = days;
    assert_int_equal(serve_cert_make(&o, &c, &e), TS_INVALID);
    assert_non_null(strstr(e.msg, msg));
    assert_null(c.cert);
}

static void test_bad_kept_ca(void **state)
{
    (void)state;
    struct serve_cert_opts o = opts();
    struct serve_cert c;
    struct ts_error e = {0};
    assert_int_equal(serve_cert_make(&o, &c, &e), TS_OK);
    refused(c.ca_cert, c.key, 30, "ca.key: not the key of ca.crt");
    refused(c.cert, c.key, 30, "ca.crt: not a CA certificate");
    refused("garbage", c.ca_key, 30, "ca.crt: not a PEM certificate");
    refused(c.ca_cert, "garbage", 30, "ca.key: not a PEM private key");
    refused(c.ca_cert, c.ca_key, 61, "ca.crt: expires before a 61-day leaf would");
    serve_cert_free(&c);
}

static void test_names(void **state)
{
    (void)state;
    struct serve_cert_names n;
    struct ts_error e = {0};
    assert_int_equal(serve_cert_names("hook", "ns", "cluster.local", &n, &e), TS_OK);
    for (int i = 0; i < SERVE_CERT_NAMES; i++)
        assert_string_equal(n.list[i], names[i]);
    static const struct {
        const char *svc, *ns, *domain, *field, *msg;
    } bad[] = {
        {"Hook", "ns", "cluster.local", "service",
         "'Hook' is not a Service name (1-63 of a-z, 0-9 and '-', a letter first, no '-' last)"},
        {"hook_1", "ns", "cluster.local", "service",
         "'hook_1' is not a Service name (1-63 of a-z, 0-9 and '-', a letter first, no '-' last)"},
        {"", "ns", "cluster.local", "service",
         "'' is not a Service name (1-63 of a-z, 0-9 and '-', a letter first, no '-' last)"},
        {"1hook", "ns", "cluster.local", "service",
         "'1hook' is not a Service name (1-63 of a-z, 0-9 and '-', a letter first, no '-' last)"},
        {"hook", "-ns", "cluster.local", "namespace", "'-ns' is not a DNS label"},
        {"hook", "ns-", "cluster.local", "namespace", "'ns-' is not a DNS label"},
        {"hook", "ns", "a..b", "cluster-domain", "'a..b' is not a DNS domain"},
        {"hook", "ns", ".local", "cluster-domain", "'.local' is not a DNS domain"},
        {"hook", "ns", "local.", "cluster-domain", "'local.' is not a DNS domain"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(serve_cert_names(bad[i].svc, bad[i].ns, bad[i].domain, &n, &e),
                         TS_INVALID);
        assert_string_equal(e.path, bad[i].field);
        assert_string_equal(e.msg, bad[i].msg);
    }
    /* a 64-character label is one too many; 63 is the most */
    char label[65];
    memset(label, 'a', 64);
    label[64] = 0;
    assert_int_equal(serve_cert_names(label, "ns", "cluster.local", &n, &e), TS_INVALID);
    label[63] = 0;
    assert_int_equal(serve_cert_names(label, "ns", "cluster.local", &n, &e), TS_OK);
    /* labels fine, but the full name over 253 characters */
    char domain[200];
    snprintf(domain, sizeof(domain), "%s.%s.%s", label, label, label);
    assert_int_equal(serve_cert_names(label, "ns", domain, &n, &e), TS_INVALID);
    assert_non_null(strstr(e.msg, "makes a DNS name over 253 characters"));
}

/* The data and caBundle of the install objects, base64 of the PEM texts. */
static const char *field(json_t *objs, size_t i, const char *path)
{
    json_t *v = json_array_get(objs, i);
    char key[64];
    for (const char *p = path; v && *p;) {
        size_t n = strcspn(p, "/");
        snprintf(key, sizeof(key), "%.*s", (int)n, p);
        v = json_is_array(v) ? json_array_get(v, (size_t)atoi(key)) : json_object_get(v, key);
        p += n + (p[n] == '/');
    }
    return json_string_value(v);
}

static void test_manifest(void **state)
{
    (void)state;
    struct serve_cert c = {.cert = "Man", .key = "Ma", .ca_cert = "M"};
    json_t *o = serve_cert_objects(&c, "Many", "tls", "ns", "cfg", "hook.example");
    assert_non_null(o);
    assert_int_equal(json_array_size(o), 2);
    assert_string_equal(field(o, 0, "kind"), "Secret");
    assert_string_equal(field(o, 0, "metadata/name"), "tls");
    assert_string_equal(field(o, 0, "metadata/namespace"), "ns");
    assert_string_equal(field(o, 0, "type"), "kubernetes.io/tls");
    assert_string_equal(field(o, 0, "data/tls.crt"), "TWFu");
    assert_string_equal(field(o, 0, "data/tls.key"), "TWE=");
    assert_string_equal(field(o, 0, "data/ca.crt"), "TQ==");
    assert_string_equal(field(o, 1, "kind"), "ValidatingWebhookConfiguration");
    assert_string_equal(field(o, 1, "metadata/name"), "cfg");
    assert_string_equal(field(o, 1, "webhooks/0/name"), "hook.example");
    assert_string_equal(field(o, 1, "webhooks/0/clientConfig/caBundle"), "TWFueQ==");
    json_decref(o);
    /* the empty text and one whose length is a multiple of 3 */
    struct serve_cert e = {.cert = "", .key = "abc", .ca_cert = "abcdef"};
    o = serve_cert_objects(&e, "", "tls", "ns", "cfg", "hook.example");
    assert_non_null(o);
    assert_string_equal(field(o, 0, "data/tls.crt"), "");
    assert_string_equal(field(o, 0, "data/tls.key"), "YWJj");
    assert_string_equal(field(o, 0, "data/ca.crt"), "YWJjZGVm");
    assert_string_equal(field(o, 1, "webhooks/0/clientConfig/caBundle"), "");
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_chain),   cmocka_unit_test(test_kept_ca),
        cmocka_unit_test(test_bad_kept_ca), cmocka_unit_test(test_names),
        cmocka_unit_test(test_manifest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
