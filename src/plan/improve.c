/*
 * improve.c - exact packing of sharing pools and guests, after the
 * heuristic phases: per card model and pool mode (MPS, memory fractions,
 * time-slicing with the guests on those cards), the clients on the cards
 * the heuristic used form one bin-packing class (plan/poolcfg.c): alike
 * clients (same tenant, size and pool, not spread) are one item type, and
 * the class is taken apart into components of clients that may share a
 * card (trust, pool, MPS server), each packed on its own cards. When its
 * configuration bound says fewer cards might do, GLPK solves the class in
 * integers on exactly those cards (the cards actually needed, never the
 * whole fleet) and, when it uses fewer, the cards are refilled by its
 * configurations. Skipped when the cards are not interchangeable for the
 * clients (node eligibility, replicas spread across nodes). The work is
 * capped (util/limits.h): a class of more than PLAN_POOL_ILP_CONFIGS_MAX
 * configurations gets its configuration LP rounded instead (the integer
 * program on the LP's tight configurations, else each rounded down and the
 * rest packed on its own; plan__cfg_lp_round), and GLPK stops after
 * PLAN_POOL_ILP_NODES_MAX branch-and-bound nodes with the best layout it
 * found, so the pass costs at most a constant per class.
 */
#include "plan/internal.h"

#include <stdlib.h>
#include <string.h>

/* One instance on the class's cards: its row and replica * 2 + guest flag. */
struct client {
    const struct decide_row *row;
    int tag;
    size_t type;
};

struct klass {
    struct plan_pool_class pc;
    struct plan_gpu **cards;
    size_t ncards;
    struct client *clients; /* sorted by type: type t's from first[t] */
    size_t nclients;
    size_t *first;
};

/* k's arrays for up to ncards cards, ntypes item types and nclients clients
 * (k->pc's other fields kept); 0: NOMEM (klass_free frees what was made). */
static int klass_alloc(struct klass *k, size_t ncards, size_t ntypes, size_t nclients)
{
    k->cards = calloc(ncards + 1, sizeof(*k->cards));
    k->pc.rows = calloc(ntypes + 1, sizeof(*k->pc.rows));
    k->pc.demand = calloc(ntypes + 1, sizeof(int));
    k->clients = calloc(nclients + 1, sizeof(*k->clients));
    k->first = calloc(ntypes + 2, sizeof(*k->first));
    return k->cards && k->pc.rows && k->pc.demand && k->clients && k->first;
}

static void klass_free(struct klass *k)
{
    free(k->cards);
    free(k->pc.rows);
    free(k->pc.demand);
    free(k->clients);
    free(k->first);
}

/* Row r's type: an alike client's (plan__pool_same_client), else a new one. */
static size_t type_of(struct klass *k, const struct decide_row *r)
{
    for (size_t t = 0; t < k->pc.ntypes; t++)
        if (plan__pool_same_client(k->pc.rows[t], r))
            return t;
    k->pc.rows[k->pc.ntypes] = r;
    k->pc.demand[k->pc.ntypes] = 0;
    return k->pc.ntypes++;
}

static int by_type(const void *a, const void *b)
{
    const struct client *x = a, *y = b;
    if (x->type != y->type)
        return x->type < y->type ? -1 : 1;
    return x->tag < y->tag ? -1 : x->tag > y->tag; /* replicas in order */
}

/* Types and demands from the instances on k's cards; 0 when not exact-able. */
static int gather(struct klass *k)
{
    k->nclients = 0;
    for (size_t c = 0; c < k->ncards; c++)
        for (size_t i = 0; i < k->cards[c]->ninst; i++) {
            const struct plan_inst *in = &k->cards[c]->inst[i];
            if (!in->row || in->row->workload->spread == SPEC_SPREAD_NODE)
                return 0;
            size_t t = type_of(k, in->row);
            k->pc.demand[t]++;
            k->clients[k->nclients++] = (struct client){in->row, in->replica * 2 + (in->guest != 0),
                                                        t};
        }
    qsort(k->clients, k->nclients, sizeof(*k->clients), by_type);
    for (size_t t = 0, j = 0; t <= k->pc.ntypes; t++) {
        while (j < k->nclients && k->clients[j].type < t)
            j++;
        k->first[t] = j;
    }
    return k->pc.ntypes > 0;
}

/* 1 when every client of k may go on every card of k. */
static int interchangeable(const struct klass *k)
{
    for (size_t j = 0; j < k->nclients; j++)
        if (j == 0 || k->clients[j].row != k->clients[j - 1].row)
            for (size_t c = 0; c < k->ncards; c++)
                if (!plan__eligible(k->clients[j].row, k->cards[c]))
                    return 0;
    return 1;
}

/* Refill k's cards with x[j] cards of each configuration. */
static ts_status refill(struct plan_build *b, struct klass *k, const struct plan_cfg *c,
                        const int *x)
{
    int *left = k->pc.demand; /* counts down; each type's clients taken in order */
    int mode = k->cards[0]->mode;
    size_t next = 0;
    for (size_t c2 = 0; c2 < k->ncards; c2++) {
        k->cards[c2]->ninst = 0;
        k->cards[c2]->mode = PLAN_FREE;
    }
    for (size_t j = 0; j < c->nconfigs; j++)
        for (int copy = 0; copy < x[j]; copy++) {
            struct plan_gpu *g = k->cards[next++];
            for (size_t t = 0; t < k->pc.ntypes; t++)
                for (int n = 0; n < c->configs[j * c->ntypes + t] && left[t] > 0; n++) {
                    const struct client *cl = &k->clients[k->first[t] + (size_t)--left[t]];
                    const struct decide_row *r = cl->row;
                    struct plan_inst in = {r, cl->tag / 2, NULL,          0,           0,
                                           0, r->cap_gib,  r->sm_percent, cl->tag % 2, 0};
                    if (!plan__add_inst(b->p, g, &in))
                        return TS_NOMEM;
                }
            g->mode = g->ninst ? mode : PLAN_FREE;
        }
    return TS_OK;
}

/* k too large for the integer program: its configuration LP rounded
 * (plan__cfg_lp_round); its cards refilled when that uses fewer. Frees c. */
static ts_status rounded_class(struct plan_build *b, struct klass *k, struct plan_cfg *c)
{
    int *x = NULL, used = plan__cfg_lp_round(c, b->opt->time_limit_s, &x);
    ts_status st = TS_OK;
    b->glpk_ran = 1;
    b->glpk_skipped |= used < 0;
    if (used >= 0 && (size_t)used < k->ncards) {
        st = refill(b, k, c, x);
        b->used_exact = 1;
    }
    free(x);
    plan__cfg_free(c);
    return st;
}

/* k's configurations c listed and solved (solve_class). */
static ts_status solve_configs(struct plan_build *b, struct klass *k, struct plan_cfg c)
{
    if (!plan__cfg_enumerate(&c)) {
        plan__cfg_free(&c);
        b->glpk_skipped = 1;
        return TS_OK;
    }
    if (c.nconfigs > PLAN_POOL_ILP_CONFIGS_MAX)
        return rounded_class(b, k, &c);
    int bound = plan__cfg_lp_bound(&c), optimal = 0, used = -1;
    int *x = calloc(c.nconfigs + 1, sizeof(int));
    ts_status st = x ? TS_OK : TS_NOMEM;
    if (x && bound >= 0 && (size_t)bound < k->ncards) {
        used = plan__cfg_ilp(&c, b->opt->time_limit_s, (int)k->ncards - 1, x, &optimal);
        b->glpk_ran = 1;
        b->glpk_timeout |= !optimal;
    }
    if (used >= 0 && (size_t)used < k->ncards) {
        st = refill(b, k, &c, x);
        b->used_exact = 1;
    }
    free(x);
    plan__cfg_free(&c);
    return st;
}

/* Solve k exactly (too large: rounded_class); refill its cards when GLPK
 * finds fewer. */
static ts_status solve_class(struct plan_build *b, struct klass *k)
{
    struct plan_cfg_sums sums;
    struct plan_cfg c = {k->pc.ntypes,
                         k->pc.demand,
                         plan__pool_fits,
                         &k->pc,
                         NULL,
                         0,
                         plan__pool_sums(&k->pc, &sums),
                         PLAN_POOL_ILP_NODES_MAX,
                         0};
    ts_status st = solve_configs(b, k, c);
    plan__cfg_sums_free(&sums);
    return st;
}

/* A named pool is one card: its card stays as the heuristic made it. */
static int named_pool(const struct plan_gpu *g)
{
    for (size_t i = 0; i < g->ninst; i++)
        if (g->inst[i].row && g->inst[i].row->workload->pool)
            return 1;
    return 0;
}

/* Component comp of k (types numbered in comp[]) as a class of its own:
 * its types, clients and cards (a card's clients are all of one component). */
static ts_status solve_component(struct plan_build *b, const struct klass *k, const size_t *comp,
                                 size_t which, struct klass *sub)
{
    const struct decide_row **rows = sub->pc.rows;
    int *demand = sub->pc.demand;
    sub->pc = k->pc; /* model, mechanism, trust */
    sub->pc.rows = rows;
    sub->pc.demand = demand;
    sub->pc.ntypes = 0;
    sub->ncards = 0;
    sub->nclients = 0;
    for (size_t t = 0; t < k->pc.ntypes; t++) {
        if (comp[t] != which)
            continue;
        sub->pc.rows[sub->pc.ntypes] = k->pc.rows[t];
        sub->pc.demand[sub->pc.ntypes] = k->pc.demand[t];
        sub->first[sub->pc.ntypes++] = sub->nclients;
        for (size_t j = k->first[t]; j < k->first[t + 1]; j++)
            sub->clients[sub->nclients++] = k->clients[j];
    }
    sub->first[sub->pc.ntypes] = sub->nclients;
    for (size_t c = 0; c < k->ncards; c++) {
        const struct plan_gpu *g = k->cards[c];
        size_t t = 0;
        while (g->ninst && t < k->pc.ntypes &&
               !plan__pool_same_client(k->pc.rows[t], g->inst[0].row))
            t++;
        if (g->ninst && t < k->pc.ntypes && comp[t] == which)
            sub->cards[sub->ncards++] = k->cards[c];
    }
    if (sub->ncards < 2 || !interchangeable(sub))
        return TS_OK;
    return solve_class(b, sub);
}

/* The class taken apart into components of clients that may share a card
 * (plan/poolcfg.c): each is packed on its own cards, so one tenant's pool
 * of a few sizes is a small program where the whole class is not. */
static ts_status solve_components(struct plan_build *b, struct klass *k)
{
    size_t n = k->pc.ntypes, *comp = calloc(n + 1, sizeof(*comp));
    struct klass sub = {k->pc, NULL, 0, NULL, 0, NULL};
    int made = klass_alloc(&sub, k->ncards, n, k->nclients);
    ts_status st = comp && made ? TS_OK : TS_NOMEM;
    size_t ncomp = st == TS_OK ? plan__pool_components(&k->pc, comp) : 0;
    if (ncomp == 1)
        st = interchangeable(k) ? solve_class(b, k) : TS_OK;
    for (size_t c = 0; ncomp > 1 && st == TS_OK && c < ncomp; c++)
        st = solve_component(b, k, comp, c, &sub);
    free(comp);
    klass_free(&sub);
    return st;
}

static ts_status one_class(struct plan_build *b, const struct cat_model *model, int mode)
{
    struct plan *p = b->p;
    struct klass k = {{b->m, model, 0, NULL, 0, NULL, NULL}, NULL, 0, NULL, 0, NULL};
    size_t n = 0;
    for (size_t i = 0; i < p->ngpus; i++)
        n += p->gpus[i].model == model && p->gpus[i].mode == mode ? p->gpus[i].ninst : 0;
    ts_status st = klass_alloc(&k, p->ngpus, n, n) ? TS_OK : TS_NOMEM;
    for (size_t i = 0; st == TS_OK && i < p->ngpus; i++)
        if (p->gpus[i].model == model && p->gpus[i].mode == mode && !named_pool(&p->gpus[i]))
            k.cards[k.ncards++] = &p->gpus[i];
    if (st == TS_OK && k.ncards > 1 && gather(&k)) {
        k.pc.mech = k.pc.rows[0]->mech;
        k.pc.trust = plan__pool_trust_memo(b->m);
        st = solve_components(b, &k);
        free(k.pc.trust);
    }
    klass_free(&k);
    return st;
}

ts_status plan__improve_pools(struct plan_build *b)
{
    static const int modes[] = {PLAN_MPS, PLAN_MEMORY_FRACTION, PLAN_TIME_SLICING};
    if (b->opt->solver == PLAN_SOLVER_HEURISTIC)
        return TS_OK;
    for (size_t m = 0; m < b->cat->nmodels; m++)
        for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
            ts_status st = one_class(b, &b->cat->models[m], modes[i]);
            if (st)
                return st;
        }
    return TS_OK;
}
