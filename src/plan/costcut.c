/*
 * costcut.c - the cost program's configuration cuts (plan/cost.c builds
 * the program, plan/costsolve.c solves it): a sharing-pool group's cards
 * cover the dual prices of its clients' configuration LP (plan/poolcfg.c's
 * configurations, plan/config.c's LP), which no layout violates; made at a
 * group's first use and again, stronger, where a solution breaks one.
 */
#include "plan/cost_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Group gi's clients as a bin-packing class: every workload whose class
 * may join the group (a class's workloads may be of several tenants of the
 * trust set), alike ones one type (plan/poolcfg.c), its configurations
 * listed up to each type's demand (every client's replicas); per class
 * column, the types of its workloads (k->pairs). NULL when a client
 * spreads, the class is too large to list, or out of memory (*nomem). */
static struct cost_cut_class *cut_class(const struct cost *c, int gi, int *nomem)
{
    const struct cost_group *g = &c->gs[gi];
    struct plan_pool_class pc = {c->m, c->models[g->slot].model, g->mech, NULL, 0, NULL, NULL};
    size_t n = 0;
    for (size_t r = 0; r < c->d->nrows; r++)
        for (size_t a = c->first[c->cls[r]]; a < c->first[c->cls[r] + 1]; a++)
            n += c->grp[a] == gi;
    struct cost_cut_class *k = calloc(1, sizeof(*k));
    pc.rows = calloc(n + 1, sizeof(*pc.rows));
    int *demand = calloc(n + 1, sizeof(*demand));
    struct cost_cut_pair *pairs = calloc(n + 1, sizeof(*pairs));
    size_t *head = calloc(c->nalt + 1, sizeof(*head)); /* per column: its own pair */
    int ok = k && pc.rows && demand && pairs && head, spread = 0;
    for (size_t r = 0; ok && !spread && r < c->d->nrows; r++) {
        size_t q = c->cls[r];
        for (size_t a = c->first[q]; !spread && a < c->first[q + 1]; a++) {
            if (c->grp[a] != gi)
                continue;
            const struct decide_row *x = &c->alt[c->first[r] + (a - c->first[q])];
            spread = plan__cost_spread(x);
            size_t t = 0;
            while (t < pc.ntypes && !plan__pool_same_client(pc.rows[t], x))
                t++;
            if (t == pc.ntypes)
                pc.rows[pc.ntypes++] = x;
            demand[t] += x->workload->replicas;
            if (r == q)
                head[a] = k->npairs;
            pairs[k->npairs++] = (struct cost_cut_pair){a, t, r == q, 0};
        }
    }
    for (size_t i = 0; ok && i < k->npairs; i++)
        pairs[i].head = head[pairs[i].alt];
    pc.demand = demand;
    if (ok && !spread) {
        struct plan_cfg_sums sums;
        pc.trust = plan__pool_trust_memo(c->m);
        k->cfg = (struct plan_cfg){.ntypes = pc.ntypes,
                                   .demand = demand,
                                   .fits = plan__pool_fits,
                                   .ctx = &pc,
                                   .sums = plan__pool_sums(&pc, &sums),
                                   .max_steps = PLAN_COST_GROUP_CUT_STEPS_MAX};
        ok = pc.trust && plan__cfg_enumerate(&k->cfg);
        plan__cfg_sums_free(&sums);
        k->cfg.ctx = NULL; /* pc and its sums are gone after this */
        k->cfg.fits = NULL;
        k->cfg.sums = NULL;
    }
    *nomem = !(k && pc.rows && demand && pairs && head);
    free(pc.rows);
    free(pc.trust);
    free(head);
    if (!ok || spread) {
        free(demand);
        free(pairs);
        if (k)
            plan__cfg_free(&k->cfg);
        free(k);
        return NULL;
    }
    k->demand = demand;
    k->pairs = pairs;
    return k;
}

void plan__cost_cut_class_free(struct cost_cut_class *k)
{
    if (!k)
        return;
    plan__cfg_free(&k->cfg);
    if (k->lp)
        glp_delete_prob(k->lp);
    free(k->demand);
    free(k->pairs);
    free(k->last);
    free(k);
}

/* A column's value in the program's last solution: the integer one read
 * last (mip), else its LP's. */
static double col_val(const struct cost *c, int col, int mip)
{
    return mip ? c->sol[col] : glp_get_col_prim(c->lp, col);
}

/* The replicas of each type the last solution (mip: the integer one) puts
 * in the group (its class columns' values), in at[], scaled to whole
 * numbers below INT_MAX (an LP's are fractions; only their ratios matter
 * to the dual prices); sum: scratch for ntypes. */
static void solution_demand(const struct cost *c, const struct cost_cut_class *k, int mip,
                            double *sum, int *at)
{
    double top = 0;
    for (size_t t = 0; t < k->cfg.ntypes; t++)
        sum[t] = 0;
    for (size_t i = 0; i < k->npairs; i++) {
        size_t a = k->pairs[i].alt;
        if (k->pairs[i].own)
            sum[k->pairs[i].type] += col_val(c, c->ycol[a], mip) * c->alt[a].workload->replicas;
    }
    for (size_t t = 0; t < k->cfg.ntypes; t++)
        top = sum[t] > top ? sum[t] : top;
    double scale = top > 0 ? PLAN_COST_SEPARATION_SCALE / top : 0;
    for (size_t t = 0; t < k->cfg.ntypes; t++)
        at[t] = (int)lround(sum[t] * scale);
}

/* Each class column's price (per pair, in price[], -1 where another pair
 * of the column holds it): the least of its workloads' types' prices pi,
 * as any of them may be the ones in the group, rounded down to
 * PLAN_COST_CUT_PRICE_STEP (lower prices keep the cut valid; without tiny
 * ones GLPK's bases stay well conditioned). */
static void class_prices(const struct cost_cut_class *k, const double *pi, double *price)
{
    for (size_t i = 0; i < k->npairs; i++)
        price[i] = -1;
    for (size_t i = 0; i < k->npairs; i++) {
        double p = pi[k->pairs[i].type];
        size_t j = k->pairs[i].head;
        price[j] = price[j] < 0 || p < price[j] ? p : price[j];
    }
    for (size_t i = 0; i < k->npairs; i++)
        if (price[i] > 0)
            price[i] = floor(price[i] / PLAN_COST_CUT_PRICE_STEP) * PLAN_COST_CUT_PRICE_STEP;
}

/* The cut: group gi's cards >= each class column's price times its
 * replicas; a separation (sep) added only when the last solution (mip:
 * the integer one) breaks it. ind and val: room for the row. 1 when
 * added. */
static int add_cut(struct cost *c, int gi, const double *price, int sep, int mip, int *ind,
                   double *val)
{
    const struct cost_cut_class *k = c->gs[gi].cuts;
    int len = 1, col = c->gs[gi].col;
    double sum = 0;
    ind[1] = col;
    val[1] = 1;
    for (size_t i = 0; i < k->npairs; i++)
        if (price[i] > 0) {
            size_t a = k->pairs[i].alt;
            ind[++len] = c->ycol[a];
            val[len] = -price[i] * c->alt[a].workload->replicas;
            sum -= val[len] * col_val(c, ind[len], mip);
        }
    if (sep && sum <= col_val(c, col, mip) + PLAN_COST_SEPARATION_MIN)
        return 0; /* the solution keeps it: no stronger cut here */
    int row = glp_add_rows(c->lp, 1);
    glp_set_row_bnds(c->lp, row, GLP_LO, 0, 0);
    glp_set_mat_row(c->lp, row, len, ind, val);
    return 1;
}

/* Group gi's clients as a bin-packing class (cut_class, made once). Its
 * configuration LP's dual prices give a cut: the group's cards are at least
 * the prices of the clients in it (any card holds at most 1). Stronger than
 * memory alone where sizes leave room no client fills. The configurations
 * are listed up to every client's demand, so any dual prices are valid for
 * every solution; the LP's demands pick which: every client's (the group's
 * first cut), or (sep) those of the last solution (mip: the integer one),
 * the cut then the strongest at that solution (a separation, added only
 * when the solution breaks it). No cut when a client spreads or the class
 * is too large to list. Returns 1 with a cut added, 0 without, -1 out of
 * memory. */
static int group_cut(struct cost *c, int gi, int sep, int mip)
{
    int nomem = 0;
    if (!c->gs[gi].cuts)
        c->gs[gi].cuts = cut_class(c, gi, &nomem);
    struct cost_cut_class *k = c->gs[gi].cuts;
    if (!k)
        return nomem ? -1 : 0;
    size_t n = k->npairs > k->cfg.ntypes ? k->npairs : k->cfg.ntypes;
    int *at = calloc(n + 1, sizeof(*at)), *ind = calloc(n + 2, sizeof(*ind));
    double *pi = calloc(n + 1, sizeof(*pi)), *price = calloc(n + 1, sizeof(*price));
    double *val = calloc(n + 2, sizeof(*val));
    int ok = at && ind && pi && price && val, cut = ok;
    struct plan_cfg cfg = k->cfg;
    if (cut && sep) {
        solution_demand(c, k, mip, pi, at);
        cfg.demand = at;
        /* the clients of its last separation: that cut holds them */
        cut = !k->last || memcmp(k->last, at, k->cfg.ntypes * sizeof(*at)) != 0;
    }
    if (cut) {
        c->separation_work += (long)k->cfg.nconfigs;
        cut = plan__cfg_lp_duals(&cfg, &k->lp, pi);
    }
    if (cut) {
        class_prices(k, pi, price);
        cut = add_cut(c, gi, price, sep, mip, ind, val);
    }
    if (sep && ok) {
        free(k->last);
        k->last = at;
        at = NULL;
    }
    free(at);
    free(ind);
    free(pi);
    free(price);
    free(val);
    return ok ? cut : -1;
}

int plan__cost_pool_cuts(struct cost *c, int mip, unsigned char *hit)
{
    int n = 0;
    for (size_t g = 0; g < c->ngs; g++) {
        struct cost_group *x = &c->gs[g];
        if (x->cut == COST_CUT_DONE || col_val(c, x->col, mip) <= 1e-9)
            continue;
        int r = group_cut(c, (int)g, x->cut == COST_CUT_MORE, mip);
        if (r < 0)
            return -1;
        x->cut = r || x->cut == COST_CUT_MORE ? COST_CUT_MORE : COST_CUT_DONE;
        if (hit)
            hit[g] |= r > 0;
        n += r;
    }
    return n;
}
