/*
 * config.c - bin packing in cutting-stock form: a class of items (types with
 * demands) and a test of what one card holds; every maximal configuration
 * (counts per type one card holds, no type can be added) is enumerated, then
 *   - the LP relaxation (min sum x_k, sum_k a_tk x_k >= d_t, x >= 0) gives
 *     the configuration lower bound, ceil(LP);
 *   - the same program in integers (GLPK) gives the fewest cards exactly.
 * A configuration holding more of a type than needed stands for any subset,
 * which a card also holds (what one card holds is closed under removal).
 * Enumeration stops at PLAN_CFG_MAX configurations or PLAN_CFG_NODES_MAX
 * search steps; the caller then keeps its simpler bound and layout.
 */
#include "plan/internal.h"

#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"

struct walk {
    struct plan_cfg *c;
    int *counts;
    size_t *nz; /* types with a nonzero count, ascending (dfs sets them in order) */
    size_t nnz;
    size_t cap; /* of c->configs, in configurations */
    long steps;
    int full; /* a cap was hit or memory ran out */
};

/* Counts fit: do they with one more of type t? */
static int one_more(struct walk *w, size_t t)
{
    const struct plan_cfg *c = w->c;
    if (c->more)
        return c->more(c->ctx, w->counts, w->nz, w->nnz, t);
    w->counts[t]++;
    int fits = c->fits(c->ctx, w->counts);
    w->counts[t]--;
    return fits;
}

static int maximal(struct walk *w)
{
    const struct plan_cfg *c = w->c;
    for (size_t t = 0; t < c->ntypes; t++)
        if (w->counts[t] < c->demand[t] && one_more(w, t))
            return 0;
    return w->nnz > 0;
}

static void keep(struct walk *w)
{
    struct plan_cfg *c = w->c;
    if (c->nconfigs >= PLAN_CFG_MAX) {
        w->full = 1;
        return;
    }
    size_t cap = w->cap;
    if (!ts_grow((void **)&c->configs, &cap, c->nconfigs, c->ntypes * sizeof(int))) {
        w->full = 1;
        return;
    }
    w->cap = cap;
    memcpy(c->configs + c->nconfigs * c->ntypes, w->counts, c->ntypes * sizeof(int));
    c->nconfigs++;
}

/* Counts for types t.. on top of counts[0..t-1] (which fit). */
static void dfs(struct walk *w, size_t t)
{
    long cap = w->c->max_steps > 0 ? w->c->max_steps : PLAN_CFG_NODES_MAX;
    if (w->full || ++w->steps > cap) {
        w->full = 1;
        return;
    }
    if (t == w->c->ntypes) {
        if (maximal(w))
            keep(w);
        return;
    }
    int k = 0;
    while (k < w->c->demand[t] && one_more(w, t)) {
        w->counts[t] = ++k;
        if (k == 1)
            w->nz[w->nnz++] = t;
    }
    for (; k >= 0 && !w->full; k--) {
        w->counts[t] = k;
        if (k == 0 && w->nnz && w->nz[w->nnz - 1] == t)
            w->nnz--;
        dfs(w, t + 1);
    }
    if (w->nnz && w->nz[w->nnz - 1] == t)
        w->nnz--;
    w->counts[t] = 0;
}

int plan__cfg_enumerate(struct plan_cfg *c)
{
    c->configs = NULL;
    c->nconfigs = 0;
    struct walk w = {
        c, calloc(c->ntypes + 1, sizeof(int)), calloc(c->ntypes + 1, sizeof(size_t)), 0, 0, 0, 0};
    if (!w.counts || !w.nz) {
        free(w.counts);
        free(w.nz);
        return 0;
    }
    dfs(&w, 0);
    free(w.counts);
    free(w.nz);
    if (w.full) {
        plan__cfg_free(c);
        return 0;
    }
    return 1;
}

void plan__cfg_free(struct plan_cfg *c)
{
    free(c->configs);
    c->configs = NULL;
    c->nconfigs = 0;
}

/* The covering program; columns integer when ints. */
static glp_prob *program(const struct plan_cfg *c, int ints, int upper)
{
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, (int)c->ntypes + 1);
    for (size_t t = 0; t < c->ntypes; t++)
        glp_set_row_bnds(lp, (int)t + 1, GLP_LO, c->demand[t], 0.0);
    glp_set_row_bnds(lp, (int)c->ntypes + 1, upper >= 0 ? GLP_UP : GLP_FR, 0.0,
                     upper >= 0 ? upper : 0.0);
    glp_add_cols(lp, (int)c->nconfigs);
    int *ia = malloc((c->nconfigs * (c->ntypes + 1) + 1) * sizeof(int));
    int *ja = malloc((c->nconfigs * (c->ntypes + 1) + 1) * sizeof(int));
    double *ar = malloc((c->nconfigs * (c->ntypes + 1) + 1) * sizeof(double));
    int n = 0;
    for (size_t k = 0; ia && ja && ar && k < c->nconfigs; k++) {
        glp_set_col_bnds(lp, (int)k + 1, GLP_LO, 0.0, 0.0);
        glp_set_obj_coef(lp, (int)k + 1, 1.0);
        glp_set_col_kind(lp, (int)k + 1, ints ? GLP_IV : GLP_CV);
        for (size_t t = 0; t <= c->ntypes; t++) {
            int a = t < c->ntypes ? c->configs[k * c->ntypes + t] : 1;
            if (a) {
                n++;
                ia[n] = (int)t + 1, ja[n] = (int)k + 1, ar[n] = a;
            }
        }
    }
    if (ia && ja && ar)
        glp_load_matrix(lp, n, ia, ja, ar);
    else {
        glp_delete_prob(lp);
        lp = NULL;
    }
    free(ia);
    free(ja);
    free(ar);
    return lp;
}

int plan__cfg_lp_bound(const struct plan_cfg *c)
{
    if (c->nconfigs == 0)
        return -1;
    glp_prob *lp = program(c, 0, -1);
    if (!lp)
        return -1;
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    int bound = -1;
    if (glp_simplex(lp, &parm) == 0 && glp_get_status(lp) == GLP_OPT)
        bound = (int)ceil(glp_get_obj_val(lp) - 1e-6);
    glp_delete_prob(lp);
    return bound;
}

int plan__cfg_lp_duals(const struct plan_cfg *c, double *pi)
{
    glp_prob *lp = c->nconfigs ? program(c, 0, -1) : NULL;
    if (!lp)
        return 0;
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    int ok = glp_simplex(lp, &parm) == 0 && glp_get_status(lp) == GLP_OPT;
    for (size_t t = 0; ok && t < c->ntypes; t++) {
        double v = glp_get_row_dual(lp, (int)t + 1);
        pi[t] = v > 0 ? v : 0;
    }
    /* dual feasibility checked here, not trusted to the solver's tolerance:
     * a configuration above 1 scales every price down */
    double top = 1;
    for (size_t k = 0; ok && k < c->nconfigs; k++) {
        double sum = 0;
        for (size_t t = 0; t < c->ntypes; t++)
            sum += pi[t] * c->configs[k * c->ntypes + t];
        top = sum > top ? sum : top;
    }
    for (size_t t = 0; ok && t < c->ntypes; t++)
        pi[t] /= top * (1 + 1e-9);
    glp_delete_prob(lp);
    return ok;
}

struct budget {
    long nodes, max;
    int proven; /* the incumbent meets the best bound of the open nodes */
};

/* Stop after max nodes, or once the incumbent is proven: the objective (a
 * count of cards) is an integer, so ceil(bound) = incumbent proves it. */
static void watch(glp_tree *tree, void *info)
{
    struct budget *bu = info;
    if (glp_ios_reason(tree) != GLP_ISELECT)
        return;
    glp_prob *lp = glp_ios_get_prob(tree);
    int best = glp_ios_best_node(tree);
    if (glp_mip_status(lp) == GLP_FEAS && best &&
        ceil(glp_ios_node_bound(tree, best) - 1e-6) >= glp_mip_obj_val(lp) - 1e-6) {
        bu->proven = 1;
        glp_ios_terminate(tree);
    } else if (++bu->nodes > bu->max) {
        glp_ios_terminate(tree);
    }
}

int plan__cfg_ilp(const struct plan_cfg *c, double time_limit_s, int upper, int *x, int *optimal)
{
    *optimal = 0;
    if (c->nconfigs == 0)
        return -1;
    glp_prob *lp = program(c, 1, upper);
    if (!lp)
        return -1;
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = GLP_ON;
    parm.msg_lev = GLP_MSG_OFF;
    parm.tm_lim = (int)(time_limit_s * 1000.0);
    struct budget bu = {0, c->max_nodes, 0};
    if (c->max_nodes > 0) {
        parm.cb_func = watch;
        parm.cb_info = &bu;
    }
    int rc = glp_intopt(lp, &parm), st = glp_mip_status(lp), used = -1;
    int stopped = rc == GLP_ETMLIM || rc == GLP_ESTOP;
    if ((rc == 0 || stopped) && (st == GLP_OPT || st == GLP_FEAS)) {
        *optimal = (rc == 0 && st == GLP_OPT) || (rc == GLP_ESTOP && bu.proven);
        used = 0;
        for (size_t k = 0; k < c->nconfigs; k++) {
            x[k] = (int)lround(glp_mip_col_val(lp, (int)k + 1));
            used += x[k];
        }
    } else if (rc == GLP_ENOPFS || st == GLP_NOFEAS) {
        *optimal = 1; /* proven: no layout within upper */
    }
    glp_delete_prob(lp);
    return used;
}
