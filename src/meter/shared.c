/*
 * shared.c - splitting a shared workload's hours among its consumers (see
 * shared.h).
 */
#include "meter/shared.h"

#include <string.h>

/* The weight tenant t gives owner/workload, 0 when it does not use it. */
static int64_t use_weight(const struct spec_tenant *t, const char *owner, const char *workload,
                          int by_weight)
{
    for (size_t i = 0; i < t->nuses; i++)
        if (!strcmp(t->uses[i].tenant, owner) && !strcmp(t->uses[i].workload, workload))
            return by_weight && t->uses[i].weight > 0 ? t->uses[i].weight : 1;
    return 0;
}

/* The requests tenant t made to owner/workload in u's window (usage). */
static int64_t use_requests(const struct meter_usage *u, const struct spec_tenant *t,
                            const char *owner, const char *workload)
{
    for (size_t i = 0; i < u->nrequests; i++) {
        const struct meter_requests *q = &u->requests[i];
        if (!strcmp(q->owner, owner) && !strcmp(q->workload, workload) &&
            !strcmp(q->consumer, t->name))
            return q->count;
    }
    return 0;
}

/* Each tenant's weight for the workload of t into w (by its requests under
 * sharedSplit usage, when any consumer made some); the consumers' count,
 * *by_weight set when usage fell back to the uses' weights. */
static size_t weights(const struct meter_usage *u, const struct meter_total *t,
                      const struct spec_model *m, int64_t *w, int *by_weight)
{
    int split = m->pricebook->shared_split;
    size_t k = 0;
    int64_t asked = 0;
    for (size_t i = 0; i < m->ntenants; i++) {
        w[i] = use_weight(&m->tenants[i], t->tenant, t->workload, split != SPEC_SPLIT_EQUAL);
        k += w[i] > 0;
        if (split == SPEC_SPLIT_USAGE && w[i] > 0)
            asked += use_requests(u, &m->tenants[i], t->tenant, t->workload);
    }
    *by_weight = split == SPEC_SPLIT_USAGE && k && asked <= 0;
    for (size_t i = 0; split == SPEC_SPLIT_USAGE && asked > 0 && i < m->ntenants; i++)
        w[i] = w[i] > 0 ? use_requests(u, &m->tenants[i], t->tenant, t->workload) : 0;
    return k;
}

/* part[i] = x * w[i] / sum(w), floored; what is left goes one each to the
 * largest remainders, ties to the lower index (rem: n scratch values). */
static void divide(int64_t x, const int64_t *w, size_t n, int64_t *part, __int128 *rem)
{
    __int128 sum = 0, left = x;
    for (size_t i = 0; i < n; i++)
        sum += w[i];
    for (size_t i = 0; i < n; i++) {
        part[i] = (int64_t)((__int128)x * w[i] / sum);
        rem[i] = w[i] ? (__int128)x * w[i] % sum : -1;
        left -= part[i];
    }
    for (; left > 0; left--) { /* fewer than the consumers: each gets one at most */
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            best = rem[i] > rem[best] ? i : best;
        part[best]++;
        rem[best] = -1;
    }
}

static struct meter_shared_part *grow(struct ts_arena *a, struct meter_shared_part **out, size_t *n,
                                      size_t *cap)
{
    if (*n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 16;
        struct meter_shared_part *p = ts_arena_array(a, ncap, sizeof(*p));
        if (!p)
            return NULL;
        if (*n)
            memcpy(p, *out, *n * sizeof(*p));
        *out = p;
        *cap = ncap;
    }
    return &(*out)[(*n)++];
}

/* The parts of one workload total t: its consumers', then the owner's. */
static ts_status split_one(const struct meter_usage *u, const struct meter_total *t,
                           const struct spec_model *m, struct ts_arena *a,
                           struct meter_shared_part **out, size_t *n, size_t *cap)
{
    int by_weight = 0;
    int64_t *w = ts_arena_array(a, m->ntenants + 1, sizeof(*w));
    int64_t *alloc = ts_arena_array(a, m->ntenants + 1, sizeof(*alloc));
    int64_t *used = ts_arena_array(a, m->ntenants + 1, sizeof(*used));
    __int128 *rem = ts_arena_array(a, m->ntenants + 1, sizeof(*rem));
    if (!w || !alloc || !used || !rem)
        return TS_NOMEM;
    if (!weights(u, t, m, w, &by_weight))
        return TS_OK;
    divide(meter_alloc_uh(t), w, m->ntenants, alloc, rem);
    divide(meter_usage_uh(t), w, m->ntenants, used, rem);
    for (size_t i = 0; i <= m->ntenants; i++) {
        if (i < m->ntenants && !use_weight(&m->tenants[i], t->tenant, t->workload, 0))
            continue; /* a consumer with no requests still gets its (0) line */
        struct meter_shared_part *p = grow(a, out, n, cap);
        if (!p)
            return TS_NOMEM;
        int owner = i == m->ntenants;
        *p = (struct meter_shared_part){owner ? t->tenant : m->tenants[i].name,
                                        t->tenant,
                                        t->workload,
                                        t->model,
                                        t->profile,
                                        owner ? -meter_alloc_uh(t) : alloc[i],
                                        owner ? -meter_usage_uh(t) : used[i],
                                        owner,
                                        by_weight};
    }
    return TS_OK;
}

ts_status meter_shared_split(const struct meter_usage *u, const struct spec_model *m,
                             struct ts_arena *arena, struct meter_shared_part **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    if (!m->pricebook || m->pricebook->shared_split == SPEC_SPLIT_NONE)
        return TS_OK;
    ts_status st = TS_OK;
    for (size_t i = 0; st == TS_OK && i < u->nwtotals; i++)
        st = split_one(u, &u->wtotals[i], m, arena, out, n, &cap);
    return st;
}
