/*
 * usage.c - integrating scrapes into GPU-hours (see usage.h).
 */
#include "meter/usage.h"
#include "util/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/units.h"

#define MS_PER_HOUR 3600000

void meter_usage_init(struct meter_usage *u, int64_t interval_ms)
{
    memset(u, 0, sizeof(*u));
    u->interval_ms = interval_ms;
    u->from_ms = INT64_MIN;
    u->to_ms = INT64_MAX;
}

void meter_usage_release(struct meter_usage *u)
{
    int64_t from = u->from_ms, to = u->to_ms;
    int close = u->close_by_device;
    free(u->totals);
    free(u->wtotals);
    free(u->pts);
    free(u->attrs);
    free(u->requests);
    free(u->tails);
    free(u->tail_attrs);
    meter_usage_init(u, u->interval_ms);
    u->from_ms = from;
    u->to_ms = to;
    u->close_by_device = close;
}

static struct meter_total *find_total(struct meter_total **arr, size_t *n, size_t *cap,
                                      const struct meter_point *p, const char *workload)
{
    for (size_t i = 0; i < *n; i++) {
        struct meter_total *t = &(*arr)[i];
        if (!strcmp(t->tenant, p->tenant) && !strcmp(t->model, p->model) &&
            !strcmp(t->profile, p->profile) && !strcmp(t->workload, workload))
            return t;
    }
    if (!ts_grow((void **)arr, cap, *n, sizeof(**arr)))
        return NULL;
    struct meter_total *t = &(*arr)[(*n)++];
    memset(t, 0, sizeof(*t));
    snprintf(t->tenant, sizeof(t->tenant), "%s", p->tenant);
    snprintf(t->model, sizeof(t->model), "%s", p->model);
    snprintf(t->profile, sizeof(t->profile), "%s", p->profile);
    snprintf(t->workload, sizeof(t->workload), "%s", workload);
    return t;
}

static void add_to(struct meter_total *t, const struct meter_point *p, int64_t dt)
{
    t->alloc_num += (__int128)dt * p->share_ppm;
    if (p->util_ppm < 0)
        t->unknown_num += (__int128)dt * p->share_ppm;
    else
        t->usage_num += (__int128)dt * p->share_ppm * p->util_ppm / TS_PPM;
}

/* Bill the interval from point p to now_ms to p's owner: the part of it
 * inside the window. */
static ts_status bill(struct meter_usage *u, const struct meter_point *p, int64_t now_ms)
{
    int64_t start = p->ts_ms, end = now_ms;
    if (end - start > 2 * u->interval_ms)
        end = start + 2 * u->interval_ms;
    start = start > u->from_ms ? start : u->from_ms;
    end = end < u->to_ms ? end : u->to_ms;
    if (end <= start)
        return TS_OK;
    struct meter_total *t = find_total(&u->totals, &u->ntotals, &u->cap, p, "");
    if (!t)
        return TS_NOMEM;
    add_to(t, p, end - start);
    if (!p->workload || !p->workload[0])
        return TS_OK;
    t = find_total(&u->wtotals, &u->nwtotals, &u->wcap, p, p->workload);
    if (!t)
        return TS_NOMEM;
    add_to(t, p, end - start);
    return TS_OK;
}

static void remember(struct meter_usage *u, const struct meter_point *p)
{
    u->prev = *p;
    snprintf(u->prev_tenant, sizeof(u->prev_tenant), "%s", p->tenant);
    snprintf(u->prev_model, sizeof(u->prev_model), "%s", p->model);
    snprintf(u->prev_profile, sizeof(u->prev_profile), "%s", p->profile);
    snprintf(u->prev_workload, sizeof(u->prev_workload), "%s", p->workload ? p->workload : "");
    u->prev.tenant = u->prev_tenant;
    u->prev.workload = u->prev_workload;
    u->prev.model = u->prev_model;
    u->prev.profile = u->prev_profile;
    u->have_prev = 1;
}

/* ---- a device's keys integrated together (close_by_device) ---- */

static size_t family_len(const char *key) { return strcspn(key, "#"); }

static int cmp_fpoint(const void *x, const void *y)
{
    const struct meter_fpoint *a = x, *b = y;
    return (a->ts_ms > b->ts_ms) - (a->ts_ms < b->ts_ms);
}

static struct meter_point point_at(const struct meter_usage *u, const struct meter_fpoint *f)
{
    const struct meter_attr *a = &u->attrs[f->attr];
    return (struct meter_point){u->family,  f->ts_ms,     a->tenant,   a->model,
                                a->profile, f->share_ppm, f->util_ppm, a->workload};
}

/* Keep f (a point of the family's last time) as a tail when the window
 * is bounded and its capped interval could reach into it. */
static ts_status keep_tail(struct meter_usage *u, const struct meter_fpoint *f)
{
    if (u->to_ms == INT64_MAX || f->ts_ms >= u->to_ms ||
        f->ts_ms + 2 * u->interval_ms <= u->from_ms)
        return TS_OK;
    if (!ts_grow((void **)&u->tails, &u->tails_cap, u->ntails, sizeof(*u->tails)) ||
        !ts_grow((void **)&u->tail_attrs, &u->tail_attrs_cap, u->ntail_attrs,
                 sizeof(*u->tail_attrs)))
        return TS_NOMEM;
    struct meter_tail *t = &u->tails[u->ntails++];
    snprintf(t->family, sizeof(t->family), "%s", u->family);
    t->split = u->split_family;
    t->p = *f;
    t->p.attr = u->ntail_attrs;
    u->tail_attrs[u->ntail_attrs++] = u->attrs[f->attr];
    return TS_OK;
}

/* Bill each gathered point up to the device's next scrape time after it
 * (bill caps it); the points of the last time are kept as tails. */
static ts_status close_family(struct meter_usage *u)
{
    ts_status st = TS_OK;
    if (u->npts)
        qsort(u->pts, u->npts, sizeof(*u->pts), cmp_fpoint);
    size_t next = 0;
    for (size_t i = 0; st == TS_OK && i < u->npts; i++) {
        while (next < u->npts && u->pts[next].ts_ms <= u->pts[i].ts_ms)
            next++;
        if (next == u->npts) {
            st = keep_tail(u, &u->pts[i]);
            continue;
        }
        struct meter_point p = point_at(u, &u->pts[i]);
        st = bill(u, &p, u->pts[next].ts_ms);
    }
    u->npts = u->nattrs = 0;
    u->split_family = 0;
    return st;
}

ts_status meter_usage_bill_tail(struct meter_usage *u, size_t i)
{
    const struct meter_tail *t = &u->tails[i];
    const struct meter_attr *a = &u->tail_attrs[t->p.attr];
    struct meter_point p = {t->family,  t->p.ts_ms,     a->tenant,     a->model,
                            a->profile, t->p.share_ppm, t->p.util_ppm, a->workload};
    return bill(u, &p, t->p.ts_ms + 2 * u->interval_ms); /* the cap */
}

static int same_attr(const struct meter_attr *a, const struct meter_point *p)
{
    return !strcmp(a->tenant, p->tenant) && !strcmp(a->model, p->model) &&
           !strcmp(a->profile, p->profile) && !strcmp(a->workload, p->workload ? p->workload : "");
}

/* The index of p's attributes in u->attrs, added when new; -1 out of memory. */
static long attr_of(struct meter_usage *u, const struct meter_point *p)
{
    for (size_t i = u->nattrs; i-- > 0;) /* the newest first: usually the one */
        if (same_attr(&u->attrs[i], p))
            return (long)i;
    if (!ts_grow((void **)&u->attrs, &u->attrs_cap, u->nattrs, sizeof(*u->attrs)))
        return -1;
    struct meter_attr *a = &u->attrs[u->nattrs];
    snprintf(a->tenant, sizeof(a->tenant), "%s", p->tenant);
    snprintf(a->model, sizeof(a->model), "%s", p->model);
    snprintf(a->profile, sizeof(a->profile), "%s", p->profile);
    snprintf(a->workload, sizeof(a->workload), "%s", p->workload ? p->workload : "");
    return (long)u->nattrs++;
}

static ts_status gather(struct meter_usage *u, const struct meter_point *p)
{
    long attr = attr_of(u, p);
    if (attr < 0 || !ts_grow((void **)&u->pts, &u->pts_cap, u->npts, sizeof(*u->pts)))
        return TS_NOMEM;
    u->pts[u->npts++] = (struct meter_fpoint){p->ts_ms, p->share_ppm, p->util_ppm, (size_t)attr};
    return TS_OK;
}

/* A point of a new key: a new device bills the previous device's points. */
static ts_status next_key(struct meter_usage *u, const char *key)
{
    size_t n = family_len(key);
    if (strlen(u->family) == n && strncmp(u->family, key, n) == 0)
        return TS_OK;
    ts_status st = close_family(u);
    snprintf(u->family, sizeof(u->family), "%.*s", (int)n, key);
    return st;
}

/* close_by_device: gather p once its key's order is checked. */
static ts_status add_gathered(struct meter_usage *u, const struct meter_point *p)
{
    if (u->have_prev && strcmp(u->device, p->device) == 0) {
        if (p->ts_ms < u->prev.ts_ms) {
            u->out_of_order++;
            return TS_INVALID;
        }
        if (p->ts_ms == u->prev.ts_ms)
            return TS_OK; /* a re-sent scrape counts once */
    } else {
        ts_status st = next_key(u, p->device);
        if (st != TS_OK)
            return st;
        snprintf(u->device, sizeof(u->device), "%s", p->device);
    }
    u->split_family |= p->device[family_len(p->device)] == '#';
    u->prev.ts_ms = p->ts_ms;
    u->have_prev = 1;
    return gather(u, p);
}

ts_status meter_usage_add(struct meter_usage *u, const struct meter_point *p)
{
    if (u->close_by_device)
        return add_gathered(u, p);
    if (!u->have_prev || strcmp(u->device, p->device) != 0) {
        snprintf(u->device, sizeof(u->device), "%s", p->device);
        remember(u, p);
        return TS_OK;
    }
    if (p->ts_ms < u->prev.ts_ms) {
        u->out_of_order++;
        return TS_INVALID;
    }
    if (p->ts_ms == u->prev.ts_ms)
        return TS_OK; /* a re-sent scrape counts once */
    ts_status st = bill(u, &u->prev, p->ts_ms);
    remember(u, p);
    return st;
}

ts_status meter_usage_finish(struct meter_usage *u)
{
    if (!u->close_by_device)
        return TS_OK;
    u->have_prev = 0;
    ts_status st = close_family(u); /* its tails name the family */
    u->device[0] = u->family[0] = 0;
    return st;
}

static int cmp_total(const void *x, const void *y)
{
    const struct meter_total *a = x, *b = y;
    int c = strcmp(a->tenant, b->tenant);
    c = c ? c : strcmp(a->model, b->model);
    return c ? c : strcmp(a->profile, b->profile);
}

void meter_usage_sort(struct meter_usage *u)
{
    if (u->ntotals) /* qsort wants a non-NULL base even for zero items */
        qsort(u->totals, u->ntotals, sizeof(*u->totals), cmp_total);
}

static int64_t to_uh(__int128 num) { return (int64_t)((num + MS_PER_HOUR / 2) / MS_PER_HOUR); }

int64_t meter_alloc_uh(const struct meter_total *t) { return to_uh(t->alloc_num); }

int64_t meter_usage_uh(const struct meter_total *t) { return to_uh(t->usage_num); }

int64_t meter_unknown_uh(const struct meter_total *t) { return to_uh(t->unknown_num); }
