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
    free(u->totals);
    meter_usage_init(u, u->interval_ms);
    u->from_ms = from;
    u->to_ms = to;
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

/* Bill the interval since the previous point to the previous point's
 * owner: the part of it inside the window. */
static ts_status bill(struct meter_usage *u, int64_t now_ms)
{
    int64_t start = u->prev.ts_ms, end = now_ms;
    if (end - start > 2 * u->interval_ms)
        end = start + 2 * u->interval_ms;
    start = start > u->from_ms ? start : u->from_ms;
    end = end < u->to_ms ? end : u->to_ms;
    if (end <= start)
        return TS_OK;
    int64_t dt = end - start;
    struct meter_total *t = total_for(u, u->prev_tenant, u->prev_model, u->prev_profile);
    if (!t)
        return TS_NOMEM;
    t->alloc_num += (__int128)dt * u->prev.share_ppm;
    if (u->prev.util_ppm < 0)
        t->unknown_num += (__int128)dt * u->prev.share_ppm;
    else
        t->usage_num += (__int128)dt * u->prev.share_ppm * u->prev.util_ppm / TS_PPM;
    return TS_OK;
}

static void remember(struct meter_usage *u, const struct meter_point *p)
{
    u->prev = *p;
    snprintf(u->prev_tenant, sizeof(u->prev_tenant), "%s", p->tenant);
    snprintf(u->prev_model, sizeof(u->prev_model), "%s", p->model);
    snprintf(u->prev_profile, sizeof(u->prev_profile), "%s", p->profile);
    u->have_prev = 1;
}

ts_status meter_usage_add(struct meter_usage *u, const struct meter_point *p)
{
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
    ts_status st = bill(u, p->ts_ms);
    remember(u, p);
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
