/*
 * spare.c - spare cards for the pools, the last rescue of a layout whose
 * pools ran out of a model's cards. The heuristic packs each pool group
 * onto a few more cards than it needs, and GLPK's pass (plan/improve.c)
 * takes them back only once every client is placed; where the fleet has
 * exactly the cards the cost program counted (its cheapest layout fills a
 * model), the heuristic runs out before GLPK can run. So the pools are
 * laid out with spare cards of each model after the fleet's (on a stand-in
 * of a node that has the model), GLPK's pass packs them tight, and what is
 * left on a spare card moves, card by card, to a free card of the fleet
 * that takes it; a spare card still in use fails the layout, and the
 * spare cards are gone from every plan that builds. Pool clients and
 * guests alone use them: whole GPUs, even those placed with the pools
 * (MIG first), keep to the fleet's cards (plan/pools.c), as a card moved
 * alone would split a multi-GPU replica across nodes.
 */
#include "plan/internal.h"

#include <string.h>

/* Spare cards for a model of n cards: PLAN_POOL_SPARE_SHARE of them, at
 * least PLAN_POOL_SPARE_MIN. */
static int spares_for(int n)
{
    int k = (int)(n * PLAN_POOL_SPARE_SHARE);
    return k < PLAN_POOL_SPARE_MIN ? PLAN_POOL_SPARE_MIN : k;
}

/* The fleet's cards of model, and its last node with them in *node. */
static int cards_of(const struct plan *p, const struct cat_model *model,
                    const struct spec_fleet_node **node)
{
    int n = 0;
    for (size_t i = 0; i < p->ngpus; i++)
        if (p->gpus[i].model == model) {
            n++;
            *node = p->gpus[i].node;
        }
    return n;
}

ts_status plan__spare_add(struct plan_build *b)
{
    struct plan *p = b->p;
    size_t total = p->ngpus;
    const struct spec_fleet_node *last = NULL;
    for (size_t m = 0; m < b->cat->nmodels; m++) {
        int n = cards_of(p, &b->cat->models[m], &last);
        total += n > 0 ? (size_t)spares_for(n) : 0;
    }
    struct plan_gpu *gpus = ts_arena_array(&p->arena, total, sizeof(*gpus));
    if (!gpus)
        return TS_NOMEM;
    memcpy(gpus, p->gpus, p->ngpus * sizeof(*gpus));
    p->gpus = gpus;
    for (size_t m = 0; m < b->cat->nmodels; m++) {
        const struct cat_model *model = &b->cat->models[m];
        int n = cards_of(p, model, &last);
        if (n == 0)
            continue;
        struct spec_fleet_node *stand_in = ts_arena_alloc(&p->arena, sizeof(*stand_in));
        if (!stand_in)
            return TS_NOMEM;
        *stand_in = *last; /* its rules; a node of its own for spreading */
        for (int k = 0; k < spares_for(n); k++)
            p->gpus[p->ngpus++] = (struct plan_gpu){.node = stand_in, .index = k, .model = model};
    }
    return TS_OK;
}

/* 1 when every instance on g may go on card to (eligible there, no other
 * replica of a workload spread by node on to's node). */
static int takes(const struct plan *p, const struct plan_gpu *to, const struct plan_gpu *g)
{
    for (size_t i = 0; i < g->ninst; i++) {
        const struct decide_row *r = g->inst[i].row;
        if (!r || !plan__eligible(r, to))
            return 0;
        if (r->workload->spread != SPEC_SPREAD_NODE)
            continue;
        for (size_t j = 0; j < p->ngpus; j++)
            if (p->gpus[j].node == to->node && &p->gpus[j] != to)
                for (size_t k = 0; k < p->gpus[j].ninst; k++)
                    if (p->gpus[j].inst[k].row == r)
                        return 0;
    }
    return 1;
}

/* g's instances onto the free card to; g free. */
static void move_card(struct plan_gpu *to, struct plan_gpu *g)
{
    to->mode = g->mode;
    to->sharing = g->sharing;
    to->inst = g->inst;
    to->ninst = g->ninst;
    to->cap = g->cap;
    g->mode = PLAN_FREE;
    g->sharing = 0;
    g->inst = NULL;
    g->ninst = g->cap = 0;
}

/* A free card of the fleet that takes all of g; NULL when none. */
static struct plan_gpu *free_card_for(struct plan_build *b, const struct plan_gpu *g)
{
    struct plan *p = b->p;
    for (size_t i = 0; i < b->fleet_cards; i++) {
        struct plan_gpu *to = &p->gpus[i];
        if (to->model == g->model && to->mode == PLAN_FREE && to->ninst == 0 && takes(p, to, g))
            return to;
    }
    return NULL;
}

ts_status plan__spare_remove(struct plan_build *b)
{
    struct plan *p = b->p;
    for (size_t i = b->fleet_cards; i < p->ngpus; i++) {
        struct plan_gpu *g = &p->gpus[i];
        if (g->mode == PLAN_FREE && g->ninst == 0)
            continue;
        struct plan_gpu *to = free_card_for(b, g);
        if (!to)
            return TS_INFEASIBLE;
        move_card(to, g);
    }
    p->ngpus = b->fleet_cards;
    return TS_OK;
}
