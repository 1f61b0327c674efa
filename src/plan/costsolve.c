/*
 * costsolve.c - the cost program (plan/cost.c) solved. Its LP, raised by
 * a configuration cut for each sharing-pool group a solution uses
 * (plan/costcut.c). The search (plan_choose_models, plan/choose.c):
 * asked only where decide's models are not already the cheapest, by the
 * LP and in whole cards; its integer solution, with the cuts of the groups
 * it uses, read as each workload's model. A program too large for it gets
 * the kept search (the LP's whole choices kept, the rest searched depth
 * first; then its answer's neighbourhood where that breaks the cuts of the
 * pool groups it uses), a medium one both; where neither finds a
 * solution, the LP is rounded per class. The lower bound on cost: the LP
 * with cuts, the integer optimum where GLPK proves it quickly, else the
 * least open bound of a short branch and bound with Gomory cuts.
 */
#include "plan/cost_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "util/units.h"

/* The program's LP solved again from its last basis (cuts added since:
 * their rows basic, the basis still dual feasible); its optimum, -1 when
 * not solved. */
static double warm_lp(struct cost *c)
{
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.meth = GLP_DUALP;
    if (glp_get_status(c->lp) != GLP_OPT || glp_simplex(c->lp, &parm) != 0 ||
        glp_get_status(c->lp) != GLP_OPT)
        return plan__cost_lp(c);
    return glp_get_obj_val(c->lp);
}

/* The program's LP raised by the pool groups' cuts, at most rounds rounds
 * of them at its solutions (counted: PLAN_COST_SEPARATION_WINDOW and
 * _GAIN, _WORK), until none is broken: its optimum, -1 when not solved, -2
 * when out of memory. */
static double separated_lp(struct cost *c, int rounds)
{
    double lp = plan__cost_lp(c), seen[PLAN_COST_SEPARATION_ROUNDS + 1];
    for (int round = 0; lp >= 0 && round < rounds; round++) {
        seen[round] = lp;
        if (round >= PLAN_COST_SEPARATION_WINDOW &&
            lp - seen[round - PLAN_COST_SEPARATION_WINDOW] < PLAN_COST_SEPARATION_GAIN * lp)
            break; /* tailing off */
        if (c->separation_work > PLAN_COST_SEPARATION_WORK)
            break;
        int cuts = plan__cost_pool_cuts(c, 0, NULL);
        if (cuts <= 0)
            return cuts < 0 ? -2 : lp;
        lp = warm_lp(c);
    }
    return lp;
}

double plan__cost_lp(struct cost *c)
{
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_ON;
    if (glp_simplex(c->lp, &parm) == 0 && glp_get_status(c->lp) == GLP_OPT)
        return glp_get_obj_val(c->lp);
    return -1;
}

/* Every workload fixed on decide's model (its own alternatives: the
 * first, and its copies for other cliques), or (fix 0) free again. */
static void fix_decided(struct cost *c, int fix)
{
    for (size_t r = 0; r < c->d->nrows; r++)
        for (size_t a = c->first[r]; c->cls[r] == r && a < c->first[r + 1]; a++) {
            double n = c->count[a];
            int off = fix && c->alt[a].model != c->d->rows[r].model;
            glp_set_col_bnds(c->lp, c->ycol[a], off ? GLP_FX : GLP_DB, 0, off ? 0 : n);
        }
}

struct cost_search {
    long nodes, max;
    double bound; /* the least bound of the open nodes (or the incumbent) */
    int seen;
};

/* Keeps the search's bound: the least of its open nodes' bounds and its
 * best layout's cost; stops after max nodes. */
static void search_bound(glp_tree *tree, void *info)
{
    struct cost_search *s = info;
    if (glp_ios_reason(tree) != GLP_ISELECT)
        return;
    glp_prob *lp = glp_ios_get_prob(tree);
    int best = glp_ios_best_node(tree);
    if (best) {
        double b = glp_ios_node_bound(tree, best);
        if (glp_mip_status(lp) == GLP_FEAS && glp_mip_obj_val(lp) < b)
            b = glp_mip_obj_val(lp);
        s->bound = b;
        s->seen = 1;
    }
    if (++s->nodes > s->max)
        glp_ios_terminate(tree);
}

/* GLPK's branch and bound on the program, its nodes counted in s
 * (search_bound): presolved, silent, stopping at plan__cost_gap. */
static void search_parm(struct cost *c, glp_iocp *parm, struct cost_search *s)
{
    glp_init_iocp(parm);
    parm->presolve = GLP_ON;
    parm->msg_lev = GLP_MSG_OFF;
    parm->mip_gap = plan__cost_gap(c);
    parm->cb_func = search_bound;
    parm->cb_info = s;
}

/* On a small program (PLAN_COST_PROOF_COLS_MAX, as the bound's proof) no
 * tolerance, as GLPK closes it in milliseconds (seed 527 of
 * `bench/cost_bench.py --pools`: decide's 10.92 was within 0.1% of the
 * optimum 10.91, and kept). */
double plan__cost_gap(struct cost *c)
{
    return plan__cost_cols(c) <= PLAN_COST_PROOF_COLS_MAX ? 0 : PLAN_COST_MIP_GAP;
}

/* The program's integer optimum with decide's models fixed (each pool
 * group a whole number of cards), or lp when branch and bound finds no
 * layout in its node budget (counted, as the bound's). */
static double decided_int(struct cost *c, double lp)
{
    struct cost_search s = {0, PLAN_COST_BOUND_WORK / (glp_get_num_cols(c->lp) + 1), lp, 0};
    glp_iocp parm;
    search_parm(c, &parm, &s);
    int rc = glp_intopt(c->lp, &parm), st = glp_mip_status(c->lp);
    if ((rc == 0 || rc == GLP_ESTOP || rc == GLP_EMIPGAP) && (st == GLP_OPT || st == GLP_FEAS))
        return glp_mip_obj_val(c->lp);
    return lp;
}

/* 1 when decide's models are as cheap as any (within PLAN_COST_MIP_GAP)
 * by the program's LP, and stay so in whole cards: then its integer
 * solution is not worth the time. The LP alone is not enough: where it
 * fills a dear big card with everything (memory as a fluid), decide's
 * models match it, while in whole cards the big card's last one is
 * mostly empty and cheap small cards would hold the rest (a relaxation
 * agreeing with decide says nothing of rounding). Asked of a small program
 * only (PLAN_COST_PROOF_COLS_MAX, as the bound's proof): there rounding is
 * a large share of the cost and the search takes milliseconds; a trace
 * fleet's search runs to its time limit and rounding is under 1% there. */
static int decided_at_lp(struct cost *c)
{
    double free_lp = plan__cost_lp(c);
    fix_decided(c, 1);
    double fixed = plan__cost_lp(c);
    double gap = plan__cost_gap(c);
    int at = free_lp >= 0 && fixed >= 0 && fixed <= free_lp * (1 + gap) + 1e-9;
    if (at && plan__cost_cols(c) <= PLAN_COST_PROOF_COLS_MAX)
        at = decided_int(c, fixed) <= free_lp * (1 + gap) + 1e-9;
    fix_decided(c, 0);
    return at;
}

/* Class q's workloads per alternative from the LP's values: each value
 * rounded down, and those left over one each to the alternatives of the
 * largest fractions. */
static void round_class(const struct cost *c, size_t q, long *left)
{
    size_t lo = c->first[q], hi = c->first[q + 1];
    long rest = c->count[lo];
    for (size_t a = lo; a < hi; a++) {
        left[a] = (long)floor(glp_get_col_prim(c->lp, c->ycol[a]) + 1e-6);
        rest -= left[a];
    }
    for (; rest > 0; rest--) {
        size_t best = lo;
        double most = -1;
        for (size_t a = lo; a < hi; a++) {
            double f = glp_get_col_prim(c->lp, c->ycol[a]) - (double)left[a];
            if (f > most) {
                most = f;
                best = a;
            }
        }
        left[best]++;
    }
}

/* GLPK's integer solution kept as the last one read (c->sol); 0 on out
 * of memory. */
static int keep_solution(struct cost *c)
{
    int n = glp_get_num_cols(c->lp);
    if (n != c->nsol) {
        free(c->sol);
        c->nsol = (c->sol = calloc((size_t)n + 1, sizeof(*c->sol))) ? n : 0;
    }
    if (!c->sol)
        return 0;
    for (int j = 1; j <= n; j++)
        c->sol[j] = glp_mip_col_val(c->lp, j);
    for (size_t k = 0; k < c->nmodels; k++)
        c->sol_cards[k] = glp_mip_row_val(c->lp, c->caprow[k]);
    return 1;
}

/* The solution's workloads per alternative (mip: the integer solution's,
 * kept in c->sol by keep_solution, else the LP's rounded per class),
 * handed to the class's rows in spec order; 0 on out of memory. */
static int read_pins(struct cost *c, const struct cat_model **pins, int mip)
{
    long *left = calloc(c->nalt + 1, sizeof(*left));
    if (!left)
        return 0;
    c->rounded = !mip;
    for (size_t a = 0; mip && a < c->nalt; a++)
        left[a] = c->ycol[a] ? lround(c->sol[c->ycol[a]]) : 0;
    for (size_t r = 0; !mip && r < c->d->nrows; r++)
        if (c->cls[r] == r)
            round_class(c, r, left);
    for (size_t r = 0; r < c->d->nrows; r++) {
        size_t q = c->cls[r], a = c->first[q];
        while (a + 1 < c->first[q + 1] && left[a] <= 0)
            a++;
        left[a]--;
        pins[r] = plan__movable(&c->d->rows[r]) ? c->alt[a].model : NULL;
    }
    free(left);
    return 1;
}

int plan__cost_rounded(struct cost *c, const struct cat_model **pins, double *obj)
{
    double lp = plan__cost_lp(c);
    if (lp < 0 || !read_pins(c, pins, 0))
        return 0;
    *obj = lp;
    return 1;
}

/* The integer program within the time limit; its pool groups without a
 * cut that the solution uses get theirs, and it is solved again (at most
 * PLAN_COST_CUT_ROUNDS times, all within the one time limit; not after a
 * round the limit stopped): a group the LP left empty has only its memory
 * row, which lets the integer solution fill its cards as a fluid (small
 * cards that no packing fills that well). */
int plan__cost_cols(const struct cost *c) { return glp_get_num_cols(c->lp) - c->cfg_cols; }

/* The search's node budget: PLAN_COST_SEARCH_WORK over the program's size
 * to the power 1.5 (GLPK's work per node grows about so). */
static double search_nodes(const struct cost *c)
{
    double size = glp_get_num_cols(c->lp) + glp_get_num_rows(c->lp) + 1;
    return PLAN_COST_SEARCH_WORK / (size * sqrt(size));
}

/* Each class alternative to which the program's LP gives a whole number
 * of workloads held there (fix_decided(c, 0) frees them again). */
static void hold_whole(struct cost *c)
{
    for (size_t a = 0; a < c->nalt; a++) {
        if (!c->ycol[a])
            continue;
        double v = glp_get_col_prim(c->lp, c->ycol[a]), n = floor(v + 0.5);
        if (fabs(v - n) < 1e-6)
            glp_set_col_bnds(c->lp, c->ycol[a], GLP_FX, n, n);
    }
}

/* Each full model's cards (the LP fills them to within PLAN_COST_FULL_
 * SLACK) held below the fleet's by the cards its fractional columns would
 * add rounded up (each column's cards a unit times what rounding adds):
 * room to round every one of them up. ind, val: room for a row. */
static void rounding_room(struct cost *c, int *ind, double *val)
{
    for (size_t k = 0; k < c->nmodels; k++) {
        int row = c->caprow[k];
        double ub = glp_get_row_ub(c->lp, row), room = 0;
        if (glp_get_row_prim(c->lp, row) <= ub - PLAN_COST_FULL_SLACK)
            continue;
        int len = glp_get_mat_row(c->lp, row, ind, val);
        for (int i = 1; i <= len; i++) {
            double v = glp_get_col_prim(c->lp, ind[i]), up = ceil(v - 1e-6) - v;
            room += up > 1e-6 ? up * val[i] : 0;
        }
        room = ceil(room - 1e-6);
        glp_set_row_bnds(c->lp, row, GLP_UP, 0, ub > room ? ub - room : 0);
    }
}

/* A column's bounds, saved while a neighbourhood search holds it. */
struct col_bounds {
    int type;
    double lb, ub;
};

/* The incumbent's neighbourhood (a local search): what it frees, the
 * rest held as the incumbent has it. Freed are the classes with workloads
 * in a group that got a cut at the incumbent (hit), every group those
 * classes may join, and the MIG configurations of a model one of them may
 * take a profile on. */
struct hood {
    unsigned char *col; /* per column (1-based): 1 when free */
    unsigned char *grp; /* per group: 1 when free */
    unsigned char *mig; /* per model slot: its MIG configurations free */
};

static void hood_free(struct hood *h)
{
    free(h->col);
    free(h->grp);
    free(h->mig);
}

/* Class q's alternatives, its groups and MIG models freed in h. */
static void hood_class(const struct cost *c, size_t q, struct hood *h)
{
    for (size_t a = c->first[q]; a < c->first[q + 1]; a++) {
        size_t k = plan__cost_slot(c, c->alt[a].model);
        h->col[c->ycol[a]] = 1;
        if (c->grp[a] >= 0)
            h->grp[c->grp[a]] = 1;
        if (c->alt[a].profile && k < c->nmodels)
            h->mig[k] = 1;
    }
}

/* 1 when column j counts cards of a model whose MIG configurations h
 * frees (ind: room for the column's rows). */
static int on_freed_model(const struct cost *c, int j, const struct hood *h, int *ind)
{
    int len = glp_get_mat_col(c->lp, j, ind, NULL);
    for (int i = 1; i <= len; i++)
        for (size_t k = 0; k < c->nmodels; k++)
            if (ind[i] == c->caprow[k] && h->mig[k])
                return 1;
    return 0;
}

/* h marked around the incumbent (c->sol) and the groups hit; 0 on out of
 * memory. */
static int hood_mark(const struct cost *c, const unsigned char *hit, struct hood *h)
{
    int n = glp_get_num_cols(c->lp);
    h->col = calloc((size_t)n + 1, 1);
    h->grp = calloc(c->ngs + 1, 1);
    h->mig = calloc(c->nmodels + 1, 1);
    unsigned char *kind = calloc((size_t)n + 1, 1); /* 1: a class's, 2: a group's */
    int *ind = calloc((size_t)glp_get_num_rows(c->lp) + 1, sizeof(*ind));
    int ok = h->col && h->grp && h->mig && kind && ind;
    for (size_t q = 0; ok && q < c->d->nrows; q++) {
        int in = 0;
        for (size_t a = c->first[q]; c->cls[q] == q && a < c->first[q + 1]; a++) {
            kind[c->ycol[a]] = 1;
            in |= c->grp[a] >= 0 && hit[c->grp[a]] && c->sol[c->ycol[a]] > 0.5;
        }
        if (in)
            hood_class(c, q, h);
    }
    for (size_t g = 0; ok && g < c->ngs; g++) {
        if (!c->gs[g].col)
            continue; /* its configurations' columns instead (a small program's) */
        kind[c->gs[g].col] = 2;
        h->col[c->gs[g].col] = h->grp[g];
    }
    for (int j = 1; ok && j <= n; j++)
        if (!kind[j])
            h->col[j] = on_freed_model(c, j, h, ind);
    free(kind);
    free(ind);
    return ok;
}

/* Every column outside h held at the incumbent's value, its bounds saved
 * in b; or (restore) put back. */
static void hood_hold(struct cost *c, const struct hood *h, struct col_bounds *b, int restore)
{
    int n = glp_get_num_cols(c->lp);
    for (int j = 1; j <= n; j++) {
        if (h->col[j])
            continue;
        if (restore) {
            glp_set_col_bnds(c->lp, j, b[j].type, b[j].lb, b[j].ub);
            continue;
        }
        b[j] = (struct col_bounds){glp_get_col_type(c->lp, j), glp_get_col_lb(c->lp, j),
                                   glp_get_col_ub(c->lp, j)};
        glp_set_col_bnds(c->lp, j, GLP_FX, c->sol[j], c->sol[j]);
    }
}

/* The best integer solution in the incumbent's neighbourhood around the
 * groups hit (hood_mark), by a search of PLAN_COST_HOOD_NODES nodes
 * (counted): the incumbent breaks their new cuts, and the whole program's
 * search finds no solution near it in its budget (every group's cards
 * fractional at once). 1 with a solution (GLPK's), 0 without, -1 on out
 * of memory. */
static int hood_search(struct cost *c, const unsigned char *hit, double left)
{
    struct hood h = {NULL, NULL, NULL};
    struct col_bounds *b = calloc((size_t)glp_get_num_cols(c->lp) + 1, sizeof(*b));
    if (!b || !hood_mark(c, hit, &h)) {
        free(b);
        hood_free(&h);
        return -1;
    }
    hood_hold(c, &h, b, 0);
    struct cost_search s = {0, PLAN_COST_HOOD_NODES, 0, 0};
    glp_iocp parm;
    search_parm(c, &parm, &s);
    parm.bt_tech = GLP_BT_DFS; /* a first solution soon, and better ones near it */
    parm.br_tech = GLP_BR_DTH;
    parm.tm_lim = (int)(left * 1000.0);
    int rc = glp_intopt(c->lp, &parm), st = glp_mip_status(c->lp);
    hood_hold(c, &h, b, 1);
    free(b);
    hood_free(&h);
    return (rc == 0 || rc == GLP_ETMLIM || rc == GLP_ESTOP || rc == GLP_EMIPGAP) &&
           (st == GLP_OPT || st == GLP_FEAS);
}

/* The kept search's first solution: the workloads the LP puts whole on an
 * alternative stay there, and a depth-first search of PLAN_COST_KEPT_NODES
 * nodes (counted) chooses for the rest, down to a first integer solution
 * and on to better ones near it; where it finds none, the same with
 * rounding room on the full models (rounding_room: a solution within it
 * keeps the fleet's cards). 1 with one (GLPK's), 0 without, -1 on out of
 * memory. */
static int kept_first(struct cost *c, double left)
{
    int found = 0, *ind = calloc((size_t)glp_get_num_cols(c->lp) + 1, sizeof(*ind));
    double *val = calloc((size_t)glp_get_num_cols(c->lp) + 1, sizeof(*val));
    double cap[DECIDE_MODELS_MAX];
    for (size_t k = 0; k < c->nmodels; k++)
        cap[k] = glp_get_row_ub(c->lp, c->caprow[k]);
    found = ind && val ? 0 : -1;
    for (int room = 0; found == 0 && room < 2; room++) {
        if (room)
            rounding_room(c, ind, val);
        if (room && warm_lp(c) < 0)
            break;
        hold_whole(c);
        struct cost_search s = {0, PLAN_COST_KEPT_NODES, 0, 0};
        glp_iocp parm;
        search_parm(c, &parm, &s);
        parm.bt_tech = GLP_BT_DFS;
        parm.br_tech = GLP_BR_DTH;
        parm.tm_lim = (int)(left * 1000.0);
        int rc = glp_intopt(c->lp, &parm), st = glp_mip_status(c->lp);
        fix_decided(c, 0);
        found = (rc == 0 || rc == GLP_ETMLIM || rc == GLP_ESTOP || rc == GLP_EMIPGAP) &&
                (st == GLP_OPT || st == GLP_FEAS);
    }
    for (size_t k = 0; k < c->nmodels; k++)
        glp_set_row_bnds(c->lp, c->caprow[k], GLP_UP, 0, cap[k]);
    free(ind);
    free(val);
    return found;
}

/* The round's solution of the kept search, kept in c->sol: where there
 * is an incumbent (hood), its neighbourhood's (hood_search) or the
 * depth-first search's (kept_first), the one tried first (hood_first)
 * unless it finds none. 1 with one, its objective in *obj; 0 with none;
 * -1 on out of memory. */
static int kept_round(struct cost *c, const unsigned char *hit, int hood, int hood_first,
                      double left, double *obj)
{
    int got = hood && hood_first ? hood_search(c, hit, left) : 0;
    if (got == 0)
        got = kept_first(c, left);
    if (got == 0 && hood && !hood_first)
        got = hood_search(c, hit, left);
    if (got > 0) {
        *obj = glp_mip_obj_val(c->lp);
        got = keep_solution(c) ? 1 : -1;
    }
    return got;
}

/* The kept search, of a program too large for the full one (plan__cost_
 * ilp) or before it on a medium one (plan__cost_kept): a first solution
 * (kept_first); its pool groups then get their cuts at it (plan__cost_pool_cuts: its
 * LP fills a group as a fluid, where the layout packs it), and where it
 * breaks them, a solution that keeps them (kept_round: hood_first, a
 * large program's, the neighbourhood's first: its depth-first search
 * mostly finds none once the cuts are in, and where it does, one that
 * breaks as many again), at most PLAN_COST_HOOD_ROUNDS times. 1 with a
 * solution (its models in pins, its objective in *obj), else 0. */
static int kept_search(struct cost *c, double time_limit_s, int hood_first,
                       const struct cat_model **pins, double *obj)
{
    double start = glp_time();
    unsigned char *hit = calloc(c->ngs + 1, 1);
    int found = 0;
    for (int round = 0; hit && round <= PLAN_COST_HOOD_ROUNDS; round++) {
        double left = time_limit_s - glp_difftime(glp_time(), start), val;
        if (left <= 0 || warm_lp(c) < 0)
            break;
        int hood = c->sol && round > 0;
        int got = kept_round(c, hit, hood, hood_first, left, &val);
        got = got > 0 && !read_pins(c, pins, 1) ? -1 : got;
        if (got <= 0) {
            found = got < 0 ? 0 : found; /* out of memory: none */
            break;                       /* none: the last round's solution stands */
        }
        *obj = val;
        found = 1;
        memset(hit, 0, c->ngs + 1);
        if (plan__cost_pool_cuts(c, 1, hit) <= 0)
            break;
    }
    free(hit);
    return found;
}

int plan__cost_kept(struct cost *c, double time_limit_s, const struct cat_model **pins, double *obj)
{
    if (plan__cost_cols(c) <= PLAN_COST_PROOF_COLS_MAX ||
        search_nodes(c) < PLAN_COST_SEARCH_MIN_NODES)
        return 0; /* a small one closes; a large one gets no other search */
    return kept_search(c, time_limit_s, 0, pins, obj);
}

int plan__cost_ilp(struct cost *c, double time_limit_s, const struct cat_model **pins, double *obj)
{
    /* counted, not timed: the same answer on a busy machine as on a quiet
     * one; every round draws on the one budget */
    double nodes = search_nodes(c);
    struct cost_search s = {
        0, nodes < PLAN_COST_SEARCH_NODES ? (long)nodes : PLAN_COST_SEARCH_NODES, 0, 0};
    if (nodes < PLAN_COST_SEARCH_MIN_NODES)
        return kept_search(c, time_limit_s, 1, pins, obj);
    glp_iocp parm;
    search_parm(c, &parm, &s);
    double start = glp_time(), left = time_limit_s;
    int found = 0;
    for (int round = 0; left > 0; round++) {
        parm.tm_lim = (int)(left * 1000.0);
        int rc = glp_intopt(c->lp, &parm), st = glp_mip_status(c->lp);
        if (!(rc == 0 || rc == GLP_ETMLIM || rc == GLP_ESTOP || rc == GLP_EMIPGAP) ||
            !(st == GLP_OPT || st == GLP_FEAS))
            break; /* the last round's solution stands */
        *obj = glp_mip_obj_val(c->lp);
        if (!keep_solution(c) || !read_pins(c, pins, 1))
            return 0;
        found = rc == GLP_ETMLIM || rc == GLP_ESTOP ? 1 : 2; /* 2: it closed */
        if (rc == GLP_ETMLIM || rc == GLP_ESTOP || round == PLAN_COST_CUT_ROUNDS ||
            plan__cost_pool_cuts(c, 1, NULL) <= 0)
            break;
        left = time_limit_s - glp_difftime(glp_time(), start);
    }
    return found;
}

/* With the pool groups' cuts (which the integer program may keep: no
 * layout violates them), a pool that rounds up to a whole dear card shows
 * its price to the LP, where memory alone made decide's model look the
 * cheapest. */
int plan__cost_worth_search(struct cost *c)
{
    if (!c->moves || plan__cost_cols(c) > PLAN_COST_ALTS_MAX)
        return 0;
    /* a program too large for the full search gets the kept one from the
     * LP with its groups' first cuts (separating 10,000 GPUs at load 0.7
     * took 1-2 s) and the cuts at its answers */
    int search = search_nodes(c) >= PLAN_COST_SEARCH_MIN_NODES;
    if (separated_lp(c, search ? PLAN_COST_SEPARATION_ROUNDS : 1) == -2)
        return 0;
    return !decided_at_lp(c);
}

/* The program's integer optimum when GLPK proves it within the short
 * budget of a bound (a small program), else the best bound its branch and
 * bound reached in PLAN_COST_BOUND_NODES_MAX nodes (the least over its open
 * nodes: each is a relaxation of its part of the integer program), else
 * lp: the program relaxes the planner's problem, so its integer optimum,
 * and any bound on it, bounds the cost too. */
static double proven_optimum(struct cost *c, double lp)
{
    if (lp < 0)
        return lp;
    int small = plan__cost_cols(c) <= PLAN_COST_PROOF_COLS_MAX;
    long nodes = small ? PLAN_COST_PROOF_NODES
                       : PLAN_COST_BOUND_WORK / (glp_get_num_cols(c->lp) + 1);
    struct cost_search s = {0, nodes, lp, 0};
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = GLP_OFF; /* the LP's basis is there; the tree's bounds are the program's */
    parm.msg_lev = GLP_MSG_OFF;
    /* Gomory and mixed-integer rounding cuts, valid for the integer
     * program: the 100-GPU trace fleet at load 0.8, seed 1 ends its 1,500
     * nodes at 115.58 against the optimum 115.90, where 5,000 nodes
     * without them reached 114.73 (and either alone, no closer) */
    parm.gmi_cuts = GLP_ON;
    parm.mir_cuts = GLP_ON;
    parm.cb_func = search_bound; /* nodes counted: a busy machine proves what a quiet one does */
    parm.cb_info = &s;
    parm.tm_lim = (int)(PLAN_COST_TIME_S * 1000.0); /* a ceiling only */
    int rc = glp_intopt(c->lp, &parm);
    if (rc == 0 && glp_mip_status(c->lp) == GLP_OPT && glp_mip_obj_val(c->lp) > lp)
        return glp_mip_obj_val(c->lp);
    return s.seen && s.bound > lp ? s.bound : lp;
}

int64_t plan__cost_bound(const struct spec_model *m, const struct cat_catalog *cat,
                         const struct decide_result *d, int card_bound)
{
    struct cost *c = plan__cost_open(m, cat, d, 0);
    double lp = c ? separated_lp(c, PLAN_COST_SEPARATION_ROUNDS) : -1;
    lp = c && lp >= 0 ? proven_optimum(c, lp) : -1;
    if (c && c->nmodels == 1 && card_bound * c->models[0].price > lp)
        lp = card_bound * c->models[0].price; /* one model: cost is cards at one price */
    plan__cost_close(c);
    return lp < 0 ? -1 : (int64_t)floor(lp * TS_MICRO + 1e-3);
}

/* The models pins gives d's rows (a row left NULL: its own model) ruled
 * out of the search: a row is laid out from its model alone (plan__decide_
 * pinned), so every solution that puts each class's workloads on models
 * that class got in pins lays out as pins did. The cut keeps at least one
 * workload on another model: the sum of y over those alternatives is at
 * most the workloads less one. It may rule out more than that layout (a
 * class's counts over its models), so it is the search's, never the
 * bound's. 1 when added, 0 when out of memory. */
int plan__cost_exclude(struct cost *c, const struct cat_model *const *pins)
{
    size_t nrows = c->d->nrows;
    int *ind = calloc(c->nalt + 1, sizeof(*ind));
    double *val = calloc(c->nalt + 1, sizeof(*val));
    unsigned char *in = calloc(c->nalt + 1, 1);
    if (!ind || !val || !in) {
        free(ind);
        free(val);
        free(in);
        return 0;
    }
    for (size_t r = 0; r < nrows; r++) {
        const struct cat_model *model = pins[r] ? pins[r] : c->d->rows[r].model;
        for (size_t a = c->first[c->cls[r]]; a < c->first[c->cls[r] + 1]; a++)
            in[a] |= c->ycol[a] && c->alt[a].model == model;
    }
    int len = 0;
    for (size_t a = 0; a < c->nalt; a++)
        if (in[a]) {
            ind[++len] = c->ycol[a];
            val[len] = 1;
        }
    int row = glp_add_rows(c->lp, 1);
    glp_set_row_bnds(c->lp, row, GLP_UP, 0, (double)nrows - 1);
    glp_set_mat_row(c->lp, row, len, ind, val);
    free(ind);
    free(val);
    free(in);
    return 1;
}

int plan__cost_fewer(struct cost *c, const struct cat_model *model)
{
    size_t k = plan__cost_slot(c, model);
    if (k >= c->nmodels)
        return 0;
    double val = c->rounded ? glp_get_row_prim(c->lp, c->caprow[k]) : c->sol_cards[k];
    double used = floor(val + 1e-6);
    double fewer = ceil(used * PLAN_COST_FEWER_SHARE);
    fewer = fewer < 1 ? 1 : fewer;
    if (used < fewer)
        return 0;
    glp_set_row_bnds(c->lp, c->caprow[k], GLP_UP, 0, used - fewer);
    return 1;
}

int plan__cost_cut_used(struct cost *c) { return plan__cost_pool_cuts(c, !c->rounded, NULL); }
