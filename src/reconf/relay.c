/*
 * relay.c - replanning's exact trade of drains for cards on MIG, for
 * fleets small enough: a plan's MIG cards laid out again as one integer
 * program (GLPK). Its cards: the plan's used MIG cards, and the cards that
 * run MIG now and are free in it. From the keep plan it competes with
 * evac.c's search for each number of cards below the keep plan's; from the
 * fresh plan, where no keep plan exists (new work that fits only by moving
 * running work), it gives the plans between the fresh one and what runs.
 *   x[i,c,s] = instance i on card c at start s: c a card of its row's
 *     model that the row may run on, s a legal start of its profile; the
 *     canary (and a held instance, which only the no-drain plan has, never
 *     laid out here) only where it is;
 *   y[c] = card c used; d[c] = card c drained.
 * Rows: each instance once; on each card every grid unit at most once,
 * compute slices and each profile's count within the board's (y[c] off:
 * nothing); a spread row's replicas one a card (or a node); for each
 * instance running on card c of a workload the spec keeps, an instance of
 * its workload and profile at its start there, or d[c] = 1 (replicas are
 * interchangeable, as reconf_steps counts); the cards used at most K, and
 * the drains fewer than the best plan known with K cards less the drains
 * outside the program (so a solve that cannot beat it ends at its bound).
 * Objective: fewest drains. Solved for K from the most down to the cards
 * the instances need at least (compute, memory, a spread row's replicas),
 * until no plan of so few cards exists; the solves together bounded in
 * branch-and-bound nodes (RECONF_RELAY_NODES, counted, so a busy machine
 * plans the same; RECONF_RELAY_MS a wall-clock ceiling that only a far
 * slower one reaches), so an answer is the fewest drains proven where a
 * solve closes, else the fewest found. A program over
 * RECONF_RELAY_COLS_MAX columns is left alone. Each answer is checked by
 * plan_verify.
 */
#include <glpk.h>
#include <stdlib.h>
#include <string.h>
#include "reconf/internal.h"
#include "util/grow.h"

struct relay_item {
    size_t g, t; /* p->gpus[g].inst[t] */
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

/* 1 when card i of p runs MIG now (a card of the same model). */
static int runs_mig(const struct relay *r, size_t i)
{
    const struct plan_gpu *g = &r->p->gpus[i];
    const struct reconf_card *c = reconf_plan_card(r->cur, g->node->name, g->index);
    return c && c->mig && c->nheld > 0 && !strcmp(c->model, g->model->name);
}

/* The cards (p's used MIG cards, and its free ones that run MIG now) and
 * their instances: 1, 0 when fewer than two cards (nothing to trade), -1
 * NOMEM. */
static int collect(struct relay *r)
{
    const struct plan *p = r->p;
    size_t n = 0;
    if (!(r->card = malloc((p->ngpus + 1) * sizeof(*r->card))))
        return -1;
    for (size_t i = 0; i < p->ngpus; i++) {
        const struct plan_gpu *g = &p->gpus[i];
        if ((g->mode == PLAN_MIG && g->ninst) || (g->mode == PLAN_FREE && runs_mig(r, i))) {
            r->card[r->ncards++] = i;
            n += g->ninst;
        }
    }
    if (!(r->items = malloc((n + 1) * sizeof(*r->items))))
        return -1;
    for (size_t c = 0; c < r->ncards; c++)
        for (size_t t = 0; t < p->gpus[r->card[c]].ninst; t++)
            r->items[r->nitems++] = (struct relay_item){r->card[c], t};
    return r->ncards > 1 && r->nitems;
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
        for (size_t c = 0; c < r->ncards && n <= RECONF_RELAY_COLS_MAX; c++) {
            const struct cat_profile *pr = inst_of(r, (int)i)->profile;
            for (size_t s = 0; may_go(r, (int)i, c) && s < pr->nstarts; s++)
                n += may_start(r, (int)i, c, pr->starts[s]);
        }
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

/* Column k places what h ran at its card and start (reconf__at_place). */
static int runs_as(const struct relay *r, int k, size_t c, const struct reconf_want *h)
{
    struct plan_inst at = *inst_of(r, r->cols[k].item);
    at.start = r->cols[k].start;
    return r->cols[k].card == (int)c && reconf__at_place(&at, h);
}

/* For each instance running on card c of a workload the spec keeps: one
 * of its workload and profile at its start, or d[c] = 1. */
static void drain_rows(struct relay *r)
{
    for (size_t c = 0; c < r->ncards; c++) {
        const struct plan_gpu *g = &r->p->gpus[r->card[c]];
        const struct reconf_card *rc = reconf_plan_card(r->cur, g->node->name, g->index);
        int same = rc && rc->mig && !strcmp(rc->model, g->model->name);
        for (int h = 0; rc && h < rc->nheld; h++) {
            if (reconf__row(r->rows, rc->held[h].tenant, rc->held[h].workload) < 0)
                continue; /* its workload left the spec */
            for (int k = 0; same && k < r->nx; k++)
                if (runs_as(r, k, c, &rc->held[h]))
                    term(r, k + 1, 1.0);
            if (!r->len) { /* no way to keep it: drained */
                glp_set_col_bnds(r->lp, d_col(r, c), GLP_FX, 1.0, 1.0);
                break;
            }
            term(r, d_col(r, c), 1.0);
            row(r, GLP_LO, 1.0);
        }
        r->len = 0;
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

/* Cards the solution puts an instance on (y[c] may be 1 on an empty one). */
static size_t used(const struct relay *r)
{
    size_t n = 0;
    for (size_t c = 0; c < r->ncards; c++) {
        int any = 0;
        for (int k = 0; !any && k < r->nx; k++)
            any = r->cols[k].card == (int)c && glp_mip_col_val(r->lp, k + 1) > 0.5;
        n += any;
    }
    return n;
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

static const struct cat_model *model_of(const struct relay *r, size_t i)
{
    return r->p->gpus[r->items[i].g].model;
}

/* Instances of item i's row, where its replicas must spread (else 0). */
static long spread_of(const struct relay *r, size_t i)
{
    const struct decide_row *w = inst_of(r, (int)i)->row;
    long n = 0;
    for (size_t k = 0; w && w->workload->spread != SPEC_SPREAD_NONE && k < r->nitems; k++)
        n += inst_of(r, (int)k)->row == w;
    return n;
}

/* Cards the instances need at least: on each model, its compute slices
 * and memory units over a card's, and a spread row's replicas. */
static size_t need(const struct relay *r)
{
    size_t total = 0;
    for (size_t i = 0; i < r->nitems; i++) {
        const struct cat_model *m = model_of(r, i);
        int first = 1;
        for (size_t j = 0; first && j < i; j++)
            first = model_of(r, j) != m;
        long compute = 0, units = 0, cards = 0;
        for (size_t j = i; first && j < r->nitems; j++) {
            if (model_of(r, j) != m)
                continue;
            compute += inst_of(r, (int)j)->profile->compute;
            units += inst_of(r, (int)j)->profile->mem_units;
            long spread = spread_of(r, j);
            cards = spread > cards ? spread : cards;
        }
        if (!first)
            continue;
        long by_compute = (compute + m->compute_slices - 1) / m->compute_slices;
        long by_units = (units + m->grid - 1) / m->grid;
        cards = by_compute > cards ? by_compute : cards;
        total += (size_t)(by_units > cards ? by_units : cards);
    }
    return total;
}

/* Cards of p outside the program that a drain empties (the same in every
 * answer: the program's drains are counted against known less them). */
static int outside(const struct relay *r)
{
    int n = 0;
    for (size_t i = 0, c = 0; i < r->p->ngpus; i++) {
        if (c < r->ncards && r->card[c] == i) {
            c++;
            continue;
        }
        n += reconf__drained(&r->p->gpus[i], r->cur, r->rows);
    }
    return n;
}

ts_status reconf__relay(const struct plan *p, const struct reconf_plan *cur,
                        const struct reconf__rows *rows, const int *known, struct plan **out,
                        size_t n)
{
    struct relay r = {.p = p, .cur = cur, .rows = rows};
    memset(out, 0, n * sizeof(*out));
    int st = collect(&r);
    st = st == 1 ? columns(&r) : st;
    if (st == 1) {
        build(&r);
        glp_term_out(GLP_OFF);
    }
    struct relay_budget b = {RECONF_RELAY_NODES, glp_time()};
    size_t top = !n ? 0 : r.ncards < n ? r.ncards : n - 1, least = r.lp ? need(&r) : 0;
    int off = r.lp ? outside(&r) : 0;
    for (size_t cards = top; st >= 0 && r.lp && cards > 0 && cards >= least; cards--) {
        int cut = known[cards] >= 0,
            got = solve(&r, cards, cut ? known[cards] - off - 1 : (int)r.ncards, &b);
        if (got < 0 || (got == 0 && !cut))
            break; /* out of budget, or no plan of so few cards */
        size_t u = got ? used(&r) : cards;
        if (got && u < cards) /* it holds for u cards too: the next tries fewer */
            cards = u + 1;
        st = got ? answer(&r, &out[u]) : st;
    }
    relay_free(&r);
    return st < 0 ? TS_NOMEM : TS_OK;
}

/* Cards that ran work in cur and hold none in p. */
static int emptied(const struct plan *p, const struct reconf_plan *cur)
{
    int n = 0;
    for (size_t i = 0; i < p->ngpus; i++) {
        const struct plan_gpu *g = &p->gpus[i];
        const struct reconf_card *c = reconf_plan_card(cur, g->node->name, g->index);
        n += !g->ninst && c && c->nheld > 0;
    }
    return n;
}

ts_status reconf__relay_fresh(const struct plan *fresh, const struct reconf_plan *cur,
                              int fresh_drains, struct plan ***out, int **empty, int **relaid,
                              size_t *n)
{
    size_t all = fresh->ngpus + 1, mig = 0;
    struct reconf__rows rows = {0};
    struct plan **x = calloc(all, sizeof(*x));
    int *known = malloc(all * sizeof(*known));
    *out = calloc(all, sizeof(**out));
    *empty = malloc(all * sizeof(**empty));
    *relaid = malloc(all * sizeof(**relaid));
    *n = 0;
    ts_status st = x && known && *out && *empty && *relaid &&
                           reconf__rows_index(fresh->decisions, &rows)
                       ? TS_OK
                       : TS_NOMEM;
    for (size_t i = 0; i < fresh->ngpus; i++)
        mig += fresh->gpus[i].mode == PLAN_MIG && fresh->gpus[i].ninst;
    for (size_t k = 0; st == TS_OK && k < all; k++)
        known[k] = k == mig ? fresh_drains : -1;
    if (st == TS_OK)
        st = reconf__relay(fresh, cur, &rows, known, x, all);
    for (size_t k = all; x && k-- > 0;) {
        if (!x[k] || st != TS_OK) {
            plan_free(x[k]);
            continue;
        }
        plan_summarise(x[k]);
        x[k]->summary.solver = "replan: running placements kept, MIG cards laid out again";
        (*empty)[*n] = emptied(x[k], cur);
        (*relaid)[*n] = reconf__relaid(x[k], cur, &rows);
        (*out)[(*n)++] = x[k];
    }
    reconf__rows_free(&rows);
    free(x);
    free(known);
    return st;
}
