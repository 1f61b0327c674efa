/*
 * exact.c - the MIG packing as an integer program, solved by GLPK.
 *
 * Variables: x[i,c,s] = item i on card c at start s (only where allowed),
 * y[c] = card c is used. Constraints: every item placed once; on every card
 * each grid unit covered at most once (and only if the card is used);
 * compute slices and per-profile counts within the board's limits; a
 * workload's replicas on distinct cards (or nodes); at most as many cards
 * as the heuristic used; identical cards of one node used in order (breaks
 * symmetry). Objective: minimise cards used. Runs under a time limit; a
 * model above PLAN_EXACT_VARS_MAX variables is left to the heuristic. (A secondary
 * objective, fewest workloads per card, made GLPK run into its time limit
 * on the worked example; mig.c prefers the heuristic's layout, which keeps
 * workloads together, whenever GLPK finds no fewer cards.)
 */
#include "plan/internal.h"

#include <glpk.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"

struct triplets {
    int *ia, *ja;
    double *ar;
    int n;      /* entries are 1-based for GLPK: slot 0 unused */
    size_t cap; /* of each array */
};

static int add(struct triplets *t, int row, int col, double v)
{
    size_t next = (size_t)t->n + 1, ia_cap = t->cap, ja_cap = t->cap, ar_cap = t->cap;
    if (!ts_grow((void **)&t->ia, &ia_cap, next, sizeof(*t->ia)) ||
        !ts_grow((void **)&t->ja, &ja_cap, next, sizeof(*t->ja)) ||
        !ts_grow((void **)&t->ar, &ar_cap, next, sizeof(*t->ar)))
        return 0;
    t->cap = ia_cap; /* the three grow together */
    t->n++;
    t->ia[t->n] = row;
    t->ja[t->n] = col;
    t->ar[t->n] = v;
    return 1;
}

struct var {
    int item, card, start;
};

struct model {
    const struct plan_mig *pm;
    glp_prob *lp;
    struct triplets t;
    struct var *vars; /* column k (1-based) for k <= nx; y columns follow */
    int nx, ycol0;
    int ok;
};

static int new_row(struct model *m, int type, double bound)
{
    int r = glp_add_rows(m->lp, 1);
    glp_set_row_bnds(m->lp, r, type, type == GLP_FX || type == GLP_LO ? bound : 0.0,
                     type == GLP_UP || type == GLP_FX ? bound : 0.0);
    return r;
}

static void entry(struct model *m, int row, int col, double v)
{
    if (!add(&m->t, row, col, v))
        m->ok = 0;
}

static int count_vars(const struct plan_mig *pm)
{
    long n = 0;
    for (size_t i = 0; i < pm->nitems; i++)
        for (size_t c = 0; c < pm->ncards; c++)
            if (plan__item_allowed(pm, i, c) && pm->cards[c]->mode == PLAN_FREE)
                n += (long)pm->items[i].profile->nstarts;
    return n > PLAN_EXACT_VARS_MAX ? -1 : (int)n;
}

static void add_columns(struct model *m)
{
    const struct plan_mig *pm = m->pm;
    int k = 0;
    for (size_t i = 0; i < pm->nitems; i++)
        for (size_t c = 0; c < pm->ncards; c++) {
            if (!plan__item_allowed(pm, i, c) || pm->cards[c]->mode != PLAN_FREE)
                continue;
            for (size_t s = 0; s < pm->items[i].profile->nstarts; s++)
                m->vars[k++] = (struct var){(int)i, (int)c, pm->items[i].profile->starts[s]};
        }
    glp_add_cols(m->lp, m->nx + (int)pm->ncards);
    m->ycol0 = m->nx + 1;
    for (int j = 1; j <= m->nx + (int)pm->ncards; j++) {
        glp_set_col_kind(m->lp, j, GLP_BV);
        glp_set_obj_coef(m->lp, j, j < m->ycol0 ? 0.0 : 1.0);
    }
}

static void add_assignment_rows(struct model *m)
{
    for (size_t i = 0; i < m->pm->nitems; i++) {
        int r = new_row(m, GLP_FX, 1.0);
        for (int k = 0; k < m->nx; k++)
            if (m->vars[k].item == (int)i)
                entry(m, r, k + 1, 1.0);
    }
}

static void add_card_rows(struct model *m, size_t c)
{
    const struct plan_mig *pm = m->pm;
    int ycol = m->ycol0 + (int)c;
    for (int u = 0; u < pm->model->grid; u++) {
        int r = new_row(m, GLP_UP, 0.0);
        entry(m, r, ycol, -1.0);
        for (int k = 0; k < m->nx; k++) {
            const struct var *v = &m->vars[k];
            int size = pm->items[v->item].profile->mem_units;
            if (v->card == (int)c && v->start <= u && u < v->start + size)
                entry(m, r, k + 1, 1.0);
        }
    }
    int r = new_row(m, GLP_UP, 0.0);
    entry(m, r, ycol, -(double)pm->model->compute_slices);
    for (int k = 0; k < m->nx; k++)
        if (m->vars[k].card == (int)c)
            entry(m, r, k + 1, pm->items[m->vars[k].item].profile->compute);
    for (size_t p = 0; p < pm->model->nprofiles; p++) {
        const struct cat_profile *prof = &pm->model->profiles[p];
        r = new_row(m, GLP_UP, prof->max_count);
        for (int k = 0; k < m->nx; k++)
            if (m->vars[k].card == (int)c && pm->items[m->vars[k].item].profile == prof)
                entry(m, r, k + 1, 1.0);
    }
}

static int max_group(const struct plan_mig *pm)
{
    int g = -1;
    for (size_t i = 0; i < pm->nitems; i++)
        g = pm->items[i].group > g ? pm->items[i].group : g;
    return g;
}

/* Replicas of one group: at most one per card, or per node. */
static void add_spread_rows(struct model *m)
{
    const struct plan_mig *pm = m->pm;
    for (int g = 0; g <= max_group(pm); g++) {
        int node_spread = 0;
        for (size_t i = 0; i < pm->nitems; i++)
            node_spread |= pm->items[i].group == g && pm->items[i].spread_node;
        for (size_t c = 0; c < pm->ncards; c++) {
            if (node_spread && c > 0 && pm->cards[c - 1]->node == pm->cards[c]->node)
                continue; /* one row per node, made at its first card */
            int r = new_row(m, GLP_UP, 1.0);
            for (int k = 0; k < m->nx; k++) {
                const struct var *v = &m->vars[k];
                int same = node_spread ? pm->cards[v->card]->node == pm->cards[c]->node
                                       : v->card == (int)c;
                if (pm->items[v->item].group == g && same)
                    entry(m, r, k + 1, 1.0);
            }
        }
    }
}

static void add_global_rows(struct model *m, int upper)
{
    const struct plan_mig *pm = m->pm;
    int r = new_row(m, GLP_UP, upper);
    for (size_t c = 0; c < pm->ncards; c++)
        entry(m, r, m->ycol0 + (int)c, 1.0);
    for (size_t c = 1; c < pm->ncards; c++) {
        if (pm->cards[c]->node != pm->cards[c - 1]->node || pm->cards[c]->mode != PLAN_FREE ||
            pm->cards[c - 1]->mode != PLAN_FREE)
            continue;
        r = new_row(m, GLP_UP, 0.0); /* y[c] <= y[c-1] */
        entry(m, r, m->ycol0 + (int)c, 1.0);
        entry(m, r, m->ycol0 + (int)c - 1, -1.0);
    }
    for (size_t c = 0; c < pm->ncards; c++)
        if (pm->cards[c]->mode != PLAN_FREE)
            glp_set_col_bnds(m->lp, m->ycol0 + (int)c, GLP_FX, 0.0, 0.0);
}

static int solve(struct model *m, double time_limit_s, int *card_of, int *optimal)
{
    glp_load_matrix(m->lp, m->t.n, m->t.ia, m->t.ja, m->t.ar);
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = GLP_ON;
    parm.msg_lev = GLP_MSG_OFF;
    parm.tm_lim = (int)(time_limit_s * 1000.0);
    int rc = glp_intopt(m->lp, &parm);
    int status = glp_mip_status(m->lp);
    if ((rc != 0 && rc != GLP_ETMLIM) || (status != GLP_OPT && status != GLP_FEAS))
        return -1;
    *optimal = rc == 0 && status == GLP_OPT;
    for (int k = 0; k < m->nx; k++)
        if (glp_mip_col_val(m->lp, k + 1) > 0.5)
            card_of[m->vars[k].item] = m->vars[k].card;
    int used = 0;
    for (size_t c = 0; c < m->pm->ncards; c++)
        used += glp_mip_col_val(m->lp, m->ycol0 + (int)c) > 0.5;
    return used;
}

int plan__exact(const struct plan_mig *pm, double time_limit_s, int *card_of, int *optimal)
{
    *optimal = 0;
    int nx = count_vars(pm);
    if (nx < 0)
        return PLAN_EXACT_TOO_LARGE;
    if (nx == 0 || pm->nitems == 0)
        return -1;
    struct model m = {pm, glp_create_prob(), {0}, calloc((size_t)nx, sizeof(struct var)), nx, 0, 1};
    int used = -1;
    if (!m.vars)
        goto out;
    glp_term_out(GLP_OFF);
    glp_set_obj_dir(m.lp, GLP_MIN);
    add_columns(&m);
    add_assignment_rows(&m);
    for (size_t c = 0; c < pm->ncards; c++)
        add_card_rows(&m, c);
    add_spread_rows(&m);
    add_global_rows(&m, (int)pm->ncards);
    if (m.ok)
        used = solve(&m, time_limit_s, card_of, optimal);
out:
    glp_delete_prob(m.lp);
    free(m.vars);
    free(m.t.ia);
    free(m.t.ja);
    free(m.t.ar);
    return used;
}
