/*
 * cert.h - the webhook's serving certificate (`tessera cert`): a CA and a leaf
 * for the Service's DNS names made with GnuTLS, or a new leaf from a CA kept
 * from before, and the manifest that installs them (the TLS Secret and the
 * caBundle of the ValidatingWebhookConfiguration).
 */
#ifndef SERVE_CERT_H
#define SERVE_CERT_H

#include <jansson.h>
#include <stddef.h>
#include <time.h>
#include "util/error.h"

enum serve_key_type { SERVE_KEY_ECDSA_P256, SERVE_KEY_RSA_2048, SERVE_KEY_RSA_3072 };
/* "ecdsa-p256", "rsa-2048", "rsa-3072", NULL-terminated, in enum order. */
extern const char *const serve_key_type_names[];

/* The DNS names a webhook's Service answers to, CN first: NAME.NS.svc, NAME,
 * NAME.NS, NAME.NS.svc.DOMAIN. */
#define SERVE_CERT_NAMES 4
#define SERVE_CERT_NAME_MAX 254 /* a DNS name's longest text, with its NUL */
struct serve_cert_names {
    char dns[SERVE_CERT_NAMES][SERVE_CERT_NAME_MAX];
    const char *list[SERVE_CERT_NAMES]; /* the dns[i], for serve_cert_opts.dns */
};
/* Fill out for service in namespace ns of a cluster whose DNS domain is domain.
 * TS_INVALID naming the field ("service", "namespace", "cluster-domain") when
 * one is no DNS label (service, ns) or domain (domain), or a name gets too long. */
ts_status serve_cert_names(const char *service, const char *ns, const char *domain,
                           struct serve_cert_names *out, struct ts_error *err);

struct serve_cert_opts {
    const char *const *dns; /* the leaf's DNS names; dns[0] is also its CN */
    size_t ndns;
    unsigned days, ca_days; /* validity of the leaf and of a new CA */
    enum serve_key_type key;
    const char *ca_cert, *ca_key; /* PEM of the CA to keep; NULL: make a new one */
    time_t now;
};

/* PEM texts (malloc'd). */
struct serve_cert {
    char *ca_cert, *ca_key, *cert, *key;
};

/* Make the leaf (and the CA when o has none). TS_INVALID naming the file's part
 * when the kept CA does not parse, is no CA, does not match its key, or expires
 * before the leaf would. */
ts_status serve_cert_make(const struct serve_cert_opts *o, struct serve_cert *out,
                          struct ts_error *err);
void serve_cert_free(struct serve_cert *c);

/* The objects that install c, as a JSON array for the YAML writer: the
 * kubernetes.io/tls Secret secret in namespace ns, then the
 * ValidatingWebhookConfiguration vwc's webhook webhook with caBundle = bundle
 * (PEM, one or more CAs); data and caBundle in base64. NULL when out of memory. */
json_t *serve_cert_objects(const struct serve_cert *c, const char *bundle, const char *secret,
                           const char *ns, const char *vwc, const char *webhook);

#endif
