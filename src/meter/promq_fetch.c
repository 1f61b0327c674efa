/*
 * promq_fetch.c - a range of DCGM series read from Prometheus as raw samples,
 * window after window (METER_PROM_STEPS_MAX steps each, in time order): for
 * each selector an instant query of `SELECTOR[Wms]` at the window's last ms
 * (/api/v1/query), so each sample comes with the time Prometheus stored it;
 * the selectors' answers checked and their lines merged in time order into
 * the ingest (promq.c).
 */
#include "meter/promq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "meter/fetch.h"

#define DEFAULT_QUERY "{__name__=~\"DCGM_FI_.*\"}"
#define URL_MAX (64 * 1024) /* the query URL, the query percent-encoded */

/* Append workload name to list ("|a|b|") unless it is there. */
static int add_once(struct ts_sbuf *list, const char *name)
{
    char key[160];
    snprintf(key, sizeof(key), "|%s|", name);
    if (list->len && strstr(list->data, key))
        return 0;
    ts_sbuf_printf(list, "%s%s|", list->len ? "" : "|", name);
    return 1;
}

void meter_promq_default_query(const struct spec_model *m, struct meter_promq_opts *o,
                               struct ts_sbuf *istio)
{
    o->queries[0] = DEFAULT_QUERY;
    o->nqueries = 1;
    if (!m || !m->pricebook || m->pricebook->shared_split != SPEC_SPLIT_USAGE)
        return;
    struct ts_sbuf list;
    ts_sbuf_init(&list, 64 * 1024);
    for (size_t t = 0; t < m->ntenants; t++)
        for (size_t u = 0; u < m->tenants[t].nuses; u++)
            add_once(&list, m->tenants[t].uses[u].workload);
    if (list.len > 2) { /* "|a|b|": the names are DNS labels, plain in a regex */
        list.data[list.len - 1] = '\0';
        ts_sbuf_printf(istio, "istio_requests_total{destination_workload=~\"%s\"}", list.data + 1);
        o->queries[o->nqueries++] = ts_sbuf_str(istio);
    }
    ts_sbuf_release(&list);
}

/* s percent-encoded (RFC 3986 unreserved bytes kept) into out. */
static void put_encoded(struct ts_sbuf *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~", c))
            ts_sbuf_add(out, s, 1);
        else
            ts_sbuf_printf(out, "%%%02X", c);
    }
}

/* URL/api/v1/query?query=SELECTOR[Wms]&time=TO: the samples in [from - 1 ms
 * (Prometheus 2; 3 leaves the start out), to]. */
static void query_url(const char *base, const char *query, const struct meter_promq_window *w,
                      struct ts_sbuf *url)
{
    size_t n = strlen(base);
    while (n && base[n - 1] == '/')
        n--;
    ts_sbuf_add(url, base, n);
    ts_sbuf_puts(url, "/api/v1/query?query=");
    put_encoded(url, query);
    char range[48];
    snprintf(range, sizeof(range), "[%lldms]", (long long)(w->to_ms - w->from_ms + 1));
    put_encoded(url, range);
    ts_sbuf_printf(url, "&time=%lld.%03lld", (long long)(w->to_ms / 1000),
                   (long long)(w->to_ms % 1000));
}

/* GET url into body; an answer over METER_PROM_BODY_MAX says what to do. */
static ts_status get(const struct meter_promq_opts *o, struct meter_fetch *f, const char *url,
                     const struct meter_promq_window *w, struct ts_sbuf *body,
                     struct meter_fetch_result *res, struct ts_error *err)
{
    struct meter_fetch_opts fo = {.connect_timeout_ms = o->timeout_ms,
                                  .timeout_ms = o->timeout_ms,
                                  .retries = 2,
                                  .backoff_ms = 500,
                                  .max_body = METER_PROM_BODY_MAX,
                                  .cacert = o->cacert,
                                  .insecure = o->insecure,
                                  .any_status = 1};
    struct meter_fetch_sink sink;
    meter_fetch_buffer_sink(body, &sink);
    ts_status st = meter_fetch_get(f, url, &fo, &sink, res, err);
    if (st == TS_TOO_LARGE) {
        char msg[TS_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", err->msg);
        ts_err(err, st,
               "%.400s (a window of %lld ms: give a shorter --interval, a window is %d of it, "
               "or narrower --query selectors)",
               msg, (long long)(w->to_ms - w->from_ms + 1), METER_PROM_STEPS_MAX);
    }
    return st;
}

/* One selector's answer for window w, parsed and checked. */
static ts_status answer(const struct meter_promq_opts *o, struct meter_fetch *f, const char *query,
                        const struct meter_promq_window *w, struct meter_promq_answer **ans,
                        struct ts_error *err)
{
    struct ts_sbuf url, body;
    ts_sbuf_init(&url, URL_MAX);
    ts_sbuf_init(&body, METER_PROM_BODY_MAX);
    query_url(o->url, query, w, &url);
    struct meter_fetch_result res = {0};
    ts_status st = ts_sbuf_status(&url);
    if (st != TS_OK)
        ts_err(err, st,
               "the query (%zu bytes) makes a query URL over %d KiB: give a shorter --query",
               strlen(query), URL_MAX / 1024);
    if (st == TS_OK)
        st = get(o, f, ts_sbuf_str(&url), w, &body, &res, err);
    char shown[512];
    meter_fetch_redact(ts_sbuf_str(&url), shown, sizeof(shown));
    if (st == TS_OK)
        st = meter_promq_parse(ts_sbuf_str(&body), body.len, shown, w, ans, err);
    if ((st == TS_OK || st == TS_SYNTAX) && res.status / 100 != 2) /* not Prometheus' error */
        st = ts_err(err, TS_IO, "%s: HTTP status %ld", shown, res.status);
    ts_sbuf_release(&url);
    ts_sbuf_release(&body);
    return st;
}

static ts_status to_ingest(void *ctx, const char *lines, size_t len, struct ts_error *err)
{
    return meter_ingest_feed(ctx, lines, len, err);
}

/* One window: each selector's answer, then their lines merged into in. */
static ts_status window(const struct meter_promq_opts *o, struct meter_fetch *f,
                        const struct meter_promq_window *w, struct meter_ingest *in,
                        struct ts_error *err)
{
    const char *dflt[] = {DEFAULT_QUERY};
    const char *const *q = o->nqueries ? o->queries : dflt;
    size_t n = o->nqueries ? o->nqueries : 1;
    struct meter_promq_answer *ans[METER_PROM_QUERIES_MAX] = {0};
    ts_status st = TS_OK;
    for (size_t i = 0; st == TS_OK && i < n; i++)
        st = answer(o, f, q[i], w, &ans[i], err);
    if (st == TS_OK)
        st = meter_promq_emit(ans, n, to_ingest, in, err);
    for (size_t i = 0; i < n; i++)
        meter_promq_answer_free(ans[i]);
    return st;
}

ts_status meter_promq_import(const struct meter_promq_opts *o, struct meter_ingest *in,
                             struct ts_error *err)
{
    if (o->step_ms <= 0 || o->from_ms > o->to_ms || o->nqueries > METER_PROM_QUERIES_MAX)
        return ts_err(err, TS_USAGE, "the range needs from <= to and a step above 0");
    struct meter_fetch *f;
    ts_status st = meter_fetch_new(&f, err);
    int64_t span = o->step_ms * METER_PROM_STEPS_MAX;
    for (int64_t t = o->from_ms; st == TS_OK && t <= o->to_ms; t += span) {
        struct meter_promq_window w = {t, o->to_ms - t >= span ? t + span - 1 : o->to_ms};
        st = window(o, f, &w, in, err);
    }
    meter_fetch_free(f);
    return st;
}
