/*
 * usage_report.c - GPU-hours from the store, as a table or the Usage JSON
 * document (see usage_report.h).
 */
#include "meter/usage_report.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include "util/jsonwrite.h"
#include "util/names.h"
#include "util/grow.h"
#include "util/text.h"
#include "util/units.h"

struct scan {
    struct meter_usage *u;
    ts_status st;
};

/* A stored sample as usage reads it. */
static struct meter_point point_of(const struct store_sample *s)
{
    return (struct meter_point){s->device,  s->ts_ms,     s->tenant,   s->model,
                                s->profile, s->share_ppm, s->util_ppm, s->workload};
}

static int add_point(void *ctx, const struct store_sample *s)
{
    struct scan *sc = ctx;
    struct meter_point p = point_of(s);
    /* the store returns points in order; only running out of memory stops */
    sc->st = meter_usage_add(sc->u, &p) == TS_NOMEM ? TS_NOMEM : TS_OK;
    return sc->st != TS_OK;
}

/* a + b, saturating */
static int64_t plus(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    return b < 0 && a < INT64_MIN - b ? INT64_MIN : a + b;
}

/* ---- requests to shared workloads ---- */

/* A counter's points before the window read to count its first increase. */
#define REQUESTS_LOOKBACK_MS (60 * 60 * 1000LL)

struct req_scan {
    struct meter_usage *u;
    int64_t from_ms, prev;      /* prev: the series' last value, -1 none */
    char series[METER_KEY_MAX]; /* the series prev is of */
    int nomem;
};

static int same_consumer(const struct meter_requests *q, const struct store_request *r)
{
    return !strcmp(q->owner, r->owner) && !strcmp(q->workload, r->workload) &&
           !strcmp(q->consumer, r->consumer);
}

/* The requests of each consumer in the window: the increase of each of its
 * series, summed, as Prometheus's increase() counts a series' rises (a
 * value below the last is a restarted counter: its value), without the
 * extrapolation to the window's ends: each step's rise counts in the window
 * of its later point, so windows that split a month add up to it. A series
 * that vanishes adds nothing after its last point; a new one counts from
 * its second. Rows come by consumer, then series, then time. */
static int add_request(void *ctx, const struct store_request *r)
{
    struct req_scan *sc = ctx;
    struct meter_usage *u = sc->u;
    struct meter_requests *q = u->nrequests ? &u->requests[u->nrequests - 1] : NULL;
    if (!q || !same_consumer(q, r)) {
        if (!ts_grow((void **)&u->requests, &u->requests_cap, u->nrequests, sizeof(*q)))
            return sc->nomem = 1;
        q = &u->requests[u->nrequests++];
        snprintf(q->owner, sizeof(q->owner), "%s", r->owner);
        snprintf(q->workload, sizeof(q->workload), "%s", r->workload);
        snprintf(q->consumer, sizeof(q->consumer), "%s", r->consumer);
        q->count = 0;
        sc->prev = -1;
    } else if (strcmp(sc->series, r->series)) {
        sc->prev = -1;
    }
    snprintf(sc->series, sizeof(sc->series), "%s", r->series);
    if (sc->prev >= 0 && r->ts_ms >= sc->from_ms)
        q->count += r->count >= sc->prev ? r->count - sc->prev : r->count;
    sc->prev = r->count;
    return 0;
}

ts_status meter_usage_scan_requests(struct store *st, int64_t from_ms, int64_t to_ms,
                                    struct meter_usage *u, struct ts_error *err)
{
    struct req_scan sc = {u, from_ms, -1, "", 0};
    u->nrequests = 0;
    ts_status rc = store_scan_requests(st, plus(from_ms, -REQUESTS_LOOKBACK_MS), to_ms, add_request,
                                       &sc, err);
    return rc == TS_OK && sc.nomem ? ts_err(err, TS_NOMEM, "usage: out of memory") : rc;
}

/* Bill each tail of u (a device's last point read, inside the window,
 * whose next scrape lies beyond the read) whose device has a later scrape:
 * as a window reading every later scrape bills it. The tails not billed
 * stay in u->tails (their attributes in place), for the aggregate. */
static ts_status bill_tails(struct store *st, struct meter_usage *u, struct ts_error *err)
{
    int found = 0;
    size_t kept = 0;
    for (size_t i = 0; i < u->ntails; i++) {
        const struct meter_tail *t = &u->tails[i], *prev = i ? t - 1 : NULL;
        ts_status rc = TS_OK;
        if (!prev || strcmp(prev->family, t->family) || prev->p.ts_ms != t->p.ts_ms)
            rc = store_device_scraped_after(st, t->family, t->split, t->p.ts_ms, &found, err);
        if (rc == TS_OK && found)
            rc = meter_usage_bill_tail(u, i);
        if (rc != TS_OK)
            return rc == TS_NOMEM ? ts_err(err, rc, "usage: out of memory") : rc;
        if (!found)
            u->tails[kept++] = *t;
    }
    u->ntails = kept;
    return TS_OK;
}

ts_status meter_usage_scan(struct store *st, int64_t from_ms, int64_t to_ms, struct meter_usage *u,
                           struct ts_error *err)
{
    struct scan sc = {u, TS_OK};
    /* the scrapes whose intervals reach into the window lie up to two
     * intervals (the gap cap) before it; those that end them, after it */
    int64_t reach = 2 * u->interval_ms;
    u->from_ms = from_ms;
    u->to_ms = to_ms;
    u->close_by_device = 1;
    ts_status rc = store_scan_samples(st, plus(from_ms, -reach), plus(to_ms, reach), add_point, &sc,
                                      err);
    if (rc == TS_OK && sc.st == TS_OK)
        sc.st = meter_usage_finish(u);
    if (rc == TS_OK && sc.st != TS_OK)
        rc = ts_err(err, sc.st, "usage: out of memory");
    if (rc == TS_OK)
        rc = bill_tails(st, u, err);
    if (rc == TS_OK)
        rc = meter_usage_scan_requests(st, from_ms, to_ms, u, err);
    meter_usage_sort(u);
    return rc;
}

struct steps {
    struct meter_usage *u; /* u[0] the whole window, u[1 + i] step i */
    size_t n;
    int64_t from, to, step, reach;
    ts_status st;
};

/* The end of step i's window. */
static int64_t step_end(const struct steps *sc, size_t i)
{
    int64_t end = sc->from + ((int64_t)i + 1) * sc->step;
    return end < sc->to ? end : sc->to;
}

/* Feed s to the whole window and to each step whose scan would read it
 * (from its start - reach to its end + reach): one or two steps, more
 * only when a step is shorter than two scrape intervals. */
static int add_steps(void *ctx, const struct store_sample *s)
{
    struct steps *sc = ctx;
    struct meter_point p = point_of(s);
    int bad = meter_usage_add(&sc->u[0], &p) == TS_NOMEM;
    int64_t d = s->ts_ms - sc->from - sc->reach;
    for (size_t i = d > 0 ? (size_t)(d / sc->step) : 0;
         !bad && i < sc->n && sc->from + (int64_t)i * sc->step - sc->reach <= s->ts_ms; i++)
        if (s->ts_ms < plus(step_end(sc, i), sc->reach))
            bad = meter_usage_add(&sc->u[1 + i], &p) == TS_NOMEM;
    sc->st = bad ? TS_NOMEM : TS_OK;
    return bad;
}

ts_status meter_usage_scan_steps(struct store *st, int64_t from_ms, int64_t to_ms, int64_t step_ms,
                                 struct meter_usage *u, size_t nsteps, struct ts_error *err)
{
    struct steps sc = {u, nsteps, from_ms, to_ms, step_ms, 2 * u->interval_ms, TS_OK};
    u[0].from_ms = from_ms;
    u[0].to_ms = to_ms;
    for (size_t i = 0; i < nsteps; i++) {
        u[1 + i].from_ms = from_ms + (int64_t)i * step_ms;
        u[1 + i].to_ms = step_end(&sc, i);
    }
    for (size_t i = 0; i <= nsteps; i++)
        u[i].close_by_device = 1; /* as meter_usage_scan reads each window */
    ts_status rc = store_scan_samples(st, plus(from_ms, -sc.reach), plus(to_ms, sc.reach),
                                      add_steps, &sc, err);
    for (size_t i = 0; rc == TS_OK && sc.st == TS_OK && i <= nsteps; i++)
        sc.st = meter_usage_finish(&u[i]);
    if (rc == TS_OK && sc.st != TS_OK)
        rc = ts_err(err, sc.st, "usage: out of memory");
    for (size_t i = 0; rc == TS_OK && i <= nsteps; i++)
        rc = bill_tails(st, &u[i], err);
    for (size_t i = 0; i <= nsteps; i++)
        meter_usage_sort(&u[i]);
    return rc;
}

const char *meter_model_key(const struct cat_catalog *cat, const char *model)
{
    const struct cat_model *m = cat ? cat_model_find(cat, model) : NULL;
    return m ? m->name : model;
}

const char *meter_model_display(const struct cat_catalog *cat, const char *model)
{
    const struct cat_model *m = cat ? cat_model_find(cat, model) : NULL;
    return m ? m->display : model;
}

/* Model and profile come from scrapes: any bytes. A row that cannot be
 * written is an error, never a row left out of a total. */
static json_t *json_row(const struct meter_total *t, const struct cat_catalog *cat)
{
    return json_pack("{s:o, s:o, s:o, s:o, s:I, s:I, s:I}", "tenant", ts_text_json(t->tenant),
                     "model", ts_text_json(meter_model_key(cat, t->model)), "displayName",
                     ts_text_json(meter_model_display(cat, t->model)), "profile",
                     ts_text_json(t->profile[0] ? t->profile : "whole"), "allocationMicroGpuHours",
                     (json_int_t)meter_alloc_uh(t), "usageMicroGpuHours",
                     (json_int_t)meter_usage_uh(t), "unknownUsageMicroGpuHours",
                     (json_int_t)meter_unknown_uh(t));
}

static ts_status write_json(const struct meter_usage *u, const struct cat_catalog *cat,
                            struct ts_sbuf *out)
{
    json_t *rows = json_array();
    int fail = !rows;
    for (size_t i = 0; !fail && i < u->ntotals; i++)
        fail = json_array_append_new(rows, json_row(&u->totals[i], cat)) != 0;
    json_t *doc = json_pack("{s:s, s:s, s:o}", "apiVersion", TS_API_VERSION, "kind", "Usage",
                            "rows", rows);
    ts_status st = fail ? TS_NOMEM : ts_json_write(doc, JSON_SORT_KEYS | JSON_INDENT(2), out);
    json_decref(doc);
    return st;
}

static void hours(struct ts_sbuf *out, int64_t uh)
{
    ts_sbuf_printf(out, " %9" PRId64 ".%06" PRId64, uh / TS_MICRO, uh % TS_MICRO);
}

static void write_text(const struct meter_usage *u, const struct cat_catalog *cat,
                       struct ts_sbuf *out)
{
    ts_sbuf_printf(out, "%-20s %-26s %-10s %16s %16s %16s\n", "TENANT", "GPU MODEL", "PROFILE",
                   "GPU-HOURS", "USED GPU-HOURS", "UNKNOWN USE");
    for (size_t i = 0; i < u->ntotals; i++) {
        const struct meter_total *t = &u->totals[i];
        ts_text_pad(out, t->tenant, 20);
        ts_sbuf_add(out, " ", 1);
        ts_text_pad(out, meter_model_key(cat, t->model), 26);
        ts_sbuf_add(out, " ", 1);
        ts_text_pad(out, t->profile[0] ? t->profile : "whole", 10);
        hours(out, meter_alloc_uh(t));
        hours(out, meter_usage_uh(t));
        hours(out, meter_unknown_uh(t));
        ts_sbuf_add(out, "\n", 1);
    }
}

ts_status meter_usage_write(const struct meter_usage *u, const struct cat_catalog *cat,
                            const char *format, struct ts_sbuf *out)
{
    if (strcmp(format, "json") == 0)
        return write_json(u, cat, out);
    if (strcmp(format, "text") == 0)
        write_text(u, cat, out);
    else
        return TS_USAGE;
    return ts_sbuf_status(out);
}
