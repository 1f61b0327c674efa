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
    free(u->times);
    free(u->open);
    meter_usage_init(u, u->interval_ms);
    u->from_ms = from;
    u->to_ms = to;
    u->close_by_device = close;
}

static struct meter_total *total_for(struct meter_usage *u, const char *tenant, const char *model,
                                     const char *profile)
{
    for (size_t i = 0; i < u->ntotals; i++) {
        struct meter_total *t = &u->totals[i];
        if (!strcmp(t->tenant, tenant) && !strcmp(t->model, model) && !strcmp(t->profile, profile))
            return t;
    }
    if (!ts_grow((void **)&u->totals, &u->cap, u->ntotals, sizeof(*u->totals)))
        return NULL;
    struct meter_total *t = &u->totals[u->ntotals++];
    memset(t, 0, sizeof(*t));
    snprintf(t->tenant, sizeof(t->tenant), "%s", tenant);
    snprintf(t->model, sizeof(t->model), "%s", model);
    snprintf(t->profile, sizeof(t->profile), "%s", profile);
    return t;
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
    int64_t dt = end - start;
    struct meter_total *t = total_for(u, p->tenant, p->model, p->profile);
    if (!t)
        return TS_NOMEM;
    t->alloc_num += (__int128)dt * p->share_ppm;
    if (p->util_ppm < 0)
        t->unknown_num += (__int128)dt * p->share_ppm;
    else
        t->usage_num += (__int128)dt * p->share_ppm * p->util_ppm / TS_PPM;
    return TS_OK;
}

static void remember(struct meter_usage *u, const struct meter_point *p)
{
    u->prev = *p;
    snprintf(u->prev_tenant, sizeof(u->prev_tenant), "%s", p->tenant);
    snprintf(u->prev_model, sizeof(u->prev_model), "%s", p->model);
    snprintf(u->prev_profile, sizeof(u->prev_profile), "%s", p->profile);
    u->prev.tenant = u->prev_tenant;
    u->prev.model = u->prev_model;
    u->prev.profile = u->prev_profile;
    u->have_prev = 1;
}

/* ---- closing a key by its device's next scrape (close_by_device) ---- */

static size_t family_len(const char *key) { return strcspn(key, "#"); }

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* The first of the device's scrape times (sorted) after ts, or INT64_MIN. */
static int64_t next_time(const struct meter_usage *u, int64_t ts)
{
    size_t lo = 0, hi = u->ntimes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (u->times[mid] <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < u->ntimes ? u->times[lo] : INT64_MIN;
}

/* Bill each key's last point to the device's next scrape after it. */
static ts_status close_family(struct meter_usage *u)
{
    ts_status st = TS_OK;
    if (u->nopen && u->ntimes)
        qsort(u->times, u->ntimes, sizeof(*u->times), cmp_i64);
    for (size_t i = 0; st == TS_OK && i < u->nopen; i++) {
        struct meter_open *o = &u->open[i];
        o->p.tenant = o->tenant;
        o->p.model = o->model;
        o->p.profile = o->profile;
        int64_t next = next_time(u, o->p.ts_ms);
        st = next == INT64_MIN ? TS_OK : bill(u, &o->p, next);
    }
    u->nopen = u->ntimes = 0;
    return st;
}

static ts_status keep_open(struct meter_usage *u)
{
    if (!ts_grow((void **)&u->open, &u->open_cap, u->nopen, sizeof(*u->open)))
        return TS_NOMEM;
    struct meter_open *o = &u->open[u->nopen++];
    o->p = u->prev;
    snprintf(o->tenant, sizeof(o->tenant), "%s", u->prev_tenant);
    snprintf(o->model, sizeof(o->model), "%s", u->prev_model);
    snprintf(o->profile, sizeof(o->profile), "%s", u->prev_profile);
    return TS_OK;
}

/* A new key begins: keep the last one's final point; a new device closes
 * the previous device's keys. */
static ts_status next_key(struct meter_usage *u, const char *key)
{
    ts_status st = u->have_prev ? keep_open(u) : TS_OK;
    size_t n = family_len(key);
    if (st == TS_OK && (strlen(u->family) != n || strncmp(u->family, key, n) != 0)) {
        st = close_family(u);
        snprintf(u->family, sizeof(u->family), "%.*s", (int)n, key);
    }
    return st;
}

static ts_status note_time(struct meter_usage *u, int64_t ts_ms)
{
    if (!u->close_by_device)
        return TS_OK;
    if (!ts_grow((void **)&u->times, &u->times_cap, u->ntimes, sizeof(*u->times)))
        return TS_NOMEM;
    u->times[u->ntimes++] = ts_ms;
    return TS_OK;
}

ts_status meter_usage_add(struct meter_usage *u, const struct meter_point *p)
{
    if (!u->have_prev || strcmp(u->device, p->device) != 0) {
        ts_status st = u->close_by_device ? next_key(u, p->device) : TS_OK;
        snprintf(u->device, sizeof(u->device), "%s", p->device);
        remember(u, p);
        return st == TS_OK ? note_time(u, p->ts_ms) : st;
    }
    if (p->ts_ms < u->prev.ts_ms) {
        u->out_of_order++;
        return TS_INVALID;
    }
    if (p->ts_ms == u->prev.ts_ms)
        return TS_OK; /* a re-sent scrape counts once */
    ts_status st = bill(u, &u->prev, p->ts_ms);
    remember(u, p);
    return st == TS_OK ? note_time(u, p->ts_ms) : st;
}

ts_status meter_usage_finish(struct meter_usage *u)
{
    if (!u->close_by_device)
        return TS_OK;
    ts_status st = u->have_prev ? keep_open(u) : TS_OK;
    u->have_prev = 0;
    return st == TS_OK ? close_family(u) : st;
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
