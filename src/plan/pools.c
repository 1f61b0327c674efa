/*
 * pools.c - the phases after MIG: whole GPUs (a multi-GPU replica stays on
 * one node), sharing pools (MPS per tenant or named pool, memory fractions
 * and time-slicing among tenants that trust each other, caps adding up to
 * no more than the card), then best-effort guests on cards whose occupants
 * trust them. Replicas keep to distinct cards (or nodes) when asked.
 *
 * The rules are first fit over cards in fleet order (whole GPUs, new pool
 * cards, guests) and worst fit over a group's open cards (pool clients), or
 * (pool_ffd, plan.c keeps the cheaper layout) first fit decreasing for pool
 * clients and guests (pool_ffd 2, when the others place not everything:
 * guests spread by node before every client, then the clients that spread
 * first; when that fails too, on a small fleet, the search of search.c);
 * the index (poolidx.c) finds those cards without scanning the fleet, so a
 * replica costs about the cards it may use (bench/RESULTS.md).
 */
#include "plan/internal.h"

#include <stdlib.h>

static size_t card_no(const struct plan_pidx *x, const struct plan_gpu *g)
{
    return (size_t)(g - x->b->p->gpus);
}

static int node_holds_replica(const struct plan_pidx *x, size_t c, const struct decide_row *r)
{
    for (size_t i = x->first[c]; i < x->end[c]; i++)
        if (plan__card_holds_row(&x->b->p->gpus[i], r))
            return 1;
    return 0;
}

/* May replica of r go on g as far as spread is concerned? */
static int spread_ok(const struct plan_pidx *x, const struct plan_gpu *g,
                     const struct decide_row *r)
{
    if (r->workload->spread == SPEC_SPREAD_NONE)
        return 1;
    if (plan__card_holds_row(g, r))
        return 0;
    return r->workload->spread != SPEC_SPREAD_NODE || !node_holds_replica(x, card_no(x, g), r);
}

/* ---- whole GPUs ---- */

/* Free cards on node [i, end) that r may use. */
static size_t free_on_node(const struct plan_pidx *x, size_t i, const struct decide_row *r)
{
    size_t c = 0;
    for (size_t k = i; k < x->end[i]; k++)
        c += x->b->p->gpus[k].mode == PLAN_FREE && plan__eligible(r, &x->b->p->gpus[k]);
    return c;
}

static ts_status take_node(struct plan_pidx *x, size_t i, const struct decide_row *r, int replica)
{
    struct plan *p = x->b->p;
    int part = 0;
    for (size_t k = i; k < x->end[i] && part < r->gpus; k++) {
        struct plan_gpu *g = &p->gpus[k];
        if (g->mode != PLAN_FREE || !plan__eligible(r, g))
            continue;
        g->mode = r->mech == DECIDE_VGPU ? PLAN_VGPU : PLAN_WHOLE;
        struct plan_inst in = {r,   replica, NULL, 0, g->model->grid, part++, g->model->memory_gib,
                               100, 0,       0};
        if (!plan__pidx_add(x, k, &in))
            return TS_NOMEM;
    }
    return TS_OK;
}

/* The first node (fleet order) with r->gpus free cards r may use; the
 * fleet's cards alone, never spare ones (plan/spare.c). */
static ts_status whole_replica(struct plan_pidx *x, const struct decide_row *r, int replica)
{
    struct plan_build *b = x->b;
    size_t from = plan__pidx_first_free(x, r->model), end = b->fleet_cards;
    for (size_t i = from < end ? x->first[from] : from; i < end; i = x->end[i]) {
        if (free_on_node(x, i, r) < (size_t)r->gpus)
            continue;
        if (r->workload->spread == SPEC_SPREAD_NODE && node_holds_replica(x, i, r))
            continue;
        return take_node(x, i, r, replica);
    }
    plan__fail(b, r,
               "no node has %d free %s card%s for replica r%d of %s/%s%s%s; add cards or "
               "lower replicas",
               r->gpus, r->model->name, r->gpus > 1 ? "s" : "", replica, r->tenant->name,
               r->workload->name,
               r->workload->spread == SPEC_SPREAD_NODE ? " (replicas spread across nodes)" : "",
               plan__constraint_note(b, r));
    return TS_INFEASIBLE;
}

/* ---- sharing pools ---- */

static int pool_mode(int mech)
{
    return mech == DECIDE_MPS               ? PLAN_MPS
           : mech == DECIDE_MEMORY_FRACTION ? PLAN_MEMORY_FRACTION
                                            : PLAN_TIME_SLICING;
}

/* Can r join the pool card g? */
static int joins(struct plan_pidx *x, const struct plan_gpu *g, const struct decide_row *r)
{
    if (g->mode != pool_mode(r->mech) || !plan__eligible(r, g) || !spread_ok(x, g, r))
        return 0;
    int pool = plan__pidx_pool(x, r);
    for (size_t k = 0; k < g->ninst; k++) {
        const struct decide_row *o = g->inst[k].row;
        if (plan__pidx_pool(x, o) != pool)
            return 0; /* a named pool keeps to itself */
        if (pool < 0 && r->mech == DECIDE_MPS && o->tenant != r->tenant)
            return 0; /* one MPS server per tenant */
        if (!plan__pidx_trust(x, o->tenant, r->tenant))
            return 0;
    }
    size_t c = card_no(x, g);
    if (r->cap_gib + x->mem[c] > g->model->memory_gib + 1e-9)
        return 0;
    if (r->mech == DECIDE_MPS &&
        (r->sm_percent + x->sm[c] > 100 || (int)g->ninst + 1 > g->model->mps_max_clients))
        return 0;
    return 1;
}

static void explain_full_pool(struct plan_pidx *x, const struct decide_row *r,
                              const struct plan_gpu *g)
{
    size_t c = card_no(x, g);
    double mem = r->cap_gib + x->mem[c];
    int sm = r->sm_percent + x->sm[c];
    plan__fail(x->b, r,
               "pool '%s' does not fit on one %s card: %zu clients (MPS allows %d), "
               "%.0f GiB of %.1f GiB%s; a named pool is one card: split it or shrink the caps",
               r->workload->pool, g->model->name, g->ninst + 1, g->model->mps_max_clients, mem,
               g->model->memory_gib,
               r->mech == DECIDE_MPS ? (sm > 100 ? ", SM shares above 100%" : "") : "");
}

/* The emptiest card of r's group r may join (worst fit balances replicas
 * that must spread; the first in fleet order among equals); NULL when none.
 * Only cards opened for r's group can take r: their occupants share its
 * mechanism, model, pool and (MPS) tenant. */
static struct plan_gpu *join_target(struct plan_pidx *x, const struct decide_row *r)
{
    const struct plan__cards *cards = &x->groups[x->group[r - x->b->d->rows]].cards;
    struct plan_gpu *best = NULL;
    double best_free = 0;
    for (size_t i = 0; i < cards->n; i++) {
        struct plan_gpu *g = &x->b->p->gpus[cards->at[i]];
        double free = g->model->memory_gib - x->mem[cards->at[i]];
        if ((!best || free > best_free || (free == best_free && g < best)) && joins(x, g, r)) {
            best = g;
            best_free = free;
        }
    }
    return best;
}

/* The first card of r's group (fleet order) r may join; NULL when none.
 * With the clients in decreasing order this is first fit decreasing. */
static struct plan_gpu *first_target(struct plan_pidx *x, const struct decide_row *r)
{
    const struct plan__cards *cards = &x->groups[x->group[r - x->b->d->rows]].cards;
    for (size_t i = 0; i < cards->n; i++) {
        struct plan_gpu *g = &x->b->p->gpus[cards->at[i]];
        if (joins(x, g, r))
            return g;
    }
    return NULL;
}

static struct plan_gpu *open_card(struct plan_pidx *x, const struct decide_row *r)
{
    struct plan *p = x->b->p;
    for (size_t i = plan__pidx_first_free(x, r->model); i < p->ngpus; i++) {
        struct plan_gpu *g = &p->gpus[i];
        if (g->mode == PLAN_FREE && plan__eligible(r, g) && spread_ok(x, g, r)) {
            g->mode = pool_mode(r->mech);
            return plan__pidx_opened(x, i, r) ? g : NULL;
        }
    }
    return NULL;
}

static void no_card_left(struct plan_build *b, const struct decide_row *r, int replica)
{
    plan__fail(b, r,
               "no %s card left for replica r%d of %s/%s (%s, %g GiB)%s; add cards or "
               "lower replicas",
               r->model->name, replica, r->tenant->name, r->workload->name,
               decide_mech_names[r->mech], r->cap_gib, plan__constraint_note(b, r));
}

/* Until the group has as many cards as it needs at least, open a new one;
 * then join the emptiest card that takes the client, else open one. Or
 * (pool_ffd) join the first card that takes it, else open one. A named
 * pool is one card. */
static ts_status pool_replica(struct plan_pidx *x, const struct decide_row *r, int replica)
{
    struct plan_gpu *named = plan__pidx_pool_card(x, r), *target = NULL;
    int ffd = x->b->pool_ffd;
    if (!ffd && !named && !r->workload->pool &&
        plan__pidx_group_cards(x, r) < plan__pidx_group_bound(x, r))
        target = open_card(x, r);
    if (!target)
        target = ffd ? first_target(x, r) : join_target(x, r);
    if (!target && named) {
        explain_full_pool(x, r, named);
        return TS_INFEASIBLE;
    }
    if (!target)
        target = open_card(x, r);
    if (!target) {
        no_card_left(x->b, r, replica);
        return TS_INFEASIBLE;
    }
    struct plan_inst in = {r, replica, NULL, 0, 0, 0, r->cap_gib, r->sm_percent, 0, 0};
    return plan__pidx_add(x, card_no(x, target), &in) ? TS_OK : TS_NOMEM;
}

/* Pools pack best when big clients go first. */
static int cmp_rows(const void *a, const void *b)
{
    const struct decide_row *x = *(const struct decide_row *const *)a;
    const struct decide_row *y = *(const struct decide_row *const *)b;
    if (x->mech != y->mech)
        return x->mech - y->mech;
    if (x->cap_gib != y->cap_gib)
        return x->cap_gib < y->cap_gib ? 1 : -1;
    return x->index - y->index;
}

/* (pool_ffd 2) The clients whose replicas keep to distinct cards first:
 * they have the fewest cards to choose; then as cmp_rows. Three of 20, 12
 * and 4 GiB (the 4 spread) fill two 40 GiB cards only this way. */
static int spreads(const struct decide_row *r)
{
    return r->workload->spread != SPEC_SPREAD_NONE && r->workload->replicas > 1;
}

static int cmp_spread_rows(const void *a, const void *b)
{
    const struct decide_row *x = *(const struct decide_row *const *)a;
    const struct decide_row *y = *(const struct decide_row *const *)b;
    if (x->mech == y->mech && spreads(x) != spreads(y))
        return spreads(y) - spreads(x);
    return cmp_rows(a, b);
}

/* ---- guests ---- */

static int hosts_guest(struct plan_pidx *x, const struct plan_gpu *g, const struct decide_row *r)
{
    if (!plan__eligible(r, g) || !spread_ok(x, g, r) || g->ninst == 0)
        return 0;
    if (g->mode != PLAN_WHOLE && g->mode != PLAN_TIME_SLICING)
        return 0;
    for (size_t k = 0; k < g->ninst; k++) {
        const struct decide_row *o = g->inst[k].row;
        if (!plan__pidx_trust(x, o->tenant, r->tenant))
            return 0;
        if (g->mode == PLAN_WHOLE && !g->inst[k].guest && !o->workload->schedule)
            return 0; /* an always-on whole-card workload has no time to lend */
    }
    double mem = r->cap_gib + (g->mode == PLAN_TIME_SLICING ? x->mem[card_no(x, g)] : 0);
    return mem <= g->model->memory_gib + 1e-9;
}

/* First time-sliced card (fleet order) that hosts r, then the first whole
 * card that lends time; else r opens or joins a pool like any client. */
static ts_status guest_replica(struct plan_pidx *x, const struct decide_row *r, int replica)
{
    struct plan *p = x->b->p;
    const struct plan__cards *lists[2] = {&x->ts_cards, &x->lenders};
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < lists[pass]->n; i++) {
            struct plan_gpu *g = &p->gpus[lists[pass]->at[i]];
            if (!hosts_guest(x, g, r))
                continue;
            g->sharing = g->mode == PLAN_WHOLE;
            struct plan_inst in = {r, replica, NULL, 0, 0, 0, r->cap_gib, 0, 1, 0};
            return plan__pidx_add(x, lists[pass]->at[i], &in) ? TS_OK : TS_NOMEM;
        }
    return pool_replica(x, r, replica);
}

typedef ts_status (*place_fn)(struct plan_pidx *x, const struct decide_row *r, int replica);

static int is_whole(const struct decide_row *r)
{
    return !r->profile && (r->mech == DECIDE_WHOLE || r->mech == DECIDE_VGPU);
}

/* Most GPUs per replica first: they need the emptiest nodes. */
static int cmp_whole(const void *a, const void *b)
{
    const struct decide_row *x = *(const struct decide_row *const *)a;
    const struct decide_row *y = *(const struct decide_row *const *)b;
    return x->gpus != y->gpus ? y->gpus - x->gpus : x->index - y->index;
}

static ts_status replicas(struct plan_pidx *x, const struct decide_row *r, place_fn place)
{
    ts_status st = TS_OK;
    for (int k = 0; k < r->workload->replicas && st == TS_OK; k++)
        st = place(x, r, k);
    return st;
}

/* (pool_ffd 2) A guest whose replicas keep to distinct nodes needs a card
 * on as many nodes: placed after the pool clients, it found them full
 * (issue 30: nine MPS replicas spread by GPU filled the two small nodes a
 * guest's four replicas spread by node needed). These go first. */
static int node_guest(const struct plan_build *b, const struct decide_row *r)
{
    return b->pool_ffd == 2 && plan__in_pool(r) && plan__is_guest(r) &&
           r->workload->spread == SPEC_SPREAD_NODE && r->workload->replicas > 1;
}

static ts_status node_guests_first(struct plan_pidx *x, const struct decide_row **order)
{
    const struct decide_result *d = x->b->d;
    size_t n = 0;
    ts_status st = TS_OK;
    for (size_t i = 0; i < d->nrows; i++)
        if (node_guest(x->b, &d->rows[i]))
            order[n++] = &d->rows[i];
    qsort(order, n, sizeof(*order), cmp_rows);
    for (size_t i = 0; i < n && st == TS_OK; i++)
        st = replicas(x, order[i], guest_replica);
    return st;
}

static ts_status phases(struct plan_pidx *x, const struct decide_row **order)
{
    const struct decide_result *d = x->b->d;
    size_t n = 0;
    ts_status st = node_guests_first(x, order);
    for (size_t i = 0; i < d->nrows && st == TS_OK; i++) {
        const struct decide_row *r = &d->rows[i];
        if (is_whole(r)) {
            if (!x->b->whole_done)
                st = replicas(x, r, whole_replica);
        } else if (plan__in_pool(r) && !plan__is_guest(r))
            order[n++] = r;
    }
    int (*cmp)(const void *, const void *) = x->b->pool_ffd == 2 ? cmp_spread_rows : cmp_rows;
    qsort(order, n, sizeof(*order), cmp);
    for (size_t i = 0; i < n && st == TS_OK; i++)
        st = replicas(x, order[i], pool_replica);
    n = 0; /* guests in spec order, or (pool_ffd) the biggest first */
    for (size_t i = 0; i < d->nrows; i++)
        if (plan__in_pool(&d->rows[i]) && plan__is_guest(&d->rows[i]) &&
            !node_guest(x->b, &d->rows[i]))
            order[n++] = &d->rows[i];
    if (x->b->pool_ffd)
        qsort(order, n, sizeof(*order), cmp);
    for (size_t i = 0; i < n && st == TS_OK; i++)
        st = replicas(x, order[i], guest_replica);
    return st;
}

/* First fit; when it still leaves a replica out in plan.c's last rescue
 * (pool_ffd 2: spread clients first), on a small fleet the search
 * (search.c) lays out whole GPUs, pools and guests again, and its layout
 * takes back first fit's errors. */
ts_status plan__pools(struct plan_build *b)
{
    struct plan_pidx x;
    int errors = b->diag->count, dropped = b->diag->dropped;
    const struct decide_row **order = calloc(b->d->nrows + 1, sizeof(*order));
    ts_status st = order ? plan__pidx_init(&x, b) : TS_NOMEM;
    if (st == TS_OK)
        st = phases(&x, order);
    if (order)
        plan__pidx_free(&x);
    free(order);
    if (st == TS_INFEASIBLE && b->pool_ffd == 2) {
        ts_status found = plan__search_pools(b);
        if (found != TS_INFEASIBLE)
            st = found;
        if (found == TS_OK) {
            b->diag->count = errors;
            b->diag->dropped = dropped;
        }
    }
    return st;
}

static ts_status whole_rows(struct plan_pidx *x, const struct decide_row **order)
{
    const struct decide_result *d = x->b->d;
    size_t n = 0;
    for (size_t i = 0; i < d->nrows; i++)
        if (is_whole(&d->rows[i]))
            order[n++] = &d->rows[i];
    qsort(order, n, sizeof(*order), cmp_whole);
    ts_status st = TS_OK;
    for (size_t i = 0; i < n && st == TS_OK; i++)
        st = replicas(x, order[i], whole_replica);
    return st;
}

/* Whole GPUs (and vGPU) before MIG: a multi-GPU replica needs the emptiest node. */
ts_status plan__whole(struct plan_build *b)
{
    struct plan_pidx x;
    const struct decide_row **order = calloc(b->d->nrows + 1, sizeof(*order));
    ts_status st = order ? plan__pidx_init(&x, b) : TS_NOMEM;
    if (st == TS_OK)
        st = whole_rows(&x, order);
    if (order)
        plan__pidx_free(&x);
    free(order);
    b->whole_done = 1;
    return st;
}
