/*
 * costlearn.c - what a layout teaches the cost search (plan/choose.c).
 * The search's program holds a large sharing-pool group's clients as
 * fluids (memory, MPS shares, clients per card): a trace fleet's groups of
 * a hundred clients "fit" cards filled to 99%, which no packing reaches,
 * so its models lay out a card or more over per group, and over its
 * models' cards. After such a layout, each group the layout gave more
 * cards than the program did holds less per card in the search from then
 * on (as much as that layout put on each); a model whose cards ran out is
 * held below what the program used. The search only: the bound's program
 * (plan__cost_bound) is another and stays a relaxation.
 */
#include "plan/cost_int.h"

#include <math.h>
#include <stdlib.h>

static int pool_card(const struct plan_gpu *g)
{
    return g->ninst > 0 &&
           (g->mode == PLAN_MPS || g->mode == PLAN_TIME_SLICING || g->mode == PLAN_MEMORY_FRACTION);
}

/* The group of card g's first client the program put in a group (-1). */
static int card_group(const struct cost *c, const struct decide_result *alt,
                      const struct plan_gpu *g)
{
    for (size_t i = 0; i < g->ninst; i++) {
        const struct decide_row *r = g->inst[i].row;
        if (!r || r < alt->rows || r >= alt->rows + alt->nrows ||
            (size_t)(r - alt->rows) >= c->d->nrows)
            continue;
        int gi = c->grp[c->pick[r - alt->rows]];
        if (gi >= 0)
            return gi;
    }
    return -1;
}

/* Group gi's fluid rows again, each card holding share of what it held:
 * share * capacity * cards >= its clients' demand. 0 on out of memory. */
static int shrink_group(struct cost *c, int gi, double share)
{
    const struct cost_group *g = &c->gs[gi];
    const struct cat_model *model = c->models[g->slot].model;
    double cap[3] = {model->memory_gib, g->sm ? 100 : 0,
                     g->clients ? (double)model->mps_max_clients : 0};
    int *ind = calloc(c->nalt + 2, sizeof(*ind));
    double *val = calloc(c->nalt + 2, sizeof(*val));
    for (int dim = 0; ind && val && dim < 3; dim++) {
        if (cap[dim] <= 0)
            continue;
        int len = 1;
        ind[1] = g->col;
        val[1] = share * cap[dim];
        for (size_t a = 0; a < c->nalt; a++) {
            const struct decide_row *x = &c->alt[a];
            if (c->grp[a] != gi)
                continue;
            ind[++len] = c->ycol[a];
            val[len] = -(dim == 0   ? x->cap_gib
                         : dim == 1 ? x->sm_percent
                                    : 1) *
                       x->workload->replicas;
        }
        int row = glp_add_rows(c->lp, 1);
        glp_set_row_bnds(c->lp, row, GLP_LO, 0, 0);
        glp_set_mat_row(c->lp, row, len, ind, val);
    }
    int ok = ind && val;
    free(ind);
    free(val);
    return ok;
}

int plan__cost_learn(struct cost *c, const struct decide_result *alt, const struct plan *p)
{
    if (!c->pick || !c->grp || c->ngs == 0)
        return 0;
    int *cards = calloc(c->ngs, sizeof(*cards)), learned = 0;
    if (!cards)
        return -1;
    for (size_t i = 0; i < p->ngpus; i++) {
        int gi = pool_card(&p->gpus[i]) ? card_group(c, alt, &p->gpus[i]) : -1;
        if (gi >= 0)
            cards[gi]++;
    }
    for (size_t gi = 0; gi < c->ngs && learned >= 0; gi++) {
        /* a group listed as its configurations (g->mem 0) is exact */
        double had = c->gs[gi].mem > 0 ? plan__cost_col_val(c, c->gs[gi].col) : 0;
        if (had < 0.5 || cards[gi] <= had + 0.5)
            continue;
        learned = shrink_group(c, (int)gi, had / cards[gi]) ? learned + 1 : -1;
    }
    free(cards);
    return learned;
}
