/*
 * poolidx.c - the pool phase's index: each card's node range, reserved
 * memory and MPS shares; the first free card of each model; each row's
 * sharing group (plan__same_group's classes, found by hashing) and named
 * pool; the cards each group opened; the trust between tenants, asked once
 * per pair. pools.c keeps the placement rules; this file only answers, in
 * about constant time, what those rules used to scan the fleet for.
 */
#include "plan/internal.h"

#include <stdint.h>
#include <string.h>

int plan__in_pool(const struct decide_row *r)
{
    return !r->profile && decide_mech_shares_card(r->mech);
}

int plan__card_holds_row(const struct plan_gpu *g, const struct decide_row *r)
{
    for (size_t k = 0; k < g->ninst; k++)
        if (g->inst[k].row == r)
            return 1;
    return 0;
}

/* ---- an open-addressing table of ids, keyed by hash and an equality ---- */

struct table {
    int *slot; /* id + 1; 0 empty */
    size_t mask;
};

static int table_init(struct ts_arena *a, struct table *t, size_t n)
{
    size_t size = 16;
    while (size < 2 * n + 2)
        size *= 2;
    t->mask = size - 1;
    t->slot = ts_arena_array(a, size, sizeof(*t->slot));
    return t->slot != NULL;
}

typedef int (*same_fn)(const struct plan_pidx *x, int id, const struct decide_row *r);

/* The id equal to r's key, or the new id `fresh` (stored) when none is. */
static int table_find(const struct plan_pidx *x, struct table *t, uint64_t h,
                      const struct decide_row *r, same_fn same, int fresh)
{
    for (size_t i = (size_t)h & t->mask;; i = (i + 1) & t->mask) {
        if (!t->slot[i]) {
            t->slot[i] = fresh + 1;
            return fresh;
        }
        if (same(x, t->slot[i] - 1, r))
            return t->slot[i] - 1;
    }
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

/* ---- named pools ---- */

static int same_pool(const struct plan_pidx *x, int id, const struct decide_row *r)
{
    return strcmp(x->pool_rows[id]->workload->pool, r->workload->pool) == 0;
}

static int assign_pools(struct plan_pidx *x, struct table *t)
{
    const struct decide_result *d = x->b->d;
    int n = 0;
    x->pool_rows = ts_arena_array(&x->arena, d->nrows + 1, sizeof(*x->pool_rows));
    if (!x->pool_rows)
        return 0;
    for (size_t i = 0; i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        x->pool[i] = -1;
        if (!r->workload->pool)
            continue;
        x->pool_rows[n] = r;
        x->pool[i] = table_find(x, t, hash_text(r->workload->pool), r, same_pool, n);
        n += x->pool[i] == n;
    }
    x->pool_card = ts_arena_array(&x->arena, (size_t)n + 1, sizeof(*x->pool_card));
    for (int k = 0; x->pool_card && k < n; k++)
        x->pool_card[k] = SIZE_MAX;
    return x->pool_card != NULL;
}

/* ---- sharing groups: same mechanism and model, same named pool, or (MPS)
 * the same tenant; plan__same_group(a, r) is "a is a member and in r's" ---- */

static int same_group_key(const struct plan_pidx *x, int id, const struct decide_row *r)
{
    const struct decide_row *a = x->groups[id].key;
    const struct decide_row *rows = x->b->d->rows;
    int pa = x->pool[a - rows], pr = x->pool[r - rows];
    return a->mech == r->mech && a->model == r->model && pa == pr &&
           (pr >= 0 || r->mech != DECIDE_MPS || a->tenant == r->tenant);
}

static uint64_t group_hash(const struct plan_pidx *x, const struct decide_row *r)
{
    int pool = x->pool[r - x->b->d->rows];
    uint64_t h = mix(mix((uint64_t)r->mech, (uintptr_t)r->model), (uint64_t)(pool + 1));
    return pool < 0 && r->mech == DECIDE_MPS ? mix(h, (uintptr_t)r->tenant) : h;
}

static int assign_groups(struct plan_pidx *x, struct table *t)
{
    const struct decide_result *d = x->b->d;
    x->groups = ts_arena_array(&x->arena, d->nrows + 1, sizeof(*x->groups));
    if (!x->groups)
        return 0;
    for (size_t i = 0; i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        x->group[i] = -1;
        if (!plan__in_pool(r))
            continue;
        int fresh = (int)x->ngroups;
        x->groups[fresh] = (struct plan__group){r, -1, 0, {NULL, 0, 0}};
        x->group[i] = table_find(x, t, group_hash(x, r), r, same_group_key, fresh);
        x->ngroups += x->group[i] == fresh;
    }
    return 1;
}

static int member(const struct plan_pidx *x, const struct decide_row *r)
{
    return r && x->group[r - x->b->d->rows] >= 0 && !plan__is_guest(r);
}

int plan__pidx_group_cards(const struct plan_pidx *x, const struct decide_row *r)
{
    return x->groups[x->group[r - x->b->d->rows]].ncards;
}

int plan__pidx_group_bound(struct plan_pidx *x, const struct decide_row *r)
{
    struct plan__group *g = &x->groups[x->group[r - x->b->d->rows]];
    if (g->bound < 0)
        g->bound = plan__group_bound(x->b->d, r);
    return g->bound;
}

/* ---- cards ---- */

/* A whole card of a scheduled workload lends its idle time to guests. */
static int lends(const struct plan_gpu *g, const struct plan_inst *in)
{
    return g->mode == PLAN_WHOLE && !in->guest && in->row && in->row->workload->schedule;
}

/* Insert card c into list l, keeping ascending order. */
static int list_insert(struct ts_arena *a, struct plan__cards *l, size_t c)
{
    if (!ts_arena_grow(a, (void **)&l->at, &l->cap, l->n, sizeof(*l->at)))
        return 0;
    size_t i = l->n;
    while (i > 0 && l->at[i - 1] > c) {
        l->at[i] = l->at[i - 1];
        i--;
    }
    l->at[i] = c;
    l->n++;
    return 1;
}

static void note_pool(struct plan_pidx *x, size_t c, const struct decide_row *r)
{
    int pool = plan__pidx_pool(x, r);
    if (pool >= 0 && c < x->pool_card[pool])
        x->pool_card[pool] = c;
}

/* Count card c for inst's group when it is the card's first member. */
static void note_member(struct plan_pidx *x, size_t c, const struct decide_row *r)
{
    const struct plan_gpu *g = &x->b->p->gpus[c];
    if (!member(x, r))
        return;
    int group = x->group[r - x->b->d->rows];
    for (size_t k = 0; k < g->ninst; k++)
        if (member(x, g->inst[k].row) && x->group[g->inst[k].row - x->b->d->rows] == group)
            return;
    x->groups[group].ncards++;
}

int plan__pidx_add(struct plan_pidx *x, size_t c, const struct plan_inst *in)
{
    struct plan_gpu *g = &x->b->p->gpus[c];
    if (lends(g, in) && !list_insert(&x->arena, &x->lenders, c))
        return 0;
    note_member(x, c, in->row);
    note_pool(x, c, in->row);
    x->mem[c] += in->mem_gib;
    x->sm[c] += in->sm_percent;
    return plan__add_inst(x->b->p, g, in);
}

int plan__pidx_opened(struct plan_pidx *x, size_t c, const struct decide_row *r)
{
    struct plan__group *g = &x->groups[x->group[r - x->b->d->rows]];
    if (!list_insert(&x->arena, &g->cards, c))
        return 0;
    return x->b->p->gpus[c].mode != PLAN_TIME_SLICING || list_insert(&x->arena, &x->ts_cards, c);
}

size_t plan__pidx_first_free(struct plan_pidx *x, const struct cat_model *model)
{
    const struct plan *p = x->b->p;
    size_t *at = &x->cursor[model - x->b->cat->models];
    while (*at < p->ngpus && (p->gpus[*at].model != model || p->gpus[*at].mode != PLAN_FREE))
        (*at)++;
    return *at;
}

int plan__pidx_pool(const struct plan_pidx *x, const struct decide_row *r)
{
    return r ? x->pool[r - x->b->d->rows] : -1;
}

struct plan_gpu *plan__pidx_pool_card(const struct plan_pidx *x, const struct decide_row *r)
{
    int pool = plan__pidx_pool(x, r);
    return pool < 0 || x->pool_card[pool] == SIZE_MAX ? NULL : &x->b->p->gpus[x->pool_card[pool]];
}

int plan__pidx_trust(struct plan_pidx *x, const struct spec_tenant *a, const struct spec_tenant *b)
{
    if (a == b)
        return 1;
    const struct spec_model *m = x->b->m;
    if (!x->trust)
        return spec_tenants_trust(m, a->name, b->name);
    unsigned char *t = &x->trust[(size_t)(a - m->tenants) * x->ntenants + (size_t)(b - m->tenants)];
    if (!*t)
        *t = spec_tenants_trust(m, a->name, b->name) ? 1 : 2;
    return *t == 1;
}

/* ---- building it ---- */

/* Node ranges, and what the cards hold already (the MIG phase's). */
/* Node ranges, and what cards placed before this index (whole GPUs and
 * MIG, placed first) already hold: memory, SM shares, pools, lenders. */
static int index_cards(struct plan_pidx *x)
{
    struct plan *p = x->b->p;
    for (size_t i = 0; i < p->ngpus;) {
        size_t j = i + 1;
        while (j < p->ngpus && p->gpus[j].node == p->gpus[i].node)
            j++;
        for (size_t k = i; k < j; k++) {
            x->first[k] = i;
            x->end[k] = j;
            int lender = 0;
            for (size_t n = 0; n < p->gpus[k].ninst; n++) {
                x->mem[k] += p->gpus[k].inst[n].mem_gib;
                x->sm[k] += p->gpus[k].inst[n].sm_percent;
                note_pool(x, k, p->gpus[k].inst[n].row);
                lender |= lends(&p->gpus[k], &p->gpus[k].inst[n]);
            }
            if (lender && !list_insert(&x->arena, &x->lenders, k))
                return 0;
        }
        i = j;
    }
    return 1;
}

ts_status plan__pidx_init(struct plan_pidx *x, struct plan_build *b)
{
    memset(x, 0, sizeof(*x));
    ts_arena_init(&x->arena);
    x->b = b;
    size_t n = b->p->ngpus + 1, rows = b->d->nrows + 1;
    struct table pools, groups;
    x->first = ts_arena_array(&x->arena, n, sizeof(*x->first));
    x->end = ts_arena_array(&x->arena, n, sizeof(*x->end));
    x->mem = ts_arena_array(&x->arena, n, sizeof(*x->mem));
    x->sm = ts_arena_array(&x->arena, n, sizeof(*x->sm));
    x->cursor = ts_arena_array(&x->arena, b->cat->nmodels + 1, sizeof(*x->cursor));
    x->group = ts_arena_array(&x->arena, rows, sizeof(*x->group));
    x->pool = ts_arena_array(&x->arena, rows, sizeof(*x->pool));
    if (!x->first || !x->end || !x->mem || !x->sm || !x->cursor || !x->group || !x->pool ||
        !table_init(&x->arena, &pools, rows) || !table_init(&x->arena, &groups, rows) ||
        !assign_pools(x, &pools) || !assign_groups(x, &groups))
        return TS_NOMEM;
    x->ntenants = b->m->ntenants;
    if (x->ntenants <= PLAN_TRUST_MEMO_TENANTS_MAX)
        x->trust = ts_arena_array(&x->arena, x->ntenants * x->ntenants + 1, 1);
    return index_cards(x) ? TS_OK : TS_NOMEM;
}

void plan__pidx_free(struct plan_pidx *x) { ts_arena_free(&x->arena); }
