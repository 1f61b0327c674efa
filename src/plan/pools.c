/*
 * pools.c - the phases after MIG: whole GPUs (a multi-GPU replica stays on
 * one node), sharing pools (MPS per tenant or named pool, memory fractions
 * and time-slicing among tenants that trust each other, caps adding up to
 * no more than the card), then best-effort guests on cards whose occupants
 * trust them. Replicas keep to distinct cards (or nodes) when asked.
 */
#include "plan/internal.h"

#include <stdlib.h>
#include <string.h>

static int node_holds_replica(const struct plan *p, const struct spec_fleet_node *n,
                              const struct decide_row *r)
{
    for (size_t i = 0; i < p->ngpus; i++)
        if (p->gpus[i].node == n)
            for (size_t k = 0; k < p->gpus[i].ninst; k++)
                if (p->gpus[i].inst[k].row == r)
                    return 1;
    return 0;
}

static int card_holds_row(const struct plan_gpu *g, const struct decide_row *r)
{
    for (size_t k = 0; k < g->ninst; k++)
        if (g->inst[k].row == r)
            return 1;
    return 0;
}

/* May replica of r go on g as far as spread is concerned? */
static int spread_ok(const struct plan *p, const struct plan_gpu *g, const struct decide_row *r)
{
    if (r->workload->spread == SPEC_SPREAD_NONE)
        return 1;
    if (card_holds_row(g, r))
        return 0;
    return r->workload->spread != SPEC_SPREAD_NODE || !node_holds_replica(p, g->node, r);
}

/* ---- whole GPUs ---- */

/* Free cards on node n that r may use. */
static size_t free_on_node(const struct plan *p, const struct spec_fleet_node *n,
                           const struct decide_row *r)
{
    size_t c = 0;
    for (size_t i = 0; i < p->ngpus; i++)
        c += p->gpus[i].node == n && p->gpus[i].mode == PLAN_FREE && plan__eligible(r, &p->gpus[i]);
    return c;
}

static ts_status whole_replica(struct plan_build *b, const struct decide_row *r, int replica)
{
    struct plan *p = b->p;
    for (size_t i = 0; i < p->ngpus; i++) {
        const struct spec_fleet_node *n = p->gpus[i].node;
        if ((i > 0 && p->gpus[i - 1].node == n) || free_on_node(p, n, r) < (size_t)r->gpus)
            continue;
        if (r->workload->spread == SPEC_SPREAD_NODE && node_holds_replica(p, n, r))
            continue;
        int part = 0;
        for (size_t k = i; k < p->ngpus && p->gpus[k].node == n && part < r->gpus; k++) {
            struct plan_gpu *g = &p->gpus[k];
            if (g->mode != PLAN_FREE || !plan__eligible(r, g))
                continue;
            g->mode = r->mech == DECIDE_VGPU ? PLAN_VGPU : PLAN_WHOLE;
            struct plan_inst in = {
                r, replica, NULL, 0, g->model->grid, part++, g->model->memory_gib, 100, 0};
            if (!plan__add_inst(p, g, &in))
                return TS_NOMEM;
        }
        return TS_OK;
    }
    plan__fail(b, r,
               "no node has %d free %s card%s for replica %d of %s/%s%s%s; add cards or "
               "lower replicas",
               r->gpus, r->model->name, r->gpus > 1 ? "s" : "", replica + 1, r->tenant->name,
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
static int joins(const struct plan_build *b, const struct plan_gpu *g, const struct decide_row *r)
{
    if (g->mode != pool_mode(r->mech) || !plan__eligible(r, g) || !spread_ok(b->p, g, r))
        return 0;
    double mem = r->cap_gib;
    int sm = r->sm_percent;
    for (size_t k = 0; k < g->ninst; k++) {
        const struct decide_row *o = g->inst[k].row;
        const char *pa = r->workload->pool, *pb = o->workload->pool;
        if ((pa || pb) && (!pa || !pb || strcmp(pa, pb) != 0))
            return 0; /* a named pool keeps to itself */
        if (!pa && r->mech == DECIDE_MPS && strcmp(o->tenant->name, r->tenant->name) != 0)
            return 0; /* one MPS server per tenant */
        if (!spec_tenants_trust(b->m, o->tenant->name, r->tenant->name))
            return 0;
        mem += g->inst[k].mem_gib;
        sm += g->inst[k].sm_percent;
    }
    if (mem > g->model->memory_gib + 1e-9)
        return 0;
    if (r->mech == DECIDE_MPS && (sm > 100 || (int)g->ninst + 1 > g->model->mps_max_clients))
        return 0;
    return 1;
}

static int in_pool(const struct decide_row *r)
{
    return !r->profile && decide_mech_shares_card(r->mech);
}

static struct plan_gpu *pool_card(struct plan *p, const char *pool)
{
    for (size_t i = 0; pool && i < p->ngpus; i++)
        for (size_t k = 0; k < p->gpus[i].ninst; k++) {
            const struct decide_row *o = p->gpus[i].inst[k].row;
            if (o && o->workload->pool && strcmp(o->workload->pool, pool) == 0)
                return &p->gpus[i];
        }
    return NULL;
}

static void explain_full_pool(struct plan_build *b, const struct decide_row *r,
                              const struct plan_gpu *g)
{
    double mem = r->cap_gib;
    int sm = r->sm_percent;
    for (size_t k = 0; k < g->ninst; k++) {
        mem += g->inst[k].mem_gib;
        sm += g->inst[k].sm_percent;
    }
    plan__fail(b, r,
               "pool '%s' does not fit on one %s card: %zu clients (MPS allows %d), "
               "%.0f GiB of %.1f GiB%s; a named pool is one card: split it or shrink the caps",
               r->workload->pool, g->model->name, g->ninst + 1, g->model->mps_max_clients, mem,
               g->model->memory_gib,
               r->mech == DECIDE_MPS ? (sm > 100 ? ", SM shares above 100%" : "") : "");
}

static int group_cards(const struct plan *p, const struct decide_row *r)
{
    int n = 0;
    for (size_t i = 0; i < p->ngpus; i++)
        for (size_t k = 0; k < p->gpus[i].ninst; k++)
            if (plan__same_group(p->gpus[i].inst[k].row, r)) {
                n++;
                break;
            }
    return n;
}

static double free_gib(const struct plan_gpu *g)
{
    double used = 0;
    for (size_t k = 0; k < g->ninst; k++)
        used += g->inst[k].mem_gib;
    return g->model->memory_gib - used;
}

/* The emptiest card r may join (worst fit balances replicas that must
 * spread); NULL when none. */
static struct plan_gpu *join_target(struct plan_build *b, const struct decide_row *r)
{
    struct plan_gpu *best = NULL;
    for (size_t i = 0; i < b->p->ngpus; i++)
        if (joins(b, &b->p->gpus[i], r) && (!best || free_gib(&b->p->gpus[i]) > free_gib(best)))
            best = &b->p->gpus[i];
    return best;
}

static struct plan_gpu *open_card(struct plan *p, const struct decide_row *r)
{
    for (size_t i = 0; i < p->ngpus; i++) {
        struct plan_gpu *g = &p->gpus[i];
        if (g->mode == PLAN_FREE && plan__eligible(r, g) && spread_ok(p, g, r)) {
            g->mode = pool_mode(r->mech);
            return g;
        }
    }
    return NULL;
}

/* Until the group has as many cards as it needs at least, open a new one;
 * then join the emptiest card that takes the client, else open one. A
 * named pool is one card. */
static ts_status pool_replica(struct plan_build *b, const struct decide_row *r, int replica)
{
    struct plan *p = b->p;
    struct plan_gpu *named = pool_card(p, r->workload->pool), *target = NULL;
    if (!named && !r->workload->pool && group_cards(p, r) < plan__group_bound(b->d, r))
        target = open_card(p, r);
    if (!target)
        target = join_target(b, r);
    if (!target && named) {
        explain_full_pool(b, r, named);
        return TS_INFEASIBLE;
    }
    if (!target)
        target = open_card(p, r);
    if (!target) {
        plan__fail(b, r,
                   "no %s card left for replica %d of %s/%s (%s, %g GiB)%s; add cards or "
                   "lower replicas",
                   r->model->name, replica + 1, r->tenant->name, r->workload->name,
                   decide_mech_names[r->mech], r->cap_gib, plan__constraint_note(b, r));
        return TS_INFEASIBLE;
    }
    struct plan_inst in = {r, replica, NULL, 0, 0, 0, r->cap_gib, r->sm_percent, 0};
    return plan__add_inst(p, target, &in) ? TS_OK : TS_NOMEM;
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

/* ---- guests ---- */

static int hosts_guest(const struct plan_build *b, const struct plan_gpu *g,
                       const struct decide_row *r)
{
    if (!plan__eligible(r, g) || !spread_ok(b->p, g, r) || g->ninst == 0)
        return 0;
    if (g->mode != PLAN_WHOLE && g->mode != PLAN_TIME_SLICING)
        return 0;
    double mem = r->cap_gib;
    for (size_t k = 0; k < g->ninst; k++) {
        const struct decide_row *o = g->inst[k].row;
        if (!spec_tenants_trust(b->m, o->tenant->name, r->tenant->name))
            return 0;
        if (g->mode == PLAN_WHOLE && !g->inst[k].guest && !o->workload->schedule)
            return 0; /* an always-on whole-card workload has no time to lend */
        if (g->mode == PLAN_TIME_SLICING)
            mem += g->inst[k].mem_gib;
    }
    return mem <= g->model->memory_gib + 1e-9;
}

static ts_status guest_replica(struct plan_build *b, const struct decide_row *r, int replica)
{
    struct plan *p = b->p;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < p->ngpus; i++) {
            struct plan_gpu *g = &p->gpus[i];
            if ((pass == 0) != (g->mode == PLAN_TIME_SLICING) || !hosts_guest(b, g, r))
                continue;
            g->sharing = g->mode == PLAN_WHOLE;
            struct plan_inst in = {r, replica, NULL, 0, 0, 0, r->cap_gib, 0, 1};
            return plan__add_inst(p, g, &in) ? TS_OK : TS_NOMEM;
        }
    return pool_replica(b, r, replica);
}

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

ts_status plan__whole(struct plan_build *b)
{
    const struct decide_result *d = b->d;
    const struct decide_row **order = calloc(d->nrows + 1, sizeof(*order));
    if (!order)
        return TS_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < d->nrows; i++)
        if (is_whole(&d->rows[i]))
            order[n++] = &d->rows[i];
    qsort(order, n, sizeof(*order), cmp_whole);
    ts_status st = TS_OK;
    for (size_t i = 0; i < n && st == TS_OK; i++)
        for (int k = 0; k < order[i]->workload->replicas && st == TS_OK; k++)
            st = whole_replica(b, order[i], k);
    free(order);
    b->whole_done = 1;
    return st;
}

ts_status plan__pools(struct plan_build *b)
{
    const struct decide_result *d = b->d;
    const struct decide_row **order = calloc(d->nrows + 1, sizeof(*order));
    if (!order)
        return TS_NOMEM;
    size_t n = 0;
    ts_status st = TS_OK;
    for (size_t i = 0; i < d->nrows && st == TS_OK; i++) {
        const struct decide_row *r = &d->rows[i];
        if (is_whole(r) && !b->whole_done)
            for (int k = 0; k < r->workload->replicas && st == TS_OK; k++)
                st = whole_replica(b, r, k);
        else if (in_pool(r) && !plan__is_guest(r))
            order[n++] = r;
    }
    qsort(order, n, sizeof(*order), cmp_rows);
    for (size_t i = 0; i < n && st == TS_OK; i++)
        for (int k = 0; k < order[i]->workload->replicas && st == TS_OK; k++)
            st = pool_replica(b, order[i], k);
    for (size_t i = 0; i < d->nrows && st == TS_OK; i++)
        if (in_pool(&d->rows[i]) && plan__is_guest(&d->rows[i]))
            for (int k = 0; k < d->rows[i].workload->replicas && st == TS_OK; k++)
                st = guest_replica(b, &d->rows[i], k);
    free(order);
    return st;
}
