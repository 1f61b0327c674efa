/*
 * promq_fetch.c - a range of DCGM series read from Prometheus' query_range
 * API piece by piece (METER_PROM_STEPS_MAX steps each, in time order) and
 * fed to the ingest as exposition lines (promq.c makes them).
 */
#include "meter/promq.h"

#include <stdio.h>
#include <string.h>
#include "meter/fetch.h"

#define DEFAULT_QUERY "{__name__=~\"DCGM_FI_.*\"}"
#define URL_MAX (64 * 1024) /* the query_range URL, the query percent-encoded */

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

void meter_promq_default_query(const struct spec_model *m, struct ts_sbuf *out)
{
    ts_sbuf_puts(out, DEFAULT_QUERY);
    if (!m || !m->pricebook || m->pricebook->shared_split != SPEC_SPLIT_USAGE)
        return;
    struct ts_sbuf list;
    ts_sbuf_init(&list, 64 * 1024);
    for (size_t t = 0; t < m->ntenants; t++)
        for (size_t u = 0; u < m->tenants[t].nuses; u++)
            add_once(&list, m->tenants[t].uses[u].workload);
    if (list.len > 2) { /* "|a|b|": the names are DNS labels, plain in a regex */
        list.data[list.len - 1] = '\0';
        ts_sbuf_printf(out, " or istio_requests_total{destination_workload=~\"%s\"}",
                       list.data + 1);
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

static void put_seconds(struct ts_sbuf *out, const char *key, int64_t ms)
{
    ts_sbuf_printf(out, "&%s=%lld.%03lld", key, (long long)(ms / 1000), (long long)(ms % 1000));
}

static void range_url(const struct meter_promq_opts *o, int64_t from, int64_t to,
                      struct ts_sbuf *url)
{
    size_t n = strlen(o->url);
    while (n && o->url[n - 1] == '/')
        n--;
    ts_sbuf_add(url, o->url, n);
    ts_sbuf_puts(url, "/api/v1/query_range?query=");
    put_encoded(url, o->query ? o->query : DEFAULT_QUERY); /* the CLI sets its own default */
    put_seconds(url, "start", from);
    put_seconds(url, "end", to);
    put_seconds(url, "step", o->step_ms);
}

/* One piece [from, to] into in. */
static ts_status piece(const struct meter_promq_opts *o, struct meter_fetch *f, int64_t from,
                       int64_t to, struct meter_ingest *in, struct ts_error *err)
{
    struct ts_sbuf url, lines;
    struct ts_sbuf body;
    ts_sbuf_init(&url, URL_MAX);
    ts_sbuf_init(&lines, METER_PROM_BODY_MAX);
    ts_sbuf_init(&body, METER_PROM_BODY_MAX);
    range_url(o, from, to, &url);
    struct meter_fetch_opts fo = {.connect_timeout_ms = o->timeout_ms,
                                  .timeout_ms = o->timeout_ms,
                                  .retries = 2,
                                  .backoff_ms = 500,
                                  .max_body = METER_PROM_BODY_MAX,
                                  .cacert = o->cacert,
                                  .insecure = o->insecure,
                                  .any_status = 1};
    struct meter_fetch_sink sink;
    meter_fetch_buffer_sink(&body, &sink);
    struct meter_fetch_result res;
    ts_status st = ts_sbuf_status(&url);
    if (st != TS_OK)
        ts_err(err, st,
               "the query (%zu bytes) makes a query_range URL over %d KiB: give a shorter --query",
               strlen(o->query ? o->query : DEFAULT_QUERY), URL_MAX / 1024);
    if (st == TS_OK)
        st = meter_fetch_get(f, ts_sbuf_str(&url), &fo, &sink, &res, err);
    char shown[512];
    meter_fetch_redact(ts_sbuf_str(&url), shown, sizeof(shown));
    if (st == TS_OK)
        st = meter_promq_text(ts_sbuf_str(&body), body.len, shown, &lines, err);
    if ((st == TS_OK || st == TS_SYNTAX) && res.status / 100 != 2) /* not Prometheus' error */
        st = ts_err(err, TS_IO, "%s: HTTP status %ld", shown, res.status);
    if (st == TS_OK)
        st = meter_ingest_feed(in, ts_sbuf_str(&lines), lines.len, err);
    ts_sbuf_release(&url);
    ts_sbuf_release(&lines);
    ts_sbuf_release(&body);
    return st;
}

ts_status meter_promq_import(const struct meter_promq_opts *o, struct meter_ingest *in,
                             struct ts_error *err)
{
    if (o->step_ms <= 0 || o->from_ms > o->to_ms)
        return ts_err(err, TS_USAGE, "the range needs from <= to and a step above 0");
    struct meter_fetch *f;
    ts_status st = meter_fetch_new(&f, err);
    int64_t span = o->step_ms * (METER_PROM_STEPS_MAX - 1);
    for (int64_t t = o->from_ms; st == TS_OK && t <= o->to_ms; t += span + o->step_ms) {
        int64_t end = o->to_ms - t > span ? t + span : o->to_ms;
        st = piece(o, f, t, end, in, err);
    }
    meter_fetch_free(f);
    return st;
}
