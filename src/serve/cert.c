/*
 * cert.c - the webhook's serving certificate with GnuTLS (cert.h): a self-signed
 * CA (basic constraints CA, path length 0, cert and CRL signing), a leaf for the
 * Service's DNS names signed by it (server auth, not a CA), and the manifest
 * that installs both.
 */
#include "serve/cert.h"
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/limits.h"

const char *const serve_key_type_names[] = {"ecdsa-p256", "rsa-2048", "rsa-3072", NULL};

#define DAY 86400
/* a leaf is valid from a minute ago: clocks in a cluster differ a little */
#define SKEW 60

/* A DNS label: 1-63 of [a-z0-9-], not starting or ending with '-'. */
static int dns_label(const char *s, size_t n)
{
    if (n < 1 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789-", s[i]) || !s[i])
            return 0;
    return 1;
}

/* Labels separated by single dots, none empty. */
static int dns_domain(const char *s)
{
    for (const char *dot; (dot = strchr(s, '.')); s = dot + 1)
        if (!dns_label(s, (size_t)(dot - s)))
            return 0;
    return dns_label(s, strlen(s));
}

ts_status serve_cert_names(const char *service, const char *ns, const char *domain,
                           struct serve_cert_names *out, struct ts_error *err)
{
    /* a Service's name is a DNS-1035 label: a letter first (a namespace may
     * start with a digit) */
    if (!dns_label(service, strlen(service)) || !strchr("abcdefghijklmnopqrstuvwxyz", *service))
        return ts_err_at(err, TS_INVALID, NULL, 0, 0, "service",
                         "'%s' is not a Service name (1-63 of a-z, 0-9 and '-', a letter "
                         "first, no '-' last)",
                         service);
    const char *field = !dns_label(ns, strlen(ns)) ? "namespace"
                        : !dns_domain(domain)      ? "cluster-domain"
                                                   : NULL;
    if (field)
        return ts_err_at(err, TS_INVALID, NULL, 0, 0, field, "'%s' is not a DNS %s",
                         field[0] == 'n' ? ns : domain, field[0] == 'c' ? "domain" : "label");
    int n = snprintf(out->dns[0], SERVE_CERT_NAME_MAX, "%s.%s.svc", service, ns);
    snprintf(out->dns[1], SERVE_CERT_NAME_MAX, "%s", service);
    snprintf(out->dns[2], SERVE_CERT_NAME_MAX, "%s.%s", service, ns);
    int m = snprintf(out->dns[3], SERVE_CERT_NAME_MAX, "%s.%s.svc.%s", service, ns, domain);
    if (n >= SERVE_CERT_NAME_MAX || m >= SERVE_CERT_NAME_MAX)
        return ts_err_at(err, TS_INVALID, NULL, 0, 0, "cluster-domain",
                         "'%s' makes a DNS name over %d characters", domain,
                         SERVE_CERT_NAME_MAX - 1);
    for (int i = 0; i < SERVE_CERT_NAMES; i++)
        out->list[i] = out->dns[i];
    return TS_OK;
}

static ts_status tls_err(struct ts_error *err, int rc, const char *what)
{
    return ts_err(err, TS_INTERNAL, "%s: %s", what, gnutls_strerror(rc));
}

static int new_key(gnutls_x509_privkey_t *key, enum serve_key_type type)
{
    int rc = gnutls_x509_privkey_init(key);
    if (rc < 0)
        return rc;
    if (type == SERVE_KEY_ECDSA_P256)
        return gnutls_x509_privkey_generate2(
            *key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0, NULL, 0);
    return gnutls_x509_privkey_generate2(*key, GNUTLS_PK_RSA,
                                         type == SERVE_KEY_RSA_2048 ? 2048 : 3072, 0, NULL, 0);
}

/* Version 3, a random positive 16-byte serial, validity, subject, key. */
static int fill(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, const char *cn, time_t from,
                time_t to)
{
    unsigned char serial[16];
    int rc = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial));
    serial[0] &= 0x7f;
    serial[0] |= 0x01;
    rc = rc < 0 ? rc : gnutls_x509_crt_set_version(crt, 3);
    rc = rc < 0 ? rc : gnutls_x509_crt_set_serial(crt, serial, sizeof(serial));
    rc = rc < 0 ? rc : gnutls_x509_crt_set_activation_time(crt, from);
    rc = rc < 0 ? rc : gnutls_x509_crt_set_expiration_time(crt, to);
    rc = rc < 0 ? rc
                : gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
                                                (unsigned)strlen(cn));
    rc = rc < 0 ? rc : gnutls_x509_crt_set_key(crt, key);
    unsigned char id[64];
    size_t idlen = sizeof(id);
    rc = rc < 0 ? rc : gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA1, id, &idlen);
    return rc < 0 ? rc : gnutls_x509_crt_set_subject_key_id(crt, id, idlen);
}

static int make_ca(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key,
                   const struct serve_cert_opts *o)
{
    int rc = fill(crt, key, "tessera-webhook-ca", o->now - SKEW, o->now + (time_t)o->ca_days * DAY);
    rc = rc < 0 ? rc : gnutls_x509_crt_set_basic_constraints(crt, 1, 0);
    rc = rc < 0
             ? rc
             : gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN);
    return rc < 0 ? rc : gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0);
}

static int make_leaf(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, gnutls_x509_crt_t ca,
                     gnutls_x509_privkey_t ca_key, const struct serve_cert_opts *o)
{
    unsigned usage = GNUTLS_KEY_DIGITAL_SIGNATURE;
    if (o->key != SERVE_KEY_ECDSA_P256)
        usage |= GNUTLS_KEY_KEY_ENCIPHERMENT;
    int rc = fill(crt, key, o->dns[0], o->now - SKEW, o->now + (time_t)o->days * DAY);
    rc = rc < 0 ? rc : gnutls_x509_crt_set_basic_constraints(crt, 0, -1);
    rc = rc < 0 ? rc : gnutls_x509_crt_set_key_usage(crt, usage);
    rc = rc < 0 ? rc : gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0);
    for (size_t i = 0; rc >= 0 && i < o->ndns; i++)
        rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, o->dns[i],
                                                  (unsigned)strlen(o->dns[i]), GNUTLS_FSAN_APPEND);
    unsigned char id[64];
    size_t idlen = sizeof(id);
    rc = rc < 0 ? rc : gnutls_x509_crt_get_subject_key_id(ca, id, &idlen, NULL);
    rc = rc < 0 ? rc : gnutls_x509_crt_set_authority_key_id(crt, id, idlen);
    return rc < 0 ? rc : gnutls_x509_crt_sign2(crt, ca, ca_key, GNUTLS_DIG_SHA256, 0);
}

static char *pem_crt(gnutls_x509_crt_t crt)
{
    gnutls_datum_t d = {0};
    if (gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d) < 0)
        return NULL;
    char *s = strndup((const char *)d.data, d.size);
    gnutls_free(d.data);
    return s;
}

static char *pem_key(gnutls_x509_privkey_t key)
{
    gnutls_datum_t d = {0};
    if (gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &d) <
        0)
        return NULL;
    char *s = strndup((const char *)d.data, d.size);
    gnutls_free(d.data);
    return s;
}

/* The kept CA: parses, is a CA, matches its key, outlives the leaf. */
static ts_status load_ca(const struct serve_cert_opts *o, gnutls_x509_crt_t ca,
                         gnutls_x509_privkey_t key, struct ts_error *err)
{
    gnutls_datum_t c = {(unsigned char *)o->ca_cert, (unsigned)strlen(o->ca_cert)};
    gnutls_datum_t k = {(unsigned char *)o->ca_key, (unsigned)strlen(o->ca_key)};
    int rc = gnutls_x509_crt_import(ca, &c, GNUTLS_X509_FMT_PEM);
    if (rc < 0)
        return ts_err(err, TS_INVALID, "ca.crt: not a PEM certificate: %s", gnutls_strerror(rc));
    rc = gnutls_x509_privkey_import2(key, &k, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN);
    if (rc < 0)
        return ts_err(err, TS_INVALID, "ca.key: not a PEM private key: %s", gnutls_strerror(rc));
    unsigned critical, is_ca = 0;
    if (gnutls_x509_crt_get_basic_constraints(ca, &critical, &is_ca, NULL) < 0 || !is_ca)
        return ts_err(err, TS_INVALID, "ca.crt: not a CA certificate (basic constraints)");
    unsigned char a[64], b[64];
    size_t alen = sizeof(a), blen = sizeof(b);
    if (gnutls_x509_crt_get_key_id(ca, GNUTLS_KEYID_USE_SHA256, a, &alen) < 0 ||
        gnutls_x509_privkey_get_key_id(key, GNUTLS_KEYID_USE_SHA256, b, &blen) < 0 ||
        alen != blen || memcmp(a, b, alen) != 0)
        return ts_err(err, TS_INVALID, "ca.key: not the key of ca.crt");
    if (gnutls_x509_crt_get_expiration_time(ca) < o->now + (time_t)o->days * DAY)
        return ts_err(err, TS_INVALID,
                      "ca.crt: expires before a %u-day leaf would: make a new CA (--new-ca)",
                      o->days);
    return TS_OK;
}

static ts_status build(const struct serve_cert_opts *o, gnutls_x509_crt_t ca,
                       gnutls_x509_privkey_t ca_key, struct serve_cert *out, struct ts_error *err)
{
    gnutls_x509_crt_t leaf = NULL;
    gnutls_x509_privkey_t key = NULL;
    int rc = new_key(&key, o->key);
    rc = rc < 0 ? rc : gnutls_x509_crt_init(&leaf);
    rc = rc < 0 ? rc : make_leaf(leaf, key, ca, ca_key, o);
    ts_status st = rc < 0 ? tls_err(err, rc, "the serving certificate") : TS_OK;
    if (st == TS_OK) {
        out->ca_cert = pem_crt(ca);
        out->ca_key = pem_key(ca_key);
        out->cert = pem_crt(leaf);
        out->key = pem_key(key);
        if (!out->ca_cert || !out->ca_key || !out->cert || !out->key)
            st = ts_err(err, TS_NOMEM, "exporting the certificates");
    }
    if (leaf)
        gnutls_x509_crt_deinit(leaf);
    if (key)
        gnutls_x509_privkey_deinit(key);
    return st;
}

ts_status serve_cert_make(const struct serve_cert_opts *o, struct serve_cert *out,
                          struct ts_error *err)
{
    memset(out, 0, sizeof(*out));
    gnutls_x509_crt_t ca = NULL;
    gnutls_x509_privkey_t ca_key = NULL;
    ts_status st = TS_OK;
    int rc = gnutls_x509_crt_init(&ca);
    if (rc >= 0 && o->ca_cert) {
        rc = gnutls_x509_privkey_init(&ca_key);
        st = rc < 0 ? TS_OK : load_ca(o, ca, ca_key, err);
    } else if (rc >= 0) {
        rc = new_key(&ca_key, o->key);
        rc = rc < 0 ? rc : make_ca(ca, ca_key, o);
    }
    if (rc < 0)
        st = tls_err(err, rc, "the CA");
    if (st == TS_OK)
        st = build(o, ca, ca_key, out, err);
    if (ca)
        gnutls_x509_crt_deinit(ca);
    if (ca_key)
        gnutls_x509_privkey_deinit(ca_key);
    if (st != TS_OK)
        serve_cert_free(out);
    return st;
}

void serve_cert_free(struct serve_cert *c)
{
    free(c->ca_cert);
    free(c->ca_key);
    free(c->cert);
    free(c->key);
    memset(c, 0, sizeof(*c));
}

/* The base64 of text on one line (what a Secret's data and caBundle take),
 * through GnuTLS; NULL when out of memory. */
static json_t *b64(const char *text)
{
    gnutls_datum_t in = {(unsigned char *)text, (unsigned)strlen(text)}, out = {0};
    if (gnutls_base64_encode2(&in, &out) < 0)
        return NULL;
    json_t *s = json_stringn(out.data ? (const char *)out.data : "", out.size);
    gnutls_free(out.data);
    return s;
}

json_t *serve_cert_objects(const struct serve_cert *c, const char *bundle, const char *secret,
                           const char *ns, const char *vwc, const char *webhook)
{
    json_t *tls = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:{s:o*, s:o*, s:o*}}", "apiVersion",
                            "v1", "kind", "Secret", "metadata", "name", secret, "namespace", ns,
                            "type", "kubernetes.io/tls", "data", "tls.crt", b64(c->cert), "tls.key",
                            b64(c->key), "ca.crt", b64(c->ca_cert));
    json_t *hook = json_pack("{s:s, s:s, s:{s:s}, s:[{s:s, s:{s:o*}}]}", "apiVersion",
                             "admissionregistration.k8s.io/v1", "kind",
                             "ValidatingWebhookConfiguration", "metadata", "name", vwc, "webhooks",
                             "name", webhook, "clientConfig", "caBundle", b64(bundle));
    json_t *data = tls ? json_object_get(tls, "data") : NULL;
    json_t *cfg = hook ? json_object_get(json_array_get(json_object_get(hook, "webhooks"), 0),
                                         "clientConfig")
                       : NULL;
    if (!data || json_object_size(data) != 3 || !cfg || !json_object_get(cfg, "caBundle")) {
        json_decref(tls);
        json_decref(hook);
        return NULL;
    }
    return json_pack("[o, o]", tls, hook);
}
