/*
 * search.c - the pool phase's last resort on a small fleet. First fit
 * (pools.c) places whole GPUs, then pool clients, then guests, each on the
 * first card in fleet order that takes it; with replicas spread across
 * nodes of different sizes that can leave a replica no node although a
 * layout exists (the first replicas took the small nodes, the whole job or
 * the shares the node the guest needed). When it fails, this search lays
 * out again every card that is not MIG: whole GPUs (a replica's cards on
 * one node) and every pool client and guest, depth first, under the rules
 * pools.c applies (the card's model and node eligible, one mechanism per
 * card, MPS clients of one tenant, tenants that trust each other, caps and
 * SM shares within the card, replicas on distinct cards or nodes). Empty
 * cards of one node and model are alike and a workload's replicas are
 * interchangeable, so each choice is tried once. Small means at most
 * SEARCH_CARDS cards and SEARCH_ITEMS replicas, and the search gives up
 * after SEARCH_STEPS steps: a spec it cannot settle keeps first fit's error.
 * Named pools and the whole cards of scheduled workloads (which lend time to
 * guests) stay with first fit.
 */
#include "plan/internal.h"

#include <stdlib.h>
#include <string.h>

/* A tiny fleet: every feasible spec of a few nodes settles in a few
 * thousand steps (tests/tools/place_check.py); an infeasible one costs at
 * most SEARCH_STEPS, about 20 ms, once per try of plan_build. */
#define SEARCH_CARDS 16
#define SEARCH_ITEMS 48
#define SEARCH_STEPS 200000L

struct item {
    const struct decide_row *r;
    int replica;
};

struct scard {
    struct plan_gpu *g;
    int mode; /* PLAN_FREE, the whole mode, or a pool mode */
    double mem;
    int sm, n;
    const struct decide_row *rows[SEARCH_ITEMS];
};

struct search {
    struct plan_build *b;
    struct scard cards[SEARCH_CARDS];
    size_t ncards;
    struct item items[SEARCH_ITEMS];
    size_t nitems;
    int at[SEARCH_ITEMS]; /* each item's card (a whole replica's first) */
    long steps;
};

static int is_whole(const struct decide_row *r)
{
    return !r->profile && (r->mech == DECIDE_WHOLE || r->mech == DECIDE_VGPU);
}

static int whole_mode(const struct decide_row *r)
{
    return r->mech == DECIDE_VGPU ? PLAN_VGPU : PLAN_WHOLE;
}

static int pool_mode(const struct decide_row *r)
{
    return r->mech == DECIDE_MPS               ? PLAN_MPS
           : r->mech == DECIDE_MEMORY_FRACTION ? PLAN_MEMORY_FRACTION
                                               : PLAN_TIME_SLICING;
}

static int usable(const struct scard *c, const struct decide_row *r)
{
    return c->g->model == r->model && plan__eligible(r, c->g);
}

static int card_holds(const struct scard *c, const struct decide_row *r)
{
    for (int k = 0; k < c->n; k++)
        if (c->rows[k] == r)
            return 1;
    return 0;
}

static int node_holds(const struct search *s, size_t c, const struct decide_row *r)
{
    for (size_t k = 0; k < s->ncards; k++)
        if (s->cards[k].g->node == s->cards[c].g->node && card_holds(&s->cards[k], r))
            return 1;
    return 0;
}

/* May a client of r go on card c (mechanism, tenants, memory, SM, spread)? */
static int joins(const struct search *s, size_t c, const struct decide_row *r)
{
    const struct scard *k = &s->cards[c];
    if (!usable(k, r) || (k->mode != PLAN_FREE && k->mode != pool_mode(r)))
        return 0;
    for (int i = 0; i < k->n; i++) {
        const struct decide_row *o = k->rows[i];
        if (r->mech == DECIDE_MPS && o->tenant != r->tenant)
            return 0; /* one MPS server per tenant */
        if (o->tenant != r->tenant &&
            !spec_tenants_trust(s->b->m, o->tenant->name, r->tenant->name))
            return 0;
    }
    if (k->mem + r->cap_gib > k->g->model->memory_gib + 1e-9)
        return 0;
    if (r->mech == DECIDE_MPS &&
        (k->sm + r->sm_percent > 100 || k->n + 1 > k->g->model->mps_max_clients))
        return 0;
    if (r->workload->spread == SPEC_SPREAD_NONE)
        return 1;
    return !card_holds(k, r) && (r->workload->spread != SPEC_SPREAD_NODE || !node_holds(s, c, r));
}

/* An empty card before c (from lo) on c's node and of its model: c is
 * then the same choice. */
static int alike_before(const struct search *s, size_t lo, size_t c)
{
    for (size_t k = lo; k < c; k++)
        if (s->cards[k].mode == PLAN_FREE && s->cards[k].g->node == s->cards[c].g->node &&
            s->cards[k].g->model == s->cards[c].g->model)
            return 1;
    return 0;
}

static void put(struct search *s, size_t c, const struct decide_row *r, int mode)
{
    struct scard *k = &s->cards[c];
    k->mode = mode;
    k->rows[k->n++] = r;
    if (!is_whole(r)) {
        k->mem += r->cap_gib;
        k->sm += r->sm_percent;
    }
}

/* Undo the last put on card c. */
static void take(struct search *s, size_t c, const struct decide_row *r)
{
    struct scard *k = &s->cards[c];
    k->n--;
    if (!is_whole(r)) {
        k->mem -= r->cap_gib;
        k->sm -= r->sm_percent;
    }
    if (k->n == 0) {
        k->mode = PLAN_FREE;
        k->mem = 0;
        k->sm = 0;
    }
}

static int dfs(struct search *s, size_t i);

/* A whole replica: r->gpus free cards of one node (its first ones). */
static int place_whole(struct search *s, size_t i, size_t lo)
{
    const struct decide_row *r = s->items[i].r;
    for (size_t c = lo; c < s->ncards; c++) {
        if (c > 0 && s->cards[c - 1].g->node == s->cards[c].g->node)
            continue; /* one try per node, from its first card */
        size_t got[SEARCH_CARDS], n = 0;
        for (size_t k = c; k < s->ncards && s->cards[k].g->node == s->cards[c].g->node; k++)
            if (n < (size_t)r->gpus && s->cards[k].mode == PLAN_FREE && usable(&s->cards[k], r))
                got[n++] = k;
        if (n < (size_t)r->gpus || (r->workload->spread == SPEC_SPREAD_NODE && node_holds(s, c, r)))
            continue;
        for (size_t k = 0; k < n; k++)
            put(s, got[k], r, whole_mode(r));
        s->at[i] = (int)c;
        int ok = dfs(s, i + 1);
        for (size_t k = 0; k < n; k++)
            take(s, got[k], r);
        if (ok)
            return 1;
    }
    return 0;
}

static int place_client(struct search *s, size_t i, size_t lo)
{
    const struct decide_row *r = s->items[i].r;
    for (size_t c = lo; c < s->ncards; c++) {
        if ((s->cards[c].mode == PLAN_FREE && alike_before(s, lo, c)) || !joins(s, c, r))
            continue;
        put(s, c, r, pool_mode(r));
        s->at[i] = (int)c;
        int ok = dfs(s, i + 1);
        take(s, c, r);
        if (ok)
            return 1;
    }
    return 0;
}

static int dfs(struct search *s, size_t i)
{
    if (i == s->nitems)
        return 1;
    if (++s->steps > SEARCH_STEPS)
        return 0;
    /* a workload's replicas are alike: each on a card after the one before */
    size_t lo = i > 0 && s->items[i - 1].r == s->items[i].r ? (size_t)s->at[i - 1] : 0;
    if (is_whole(s->items[i].r)) {
        while (lo > 0 && s->cards[lo - 1].g->node == s->cards[lo].g->node)
            lo--; /* from the first card of the node before */
        return place_whole(s, i, lo);
    }
    return place_client(s, i, lo);
}

/* The order items are tried in: whole replicas (most GPUs first), then
 * clients spread by node, then the biggest caps; a workload's replicas
 * together. */
static int rank(const struct decide_row *r)
{
    return is_whole(r) ? 0 : r->workload->spread == SPEC_SPREAD_NODE ? 1 : 2;
}

static int cmp_items(const void *a, const void *b)
{
    const struct decide_row *x = ((const struct item *)a)->r, *y = ((const struct item *)b)->r;
    if (rank(x) != rank(y))
        return rank(x) - rank(y);
    if (is_whole(x) && x->gpus != y->gpus)
        return y->gpus - x->gpus;
    if (x->cap_gib != y->cap_gib)
        return x->cap_gib < y->cap_gib ? 1 : -1;
    if (x->index != y->index)
        return x->index - y->index;
    return ((const struct item *)a)->replica - ((const struct item *)b)->replica;
}

/* The rows the search lays out; 0 when it may not (too many, a named pool,
 * a whole card that lends time). */
static int gather_items(struct search *s)
{
    const struct decide_result *d = s->b->d;
    for (size_t i = 0; i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        if (!is_whole(r) && !plan__in_pool(r))
            continue;
        if (r->workload->pool || (is_whole(r) && r->workload->schedule))
            return 0;
        for (int k = 0; k < r->workload->replicas; k++) {
            if (s->nitems == SEARCH_ITEMS)
                return 0;
            s->items[s->nitems++] = (struct item){r, k};
        }
    }
    qsort(s->items, s->nitems, sizeof(*s->items), cmp_items);
    return s->nitems > 0;
}

/* Every card not MIG of a model some item runs on; 0 when too many. */
static int gather_cards(struct search *s)
{
    struct plan *p = s->b->p;
    for (size_t i = 0; i < p->ngpus; i++) {
        int wanted = 0;
        for (size_t k = 0; k < s->nitems && !wanted; k++)
            wanted = s->items[k].r->model == p->gpus[i].model;
        if (p->gpus[i].mode == PLAN_MIG || !wanted)
            continue;
        if (s->ncards == SEARCH_CARDS)
            return 0;
        s->cards[s->ncards++] = (struct scard){.g = &p->gpus[i], .mode = PLAN_FREE};
    }
    return 1;
}

/* A whole replica on the first r->gpus free cards of its node, from its
 * first card: the cards the search gave it, whole replicas going first. */
static int add_whole(struct search *s, size_t i)
{
    const struct decide_row *r = s->items[i].r;
    int part = 0;
    for (size_t c = (size_t)s->at[i]; part < r->gpus; c++) {
        struct plan_gpu *g = s->cards[c].g;
        if (g->mode != PLAN_FREE || !usable(&s->cards[c], r))
            continue;
        g->mode = whole_mode(r);
        struct plan_inst in = {.row = r,
                               .replica = s->items[i].replica,
                               .size = g->model->grid,
                               .gpu_part = part++,
                               .mem_gib = g->model->memory_gib,
                               .sm_percent = 100};
        if (!plan__add_inst(s->b->p, g, &in))
            return 0;
    }
    return 1;
}

/* A client; a guest on a card someone holds already rides there as one. */
static int add_client(struct search *s, size_t i)
{
    const struct decide_row *r = s->items[i].r;
    struct plan_gpu *g = s->cards[s->at[i]].g;
    struct plan_inst in = {.row = r,
                           .replica = s->items[i].replica,
                           .mem_gib = r->cap_gib,
                           .sm_percent = r->sm_percent,
                           .guest = plan__is_guest(r) && g->ninst > 0};
    g->mode = pool_mode(r);
    return plan__add_inst(s->b->p, g, &in);
}

/* Write the layout found into the plan: whole replicas and shares, then
 * guests. */
static ts_status write_layout(struct search *s)
{
    for (size_t c = 0; c < s->ncards; c++) {
        s->cards[c].g->mode = PLAN_FREE;
        s->cards[c].g->ninst = 0;
        s->cards[c].g->sharing = 0;
    }
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < s->nitems; i++) {
            const struct decide_row *r = s->items[i].r;
            if (plan__is_guest(r) != pass)
                continue;
            if (!(is_whole(r) ? add_whole(s, i) : add_client(s, i)))
                return TS_NOMEM;
        }
    return TS_OK;
}

ts_status plan__search_pools(struct plan_build *b)
{
    struct search *s = calloc(1, sizeof(*s));
    if (!s)
        return TS_NOMEM;
    s->b = b;
    ts_status st = TS_INFEASIBLE;
    if (gather_items(s) && gather_cards(s) && dfs(s, 0))
        st = write_layout(s);
    free(s);
    return st;
}
