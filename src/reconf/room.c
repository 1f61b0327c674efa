/*
 * room.c - what a card of a plan being built still takes, for the keep
 * candidate (keep.c) and the emptying search (evac.c): MIG overlap, a
 * row's eligibility and spread, a sharing pool's memory, shares, clients
 * and trust.
 */
#include "reconf/internal.h"

int reconf__overlaps(const struct plan_gpu *g, const struct plan_inst *self, int start, int size)
{
    for (size_t k = 0; k < g->ninst; k++)
        if (&g->inst[k] != self && g->inst[k].profile && g->inst[k].start < start + size &&
            start < g->inst[k].start + g->inst[k].size)
            return 1;
    return 0;
}

/* Spread: may row r get another replica on g? */
static int holds(const struct plan_gpu *o, const struct decide_row *r)
{
    for (size_t k = 0; k < o->ninst; k++)
        if (o->inst[k].row == r)
            return 1;
    return 0;
}

/* A node's cards are neighbours in p->gpus (plan_build lays cards out node
 * by node): only they are looked at. */
int reconf__spread_ok(const struct plan *p, const struct plan_gpu *g, const struct decide_row *r)
{
    int spread = r->workload->spread;
    if (spread == SPEC_SPREAD_NONE)
        return 1;
    if (spread == SPEC_SPREAD_GPU)
        return !holds(g, r);
    size_t at = (size_t)(g - p->gpus), lo = at, hi = at;
    while (lo > 0 && p->gpus[lo - 1].node == g->node)
        lo--;
    while (hi < p->ngpus && p->gpus[hi].node == g->node)
        hi++;
    for (size_t i = lo; i < hi; i++)
        if (holds(&p->gpus[i], r))
            return 0;
    return 1;
}

int reconf__usable(const struct plan *p, const struct plan_gpu *g, const struct decide_row *r)
{
    return g->model == r->model && !decide_card_refuses(r, g->node, g->model) &&
           reconf__spread_ok(p, g, r);
}

int reconf__pool_room(const struct plan *p, const struct plan_gpu *g, const struct plan_inst *in,
                      int mode)
{
    double mem = in->mem_gib;
    int sm = in->sm_percent;
    if (g->mode != mode && g->mode != PLAN_FREE)
        return 0;
    for (size_t i = 0; i < g->ninst; i++) {
        mem += g->inst[i].mem_gib;
        sm += g->inst[i].sm_percent;
    }
    if (mem > g->model->memory_gib + 1e-6 ||
        (mode == PLAN_MPS && (sm > 100 || (int)g->ninst >= g->model->mps_max_clients)))
        return 0;
    for (size_t i = 0; i < g->ninst; i++) /* trust (names compared) last: the dearest */
        if (!spec_tenants_trust(p->model, in->row->tenant->name, g->inst[i].row->tenant->name))
            return 0;
    return 1;
}
