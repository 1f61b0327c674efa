/*
 * state.c - the webhook's reloadable state: the admission policy (built
 * from spec + catalog through decide and plan) and the TLS certificate.
 *
 * A request takes a reference to the current policy and drops it when it
 * is done; a reload builds the new policy aside and swaps the pointer, and
 * the old one is freed by whoever drops its last reference. Certificates
 * reach GnuTLS through a retrieve callback that reads the current pair
 * under the lock; the previous pair is kept until the next reload so a
 * handshake that started before the swap finishes with valid memory.
 * Anything that fails to load leaves the old one serving and is logged.
 */
#include "serve/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <gnutls/x509.h>
#include "util/file.h"

struct serve_state *serve_current_state;

static long long newest_mtime(const char *const *paths, size_t n)
{
    long long newest = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (paths[i] && stat(paths[i], &st) == 0) {
            long long t = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
            newest = t > newest ? t : newest;
        }
    }
    return newest;
}

/* The newest change to the spec or the catalog files. */
static long long spec_mtime(const struct serve_options *o)
{
    long long spec = newest_mtime(o->spec_files, o->nspec);
    long long cat = newest_mtime(o->catalog_files, o->ncatalog);
    const char *api[] = {o->tokens_file, o->current_file, o->inventory_path};
    long long more = newest_mtime(api, 3);
    spec = cat > spec ? cat : spec;
    return more > spec ? more : spec;
}

static long long cert_mtime(const struct serve_options *o)
{
    const char *certs[] = {o->cert_file, o->key_file};
    return newest_mtime(certs, 2);
}

static void policy_free(struct serve_policy *p)
{
    api_idents_free(p->idents);
    serve__inventory_free(&p->inv);
    if (p->current) {
        reconf_plan_release(p->current);
        free(p->current);
    }
    admit_policy_free(p->admit);
    plan_free(p->plan);
    decide_free(p->decisions);
    spec_model_free(p->model);
    cat_free(p->cat);
    free(p);
}

static void log_diag(const struct serve_state *s, const char *what, const struct ts_diag *d)
{
    for (int i = 0; i < d->count; i++) {
        char msg[TS_MSG_MAX + 2 * TS_PATH_MAX + 64];
        ts_error_format(&d->items[i], msg, sizeof(msg));
        struct ts_log_kv kv[] = {{"error", msg}};
        ts_log(s->opt->log_json, "error", what, kv, 1);
    }
}

/* The identities file (--tokens), the running layout (--current) and the
 * nodes' inventories (--inventory). */
static ts_status load_api(const struct serve_options *o, struct serve_policy *p, struct ts_diag *d)
{
    struct ts_error e = {0};
    char *text = NULL;
    size_t len = 0;
    ts_status st = TS_OK;
    if (o->tokens_file &&
        (st = ts_file_read(o->tokens_file, API_IDENTITIES_FILE_MAX, &text, &len, &e)) == TS_OK)
        st = api_idents_parse(text, len, o->tokens_file, &p->idents, d);
    free(text);
    text = NULL;
    if (st == TS_OK && o->current_file &&
        (st = ts_file_read(o->current_file, SPEC_FILE_MAX, &text, &len, &e)) == TS_OK) {
        p->current = calloc(1, sizeof(*p->current));
        st = p->current ? reconf_plan_parse(text, len, o->current_file, p->current, &e)
                        : ts_err(&e, TS_NOMEM, "out of memory");
        if (st != TS_OK) {
            free(p->current);
            p->current = NULL;
        }
    }
    free(text);
    /* a corrupt running plan is refused as plan --current refuses it (policy_free
     * releases it) */
    if (st == TS_OK && p->current)
        st = reconf_plan_check(p->current, p->model, p->cat, o->current_file, d);
    if (st == TS_OK && o->inventory_path)
        st = serve__inventory_load(o->inventory_path, &p->inv, &e);
    if (st != TS_OK && e.code)
        ts_diag_add(d, &e);
    return st;
}

static struct serve_policy *load_policy(struct serve_state *s)
{
    const struct serve_options *o = s->opt;
    struct serve_policy *p = calloc(1, sizeof(*p));
    struct ts_diag *d = calloc(1, sizeof(*d));
    struct ts_error e = {0};
    struct plan_options popt = {PLAN_SOLVER_AUTO, 5.0};
    ts_status st = p && d ? TS_OK : TS_NOMEM;
    if (st == TS_OK)
        st = cat_load(o->catalog_files, o->ncatalog, &p->cat, d);
    if (st == TS_OK)
        st = spec_load(o->spec_files, o->nspec, &p->model, d);
    if (st == TS_OK)
        st = plan_decide(p->model, p->cat, &popt, &p->decisions, d);
    if (st == TS_OK)
        st = plan_build(p->model, p->cat, p->decisions, &popt, &p->plan, d);
    if (st == TS_OK && admit_policy_build(p->plan, &o->admit, &p->admit, &e) != TS_OK) {
        ts_diag_add(d, &e);
        st = e.code;
    }
    if (st == TS_OK)
        st = load_api(o, p, d);
    if (st != TS_OK && d)
        log_diag(s,
                 s->policy ? "spec did not load; the previous policy keeps serving"
                           : "spec did not load",
                 d);
    free(d);
    if (st != TS_OK && p) {
        policy_free(p);
        return NULL;
    }
    return p;
}

static ts_status read_datum(const char *path, gnutls_datum_t *out, struct ts_error *err)
{
    char *text = NULL;
    size_t len = 0;
    ts_status st = ts_file_read(path, SERVE_TLS_FILE_MAX, &text, &len, err);
    out->data = (unsigned char *)text;
    out->size = (unsigned)len;
    return st;
}

static void tls_free(struct serve_tls *t)
{
    if (!t)
        return;
    for (unsigned i = 0; i < t->npcert; i++)
        gnutls_pcert_deinit(&t->pcert[i]);
    if (t->key)
        gnutls_privkey_deinit(t->key);
    free(t);
}

static struct serve_tls *load_tls(const struct serve_options *o, struct ts_error *err)
{
    struct serve_tls *t = calloc(1, sizeof(*t));
    gnutls_datum_t cert = {0}, key = {0};
    ts_status st = t ? read_datum(o->cert_file, &cert, err)
                     : ts_err(err, TS_NOMEM, "out of memory");
    if (st == TS_OK)
        st = read_datum(o->key_file, &key, err);
    if (st == TS_OK) {
        t->npcert = sizeof(t->pcert) / sizeof(t->pcert[0]);
        int rc = gnutls_pcert_list_import_x509_raw(t->pcert, &t->npcert, &cert, GNUTLS_X509_FMT_PEM,
                                                   0);
        if (rc < 0 || t->npcert == 0) {
            t->npcert = 0;
            st = ts_err(err, TS_INVALID, "%s: not a PEM certificate: %s", o->cert_file,
                        gnutls_strerror(rc));
        }
    }
    if (st == TS_OK) {
        int rc = gnutls_privkey_init(&t->key);
        rc = rc < 0 ? rc
                    : gnutls_privkey_import_x509_raw(t->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
        if (rc < 0)
            st = ts_err(err, TS_INVALID, "%s: not a PEM private key: %s", o->key_file,
                        gnutls_strerror(rc));
    }
    free(cert.data);
    free(key.data);
    if (st != TS_OK) {
        tls_free(t);
        return NULL;
    }
    return t;
}

struct serve_policy *serve_policy_get(struct serve_state *s)
{
    pthread_mutex_lock(&s->lock);
    struct serve_policy *p = s->policy;
    if (p)
        atomic_fetch_add(&p->refs, 1);
    pthread_mutex_unlock(&s->lock);
    return p;
}

void serve_policy_put(struct serve_policy *p)
{
    if (p && atomic_fetch_sub(&p->refs, 1) == 1)
        policy_free(p);
}

static void swap_policy(struct serve_state *s, struct serve_policy *p)
{
    pthread_mutex_lock(&s->lock);
    struct serve_policy *old = s->policy;
    p->generation = ++s->generation;
    atomic_store(&p->refs, 1); /* the state's own reference */
    s->policy = p;
    pthread_mutex_unlock(&s->lock);
    serve_policy_put(old);
}

static void reload_policy(struct serve_state *s)
{
    struct serve_policy *p = load_policy(s);
    if (!p) {
        atomic_fetch_add(&s->metrics.reloads_failed, 1);
        return;
    }
    swap_policy(s, p);
    atomic_fetch_add(&s->metrics.reloads_ok, 1);
    char gen[32];
    snprintf(gen, sizeof(gen), "%lu", p->generation);
    struct ts_log_kv kv[] = {{"generation", gen}};
    ts_log(s->opt->log_json, "info", "policy loaded", kv, 1);
}

/* The end of the serving certificate's validity, for the expiry metric (an
 * alert fires before it: deploy/base/alerts.yaml); 0 where it cannot be read. */
static long long tls_not_after(const struct serve_tls *t)
{
    gnutls_x509_crt_t crt;
    long long end = 0;
    if (t->npcert == 0 || gnutls_x509_crt_init(&crt) < 0)
        return 0;
    if (gnutls_x509_crt_import(crt, &t->pcert[0].cert, GNUTLS_X509_FMT_DER) >= 0)
        end = (long long)gnutls_x509_crt_get_expiration_time(crt);
    gnutls_x509_crt_deinit(crt);
    return end > 0 ? end : 0;
}

atomic_ulong serve_tls_generation;

static void reload_tls(struct serve_state *s)
{
    struct ts_error e = {0};
    struct serve_tls *t = load_tls(s->opt, &e);
    if (!t) {
        struct ts_log_kv kv[] = {{"error", e.msg}};
        ts_log(s->opt->log_json, "error",
               "certificate did not load; the previous one keeps "
               "serving",
               kv, 1);
        return;
    }
    pthread_mutex_lock(&s->lock);
    tls_free(s->tls_old);
    s->tls_old = s->tls;
    s->tls = t;
    pthread_mutex_unlock(&s->lock);
    atomic_fetch_add(&s->metrics.tls_reloads, 1);
    atomic_fetch_add(&serve_tls_generation, 1);
    atomic_store(&s->metrics.tls_not_after, tls_not_after(t));
    ts_log(s->opt->log_json, "info", "certificate loaded", NULL, 0);
}

void serve_state_reload(struct serve_state *s, int force)
{
    long long spec = spec_mtime(s->opt);
    long long cert = cert_mtime(s->opt);
    if (force || spec != s->spec_mtime) {
        s->spec_mtime = spec;
        reload_policy(s);
    }
    if (force || cert != s->cert_mtime) {
        s->cert_mtime = cert;
        reload_tls(s);
    }
}

ts_status serve_state_init(struct serve_state *s, const struct serve_options *opt,
                           struct ts_error *err)
{
    memset(s, 0, sizeof(*s));
    s->opt = opt;
    serve_metrics_init(&s->metrics);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->denials.lock, NULL);
    ts_status rc = serve_meter_init(&s->meter, opt, err);
    if (rc != TS_OK)
        return rc;
    if (opt->client_ca_file && !(s->client_ca = serve_client_ca(opt, err)))
        return err->code ? err->code : TS_INVALID;
    s->tls = load_tls(opt, err);
    if (!s->tls)
        return err->code ? err->code : TS_INVALID;
    atomic_store(&s->metrics.tls_not_after, tls_not_after(s->tls));
    s->cert_mtime = cert_mtime(opt);
    s->spec_mtime = spec_mtime(opt);
    struct serve_policy *p = load_policy(s);
    if (!p)
        return ts_err(err, TS_INVALID, "the spec did not load (see the errors above)");
    swap_policy(s, p);
    serve_current_state = s;
    return TS_OK;
}

void serve_state_release(struct serve_state *s)
{
    serve_meter_release(&s->meter);
    serve_policy_put(s->policy);
    tls_free(s->tls);
    tls_free(s->tls_old);
    serve_metrics_release(&s->metrics);
    serve_denials_release(&s->denials);
    pthread_mutex_destroy(&s->denials.lock);
    free(s->client_ca);
    pthread_mutex_destroy(&s->lock);
    serve_current_state = NULL;
}

int serve_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                       const gnutls_pk_algorithm_t *algos, int nalgos, gnutls_pcert_st **pcert,
                       unsigned int *pcert_length, gnutls_privkey_t *key)
{
    (void)req_ca_dn;
    (void)nreqs;
    (void)algos;
    (void)nalgos;
    struct serve_state *s = serve_current_state;
    if (!s)
        return -1;
    /* asked once a handshake, before it ends: time its end */
    gnutls_handshake_set_hook_function(session, GNUTLS_HANDSHAKE_FINISHED, GNUTLS_HOOK_POST,
                                       serve_tls_finished);
    pthread_mutex_lock(&s->lock);
    *pcert = s->tls->pcert;
    *pcert_length = s->tls->npcert;
    *key = s->tls->key;
    pthread_mutex_unlock(&s->lock);
    return 0;
}
