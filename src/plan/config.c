/*
 * config.c - bin packing in cutting-stock form: a class of items (types with
 * demands) and a test of what one card holds; every maximal configuration
 * (counts per type one card holds, no type can be added) is enumerated (the
 * caller's test asked at each step, or its sums kept as the walk goes), then
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
    size_t present; /* types with a nonzero count */
    double *sum;    /* per resource, the counts' use (c->sums) */
    int *blocked;   /* per type, the present types it is apart from (c->sums) */
    size_t cap;     /* of c->configs, in configurations */
    long steps;
    int full; /* a cap was hit or memory ran out */
};

/* Counts fit: do they with one more of type t? */
static int one_more(struct walk *w, size_t t)
{
    const struct plan_cfg *c = w->c;
    const struct plan_cfg_sums *s = c->sums;
    if (!s) {
        w->counts[t]++;
        int fits = c->fits(c->ctx, w->counts);
        w->counts[t]--;
        return fits;
    }
    if (w->counts[t] >= s->most[t] || (!w->counts[t] && w->blocked[t]))
        return 0;
    for (size_t r = 0; r < s->nres; r++)
        if (w->sum[r] + s->use[t * s->nres + r] > s->cap[r])
            return 0;
    return 1;
}

/* counts[t] moved by delta (+1 or -1), the sums kept. */
static void step(struct walk *w, size_t t, int delta)
{
    const struct plan_cfg_sums *s = w->c->sums;
    int was = w->counts[t];
    w->counts[t] += delta;
    if (!was != !w->counts[t])
        w->present += delta;
    if (!s)
        return;
    for (size_t r = 0; r < s->nres; r++)
        w->sum[r] += delta * s->use[t * s->nres + r];
    if (!was != !w->counts[t])
        for (size_t u = 0; u < w->c->ntypes; u++)
            w->blocked[u] += delta * (s->apart[u * w->c->ntypes + t] != 0);
}

static int maximal(struct walk *w)
{
    const struct plan_cfg *c = w->c;
    for (size_t t = 0; t < c->ntypes; t++)
        if (w->counts[t] < c->demand[t] && one_more(w, t))
            return 0;
    return w->present > 0;
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

/* Counts for types t.. on top of counts[0..t-1] (which fit): as many of
 * type t as fit, then one fewer at a time. */
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
    while (w->counts[t] < w->c->demand[t] && one_more(w, t))
        step(w, t, 1);
    for (;;) {
        dfs(w, t + 1);
        if (w->full || w->counts[t] == 0)
            break;
        step(w, t, -1);
    }
    while (w->counts[t] > 0)
        step(w, t, -1);
}

void plan__cfg_sums_free(struct plan_cfg_sums *s)
{
    free(s->use);
    free(s->most);
    free(s->apart);
    memset(s, 0, sizeof(*s));
}

int plan__cfg_enumerate(struct plan_cfg *c)
{
    c->configs = NULL;
    c->nconfigs = 0;
    struct walk w = {.c = c,
                     .counts = calloc(c->ntypes + 1, sizeof(int)),
                     .sum = calloc(PLAN_CFG_RES_MAX, sizeof(double)),
                     .blocked = calloc(c->ntypes + 1, sizeof(int))};
    if (w.counts && w.sum && w.blocked)
        dfs(&w, 0);
    else
        w.full = 1;
    free(w.counts);
    free(w.sum);
    free(w.blocked);
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

/* The kept LP (plan__cfg_lp_duals) with c's demands, solved from its last
 * basis (still dual feasible: only the demands moved); 1 when optimal. */
static int resolve(glp_prob *lp, const struct plan_cfg *c)
{
    for (size_t t = 0; t < c->ntypes; t++)
        glp_set_row_bnds(lp, (int)t + 1, GLP_LO, c->demand[t], 0.0);
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.meth = GLP_DUALP;
    return glp_simplex(lp, &parm) == 0 && glp_get_status(lp) == GLP_OPT;
}

int plan__cfg_lp_duals(const struct plan_cfg *c, glp_prob **keep, double *pi)
{
    int ok = 0;
    glp_prob *lp = keep ? *keep : NULL;
    if (lp)
        ok = resolve(lp, c);
    else {
        lp = c->nconfigs ? program(c, 0, -1) : NULL;
        if (!lp)
            return 0;
        glp_smcp parm;
        glp_init_smcp(&parm);
        parm.msg_lev = GLP_MSG_OFF;
        ok = glp_simplex(lp, &parm) == 0 && glp_get_status(lp) == GLP_OPT;
    }
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
    if (keep)
        *keep = lp;
    else
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

/* Residual demand left[] packed first fit, types by falling dual price
 * (an item's share of a card), each new card appended to c's
 * configurations with one copy in x. Returns the cards opened, -1 when an
 * item fits no card alone or memory runs out. */
static int pack_rest(struct plan_cfg *c, int *left, const double *pi, int **x)
{
    size_t n = c->ntypes, first = c->nconfigs;
    int *counts = calloc(n + 1, sizeof(int));
    size_t *order = calloc(n + 1, sizeof(size_t));
    int opened = counts && order ? 0 : -1;
    for (size_t t = 0; t < n && order; t++)
        order[t] = t;
    for (size_t i = 1; opened == 0 && i < n; i++)
        for (size_t j = i; j > 0 && pi[order[j]] > pi[order[j - 1]]; j--) {
            size_t tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    for (size_t o = 0; opened >= 0 && o < n; o++) {
        size_t t = order[o];
        for (; opened >= 0 && left[t] > 0; left[t]--) {
            size_t k = first;
            for (; k < c->nconfigs; k++) {
                int *cfg = &c->configs[k * n];
                cfg[t]++;
                if (c->fits(c->ctx, cfg))
                    break;
                cfg[t]--;
            }
            if (k < c->nconfigs)
                continue;
            memset(counts, 0, n * sizeof(int));
            counts[t] = 1;
            int *grown = c->fits(c->ctx, counts)
                             ? realloc(c->configs, (c->nconfigs + 1) * n * sizeof(int))
                             : NULL;
            int *more = grown ? realloc(*x, (c->nconfigs + 2) * sizeof(int)) : NULL;
            if (grown)
                c->configs = grown;
            if (!more) {
                opened = -1;
                break;
            }
            *x = more;
            memcpy(&c->configs[c->nconfigs * n], counts, n * sizeof(int));
            (*x)[c->nconfigs++] = 1;
            opened++;
        }
    }
    free(counts);
    free(order);
    return opened;
}

/* The integer program on the configurations the LP prices at its optimum
 * (reduced cost 0: a layout of those alone costs the LP's optimum if one
 * is integer): cards used and x filled, or -1. */
static int tight_ilp(const struct plan_cfg *c, glp_prob *lp, double time_limit_s, int *x)
{
    size_t n = c->ntypes, m = 0;
    size_t *which = calloc(c->nconfigs + 1, sizeof(size_t));
    int *cfg = calloc(c->nconfigs * n + 1, sizeof(int));
    for (size_t k = 0; which && cfg && k < c->nconfigs; k++)
        if (glp_get_col_dual(lp, (int)k + 1) <= 1e-7) {
            memcpy(&cfg[m * n], &c->configs[k * n], n * sizeof(int));
            which[m++] = k;
        }
    struct plan_cfg t = {n, c->demand, c->fits, c->ctx, cfg, m, c->sums, PLAN_POOL_ILP_NODES_MAX,
                         0};
    int *tx = which && cfg && m <= PLAN_POOL_ILP_CONFIGS_MAX ? calloc(m + 1, sizeof(int)) : NULL;
    int optimal = 0, used = tx ? plan__cfg_ilp(&t, time_limit_s, -1, tx, &optimal) : -1;
    for (size_t k = 0; used >= 0 && k < c->nconfigs; k++)
        x[k] = 0;
    for (size_t j = 0; used >= 0 && j < m; j++)
        x[which[j]] = tx[j];
    free(tx);
    free(cfg);
    free(which);
    return used;
}

/* Residual demand left[] packed by the integer program on its own (few
 * items: those of the fractional configurations), its cards appended to
 * c's configurations and x. The cards, -2 when it is too large or finds
 * no layout (then nothing was appended), -1 when memory runs out. */
static int pack_rest_exact(struct plan_cfg *c, const int *left, double time_limit_s, int **x)
{
    struct plan_cfg r = {
        c->ntypes, left, c->fits, c->ctx, NULL, 0, c->sums, PLAN_POOL_ILP_NODES_MAX, c->max_steps};
    int listed = plan__cfg_enumerate(&r) && r.nconfigs > 0 &&
                 r.nconfigs <= PLAN_POOL_ILP_CONFIGS_MAX;
    int *rx = listed ? calloc(r.nconfigs + 1, sizeof(int)) : NULL, optimal = 0, used = -2;
    if (rx)
        used = plan__cfg_ilp(&r, time_limit_s, -1, rx, &optimal);
    size_t n = c->ntypes, add = 0;
    for (size_t k = 0; used >= 0 && k < r.nconfigs; k++)
        add += rx[k] > 0;
    int *grown = used > 0 ? realloc(c->configs, (c->nconfigs + add) * n * sizeof(int)) : NULL;
    int *more = grown ? realloc(*x, (c->nconfigs + add + 1) * sizeof(int)) : NULL;
    if (grown)
        c->configs = grown;
    if (more)
        *x = more;
    if (used > 0 && !more)
        used = -1;
    for (size_t k = 0; used > 0 && k < r.nconfigs; k++) {
        if (rx[k] <= 0)
            continue;
        memcpy(&c->configs[c->nconfigs * n], &r.configs[k * n], n * sizeof(int));
        (*x)[c->nconfigs++] = rx[k];
    }
    free(rx);
    plan__cfg_free(&r);
    return used == -1 && listed ? -2 : used;
}

/* LP solution lp's configurations rounded down into *x, the items left
 * over packed on their own (pack_rest_exact, else pack_rest). Cards, or -1. */
static int floor_rest(struct plan_cfg *c, glp_prob *lp, double time_limit_s, int **x)
{
    size_t n = c->ntypes;
    int *left = calloc(n + 1, sizeof(int));
    double *pi = calloc(n + 1, sizeof(double));
    *x = calloc(c->nconfigs + 1, sizeof(int));
    int cards = left && pi && *x ? 0 : -1;
    for (size_t t = 0; cards == 0 && t < n; t++) {
        left[t] = c->demand[t];
        pi[t] = glp_get_row_dual(lp, (int)t + 1);
    }
    for (size_t k = 0; cards >= 0 && k < c->nconfigs; k++) {
        (*x)[k] = (int)floor(glp_get_col_prim(lp, (int)k + 1) + 1e-9);
        cards += (*x)[k];
        for (size_t t = 0; t < n; t++)
            left[t] -= (*x)[k] * c->configs[k * n + t];
    }
    for (size_t t = 0; cards >= 0 && t < n; t++)
        left[t] = left[t] > 0 ? left[t] : 0;
    int rest = cards >= 0 ? pack_rest_exact(c, left, time_limit_s, x) : -1;
    if (rest == -2)
        rest = pack_rest(c, left, pi, x);
    free(left);
    free(pi);
    return rest < 0 ? -1 : cards + rest;
}

int plan__cfg_lp_round(struct plan_cfg *c, double time_limit_s, int **x)
{
    *x = NULL;
    glp_prob *lp = c->nconfigs ? program(c, 0, -1) : NULL;
    if (!lp)
        return -1;
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    int ok = glp_simplex(lp, &parm) == 0 && glp_get_status(lp) == GLP_OPT;
    size_t listed = c->nconfigs;
    int *tx = ok ? calloc(listed + 1, sizeof(int)) : NULL, *fx = NULL;
    /* the LP's tight configurations first: at the LP's ceiling, optimal */
    int tight = tx ? tight_ilp(c, lp, time_limit_s, tx) : -1, rounded = -1;
    if (tx && (tight < 0 || tight > ceil(glp_get_obj_val(lp) - 1e-6)))
        rounded = floor_rest(c, lp, time_limit_s, &fx);
    glp_delete_prob(lp);
    if (rounded >= 0 && (tight < 0 || rounded < tight)) {
        free(tx);
        *x = fx;
        return rounded;
    }
    free(fx);
    int *grown = tx ? realloc(tx, (c->nconfigs + 1) * sizeof(int)) : NULL;
    if (!grown || tight < 0) {
        free(grown ? grown : tx);
        return -1;
    }
    for (size_t k = listed; k < c->nconfigs; k++) /* floor_rest's cards, unused */
        grown[k] = 0;
    *x = grown;
    return tight;
}
