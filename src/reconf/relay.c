/*
 * relay.c - replanning's exact trade of drains for cards on MIG, for
 * fleets small enough: the keep plan's used MIG cards laid out again as one
 * integer program (GLPK), beside evac.c's search, which it may beat.
 *   x[i,c,s] = instance i on card c at start s: c a used MIG card of its
 *     row's model that the row may run on, s a legal start of its profile;
 *     a held instance (kept under its need) or the canary only where it is;
 *   y[c] = card c used; d[c] = card c drained.
 * Rows: each instance once; on each card every grid unit at most once,
 * compute slices and each profile's count within the board's (y[c] off:
 * nothing); a spread row's replicas one a card (or a node); for an
 * instance where it runs now, x there + d[c] >= 1 (a card already drained
 * in the keep plan: d[c] = 1); the cards used at most the keep plan's
 * minus k, and the drains fewer than the best plan known for as many
 * cards (the search's: so a solve that cannot beat it ends at its bound).
 * Objective: fewest drains. Solved for k = 1, 2, ... until no plan of
 * so few cards exists, the solves together bounded in branch-and-bound nodes
 * (RECONF_RELAY_NODES, counted, so a busy machine plans the same; a
 * wall-clock ceiling too, RECONF_RELAY_MS); a program over
 * RECONF_RELAY_COLS_MAX columns is left to the search. Each answer is
 * checked by plan_verify.
 */
#include <glpk.h>
#include <stdlib.h>
#include <string.h>
#include "reconf/internal.h"
#include "util/grow.h"

struct relay_item {
    size_t g, t; /* p->gpus[g].inst[t] */
    int home;    /* x's column where it runs now, 0: not running there */
};

struct relay_col {
    int item, card, start;
};

struct relay {
    const struct plan *p;
    const struct reconf_plan *cur;
    const struct reconf__rows *rows;
    size_t *card; /* p->gpus index of each card taken */
    size_t ncards;
    struct relay_item *items;
    size_t nitems;
    struct relay_col *cols; /* x's columns, 1-based: cols[k - 1] */
    int nx;
    glp_prob *lp;
    int *ind; /* a row being built: its columns and coefficients */
    double *val;
    int len;
};

static int y_col(const struct relay *r, size_t c) { return r->nx + 1 + (int)c; }
static int d_col(const struct relay *r, size_t c) { return r->nx + 1 + (int)(r->ncards + c); }

static const struct plan_inst *inst_of(const struct relay *r, int i)
{
    return &r->p->gpus[r->items[i].g].inst[r->items[i].t];
}

/* The used MIG cards of p and their instances: 1, 0 when fewer than two
 * cards (nothing to trade), -1 NOMEM. */
static int collect(struct relay *r)
{
    const struct plan *p = r->p;
    size_t n = 0;
    if (!(r->card = malloc((p->ngpus + 1) * sizeof(*r->card))))
        return -1;
    for (size_t i = 0; i < p->ngpus; i++)
        if (p->gpus[i].mode == PLAN_MIG && p->gpus[i].ninst) {
            r->card[r->ncards++] = i;
            n += p->gpus[i].ninst;
        }
    if (!(r->items = malloc((n + 1) * sizeof(*r->items))))
        return -1;
    for (size_t c = 0; c < r->ncards; c++)
        for (size_t t = 0; t < p->gpus[r->card[c]].ninst; t++)
            r->items[r->nitems++] = (struct relay_item){r->card[c], t, 0};
    return r->ncards > 1;
}

/* 1 when instance i may go on card c at all (model, node, held or canary:
 * only where it is). */
static int may_go(const struct relay *r, int i, size_t c)
{
    const struct plan_inst *in = inst_of(r, i);
    const struct plan_gpu *g = &r->p->gpus[r->card[c]];
    if (!in->row || in->held)
        return r->card[c] == r->items[i].g;
    return g->model == in->row->model && g->model == r->p->gpus[r->items[i].g].model &&
           !decide_card_refuses(in->row, g->node, g->model);
}

static int may_start(const struct relay *r, int i, size_t c, int s)
{
    const struct plan_inst *in = inst_of(r, i);
    return (in->row && !in->held) || (r->card[c] == r->items[i].g && s == in->start);
}

/* x's columns: 1, 0 over RECONF_RELAY_COLS_MAX, -1 NOMEM. */
static int columns(struct relay *r)
{
    long n = 0;
    for (size_t i = 0; i < r->nitems && n <= RECONF_RELAY_COLS_MAX; i++)
        for (size_t c = 0; c < r->ncards && n <= RECONF_RELAY_COLS_MAX; c++)
            n += may_go(r, (int)i, c) ? (long)inst_of(r, (int)i)->profile->nstarts : 0;
    if (n > RECONF_RELAY_COLS_MAX)
        return 0;
    size_t all = (size_t)n + 2 * r->ncards + 1;
    r->cols = malloc((size_t)(n + 1) * sizeof(*r->cols));
    r->ind = malloc(all * sizeof(*r->ind));
    r->val = malloc(all * sizeof(*r->val));
    if (!r->cols || !r->ind || !r->val)
        return -1;
    for (size_t i = 0; i < r->nitems; i++)
        for (size_t c = 0; c < r->ncards; c++) {
            const struct cat_profile *pr = inst_of(r, (int)i)->profile;
            for (size_t s = 0; may_go(r, (int)i, c) && s < pr->nstarts; s++)
                if (may_start(r, (int)i, c, pr->starts[s]))
                    r->cols[r->nx++] = (struct relay_col){(int)i, (int)c, pr->starts[s]};
        }
    return 1;
}

static void term(struct relay *r, int col, double v)
{
    r->len++;
    r->ind[r->len] = col;
    r->val[r->len] = v;
}

/* The row built (r->len terms), bounded by type and bound; restarts the
 * next one. */
static void row(struct relay *r, int type, double bound)
{
    int k = glp_add_rows(r->lp, 1);
    glp_set_row_bnds(r->lp, k, type, type == GLP_UP ? 0.0 : bound, type == GLP_LO ? 0.0 : bound);
    glp_set_mat_row(r->lp, k, r->len, r->ind, r->val);
    r->len = 0;
}

static void once_rows(struct relay *r)
{
    for (size_t i = 0; i < r->nitems; i++) {
        for (int k = 0; k < r->nx; k++)
            if (r->cols[k].item == (int)i)
                term(r, k + 1, 1.0);
        row(r, GLP_FX, 1.0);
    }
}

static void card_rows(struct relay *r, size_t c)
{
    const struct cat_model *m = r->p->gpus[r->card[c]].model;
    for (int u = 0; u < m->grid; u++) {
        for (int k = 0; k < r->nx; k++) {
            const struct relay_col *v = &r->cols[k];
            int size = inst_of(r, v->item)->profile->mem_units;
            if (v->card == (int)c && v->start <= u && u < v->start + size)
                term(r, k + 1, 1.0);
        }
        term(r, y_col(r, c), -1.0);
        row(r, GLP_UP, 0.0);
    }
    for (int k = 0; k < r->nx; k++)
        if (r->cols[k].card == (int)c)
            term(r, k + 1, inst_of(r, r->cols[k].item)->profile->compute);
    term(r, y_col(r, c), -(double)m->compute_slices);
    row(r, GLP_UP, 0.0);
    for (size_t q = 0; q < m->nprofiles; q++) {
        for (int k = 0; k < r->nx; k++)
            if (r->cols[k].card == (int)c &&
                inst_of(r, r->cols[k].item)->profile == &m->profiles[q])
                term(r, k + 1, 1.0);
        if (r->len)
            row(r, GLP_UP, m->profiles[q].max_count);
    }
}

/* One replica of a spread row a card (SPEC_SPREAD_GPU) or a node. */
static void spread_rows(struct relay *r)
{
    for (size_t i = 0; i < r->nitems; i++) {
        const struct decide_row *w = inst_of(r, (int)i)->row;
        int first = w && w->workload->spread != SPEC_SPREAD_NONE;
        for (size_t j = 0; first && j < i; j++)
            first = inst_of(r, (int)j)->row != w;
        for (size_t c = 0; first && c < r->ncards; c++) {
            const struct plan_gpu *g = &r->p->gpus[r->card[c]];
            int node = w->workload->spread != SPEC_SPREAD_GPU;
            if (node && c > 0 && r->p->gpus[r->card[c - 1]].node == g->node)
                continue; /* a node's row made at its first card */
            for (int k = 0; k < r->nx; k++) {
                const struct plan_gpu *h = &r->p->gpus[r->card[r->cols[k].card]];
                if (inst_of(r, r->cols[k].item)->row == w && (node ? h->node == g->node : h == g))
                    term(r, k + 1, 1.0);
            }
            if (r->len > 1)
                row(r, GLP_UP, 1.0);
            r->len = 0;
        }
    }
}

/* Each instance's column where it runs now (at its card and start, which
 * the running plan names for its workload), 0 for new work. */
static void homes(struct relay *r)
{
    for (int k = 0; k < r->nx; k++) {
        const struct relay_col *v = &r->cols[k];
        const struct plan_inst *in = inst_of(r, v->item);
        const struct plan_gpu *g = &r->p->gpus[r->card[v->card]];
        const struct reconf_card *rc = reconf_plan_card(r->cur, g->node->name, g->index);
        if (r->card[v->card] != r->items[v->item].g || v->start != in->start || !rc)
            continue;
        for (int h = 0; h < rc->nheld && !r->items[v->item].home; h++)
            if (reconf__at_place(in, &rc->held[h]))
                r->items[v->item].home = k + 1;
    }
}

/* x where it runs + d[c] >= 1; d[c] = 1 on a card the keep plan drains. */
static void drain_rows(struct relay *r)
{
    homes(r);
    for (size_t c = 0; c < r->ncards; c++) {
        if (reconf__drained(&r->p->gpus[r->card[c]], r->cur, r->rows)) {
            glp_set_col_bnds(r->lp, d_col(r, c), GLP_FX, 1.0, 1.0);
            continue;
        }
        for (size_t i = 0; i < r->nitems; i++)
            if (r->items[i].home && r->items[i].g == r->card[c]) {
                term(r, r->items[i].home, 1.0);
                term(r, d_col(r, c), 1.0);
                row(r, GLP_LO, 1.0);
            }
    }
}

/* The program, its last two rows the drains' and the cards' (bounds set
 * per solve). */
static void build(struct relay *r)
{
    r->lp = glp_create_prob();
    glp_set_obj_dir(r->lp, GLP_MIN);
    glp_add_cols(r->lp, r->nx + 2 * (int)r->ncards);
    for (int k = 1; k <= r->nx + 2 * (int)r->ncards; k++) {
        glp_set_col_kind(r->lp, k, GLP_BV);
        glp_set_obj_coef(r->lp, k, k > r->nx + (int)r->ncards ? 1.0 : 0.0);
    }
    once_rows(r);
    for (size_t c = 0; c < r->ncards; c++)
        card_rows(r, c);
    spread_rows(r);
    drain_rows(r);
    for (size_t c = 0; c < r->ncards; c++)
        term(r, d_col(r, c), 1.0);
    row(r, GLP_UP, (double)r->ncards);
    for (size_t c = 0; c < r->ncards; c++)
        term(r, y_col(r, c), 1.0);
    row(r, GLP_UP, (double)r->ncards);
}

/* The solves' budget, shared: branch-and-bound nodes left, and the wall
 * clock's start (a ceiling). */
struct relay_budget {
    long nodes;
    double start;
};

static void count_nodes(glp_tree *tree, void *info)
{
    struct relay_budget *b = info;
    if (glp_ios_reason(tree) == GLP_ISELECT && --b->nodes < 0)
        glp_ios_terminate(tree);
}

/* At most cards cards and drains drains: 1 solved (an integer solution),
 * 0 none exists, -1 none found within the budget. */
static int solve(struct relay *r, size_t cards, int drains, struct relay_budget *b)
{
    double left = RECONF_RELAY_MS - 1000.0 * glp_difftime(glp_time(), b->start);
    if (b->nodes < 0 || left < 1.0)
        return -1;
    int last = glp_get_num_rows(r->lp);
    glp_set_row_bnds(r->lp, last - 1, GLP_UP, 0.0, (double)drains);
    glp_set_row_bnds(r->lp, last, GLP_UP, 0.0, (double)cards);
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = GLP_ON;
    parm.msg_lev = GLP_MSG_OFF;
    parm.tm_lim = (int)left;
    parm.cb_func = count_nodes;
    parm.cb_info = b;
    int rc = glp_intopt(r->lp, &parm), st = glp_mip_status(r->lp);
    if (st == GLP_OPT || st == GLP_FEAS)
        return 1;
    return rc == GLP_ENOPFS || rc == GLP_ENODFS || st == GLP_NOFEAS ? 0 : -1;
}

static int by_start(const void *a, const void *b)
{
    return ((const struct plan_inst *)a)->start - ((const struct plan_inst *)b)->start;
}

/* The solution as a copy of p, in *q: 1, 0 when plan_verify refuses it
 * (the program and the board's rules disagree: not offered), -1 NOMEM. */
static int answer(const struct relay *r, struct plan **q)
{
    struct plan *a = *q = reconf__plan_copy(r->p);
    struct plan_inst *was = a ? malloc((r->nitems + 1) * sizeof(*was)) : NULL;
    int ok = was ? 1 : -1;
    for (size_t i = 0; ok == 1 && i < r->nitems; i++)
        was[i] = a->gpus[r->items[i].g].inst[r->items[i].t];
    for (size_t c = 0; ok == 1 && c < r->ncards; c++)
        a->gpus[r->card[c]].ninst = 0;
    for (int k = 0; ok == 1 && k < r->nx; k++) {
        if (glp_mip_col_val(r->lp, k + 1) < 0.5)
            continue;
        struct plan_gpu *g = &a->gpus[r->card[r->cols[k].card]];
        struct plan_inst in = was[r->cols[k].item];
        in.start = r->cols[k].start;
        ok = ts_arena_grow(&a->arena, (void **)&g->inst, &g->cap, g->ninst, sizeof(in)) ? 1 : -1;
        if (ok == 1)
            g->inst[g->ninst++] = in;
    }
    for (size_t c = 0; ok == 1 && c < r->ncards; c++) {
        struct plan_gpu *g = &a->gpus[r->card[c]];
        g->mode = g->ninst ? PLAN_MIG : PLAN_FREE;
        qsort(g->inst, g->ninst, sizeof(*g->inst), by_start);
    }
    struct ts_error e;
    if (ok == 1 && plan_verify(a, &e) != TS_OK)
        ok = 0;
    free(was);
    if (ok != 1) {
        plan_free(a);
        *q = NULL;
    }
    return ok;
}

static void relay_free(struct relay *r)
{
    if (r->lp)
        glp_delete_prob(r->lp);
    free(r->card);
    free(r->items);
    free(r->cols);
    free(r->ind);
    free(r->val);
}

ts_status reconf__relay(const struct plan *p, const struct reconf_plan *cur,
                        const struct reconf__rows *rows, const int *known, struct plan **out,
                        size_t nout)
{
    struct relay r = {.p = p, .cur = cur, .rows = rows};
    memset(out, 0, nout * sizeof(*out));
    int st = collect(&r);
    st = st == 1 ? columns(&r) : st;
    if (st == 1) {
        build(&r);
        glp_term_out(GLP_OFF);
    }
    struct relay_budget b = {RECONF_RELAY_NODES, glp_time()};
    for (size_t k = 1; st >= 0 && r.lp && k <= nout && k < r.ncards; k++) {
        int cut = known[k - 1] >= 0,
            got = solve(&r, r.ncards - k, cut ? known[k - 1] - 1 : (int)r.ncards, &b);
        if (got < 0 || (got == 0 && !cut))
            break; /* out of budget, or no plan of so few cards */
        st = got ? answer(&r, &out[k - 1]) : st;
    }
    relay_free(&r);
    return st < 0 ? TS_NOMEM : TS_OK;
}
