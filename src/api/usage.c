/*
 * usage.c - GET /api/v1/usage and /api/v1/invoices: GPU-hours per step and
 * the invoices of a period, counted from the metering store as `tessera
 * usage` and `tessera invoice` count them (meter/).
 */
#include "api/internal.h"

#include <stdlib.h>
#include <string.h>
#include "meter/agg.h"
#include "meter/invoice.h"
#include "meter/usage_report.h"
#include "store/store.h"
#include "util/text.h"
#include "util/time.h"

struct usage_q {
    int64_t from, to, step;
    const char *tenant, *model, *profile;
};

static const char *profile_of(const struct meter_total *t)
{
    return t->profile[0] ? t->profile : "whole";
}

/* 1 when row t passes q's filters and the caller may see it. */
static int wanted(const struct api__req *r, const struct usage_q *q, const struct meter_total *t)
{
    const char *model = meter_model_key(r->s->cat, t->model);
    return (!q->tenant || strcmp(t->tenant, q->tenant) == 0) && api__may_see(r->who, t->tenant) &&
           (!q->model || strcmp(model, q->model) == 0) &&
           (!q->profile || strcmp(profile_of(t), q->profile) == 0);
}

static json_t *hours(const struct meter_total *t, json_t *o)
{
    json_object_set_new(o, "allocationMicroGpuHours", json_integer(meter_alloc_uh(t)));
    json_object_set_new(o, "usageMicroGpuHours", json_integer(meter_usage_uh(t)));
    json_object_set_new(o, "unknownUsageMicroGpuHours", json_integer(meter_unknown_uh(t)));
    return o;
}

static json_t *row_key(const struct api__req *r, const struct meter_total *t)
{
    return json_pack("{s:o, s:o, s:o}", "tenant", ts_text_json(t->tenant), "model",
                     ts_text_json(meter_model_key(r->s->cat, t->model)), "profile",
                     ts_text_json(profile_of(t)));
}

/* The series of row t in series (an object keyed by the row's names),
 * made with npoints zero points when new. */
static json_t *series_of(const struct api__req *r, json_t *series, const struct meter_total *t,
                         const struct usage_q *q, size_t npoints)
{
    json_t *names = row_key(r, t);
    char *key = names ? json_dumps(names, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    json_decref(names);
    json_t *s = key ? json_object_get(series, key) : NULL;
    if (key && !s) {
        s = row_key(r, t);
        json_t *pts = json_array();
        for (size_t i = 0; i < npoints; i++) {
            char at[40];
            ts_time_format(q->from + (int64_t)i * q->step, at);
            json_array_append_new(pts, json_pack("{s:s, s:I, s:I, s:I}", "t", at,
                                                 "allocationMicroGpuHours", (json_int_t)0,
                                                 "usageMicroGpuHours", (json_int_t)0,
                                                 "unknownUsageMicroGpuHours", (json_int_t)0));
        }
        json_object_set_new(s, "points", pts);
        json_object_set_new(series, key, s);
    }
    free(key);
    return s;
}

/* The whole window's rows (u[0]) as totals, each step's (u[1 + i]) as
 * point i of its row's series. */
static json_t *tabulate(const struct api__req *r, const struct usage_q *q, struct meter_usage *u,
                        size_t n, json_t *series)
{
    json_t *rows = json_array();
    for (size_t k = 0; rows && k < u[0].ntotals; k++)
        if (wanted(r, q, &u[0].totals[k]))
            json_array_append_new(rows, hours(&u[0].totals[k], row_key(r, &u[0].totals[k])));
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < u[1 + i].ntotals; k++) {
            const struct meter_total *t = &u[1 + i].totals[k];
            if (wanted(r, q, t))
                hours(t,
                      json_array_get(json_object_get(series_of(r, series, t, q, n), "points"), i));
        }
    return rows;
}

/* The totals of [from, to) and, into series, its n steps: one pass over
 * the store (meter_usage_scan_steps); NULL (r failed) when it fails. */
static json_t *scan_usage(struct api__req *r, struct store *st, const struct usage_q *q, size_t n,
                          json_t *series)
{
    struct meter_usage *u = calloc(n + 1, sizeof(*u));
    struct ts_error e = {0};
    json_t *rows = NULL;
    for (size_t i = 0; u && i <= n; i++)
        meter_usage_init(&u[i], r->s->interval_ms);
    if (!u)
        api__fail(r, 500, NULL, "usage: out of memory");
    else if (meter_usage_scan_steps(st, q->from, q->to, q->step, u, n, &e) != TS_OK)
        api__fail(r, 503, NULL, "the metering store: %s", e.msg);
    else
        rows = tabulate(r, q, u, n, series);
    for (size_t i = 0; u && i <= n; i++)
        meter_usage_release(&u[i]);
    free(u);
    return rows;
}

/* A period's usage [from, to) of st, as tessera invoice reads it: from the
 * usage aggregate, integrated and kept by the first reader of the month
 * (meter/agg.h); 0 (r failed) when the store fails. */
static int scan_period(struct api__req *r, struct store *st, int64_t from, int64_t to,
                       struct meter_usage *u)
{
    struct ts_error e = {0};
    meter_usage_init(u, r->s->interval_ms);
    if (meter_agg_scan(st, from, to, u, NULL, &e) == TS_OK)
        return 1;
    api__fail(r, 503, NULL, "the metering store: %s", e.msg);
    return 0;
}

static int by_names(const void *a, const void *b)
{
    static const char *const keys[] = {"tenant", "model", "profile"};
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c = 0;
    for (int i = 0; i < 3 && !c; i++)
        c = strcmp(json_string_value(json_object_get(x, keys[i])),
                   json_string_value(json_object_get(y, keys[i])));
    return c;
}

/* The series object's values, sorted by tenant, model, profile. */
static json_t *sorted(json_t *series)
{
    json_t *a = json_array();
    json_t **v = calloc(json_object_size(series) + 1, sizeof(*v));
    size_t n = 0;
    const char *k;
    json_t *s;
    json_object_foreach (series, k, s)
        if (v)
            v[n++] = s;
    if (n)
        qsort(v, n, sizeof(*v), by_names);
    for (size_t i = 0; a && i < n; i++)
        json_array_append(a, v[i]);
    free(v);
    return a;
}

static int usage_params(struct api__req *r, struct usage_q *q)
{
    const char *step = api__param(r, "step");
    q->model = api__param(r, "model");
    q->profile = api__param(r, "profile");
    if (!api__time(r, "from", 1, 0, &q->from) || !api__time(r, "to", 1, 0, &q->to) ||
        !api__tenant(r, "tenant", &q->tenant))
        return 0;
    q->step = 3600000;
    if (step && (!ts_duration_parse(step, &q->step) || q->step < r->s->interval_ms))
        api__fail(r, 400, "step", "step: '%s' is not a duration of at least the scrape interval",
                  step);
    else if (q->to <= q->from)
        api__fail(r, 400, "to", "to: must be after from");
    else if ((q->to - q->from + q->step - 1) / q->step > API_USAGE_POINTS_MAX)
        api__fail(r, 400, "step", "step: more than %d points from 'from' to 'to'",
                  API_USAGE_POINTS_MAX);
    return api__done(r);
}

void api__usage(struct api__req *r)
{
    struct usage_q q;
    if (!usage_params(r, &q))
        return;
    struct store *st = api__store(r);
    if (!st)
        return;
    size_t n = (size_t)((q.to - q.from + q.step - 1) / q.step);
    json_t *series = json_object(), *tot = scan_usage(r, st, &q, n, series);
    if (tot) {
        char from[40], to[40];
        ts_time_format(q.from, from);
        ts_time_format(q.to, to);
        api__send(r,
                  json_pack("{s:s, s:s, s:I, s:o, s:o}", "from", from, "to", to, "stepSeconds",
                            (json_int_t)(q.step / 1000), "series", sorted(series), "totals",
                            json_incref(tot)),
                  "step");
    }
    json_decref(series);
    json_decref(tot);
    store_close(st);
}

/* tenant's invoice for period from u, written as format into out. */
static ts_status invoice_of(const struct api__req *r, const struct meter_usage *u,
                            const char *tenant, const char *period, const char *format,
                            struct ts_sbuf *out, struct ts_error *e)
{
    struct ts_arena arena;
    struct invoice inv;
    ts_arena_init(&arena);
    ts_status st = invoice_build(u, r->s->model, r->s->cat, tenant, period, &arena, &inv, e);
    inv.issued_ms = r->s->now_ms; /* as the CLI: the day it is written */
    if (st == TS_OK)
        st = invoice_write(&inv, format, out);
    ts_arena_free(&arena);
    return st;
}

static json_t *invoice_json(struct api__req *r, const struct meter_usage *u, const char *tenant,
                            const char *period)
{
    struct ts_sbuf b;
    struct ts_error e = {0};
    ts_sbuf_init(&b, API_ANSWER_MAX);
    json_t *doc = NULL;
    if (invoice_of(r, u, tenant, period, "json", &b, &e) == TS_OK)
        doc = json_loadb(b.data, b.len, 0, NULL);
    else
        api__fail(r, 500, NULL, "invoice of %s: %s", tenant, e.msg[0] ? e.msg : "no memory");
    ts_sbuf_release(&b);
    return doc;
}

static void invoices_json(struct api__req *r, const struct meter_usage *u, const char *tenant,
                          const char *period)
{
    json_t *list = json_array();
    const struct spec_model *m = r->s->model;
    for (size_t i = 0; list && i < m->ntenants && !r->failed; i++) {
        const char *name = m->tenants[i].name;
        if ((!tenant || strcmp(tenant, name) == 0) && api__may_see(r->who, name))
            json_array_append_new(list, invoice_json(r, u, name, period));
    }
    api__send(r, json_pack("{s:s, s:o}", "period", period, "invoices", list), "tenant");
}

static void invoice_text(struct api__req *r, const struct meter_usage *u, const char *tenant,
                         const char *period, const char *format)
{
    struct ts_error e = {0};
    r->out->body.len = 0;
    if (invoice_of(r, u, tenant, period, format, &r->out->body, &e) != TS_OK) {
        api__fail(r, 500, NULL, "invoice of %s: %s", tenant, e.msg[0] ? e.msg : "no memory");
        return;
    }
    r->out->status = 200;
    r->out->type = strcmp(format, "csv") == 0 ? "text/csv; charset=utf-8"
                                              : "text/html; charset=utf-8";
}

static int invoice_params(struct api__req *r, const char **period, const char **tenant,
                          const char **format, int64_t *from, int64_t *to)
{
    *period = api__param(r, "period");
    *format = api__param(r, "format");
    if (!api__tenant(r, "tenant", tenant))
        return 0;
    if (!*period && !r->failed)
        api__fail(r, 400, "period", "period: required (YYYY-MM)");
    else if (*period && !invoice_period(*period, from, to))
        api__fail(r, 400, "period", "period: '%s' is not a month as YYYY-MM", *period);
    *format = *format ? *format : "json";
    if (strcmp(*format, "json") && strcmp(*format, "csv") && strcmp(*format, "html"))
        api__fail(r, 400, "format", "format: '%s' is not json, csv or html", *format);
    else if (strcmp(*format, "json") && !*tenant)
        api__fail(r, 400, "tenant", "tenant: format %s needs one tenant", *format);
    return api__done(r);
}

void api__invoices(struct api__req *r)
{
    const char *period, *tenant, *format;
    int64_t from = 0, to = 0;
    if (!invoice_params(r, &period, &tenant, &format, &from, &to))
        return;
    struct store *st = api__store(r);
    struct meter_usage u;
    if (!st || !scan_period(r, st, from, to, &u)) {
        store_close(st);
        return;
    }
    if (strcmp(format, "json") == 0)
        invoices_json(r, &u, tenant, period);
    else
        invoice_text(r, &u, tenant, period, format);
    meter_usage_release(&u);
    store_close(st);
}
