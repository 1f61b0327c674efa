/*
 * improve.c - exact packing of sharing pools and guests, after the
 * heuristic phases: per card model and pool mode (MPS, memory fractions,
 * time-slicing with the guests on those cards), the clients on the cards
 * the heuristic used form one bin-packing class (plan/poolcfg.c). When its
 * configuration bound says fewer cards might do, GLPK solves the class in
 * integers on exactly those cards (the cards actually needed, never the
 * whole fleet) and, when it uses fewer, the cards are refilled by its
 * configurations. Skipped when the cards are not interchangeable for the
 * clients (node eligibility, replicas spread across nodes). The work is
 * capped (util/limits.h): a class of more than PLAN_POOL_ILP_CONFIGS_MAX
 * configurations keeps the heuristic layout, and GLPK stops after
 * PLAN_POOL_ILP_NODES_MAX branch-and-bound nodes with the best layout it
 * found, so the pass costs at most a constant per class.
 */
#include "plan/internal.h"

#include <stdlib.h>
#include <string.h>

struct klass {
    struct plan_pool_class pc;
    struct plan_gpu **cards;
    size_t ncards;
    int **replicas; /* per type: its instances, replica * 2 + guest flag */
};

static int type_of(const struct klass *k, const struct decide_row *r)
{
    for (size_t t = 0; t < k->pc.ntypes; t++)
        if (k->pc.rows[t] == r)
            return (int)t;
    return -1;
}

/* Types and demands from the instances on k's cards; 0 when not exact-able. */
static int gather(struct klass *k)
{
    for (size_t c = 0; c < k->ncards; c++)
        for (size_t i = 0; i < k->cards[c]->ninst; i++) {
            const struct plan_inst *in = &k->cards[c]->inst[i];
            if (!in->row || in->row->workload->spread == SPEC_SPREAD_NODE)
                return 0;
            int t = type_of(k, in->row);
            if (t < 0) {
                t = (int)k->pc.ntypes++;
                k->pc.rows[t] = in->row;
                k->replicas[t] = calloc((size_t)in->row->workload->replicas + 1, sizeof(int));
                if (!k->replicas[t])
                    return 0;
            }
            if (k->pc.demand[t] >= k->pc.rows[t]->workload->replicas)
                return 0;
            k->replicas[t][k->pc.demand[t]++] = in->replica * 2 + (in->guest != 0);
        }
    for (size_t t = 0; t < k->pc.ntypes; t++)
        for (size_t c = 0; c < k->ncards; c++)
            if (!plan__eligible(k->pc.rows[t], k->cards[c]))
                return 0;
    return k->pc.ntypes > 0;
}

/* Refill k's cards with x[j] cards of each configuration. */
static ts_status refill(struct plan_build *b, struct klass *k, const struct plan_cfg *c,
                        const int *x)
{
    int *left = k->pc.demand; /* counts down; each type's replicas taken in order */
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
                    const struct decide_row *r = k->pc.rows[t];
                    int rep = k->replicas[t][--left[t]];
                    struct plan_inst in = {r, rep / 2,    NULL,          0,      0,
                                           0, r->cap_gib, r->sm_percent, rep % 2};
                    if (!plan__add_inst(b->p, g, &in))
                        return TS_NOMEM;
                }
            g->mode = g->ninst ? mode : PLAN_FREE;
        }
    return TS_OK;
}

/* Solve k exactly; refill its cards when GLPK finds fewer. */
static ts_status solve_class(struct plan_build *b, struct klass *k)
{
    struct plan_cfg c = {
        k->pc.ntypes,         k->pc.demand,           plan__pool_fits, &k->pc, NULL, 0,
        plan__pool_fits_more, PLAN_POOL_ILP_NODES_MAX};
    if (!plan__cfg_enumerate(&c) || c.nconfigs > PLAN_POOL_ILP_CONFIGS_MAX) {
        plan__cfg_free(&c);
        b->glpk_skipped = 1;
        return TS_OK;
    }
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

/* A named pool is one card: its card stays as the heuristic made it. */
static int named_pool(const struct plan_gpu *g)
{
    for (size_t i = 0; i < g->ninst; i++)
        if (g->inst[i].row && g->inst[i].row->workload->pool)
            return 1;
    return 0;
}

static ts_status one_class(struct plan_build *b, const struct cat_model *model, int mode)
{
    struct plan *p = b->p;
    struct klass k = {{b->m, model, 0, NULL, 0, NULL, NULL}, NULL, 0, NULL};
    size_t n = 0;
    for (size_t i = 0; i < p->ngpus; i++)
        n += p->gpus[i].model == model && p->gpus[i].mode == mode ? p->gpus[i].ninst : 0;
    k.cards = calloc(p->ngpus + 1, sizeof(*k.cards));
    k.pc.rows = calloc(n + 1, sizeof(*k.pc.rows));
    k.pc.demand = calloc(n + 1, sizeof(int));
    k.replicas = calloc(n + 1, sizeof(int *));
    ts_status st = k.cards && k.pc.rows && k.pc.demand && k.replicas ? TS_OK : TS_NOMEM;
    for (size_t i = 0; st == TS_OK && i < p->ngpus; i++)
        if (p->gpus[i].model == model && p->gpus[i].mode == mode && !named_pool(&p->gpus[i]))
            k.cards[k.ncards++] = &p->gpus[i];
    if (st == TS_OK && k.ncards > 1 && gather(&k)) {
        k.pc.mech = k.pc.rows[0]->mech;
        k.pc.trust = plan__pool_trust_memo(b->m);
        st = solve_class(b, &k);
        free(k.pc.trust);
    }
    for (size_t t = 0; k.replicas && t < k.pc.ntypes; t++)
        free(k.replicas[t]);
    free(k.cards);
    free(k.pc.rows);
    free(k.pc.demand);
    free(k.replicas);
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
