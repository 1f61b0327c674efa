/*
 * metering.c - the metering part of /metrics (`tessera serve --db DB`):
 * GPU-hours per tenant from the store, the plan's allocation per tenant and
 * its card counts (these two without --db too), and the stored dcgm-exporter
 * bodies relabelled with their tenant.
 *
 * Only a GET /metrics does this work, on its own request thread; /validate
 * never touches it. A scrape serves a cached text; when the cache is older
 * than --metering-refresh, that scrape refreshes it under the metering
 * mutex (other scrapes wait, reviews do not):
 *   - the store is opened for the refresh and closed after it (one
 *     connection at a time, none held between refreshes; a database that
 *     went away and came back needs nothing more);
 *   - GPU-hours are running totals (meter/usage.h, the integration
 *     `tessera usage` does, a device's keys together): each refresh
 *     integrates only the samples newer than the last one integrated of
 *     their device (the key up to '#'), with the device's points of that
 *     last time, which waited for its next scrape to be billed (a pod that
 *     left is billed up to it, as `tessera usage` bills it), reading the samples of
 *     the last LOOKBACK_MS before the newest one seen (so a scrape of one
 *     node arriving late is still counted); every REBUILD_MS, and after any
 *     failure, the totals are rebuilt from the whole store (a backfill older
 *     than that window is counted then). Staleness: a refresh period for
 *     samples in time order, REBUILD_MS at most for a backfill;
 *   - the latest exposition of each source is relabelled (meter/relabel.h),
 *     the tenants decided by the metering attribution over the current plan
 *     and the custody ledger.
 * A refresh that fails drops the metering text and shows
 * tessera_metering_up 0; the webhook's own metrics are always served.
 */
#include "serve/internal.h"
#include "util/grow.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "meter/relabel.h"
#include "meter/usage_report.h"
#include "util/time.h"
#include "util/units.h"

#define LOOKBACK_MS (10 * 60 * 1000LL)
#define REBUILD_MS (60 * 60 * 1000LL)

/* A point read, kept until its device's next scrape bills it. */
struct serve_meter_pt {
    char device[METER_KEY_MAX], tenant[METER_KEY_MAX], model[METER_KEY_MAX];
    char profile[METER_KEY_MAX], workload[METER_KEY_MAX];
    int64_t ts_ms, share_ppm, util_ppm;
};

/* A device (the key up to '#'): its newest time integrated and its points
 * of that time, not yet billed. */
struct serve_meter_fam {
    char family[METER_KEY_MAX];
    int64_t ts_ms;
    struct serve_meter_pt *open;
    size_t nopen;
};

static void log_error(const struct serve_meter *m, const char *msg, const struct ts_error *e)
{
    struct ts_log_kv kv[] = {{"error", e->msg}};
    ts_log(m->log_json, "error", msg, kv, 1);
}

ts_status serve_meter_init(struct serve_meter *m, const struct serve_options *o,
                           struct ts_error *err)
{
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->lock, NULL);
    m->url = o->db_url;
    m->log_json = o->log_json;
    m->interval_ms = o->meter_interval_ms > 0 ? o->meter_interval_ms : 15000;
    m->refresh_ms = o->meter_refresh_ms > 0 ? o->meter_refresh_ms : 10000;
    meter_usage_init(&m->usage, m->interval_ms);
    m->usage.close_by_device = 1; /* a device's keys together, as tessera usage */
    ts_sbuf_init(&m->text, SERVE_HOURS_MAX);
    ts_sbuf_init(&m->dcgm, SERVE_RELABEL_MAX);
    if (!m->url)
        return TS_OK;
    struct store *st = NULL; /* a bad URL stops the start; a database down does not */
    struct ts_error e = {0};
    ts_status rc = store_open(m->url, &st, &e);
    store_close(st);
    if (rc == TS_USAGE)
        return ts_err(err, TS_USAGE, "--db: %s", e.msg);
    if (rc != TS_OK)
        log_error(m,
                  "metering store not reachable; /metrics shows tessera_metering_up 0 "
                  "until it is",
                  &e);
    return TS_OK;
}

static void reset_text(struct ts_sbuf *b, size_t max)
{
    ts_sbuf_release(b);
    ts_sbuf_init(b, max);
}

static void forget(struct serve_meter *m)
{
    meter_usage_release(&m->usage);
    for (size_t i = 0; i < m->nfams; i++)
        free(m->fams[i].open);
    free(m->fams);
    free(m->newest);
    m->fams = NULL;
    m->newest = NULL;
    m->nfams = m->famcap = m->nnewest = m->newcap = 0;
    m->cur[0] = 0;
    m->watermark_ms = 0;
    m->rebuilt_at = 0;
}

void serve_meter_release(struct serve_meter *m)
{
    forget(m);
    ts_sbuf_release(&m->text);
    ts_sbuf_release(&m->dcgm);
    pthread_mutex_destroy(&m->lock);
}

/* ---- running totals ---- */

static int fam_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const struct serve_meter_fam *)elem)->family);
}

/* The device's entry, made (sorted in) when new; NULL when out of memory. */
static struct serve_meter_fam *fam_get(struct serve_meter *m, const char *family)
{
    size_t lo = 0, hi = m->nfams;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = fam_cmp(family, &m->fams[mid]);
        if (c == 0)
            return &m->fams[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (!ts_grow((void **)&m->fams, &m->famcap, m->nfams, sizeof(*m->fams)))
        return NULL;
    memmove(&m->fams[lo + 1], &m->fams[lo], (m->nfams - lo) * sizeof(*m->fams));
    m->nfams++;
    struct serve_meter_fam *f = &m->fams[lo];
    memset(f, 0, sizeof(*f));
    snprintf(f->family, sizeof(f->family), "%s", family);
    f->ts_ms = INT64_MIN;
    return f;
}

static struct meter_point pt_point(const struct serve_meter_pt *d)
{
    return (struct meter_point){d->device,  d->ts_ms,     d->tenant,   d->model,
                                d->profile, d->share_ppm, d->util_ppm, d->workload};
}

/* The device read ends: its newest points wait for its next scrape. */
static ts_status fam_end(struct serve_meter *m)
{
    if (!m->cur[0])
        return TS_OK;
    struct serve_meter_fam *f = fam_get(m, m->cur);
    m->cur[0] = 0;
    if (!f)
        return TS_NOMEM;
    if (!m->nnewest || m->newest[0].ts_ms <= f->ts_ms)
        return TS_OK;
    struct serve_meter_pt *open = malloc(m->nnewest * sizeof(*open));
    if (!open)
        return TS_NOMEM;
    memcpy(open, m->newest, m->nnewest * sizeof(*open));
    free(f->open);
    f->open = open;
    f->nopen = m->nnewest;
    f->ts_ms = open[0].ts_ms;
    return TS_OK;
}

/* A new device is read: its waiting points go first. */
static ts_status fam_begin(struct serve_meter *m, const char *key)
{
    ts_status st = fam_end(m);
    snprintf(m->cur, sizeof(m->cur), "%.*s", (int)strcspn(key, "#"), key);
    struct serve_meter_fam *f = fam_get(m, m->cur);
    if (st != TS_OK || !f)
        return TS_NOMEM;
    m->nnewest = 0;
    for (size_t i = 0; i < f->nopen; i++) {
        struct meter_point p = pt_point(&f->open[i]);
        if (meter_usage_add(&m->usage, &p) == TS_NOMEM)
            return TS_NOMEM;
    }
    return TS_OK;
}

/* Keep s among the newest points of its device. */
static ts_status keep_newest(struct serve_meter *m, const struct store_sample *s)
{
    if (m->nnewest && s->ts_ms > m->newest[0].ts_ms)
        m->nnewest = 0;
    if (m->nnewest && s->ts_ms < m->newest[0].ts_ms)
        return TS_OK;
    if (!ts_grow((void **)&m->newest, &m->newcap, m->nnewest, sizeof(*m->newest)))
        return TS_NOMEM;
    struct serve_meter_pt *d = &m->newest[m->nnewest++];
    snprintf(d->device, sizeof(d->device), "%s", s->device);
    snprintf(d->tenant, sizeof(d->tenant), "%s", s->tenant);
    snprintf(d->model, sizeof(d->model), "%s", s->model);
    snprintf(d->profile, sizeof(d->profile), "%s", s->profile);
    snprintf(d->workload, sizeof(d->workload), "%s", s->workload ? s->workload : "");
    d->ts_ms = s->ts_ms;
    d->share_ppm = s->share_ppm;
    d->util_ppm = s->util_ppm;
    return TS_OK;
}

static int in_family(const char *family, const char *key)
{
    size_t n = strcspn(key, "#");
    return strlen(family) == n && strncmp(family, key, n) == 0;
}

static ts_status add_new(struct serve_meter *m, const struct store_sample *s)
{
    if (!in_family(m->cur, s->device) && fam_begin(m, s->device) != TS_OK)
        return TS_NOMEM;
    const struct serve_meter_fam *f = fam_get(m, m->cur);
    if (!f)
        return TS_NOMEM;
    if (s->ts_ms <= f->ts_ms)
        return TS_OK; /* integrated by an earlier refresh */
    struct meter_point p = {s->device,  s->ts_ms,     s->tenant,   s->model,
                            s->profile, s->share_ppm, s->util_ppm, s->workload};
    if (meter_usage_add(&m->usage, &p) == TS_NOMEM || keep_newest(m, s) != TS_OK)
        return TS_NOMEM;
    m->watermark_ms = s->ts_ms > m->watermark_ms ? s->ts_ms : m->watermark_ms;
    return TS_OK;
}

static int add_sample(void *arg, const struct store_sample *s)
{
    struct serve_meter *m = arg;
    m->scan_status = add_new(m, s);
    return m->scan_status != TS_OK;
}

static ts_status integrate(struct serve_meter *m, struct store *st, int64_t now,
                           struct ts_error *err)
{
    if (m->rebuilt_at == 0 || now - m->rebuilt_at >= REBUILD_MS) {
        forget(m);
        m->rebuilt_at = now;
    }
    int64_t from = m->watermark_ms > LOOKBACK_MS ? m->watermark_ms - LOOKBACK_MS : 0;
    m->scan_status = TS_OK;
    ts_status rc = store_scan_samples(st, from, INT64_MAX, add_sample, m, err);
    if (rc == TS_OK && m->scan_status == TS_OK)
        m->scan_status = fam_end(m);
    if (rc == TS_OK && m->scan_status == TS_OK && meter_usage_finish(&m->usage) != TS_OK)
        m->scan_status = TS_NOMEM;
    if (rc == TS_OK && m->scan_status != TS_OK)
        rc = ts_err(err, m->scan_status, "metering: out of memory");
    return rc;
}

/* Micro-units as a decimal with exactly six places. */
static void put_micro(struct ts_sbuf *o, int64_t uh)
{
    uint64_t a = uh < 0 ? 0 - (uint64_t)uh : (uint64_t)uh;
    ts_sbuf_printf(o, "%s%" PRIu64 ".%06" PRIu64, uh < 0 ? "-" : "", a / TS_MICRO, a % TS_MICRO);
}

/* "metric{tenant=...,model=...,profile=..." (the caller closes the braces). */
static void put_row(struct ts_sbuf *o, const char *metric, const char *tenant, const char *model,
                    const char *profile)
{
    ts_sbuf_printf(o, "%s{tenant=", metric);
    meter_relabel_put_label(o, tenant);
    ts_sbuf_puts(o, ",model=");
    meter_relabel_put_label(o, model);
    ts_sbuf_puts(o, ",profile=");
    meter_relabel_put_label(o, profile);
}

/* model is the catalog key, model_name its display name (as in the
 * allocation gauge; the invoice has the same key). */
static void put_hours(struct ts_sbuf *o, const struct cat_catalog *cat, const struct meter_total *t,
                      const char *basis, int64_t uh)
{
    put_row(o, "tessera_gpu_hours_total", t->tenant, meter_model_key(cat, t->model),
            t->profile[0] ? t->profile : "whole");
    ts_sbuf_printf(o, ",basis=\"%s\",model_name=", basis);
    meter_relabel_put_label(o, meter_model_display(cat, t->model));
    ts_sbuf_puts(o, "} ");
    put_micro(o, uh);
    ts_sbuf_puts(o, "\n");
}

static ts_status write_hours(struct meter_usage *u, const struct cat_catalog *cat,
                             struct ts_sbuf *o)
{
    meter_usage_sort(u); /* the totals are found by name: their order is free */
    ts_sbuf_puts(o, "# HELP tessera_gpu_hours_total GPU-hours per tenant, GPU model and "
                    "profile from the metering store (allocation: the card share reserved; "
                    "usage: times the engine-active ratio).\n"
                    "# TYPE tessera_gpu_hours_total counter\n");
    for (size_t i = 0; i < u->ntotals; i++) {
        put_hours(o, cat, &u->totals[i], "allocation", meter_alloc_uh(&u->totals[i]));
        put_hours(o, cat, &u->totals[i], "usage", meter_usage_uh(&u->totals[i]));
    }
    return ts_sbuf_status(o);
}

/* ---- relabelled expositions ---- */

struct relabel_scan {
    struct meter_relabel *r;
    ts_status status;
};

static int add_exposition(void *arg, const char *source, int64_t ts_ms, const char *text,
                          size_t len)
{
    (void)source;
    (void)ts_ms;
    struct relabel_scan *x = arg;
    x->status = meter_relabel_add(x->r, text, len);
    return x->status != TS_OK;
}

/* Every source's latest body, relabelled, into m->dcgm; too much text is
 * logged and left out. */
static ts_status relabel(struct serve_meter *m, struct store *st, const struct meter_ctx *ctx,
                         struct ts_error *err)
{
    struct relabel_scan x = {meter_relabel_new(ctx, SERVE_RELABEL_MAX), TS_OK};
    if (!x.r)
        return ts_err(err, TS_NOMEM, "metering: out of memory");
    ts_status rc = store_scan_expositions(st, add_exposition, &x, err);
    if (rc == TS_OK && x.status == TS_NOMEM)
        rc = ts_err(err, TS_NOMEM, "metering: out of memory");
    struct meter_relabel_counts c;
    meter_relabel_counts(x.r, &c);
    m->rejected_lines = c.rejected;
    if (rc == TS_OK && x.status == TS_OK && meter_relabel_write(x.r, &m->dcgm) != TS_OK)
        x.status = TS_TOO_LARGE;
    if (rc == TS_OK && x.status != TS_OK) {
        reset_text(&m->dcgm, SERVE_RELABEL_MAX); /* the GPU-hours stay */
        struct ts_error e;
        ts_err(&e, TS_TOO_LARGE, "relabelled expositions over %zu bytes", SERVE_RELABEL_MAX);
        log_error(m, "relabelled expositions left out of /metrics", &e);
    }
    meter_relabel_free(x.r);
    return rc;
}

/* ---- one refresh ---- */

static ts_status refresh(struct serve_meter *m, const struct serve_policy *p, int64_t now,
                         struct ts_error *err)
{
    struct store *st = NULL;
    struct meter_ctx ctx = {.model = p->model, .cat = p->cat, .plan = p->plan};
    ts_status rc = store_open(m->url, &st, err);
    if (rc == TS_OK)
        rc = meter_ctx_load_custody(&ctx, st, err);
    if (rc == TS_OK)
        rc = integrate(m, st, now, err);
    reset_text(&m->text, SERVE_HOURS_MAX);
    reset_text(&m->dcgm, SERVE_RELABEL_MAX);
    if (rc == TS_OK)
        rc = write_hours(&m->usage, p->cat, &m->text);
    if (rc == TS_OK)
        rc = relabel(m, st, &ctx, err);
    meter_ctx_release(&ctx);
    store_close(st);
    if (rc != TS_OK) {
        forget(m); /* the totals may be half updated: rebuild next time */
        reset_text(&m->text, SERVE_HOURS_MAX);
        reset_text(&m->dcgm, SERVE_RELABEL_MAX);
    }
    return rc;
}

static void maybe_refresh(struct serve_meter *m, const struct serve_policy *p)
{
    int64_t now = ts_clock_ms(CLOCK_MONOTONIC);
    if (m->refreshed_at && now - m->refreshed_at < m->refresh_ms)
        return;
    struct ts_error e = {0};
    ts_status rc = p ? refresh(m, p, now, &e) : ts_err(&e, TS_INVALID, "no policy loaded");
    int first = m->refreshed_at == 0;
    m->refreshed_at = now;
    if (rc != TS_OK && (m->up || first))
        log_error(m, "metering refresh failed", &e);
    m->up = rc == TS_OK;
    if (rc == TS_OK)
        m->refreshes_ok++;
    else
        m->refreshes_failed++;
}

/* ---- the plan's allocation ---- */

struct alloc_row {
    const char *tenant, *model, *profile;
    double gpus;
    const char *display; /* the catalog's displayName, the model_name label */
};

static void alloc_add(struct alloc_row *rows, size_t *n, size_t cap, const struct alloc_row *r)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(rows[i].tenant, r->tenant) && !strcmp(rows[i].model, r->model) &&
            !strcmp(rows[i].profile, r->profile)) {
            rows[i].gpus += r->gpus;
            return;
        }
    if (*n < cap)
        rows[(*n)++] = *r;
}

static int cmp_alloc(const void *x, const void *y)
{
    const struct alloc_row *a = x, *b = y;
    int c = strcmp(a->tenant, b->tenant);
    c = c ? c : strcmp(a->model, b->model);
    return c ? c : strcmp(a->profile, b->profile);
}

static void write_allocation(const struct serve_policy *p, struct ts_sbuf *o)
{
    size_t cap = 0, n = 0;
    for (size_t i = 0; i < p->plan->ngpus; i++)
        cap += p->plan->gpus[i].ninst;
    struct alloc_row *rows = calloc(cap + 1, sizeof(*rows));
    for (size_t i = 0; rows && i < p->plan->ngpus; i++) {
        const struct plan_gpu *g = &p->plan->gpus[i];
        for (size_t j = 0; j < g->ninst; j++) {
            const struct plan_inst *in = &g->inst[j];
            if (!in->row || in->guest) /* the canary slice; best-effort guests */
                continue;
            struct alloc_row r = {in->row->tenant->name, g->model->name,
                                  in->profile             ? in->profile->name
                                  : g->mode == PLAN_WHOLE ? "whole"
                                                          : plan_mode_names[g->mode],
                                  (double)meter_plan_share(p->model, g, in) / TS_PPM,
                                  g->model->display};
            alloc_add(rows, &n, cap, &r);
        }
    }
    if (n)
        qsort(rows, n, sizeof(*rows), cmp_alloc);
    ts_sbuf_puts(o, "# HELP tessera_tenant_allocation_gpus Cards reserved per tenant by the "
                    "loaded plan (a MIG instance counts its share of the card).\n"
                    "# TYPE tessera_tenant_allocation_gpus gauge\n");
    for (size_t i = 0; i < n; i++) {
        put_row(o, "tessera_tenant_allocation_gpus", rows[i].tenant, rows[i].model,
                rows[i].profile);
        ts_sbuf_puts(o, ",model_name=");
        meter_relabel_put_label(o, rows[i].display);
        ts_sbuf_puts(o, "} ");
        meter_relabel_put_value(o, rows[i].gpus);
        ts_sbuf_puts(o, "\n");
    }
    free(rows);
}

/* The plan's card counts, as `tessera plan` prints them in its summary. */
static void write_plan_gpus(const struct plan_summary *s, struct ts_sbuf *o)
{
    ts_sbuf_printf(o,
                   "# HELP tessera_plan_gpus Cards of the loaded plan: used, in the fleet, one "
                   "per workload (naive), one per replica (dedicated), the lower bound.\n"
                   "# TYPE tessera_plan_gpus gauge\n"
                   "tessera_plan_gpus{kind=\"used\"} %d\n"
                   "tessera_plan_gpus{kind=\"fleet\"} %d\n"
                   "tessera_plan_gpus{kind=\"naive\"} %d\n"
                   "tessera_plan_gpus{kind=\"dedicated\"} %d\n"
                   "tessera_plan_gpus{kind=\"lower_bound\"} %d\n",
                   s->gpus_used, s->gpus_total, s->naive, s->dedicated, s->lower_bound);
}

/* ---- the page ---- */

void serve_meter_text(struct serve_meter *m, struct serve_state *s, struct ts_sbuf *o)
{
    struct serve_policy *p = serve_policy_get(s);
    if (p) {
        write_allocation(p, o);
        write_plan_gpus(&p->plan->summary, o);
    }
    if (m->url) {
        pthread_mutex_lock(&m->lock);
        maybe_refresh(m, p);
        ts_sbuf_printf(o,
                       "# HELP tessera_metering_up 1 when the last refresh from the "
                       "metering store worked.\n# TYPE tessera_metering_up gauge\n"
                       "tessera_metering_up %d\n",
                       m->up);
        ts_sbuf_printf(o,
                       "# HELP tessera_metering_refreshes_total Refreshes from the "
                       "metering store by result.\n"
                       "# TYPE tessera_metering_refreshes_total counter\n"
                       "tessera_metering_refreshes_total{result=\"ok\"} %lu\n"
                       "tessera_metering_refreshes_total{result=\"failed\"} %lu\n",
                       m->refreshes_ok, m->refreshes_failed);
        ts_sbuf_printf(o,
                       "# HELP tessera_metering_rejected_lines Malformed lines skipped in "
                       "the stored expositions at the last refresh.\n"
                       "# TYPE tessera_metering_rejected_lines gauge\n"
                       "tessera_metering_rejected_lines %ld\n",
                       m->rejected_lines);
        ts_sbuf_add(o, ts_sbuf_str(&m->text), m->text.len);
        ts_sbuf_add(o, ts_sbuf_str(&m->dcgm), m->dcgm.len);
        pthread_mutex_unlock(&m->lock);
    }
    serve_policy_put(p);
}
