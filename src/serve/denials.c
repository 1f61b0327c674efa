/*
 * denials.c - the webhook's recent admission denials and how the console
 * gets them. The webhook keeps the last SERVE_DENIALS_MAX reviews it denied
 * for the API server (server.c: only those with its client certificate) in
 * a ring, and serves them as JSON on its probes' port (GET /denials, for
 * the cluster's network only). The console, another process, reads them
 * from --denials-from when /api/v1/denials is asked: every address the
 * URL's host name resolves to (each webhook replica keeps its own ring, and
 * a headless Service names them all), each answer bounded in time and
 * size, checked field by field, merged newest first; a replica that cannot
 * be read is left out, and only none read is an error.
 */
#include "serve/internal.h"

#include <jansson.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "meter/fetch.h"
#include "util/jsonfree.h"
#include "util/time.h"

void serve_denial_add(struct serve_denials *d, const struct admit_verdict *v)
{
    pthread_mutex_lock(&d->lock);
    if (!d->ring)
        d->ring = calloc(SERVE_DENIALS_MAX, sizeof(*d->ring));
    if (d->ring) {
        struct api_denial *x = &d->ring[d->next];
        x->ts_ms = ts_clock_ms(CLOCK_REALTIME);
        snprintf(x->uid, sizeof(x->uid), "%s", v->uid);
        snprintf(x->kind, sizeof(x->kind), "%s", v->kind);
        snprintf(x->ns, sizeof(x->ns), "%s", v->ns);
        snprintf(x->tenant, sizeof(x->tenant), "%s", v->tenant);
        snprintf(x->rule, sizeof(x->rule), "%s", v->rule);
        snprintf(x->message, sizeof(x->message), "%s", v->message);
        d->next = (d->next + 1) % SERVE_DENIALS_MAX;
        d->dropped += d->n == SERVE_DENIALS_MAX;
        d->n += d->n < SERVE_DENIALS_MAX;
    }
    pthread_mutex_unlock(&d->lock);
}

void serve_denials_release(struct serve_denials *d)
{
    free(d->ring);
    d->ring = NULL;
}

/* ---- the webhook's side: GET /denials ---- */

static json_t *denial_json(const struct api_denial *x)
{
    return json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:s}", "timeMs", (json_int_t)x->ts_ms, "uid",
                     x->uid, "kind", x->kind, "namespace", x->ns, "tenant", x->tenant, "rule",
                     x->rule, "message", x->message);
}

enum MHD_Result serve_denials_page(struct serve_state *s, struct MHD_Connection *conn)
{
    struct serve_denials *d = &s->denials;
    json_t *list = json_array();
    pthread_mutex_lock(&d->lock);
    for (size_t i = 0; list && i < d->n; i++)
        json_array_append_new(
            list, denial_json(&d->ring[(d->next + SERVE_DENIALS_MAX - 1 - i) % SERVE_DENIALS_MAX]));
    json_t *doc = json_pack("{s:I, s:o}", "dropped", (json_int_t)d->dropped, "denials", list);
    pthread_mutex_unlock(&d->lock);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    enum MHD_Result r = serve_reply(conn, text ? 200 : 500, "application/json", text ? text : "{}",
                                    text ? strlen(text) : 2, NULL);
    json_free_text(text);
    return r;
}

/* ---- the console's side: --denials-from ---- */

/* One fetched denial into x: every field present, of its type and size. */
static int denial_of(json_t *o, struct api_denial *x)
{
    static const struct {
        const char *key;
        size_t off, size;
    } fields[] = {
        {"uid", offsetof(struct api_denial, uid), sizeof(((struct api_denial *)0)->uid)},
        {"kind", offsetof(struct api_denial, kind), sizeof(((struct api_denial *)0)->kind)},
        {"namespace", offsetof(struct api_denial, ns), sizeof(((struct api_denial *)0)->ns)},
        {"tenant", offsetof(struct api_denial, tenant), sizeof(((struct api_denial *)0)->tenant)},
        {"rule", offsetof(struct api_denial, rule), sizeof(((struct api_denial *)0)->rule)},
        {"message", offsetof(struct api_denial, message),
         sizeof(((struct api_denial *)0)->message)},
    };
    json_t *t = json_object_get(o, "timeMs");
    if (!json_is_integer(t))
        return 0;
    x->ts_ms = json_integer_value(t);
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const char *v = json_string_value(json_object_get(o, fields[i].key));
        if (!v || strlen(v) >= fields[i].size)
            return 0;
        memcpy((char *)x + fields[i].off, v, strlen(v) + 1);
    }
    return 1;
}

int serve_denials_parse(const char *body, size_t len, struct serve_denial_list *f)
{
    json_error_t e;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &e), *item;
    json_t *list = json_object_get(doc, "denials");
    json_t *dropped = json_object_get(doc, "dropped");
    size_t i, n0 = f->n;
    int ok = json_is_array(list) && json_is_integer(dropped) && json_integer_value(dropped) >= 0 &&
             json_array_size(list) <= SERVE_DENIALS_MAX;
    json_array_foreach (ok ? list : NULL, i, item) {
        if (f->n == f->cap) {
            size_t cap = f->cap ? f->cap * 2 : SERVE_DENIALS_MAX;
            struct api_denial *d = realloc(f->d, cap * sizeof(*d));
            if (!d) {
                ok = 0;
                break;
            }
            f->d = d;
            f->cap = cap;
        }
        if (!denial_of(item, &f->d[f->n])) {
            ok = 0;
            break;
        }
        f->n++;
    }
    if (ok)
        f->dropped += (unsigned long)json_integer_value(dropped);
    else
        f->n = n0; /* none of a bad answer */
    json_decref(doc);
    return ok;
}

/* "http://HOST:PORT/PATH" split; 0 when the URL is not of that form. */
static int url_parts(const char *url, char *host, size_t hsize, char *port, size_t psize,
                     const char **path)
{
    const char *p = strncmp(url, "http://", 7) == 0 ? url + 7 : NULL;
    const char *colon = p ? strrchr(p, ':') : NULL, *slash = p ? strchr(p, '/') : NULL;
    if (!p || !colon || !slash || colon > slash || *p == '[')
        return 0;
    size_t hn = (size_t)(colon - p), pn = (size_t)(slash - colon - 1);
    if (!hn || hn >= hsize || !pn || pn >= psize)
        return 0;
    memcpy(host, p, hn);
    host[hn] = '\0';
    memcpy(port, colon + 1, pn);
    port[pn] = '\0';
    *path = slash;
    return 1;
}

int serve_denials_url_ok(const char *url)
{
    char host[256], port[16];
    const char *path;
    return url_parts(url, host, sizeof(host), port, sizeof(port), &path);
}

static int newest_first(const void *a, const void *b)
{
    int64_t x = ((const struct api_denial *)a)->ts_ms, y = ((const struct api_denial *)b)->ts_ms;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* GET one address's /denials into f; 0 (why in err) when it fails. */
static int fetch_one(struct meter_fetch *mf, const char *url, struct serve_denial_list *f,
                     struct ts_error *err)
{
    struct ts_sbuf body;
    struct meter_fetch_sink sink;
    struct meter_fetch_result res;
    struct meter_fetch_opts o = {
        .connect_timeout_ms = 1000, .timeout_ms = 2000, .max_body = SERVE_DENIALS_BODY_MAX};
    ts_sbuf_init(&body, SERVE_DENIALS_BODY_MAX);
    meter_fetch_buffer_sink(&body, &sink);
    int ok = meter_fetch_get(mf, url, &o, &sink, &res, err) == TS_OK;
    if (ok && !serve_denials_parse(ts_sbuf_str(&body), body.len, f)) {
        ts_err(err, TS_SYNTAX, "%s: not the webhook's denials", url);
        ok = 0;
    }
    ts_sbuf_release(&body);
    return ok;
}

struct api_denial *serve_denials_fetch(const char *url, size_t *n, unsigned long *dropped,
                                       struct ts_error *err)
{
    char host[256], port[16], one[600];
    const char *path;
    struct serve_denial_list f = {0};
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    struct meter_fetch *mf = NULL;
    *n = 0;
    *dropped = 0;
    if (!url_parts(url, host, sizeof(host), port, sizeof(port), &path))
        return ts_err(err, TS_USAGE, "--denials-from: '%s' is not http://HOST:PORT/PATH", url),
               NULL;
    int ok = getaddrinfo(host, port, &hints, &ai) == 0 && meter_fetch_new(&mf, err) == TS_OK;
    if (!ok && !err->msg[0])
        ts_err(err, TS_IO, "%s: the name '%s' does not resolve", url, host);
    /* a replica that cannot be read (rolling out, gone) is left out; none read
     * is the failure */
    size_t addrs = 0, read = 0;
    for (struct addrinfo *a = ai; ok && a && addrs < SERVE_DENIALS_SOURCES_MAX;
         a = a->ai_next, addrs++) {
        char ip[64];
        if (getnameinfo(a->ai_addr, a->ai_addrlen, ip, sizeof(ip), NULL, 0, NI_NUMERICHOST))
            continue;
        snprintf(one, sizeof(one), a->ai_family == AF_INET6 ? "http://[%s]:%s%s" : "http://%s:%s%s",
                 ip, port, path);
        read += fetch_one(mf, one, &f, err);
    }
    ok = ok && read > 0;
    if (ai)
        freeaddrinfo(ai);
    meter_fetch_free(mf);
    if (!ok) {
        free(f.d);
        return NULL;
    }
    if (!f.d && !(f.d = calloc(1, sizeof(*f.d)))) /* none: an empty list, not a failure */
        return ts_err(err, TS_NOMEM, "out of memory"), NULL;
    qsort(f.d, f.n, sizeof(*f.d), newest_first); /* never with NULL: qsort's is nonnull */
    *n = f.n < SERVE_DENIALS_MAX ? f.n : SERVE_DENIALS_MAX;
    *dropped = f.dropped + (f.n - *n);
    return f.d;
}
