/*
 * api.c - /api/v1/ on the console's HTTPS port: who is asking (a bearer
 * token, or a client certificate verified against --client-ca), the query
 * parameters as libmicrohttpd decoded them, the state of the current
 * policy; the webhook's one question of a certificate: is it the API
 * server's (--admission-client-ca). The answers are api/'s.
 */
#include "serve/internal.h"

#include <gnutls/x509.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/file.h"

char *serve_client_ca(const struct serve_options *o, struct ts_error *err)
{
    char *text = NULL;
    size_t len = 0;
    if (!o->client_ca_file)
        return NULL;
    if (ts_file_read(o->client_ca_file, SERVE_TLS_FILE_MAX, &text, &len, err) != TS_OK)
        return NULL;
    if (!strstr(text, "-----BEGIN CERTIFICATE-----")) {
        ts_err(err, TS_INVALID, "%s: no PEM certificate in it", o->client_ca_file);
        free(text);
        return NULL;
    }
    return text;
}

/* The names of a verified client certificate: "cn:CN" and "dns:NAME". */
#define CERT_NAMES_MAX 16
struct cert_names {
    char buf[CERT_NAMES_MAX][API_NAME_MAX];
    const char *v[CERT_NAMES_MAX];
    size_t n;
};

static void name_add(struct cert_names *c, const char *kind, const char *name, size_t len)
{
    if (c->n == CERT_NAMES_MAX || len + strlen(kind) >= API_NAME_MAX || memchr(name, 0, len))
        return;
    snprintf(c->buf[c->n], API_NAME_MAX, "%s%.*s", kind, (int)len, name);
    c->v[c->n] = c->buf[c->n];
    c->n++;
}

static void names_of(gnutls_x509_crt_t crt, struct cert_names *c)
{
    char name[API_NAME_MAX];
    size_t len = sizeof(name);
    if (gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, name, &len) == 0)
        name_add(c, "cn:", name, len);
    for (unsigned i = 0; i < 64; i++) {
        len = sizeof(name);
        int t = gnutls_x509_crt_get_subject_alt_name(crt, i, name, &len, NULL);
        if (t == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        if (t == GNUTLS_SAN_DNSNAME)
            name_add(c, "dns:", name, len);
    }
}

/* Whether crt may identify a TLS client: it names id-kp-clientAuth in
 * its extended key usage. One without the extension, or made for servers
 * only, is no identity: a serving certificate signed by the same CA must
 * not log in as its CN. */
static int client_auth(gnutls_x509_crt_t crt)
{
    for (unsigned i = 0; i < 64; i++) {
        char oid[128];
        size_t len = sizeof(oid);
        if (gnutls_x509_crt_get_key_purpose_oid(crt, i, oid, &len, NULL) < 0)
            return 0;
        if (strcmp(oid, GNUTLS_KP_TLS_WWW_CLIENT) == 0)
            return 1;
    }
    return 0;
}

/* The names of conn's client certificate into c, when it verifies against
 * the process's --client-ca and is a client's (none otherwise). */
static void verified_names(struct MHD_Connection *conn, struct cert_names *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
        conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t tls = ci ? (gnutls_session_t)ci->tls_session : NULL;
    unsigned status = 1, ncerts = 0;
    c->n = 0;
    if (!tls || gnutls_certificate_verify_peers2(tls, &status) < 0 || status != 0)
        return;
    const gnutls_datum_t *certs = gnutls_certificate_get_peers(tls, &ncerts);
    gnutls_x509_crt_t crt;
    if (!certs || !ncerts || gnutls_x509_crt_init(&crt) < 0)
        return;
    if (gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER) == 0 && client_auth(crt))
        names_of(crt, c);
    gnutls_x509_crt_deinit(crt);
}

/* The identity of conn's client certificate, when it verifies and is a
 * client's. */
static int cert_identity(struct MHD_Connection *conn, const struct api_idents *ids,
                         struct api_identity *who)
{
    struct cert_names c;
    if (!api_idents_certs(ids))
        return 0;
    verified_names(conn, &c);
    return api_ident_cert(ids, c.v, c.n, who);
}

int serve_admission_client(struct serve_state *s, struct MHD_Connection *conn)
{
    struct cert_names c;
    if (!s->client_ca)
        return 0;
    verified_names(conn, &c);
    for (size_t i = 0; i < c.n; i++) {
        const char *name = strchr(c.v[i], ':') + 1;
        if (!s->opt->admission_client || strcmp(name, s->opt->admission_client) == 0)
            return 1;
    }
    return 0;
}

/* conn's identity: a bearer token, else a client certificate. */
static void identity_of(struct serve_policy *p, struct MHD_Connection *conn,
                        struct api_identity *who)
{
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    who->role = API_ROLE_NONE;
    if (p && p->idents && !api_ident_token(p->idents, auth, who))
        cert_identity(conn, p->idents, who);
}

int serve_api_operator(struct serve_state *s, struct MHD_Connection *conn)
{
    struct serve_policy *p = serve_policy_get(s);
    struct api_identity who;
    identity_of(p, conn, &who);
    serve_policy_put(p);
    return who.role == API_ROLE_OPERATOR;
}

enum MHD_Result serve_api_refuse(struct serve_state *s, struct MHD_Connection *conn)
{
    struct serve_policy *p = serve_policy_get(s);
    struct api_identity who;
    identity_of(p, conn, &who);
    serve_policy_put(p);
    struct api_answer a;
    ts_sbuf_init(&a.body, 4096);
    int none = who.role == API_ROLE_NONE;
    api_error(&a, none ? 401 : 403, NULL,
              none ? "sign in: an operator's bearer token or client certificate"
                   : "only an operator may read /metrics here");
    const char *h[] = {"WWW-Authenticate", none ? "Bearer" : NULL, NULL};
    enum MHD_Result r = serve_reply(conn, a.status, a.type, ts_sbuf_str(&a.body), a.body.len, h);
    ts_sbuf_release(&a.body);
    return r;
}

struct query_params {
    struct api_param p[API_PARAMS_MAX + 1];
    size_t n;
};

/* Each query parameter as libmicrohttpd decoded it; a %00 inside a key or
 * value shows as a C string shorter than its decoded size, which api refuses
 * (400 naming it) rather than reading the text before the NUL. */
static enum MHD_Result one_param(void *cls, enum MHD_ValueKind kind, const char *key,
                                 size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    struct query_params *ps = cls;
    if (ps->n == API_PARAMS_MAX + 1)
        return MHD_NO; /* one over the cap: api answers 400 */
    int cut = strlen(key) != key_size || (value && strlen(value) != value_size);
    ps->p[ps->n++] = (struct api_param){key, value, cut};
    return MHD_YES;
}

static void answer(struct serve_state *s, struct serve_policy *p, struct MHD_Connection *conn,
                   const char *path, struct api_answer *a)
{
    struct api_identity who;
    identity_of(p, conn, &who);
    struct query_params ps = {.n = 0};
    MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, one_param, &ps);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct api_state st = {p->model,
                           p->cat,
                           p->decisions,
                           p->plan,
                           p->generation,
                           s->opt->db_url,
                           s->meter.interval_ms,
                           p->current,
                           NULL,
                           0,
                           0,
                           (int64_t)now.tv_sec * 1000,
                           p->inv.node,
                           p->inv.n};
    struct api_denial *copy = NULL;
    struct ts_error err = {0};
    if (strcmp(path, "/denials") == 0 && who.role != API_ROLE_NONE && s->opt->denials_from) {
        st.denials = copy = serve_denials_fetch(s->opt->denials_from, &st.ndenials,
                                                &st.denials_dropped, &err);
        if (!copy) { /* why, to operators only: it names the cluster's insides */
            ts_sbuf_init(&a->body, 4096);
            a->allow = a->www_authenticate = NULL;
            if (who.role == API_ROLE_OPERATOR)
                api_error(a, 502, NULL, "the webhook's denials could not be read: %s", err.msg);
            else
                api_error(a, 502, NULL,
                          "the webhook's denials could not be read; ask the operator");
            struct ts_log_kv kv[] = {{"error", err.msg}};
            ts_log(s->opt->log_json, "warn", "denials not read", kv, 1);
            return;
        }
    }
    api_get(&st, &who, path, ps.p, ps.n, a);
    free(copy);
}

static atomic_uint api_busy; /* /api/v1/ requests being answered */

enum MHD_Result serve_api_get(struct serve_state *s, struct MHD_Connection *conn, const char *url)
{
    struct serve_policy *p = serve_policy_get(s);
    struct api_answer a;
    unsigned busy = atomic_fetch_add(&api_busy, 1);
    const char *retry = NULL;
    if (busy >= SERVE_API_MAX) {
        ts_sbuf_init(&a.body, 4096);
        api_error(&a, 429, NULL, "busy: %d API requests are being answered; retry", SERVE_API_MAX);
        retry = "1";
    } else if (!p || !p->idents) {
        ts_sbuf_init(&a.body, 4096);
        api_error(&a, 404, NULL, "the API is off: the console has no --tokens");
    } else {
        answer(s, p, conn, url + 7, &a);
    }
    atomic_fetch_sub(&api_busy, 1);
    serve_policy_put(p);
    const char *h[] = {
        "WWW-Authenticate", a.www_authenticate, "Allow", a.allow, "Retry-After", retry, NULL};
    enum MHD_Result r = serve_reply(conn, a.status, a.type, ts_sbuf_str(&a.body), a.body.len, h);
    ts_sbuf_release(&a.body);
    return r;
}
