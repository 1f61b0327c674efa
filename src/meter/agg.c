/*
 * agg.c - the usage aggregate over the store's tables (see agg.h): a
 * window's totals and wtotals in their order, numerators as decimal text,
 * with the tails it left unbilled.
 */
#include "meter/agg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "meter/usage_report.h"
#include "util/grow.h"

/* Decimal text of n into buf (at least 42 bytes). */
static const char *i128_text(__int128 n, char *buf, size_t size)
{
    char tmp[48];
    size_t k = 0;
    unsigned __int128 v = n < 0 ? -(unsigned __int128)n : (unsigned __int128)n;
    do {
        tmp[k++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v && k < sizeof(tmp));
    size_t o = 0;
    if (n < 0 && o + 1 < size)
        buf[o++] = '-';
    while (k && o + 1 < size)
        buf[o++] = tmp[--k];
    buf[o] = 0;
    return buf;
}

/* The number in s; 0 when s is not one (the aggregate writes only numbers). */
static __int128 i128_parse(const char *s, int *bad)
{
    int neg = *s == '-';
    unsigned __int128 v = 0;
    s += neg;
    *bad |= !*s;
    for (; *s; s++) {
        *bad |= *s < '0' || *s > '9';
        v = v * 10 + (unsigned)(*s - '0');
    }
    return neg ? -(__int128)v : (__int128)v;
}

struct loader {
    struct meter_usage *u;
    int nomem, bad;
};

static int load_total(void *ctx, const struct store_agg_total *r)
{
    struct loader *l = ctx;
    struct meter_usage *u = l->u;
    int w = r->kind == 1;
    struct meter_total **arr = w ? &u->wtotals : &u->totals;
    size_t *n = w ? &u->nwtotals : &u->ntotals, *cap = w ? &u->wcap : &u->cap;
    if (!ts_grow((void **)arr, cap, *n, sizeof(**arr)))
        return l->nomem = 1;
    struct meter_total *t = &(*arr)[(*n)++];
    memset(t, 0, sizeof(*t));
    snprintf(t->tenant, sizeof(t->tenant), "%s", r->tenant);
    snprintf(t->workload, sizeof(t->workload), "%s", r->workload);
    snprintf(t->model, sizeof(t->model), "%s", r->model);
    snprintf(t->profile, sizeof(t->profile), "%s", r->profile);
    t->alloc_num = i128_parse(r->alloc, &l->bad);
    t->usage_num = i128_parse(r->usage, &l->bad);
    t->unknown_num = i128_parse(r->unknown, &l->bad);
    l->bad |= r->kind != 0 && r->kind != 1;
    return 0;
}

static int load_tail(void *ctx, const struct store_agg_tail *r)
{
    struct loader *l = ctx;
    struct meter_usage *u = l->u;
    if (!ts_grow((void **)&u->tails, &u->tails_cap, u->ntails, sizeof(*u->tails)))
        return l->nomem = 1;
    struct meter_tail *t = &u->tails[u->ntails++];
    memset(t, 0, sizeof(*t));
    snprintf(t->family, sizeof(t->family), "%s", r->family);
    t->split = r->split != 0;
    t->p.ts_ms = r->ts_ms;
    return 0;
}

static ts_status load(struct store *st, int64_t token, struct meter_usage *u, struct ts_error *err)
{
    struct loader l = {u, 0, 0};
    ts_status rc = store_agg_scan(st, token, load_total, load_tail, &l, err);
    if (rc == TS_OK && l.nomem)
        return ts_err(err, TS_NOMEM, "usage aggregate: out of memory");
    if (rc == TS_OK && l.bad)
        return ts_err(err, TS_INVALID, "usage aggregate: window %lld holds a malformed total",
                      (long long)token);
    return rc;
}

/* *fresh 0 when a tail of u now has a later scrape (the window is stale).
 * When no sample is newer than the earliest tail (the month still open)
 * none can have one: one look-up for all. */
static ts_status tails_fresh(struct store *st, const struct meter_usage *u, int *fresh,
                             struct ts_error *err)
{
    int64_t first = INT64_MAX, newest = 0;
    int any = 0;
    *fresh = 1;
    for (size_t i = 0; i < u->ntails; i++)
        first = u->tails[i].p.ts_ms < first ? u->tails[i].p.ts_ms : first;
    ts_status rc = u->ntails > 1 ? store_last_sample(st, &newest, &any, err) : TS_OK;
    if (rc != TS_OK || (u->ntails > 1 && (!any || newest <= first)))
        return rc;
    for (size_t i = 0; i < u->ntails && *fresh; i++) {
        const struct meter_tail *t = &u->tails[i], *prev = i ? t - 1 : NULL;
        int found = 0;
        if (prev && !strcmp(prev->family, t->family) && prev->p.ts_ms == t->p.ts_ms)
            continue;
        rc = store_device_scraped_after(st, t->family, t->split, t->p.ts_ms, &found, err);
        if (rc != TS_OK)
            return rc;
        *fresh = !found;
    }
    return TS_OK;
}

/* The window from the aggregate: *hit 0 when it has none, or a stale one. */
static ts_status from_aggregate(struct store *st, struct meter_usage *u, int *hit,
                                struct ts_error *err)
{
    int64_t token = 0;
    int fresh = 0;
    *hit = 0;
    ts_status rc = store_agg_find(st, u->interval_ms, u->from_ms, u->to_ms, &token, err);
    if (rc != TS_OK || !token)
        return rc;
    rc = load(st, token, u, err);
    if (rc == TS_OK)
        rc = tails_fresh(st, u, &fresh, err);
    if (rc == TS_OK && fresh)
        rc = meter_usage_scan_requests(st, u->from_ms, u->to_ms, u, err);
    if (rc == TS_OK && fresh) {
        meter_usage_sort(u); /* stored sorted: keeps their order */
        *hit = 1;
        return TS_OK;
    }
    meter_usage_release(u);
    return rc;
}

/* u's totals and unbilled tails as the store's rows (text in bufs). */
struct rows {
    struct store_agg_total *t;
    struct store_agg_tail *tails;
    char (*num)[3][48];
};

static void total_row(struct store_agg_total *r, char num[3][48], const struct meter_total *t,
                      int kind)
{
    *r = (struct store_agg_total){kind,
                                  t->tenant,
                                  t->workload,
                                  t->model,
                                  t->profile,
                                  i128_text(t->alloc_num, num[0], 48),
                                  i128_text(t->usage_num, num[1], 48),
                                  i128_text(t->unknown_num, num[2], 48)};
}

static ts_status keep(struct store *st, int64_t claim, const struct meter_usage *u,
                      struct ts_error *err)
{
    size_t nt = u->ntotals + u->nwtotals;
    struct rows r = {calloc(nt + 1, sizeof(*r.t)), calloc(u->ntails + 1, sizeof(*r.tails)),
                     calloc(nt + 1, sizeof(*r.num))};
    ts_status rc = TS_OK;
    int kept = 0;
    if (!r.t || !r.tails || !r.num)
        rc = ts_err(err, TS_NOMEM, "usage aggregate: out of memory");
    for (size_t i = 0; rc == TS_OK && i < nt; i++)
        total_row(&r.t[i], r.num[i], i < u->ntotals ? &u->totals[i] : &u->wtotals[i - u->ntotals],
                  i >= u->ntotals);
    for (size_t i = 0; rc == TS_OK && i < u->ntails; i++)
        r.tails[i] = (struct store_agg_tail){u->tails[i].family, u->tails[i].split,
                                             u->tails[i].p.ts_ms};
    if (rc == TS_OK)
        rc = store_agg_put(st, claim, r.t, nt, r.tails, u->ntails, &kept, err);
    free(r.t);
    free(r.tails);
    free(r.num);
    return rc;
}

ts_status meter_agg_scan(struct store *st, int64_t from_ms, int64_t to_ms, struct meter_usage *u,
                         int *cached, struct ts_error *err)
{
    int hit = 0;
    int64_t claim = 0;
    u->from_ms = from_ms;
    u->to_ms = to_ms;
    u->close_by_device = 1;
    ts_status rc = from_aggregate(st, u, &hit, err);
    if (cached)
        *cached = hit;
    if (rc != TS_OK || hit)
        return rc;
    /* a store this role cannot write (a read-only PostgreSQL role): the
     * month integrated from the samples as before, not kept */
    if (store_agg_claim(st, u->interval_ms, from_ms, to_ms, &claim, err) != TS_OK)
        claim = 0;
    rc = meter_usage_scan(st, from_ms, to_ms, u, err);
    return rc == TS_OK && claim ? keep(st, claim, u, err) : rc;
}

/* "" when a and b (i-th of what) agree, else what differs into diff. */
static int differ(const struct meter_total *a, const struct meter_total *b, const char *what,
                  size_t i, char *diff, size_t size)
{
    char x[3][48], y[3][48];
    if (!strcmp(a->tenant, b->tenant) && !strcmp(a->workload, b->workload) &&
        !strcmp(a->model, b->model) && !strcmp(a->profile, b->profile) &&
        a->alloc_num == b->alloc_num && a->usage_num == b->usage_num &&
        a->unknown_num == b->unknown_num)
        return 0;
    snprintf(diff, size,
             "%s %zu: aggregate %s/%s/%s/%s %s %s %s ms x ppm, samples %s/%s/%s/%s %s %s %s", what,
             i, a->tenant, a->workload, a->model, a->profile, i128_text(a->alloc_num, x[0], 48),
             i128_text(a->usage_num, x[1], 48), i128_text(a->unknown_num, x[2], 48), b->tenant,
             b->workload, b->model, b->profile, i128_text(b->alloc_num, y[0], 48),
             i128_text(b->usage_num, y[1], 48), i128_text(b->unknown_num, y[2], 48));
    return 1;
}

static int compare(const struct meter_total *a, size_t na, const struct meter_total *b, size_t nb,
                   const char *what, char *diff, size_t size)
{
    for (size_t i = 0; i < na && i < nb; i++)
        if (differ(&a[i], &b[i], what, i, diff, size))
            return 1;
    if (na == nb)
        return 0;
    snprintf(diff, size, "%s: %zu in the aggregate, %zu from the samples", what, na, nb);
    return 1;
}

ts_status meter_agg_verify(struct store *st, int64_t from_ms, int64_t to_ms, int64_t interval_ms,
                           int *held, int *same, char *diff, size_t diff_size, struct ts_error *err)
{
    struct meter_usage a, b;
    int64_t token = 0;
    int fresh = 0;
    meter_usage_init(&a, interval_ms);
    meter_usage_init(&b, interval_ms);
    *held = 0;
    *same = 1;
    diff[0] = 0;
    ts_status rc = store_agg_find(st, interval_ms, from_ms, to_ms, &token, err);
    if (rc == TS_OK && token)
        rc = load(st, token, &a, err);
    if (rc == TS_OK && token)
        rc = tails_fresh(st, &a, &fresh, err);
    if (rc == TS_OK && token && fresh)
        rc = meter_usage_scan(st, from_ms, to_ms, &b, err);
    if (rc == TS_OK && token && fresh) {
        *held = 1;
        *same = !compare(a.totals, a.ntotals, b.totals, b.ntotals, "total", diff, diff_size) &&
                !compare(a.wtotals, a.nwtotals, b.wtotals, b.nwtotals, "workload total", diff,
                         diff_size);
    }
    meter_usage_release(&a);
    meter_usage_release(&b);
    return rc;
}
