/*
 * costcfg.c - a sharing-pool group of the cost program (plan/cost.c) as
 * its configuration columns: per maximal set of the group's clients that
 * one card holds (plan/poolcfg.c's test: memory caps, MPS SM shares and
 * clients, one named pool, tenants pairwise trusting), a column of cards
 * filled so, their sum the group's cards (one priced integer column); per
 * client type a covering row (the configurations' cards hold at least the
 * replicas its classes place in the group).
 * Exact for the group, where one column of cards holding the clients'
 * memory as a fluid lets the program pack what no set of cards makes (a
 * 19 GiB guest split over two cards' spare room). Used on a small program
 * (PLAN_COST_PROOF_COLS_MAX workloads and columns before its pools) where
 * the list is short (PLAN_COST_GROUP_CFGS_MAX): small priced pools, where
 * rounding is much of the cost; a trace fleet's groups keep one column of
 * fluid cards and their configuration cut (plan/costcut.c).
 */
#include "plan/cost_int.h"

#include <stdlib.h>

struct group_types {
    struct plan_pool_class pc;
    size_t *type; /* per alternative of the group: its type */
    int *row;     /* per type: its covering row */
};

/* The group's clients as types (alike clients, plan__pool_same_client, one
 * type; a class's workloads are of one tenant, plan/cost.c's same_alt);
 * 0 when one spreads (a class may place several of its workloads' replicas
 * on one card: no type's count says that), -1 on out of memory. */
static int group_types(struct cost *c, int gi, struct group_types *gt)
{
    gt->pc.rows = calloc(c->nalt + 1, sizeof(*gt->pc.rows));
    gt->pc.demand = calloc(c->nalt + 1, sizeof(*gt->pc.demand));
    gt->type = calloc(c->nalt + 1, sizeof(*gt->type));
    if (!gt->pc.rows || !gt->pc.demand || !gt->type)
        return -1;
    for (size_t a = 0; a < c->nalt; a++) {
        const struct decide_row *x = &c->alt[a];
        if (c->grp[a] != gi)
            continue;
        if (plan__cost_spread(x))
            return 0;
        size_t t = 0;
        while (t < gt->pc.ntypes && !plan__pool_same_client(gt->pc.rows[t], x))
            t++;
        if (t == gt->pc.ntypes)
            gt->pc.rows[gt->pc.ntypes++] = x;
        gt->pc.demand[t] += x->workload->replicas * c->count[a];
        gt->type[a] = t;
    }
    return 1;
}

/* The covering rows: per type, its configurations' cards minus the
 * replicas of the classes placed there, at least 0. */
static int cover_rows(struct cost *c, int gi, struct group_types *gt)
{
    gt->row = calloc(gt->pc.ntypes + 1, sizeof(*gt->row));
    if (!gt->row)
        return 0;
    for (size_t t = 0; t < gt->pc.ntypes; t++)
        gt->row[t] = plan__cost_row(c, 0);
    for (size_t a = 0; a < c->nalt; a++)
        if (c->grp[a] == gi &&
            !plan__cost_put(c, gt->row[gt->type[a]], c->ycol[a], -c->alt[a].workload->replicas))
            return 0;
    return 1;
}

/* A configuration's column: unpriced, its cards counted in the group's
 * cards (row link); integer in the search's program (its solution is a
 * packing), continuous in the bound's: a relaxation whose integer
 * optimum (the group's cards and the workloads' models whole) GLPK proves
 * in milliseconds, where with integer configurations it ran out of its
 * 0.2 s budget of then (seed 886 of `bench/cost_bench.py --pools`). */
static int config_col(struct cost *c, int link)
{
    int j = glp_add_cols(c->lp, 1);
    glp_set_col_bnds(c->lp, j, GLP_LO, 0, 0);
    glp_set_col_kind(c->lp, j, c->search ? GLP_IV : GLP_CV);
    return plan__cost_put(c, link, j, -1) ? j : -1;
}

/* The group's cards: one priced integer column (g->col) holding at least
 * its configurations' cards. The configurations alone are exact, but GLPK
 * proves their integer optimum slowly (seed 44 of `bench/cost_bench.py
 * --pools`: 1.1 s, 127 configurations) where with the cards one integer it
 * branches on, 3 ms. */
static int config_cols(struct cost *c, int gi, struct group_types *gt, const struct plan_cfg *cfg)
{
    size_t n = gt->pc.ntypes;
    struct cost_group *g = &c->gs[gi];
    int link = plan__cost_row(c, 0);
    g->col = plan__cost_card_col(c, g->slot);
    if (g->col < 0 || !plan__cost_put(c, link, g->col, 1))
        return 0;
    for (size_t q = 0; q < cfg->nconfigs; q++) {
        int j = config_col(c, link);
        if (j < 0)
            return 0;
        for (size_t t = 0; t < n; t++)
            if (!plan__cost_put(c, gt->row[t], j, cfg->configs[q * n + t]))
                return 0;
    }
    c->cfg_cols += (int)cfg->nconfigs;
    g->cut = COST_CUT_DONE; /* exact: no cut raises it */
    return 1;
}

int plan__cost_group_configs(struct cost *c, int gi)
{
    struct cost_group *g = &c->gs[gi];
    struct group_types gt = {
        {c->m, c->models[g->slot].model, g->mech, NULL, 0, NULL, NULL}, NULL, NULL};
    struct plan_cfg_sums sums = {0};
    struct plan_cfg cfg = {
        .fits = plan__pool_fits, .ctx = &gt.pc, .max_steps = PLAN_COST_CUT_STEPS_MAX};
    int done = group_types(c, gi, &gt);
    if (done > 0) {
        gt.pc.trust = plan__pool_trust_memo(c->m);
        cfg.ntypes = gt.pc.ntypes;
        cfg.demand = gt.pc.demand;
        cfg.sums = plan__pool_sums(&gt.pc, &sums);
        done = plan__cfg_enumerate(&cfg) && cfg.nconfigs <= PLAN_COST_GROUP_CFGS_MAX;
        if (done)
            done = cover_rows(c, gi, &gt) && config_cols(c, gi, &gt, &cfg) ? 1 : -1;
        plan__cfg_free(&cfg);
    }
    plan__cfg_sums_free(&sums);
    free(gt.pc.rows);
    free(gt.pc.demand);
    free(gt.pc.trust);
    free(gt.type);
    free(gt.row);
    return done;
}
