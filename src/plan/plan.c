/*
 * plan.c - plan_build: cards of the fleet, the phases (MIG in mig.c, whole
 * GPUs, pools and guests in pools.c), canonical card order, and totals.
 */
#include "plan/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const plan_mode_names[] = {
    "free", "mig", "whole", "mps", "time-slicing", "memory-fraction", "vgpu", NULL};
const char *const plan_solver_names[] = {"auto", "exact", "heuristic", NULL};

int plan_mode_shares_card(int mode)
{
    return mode == PLAN_MPS || mode == PLAN_TIME_SLICING || mode == PLAN_MEMORY_FRACTION;
}

int plan__add_inst(struct plan *p, struct plan_gpu *gpu, const struct plan_inst *inst)
{
    if (!ts_arena_grow(&p->arena, (void **)&gpu->inst, &gpu->cap, gpu->ninst, sizeof(*gpu->inst)))
        return 0;
    gpu->inst[gpu->ninst++] = *inst;
    return 1;
}

void plan__fail(struct plan_build *b, const struct decide_row *r, const char *fmt, ...)
{
    const struct spec_loc *loc = r ? &r->workload->loc : &b->m->fleet->loc;
    if (r && !b->failed_model)
        b->failed_model = r->model;
    va_list ap;
    va_start(ap, fmt);
    ts_diag_vaddf(b->diag, TS_SEV_ERROR, TS_INFEASIBLE, loc->file, loc->line, loc->column,
                  loc->path, fmt, ap);
    va_end(ap);
}

int64_t plan_cost_per_hour(const struct plan *p)
{
    const struct spec_pricebook *pb = p->model->pricebook;
    int64_t cost = 0;
    for (size_t i = 0; pb && i < p->ngpus; i++) {
        if (p->gpus[i].mode == PLAN_FREE)
            continue;
        int64_t price = cat_price_of(pb, p->gpus[i].model);
        if (price < 0)
            return -1;
        cost += price;
    }
    return pb ? cost : -1;
}

int plan__eligible(const struct decide_row *r, const struct plan_gpu *g)
{
    return decide_card_refuses(r, g->node, g->model) == NULL;
}

const char *plan__constraint_note(struct plan_build *b, const struct decide_row *r)
{
    const char *why = NULL;
    int held = 0, ok = 0;
    for (size_t i = 0; i < b->p->ngpus; i++) {
        const struct plan_gpu *g = &b->p->gpus[i];
        if (g->model != r->model ||
            (i > 0 && b->p->gpus[i - 1].node == g->node && b->p->gpus[i - 1].model == g->model))
            continue; /* one count per node (a node's cards of a model are adjacent) */
        const char *no = decide_card_refuses(r, g->node, g->model);
        held++;
        ok += no == NULL;
        why = why ? why : no;
    }
    if (!why)
        return "";
    return ts_arena_printf(&b->p->arena, " (%s: %d of %d nodes with %s qualify)", why, ok, held,
                           r->model->name);
}

static ts_status make_cards(struct plan_build *b)
{
    const struct spec_fleet *f = b->m->fleet;
    size_t n = 0;
    for (size_t i = 0; i < f->nnodes; i++)
        for (size_t g = 0; g < f->nodes[i].ngpus; g++)
            n += (size_t)f->nodes[i].gpus[g].count;
    b->p->gpus = ts_arena_array(&b->p->arena, n ? n : 1, sizeof(*b->p->gpus));
    if (!b->p->gpus)
        return TS_NOMEM;
    for (size_t i = 0; i < f->nnodes; i++) {
        int index = 0;
        for (size_t g = 0; g < f->nodes[i].ngpus; g++)
            for (int k = 0; k < f->nodes[i].gpus[g].count; k++) {
                struct plan_gpu *gpu = &b->p->gpus[b->p->ngpus++];
                gpu->node = &f->nodes[i];
                gpu->index = index++;
                gpu->model = cat_model_find(b->cat, f->nodes[i].gpus[g].model);
            }
    }
    b->fleet_cards = b->p->ngpus;
    return TS_OK;
}

/* ---- canonical order ---- */

static int mode_rank(int mode)
{
    static const int rank[] = {
        [PLAN_MIG] = 0,          [PLAN_VGPU] = 1,  [PLAN_MPS] = 2, [PLAN_MEMORY_FRACTION] = 3,
        [PLAN_TIME_SLICING] = 4, [PLAN_WHOLE] = 5, [PLAN_FREE] = 6};
    return rank[mode];
}

/* What a card holds, independent of replica numbers: the sorted list of
 * its instances' spec positions. Cards compare on mode, then this list. */
static int holdings(const struct plan_gpu *g, int *keys, int max)
{
    int n = 0;
    for (size_t i = 0; i < g->ninst && n < max; i++)
        keys[n++] = g->inst[i].row ? g->inst[i].row->index : 1 << 30;
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && keys[b - 1] > keys[b]; b--) {
            int t = keys[b];
            keys[b] = keys[b - 1];
            keys[b - 1] = t;
        }
    return n;
}

static int cmp_cards(const void *a, const void *b)
{
    const struct plan_gpu *x = a, *y = b;
    if (mode_rank(x->mode) != mode_rank(y->mode))
        return mode_rank(x->mode) - mode_rank(y->mode);
    int kx[64], ky[64];
    int nx = holdings(x, kx, 64), ny = holdings(y, ky, 64);
    for (int i = 0; i < nx && i < ny; i++)
        if (kx[i] != ky[i])
            return kx[i] - ky[i];
    return ny - nx; /* fuller card first */
}

static int cmp_inst_start(const void *a, const void *b)
{
    const struct plan_inst *x = a, *y = b;
    return x->start - y->start;
}

/* Replicas are interchangeable: number them in card order (and a
 * multi-GPU replica's parts keep one number). One pass over the cards: a
 * row's old replica numbers map to new ones in the order first met. */
static ts_status renumber_replicas(struct plan *p)
{
    const struct decide_result *d = p->decisions;
    size_t *base = calloc(d->nrows + 1, sizeof(*base));
    int *next = calloc(d->nrows + 1, sizeof(*next));
    for (size_t r = 0; base && r < d->nrows; r++)
        base[r + 1] = base[r] + (size_t)d->rows[r].workload->replicas;
    int *map = base ? malloc((base[d->nrows] + 1) * sizeof(*map)) : NULL;
    ts_status st = next && map ? TS_OK : TS_NOMEM;
    for (size_t k = 0; st == TS_OK && k < base[d->nrows]; k++)
        map[k] = -1;
    for (size_t i = 0; st == TS_OK && i < p->ngpus; i++)
        for (size_t k = 0; k < p->gpus[i].ninst; k++) {
            struct plan_inst *in = &p->gpus[i].inst[k];
            if (!in->row)
                continue;
            size_t r = (size_t)(in->row - d->rows);
            if (in->replica < 0 || in->replica >= in->row->workload->replicas)
                continue;
            int *to = &map[base[r] + (size_t)in->replica];
            if (*to < 0)
                *to = next[r]++;
            in->replica = *to;
        }
    free(base);
    free(next);
    free(map);
    return st;
}

/* Within each run of identical cards (same node and model), order the
 * cards by what they hold and renumber them with the run's indices. */
static ts_status canonical_order(struct plan *p)
{
    for (size_t i = 0; i < p->ngpus;) {
        size_t j = i + 1;
        while (j < p->ngpus && p->gpus[j].node == p->gpus[i].node &&
               p->gpus[j].model == p->gpus[i].model)
            j++;
        int first = p->gpus[i].index;
        qsort(&p->gpus[i], j - i, sizeof(p->gpus[0]), cmp_cards);
        for (size_t k = i; k < j; k++) {
            p->gpus[k].index = first + (int)(k - i);
            if (p->gpus[k].mode == PLAN_MIG)
                qsort(p->gpus[k].inst, p->gpus[k].ninst, sizeof(struct plan_inst), cmp_inst_start);
        }
        i = j;
    }
    return renumber_replicas(p);
}

/* ---- totals ---- */

/* How the layout was made. Optimality is claimed only when the lower
 * bound proves it; GLPK's own proofs cover the parts it solved, not the
 * plan, so they are not stated as the plan's. With a PriceBook the plan
 * is optimal only at the cost bound: a plan that meets the card bound but
 * costs more says which bound it meets (issue 30). */
static const char *solver_note(const struct plan_build *b, const struct plan_summary *s)
{
    int cost_open = s->cost_lower_bound > 0 && s->cost_per_hour > s->cost_lower_bound;
    if (s->optimal && cost_open)
        return b->used_exact ? "exact (GLPK; the plan meets the card lower bound, its cost is "
                               "above the cost lower bound)"
                             : "heuristic (the plan meets the card lower bound, its cost is "
                               "above the cost lower bound)";
    if (s->optimal)
        return b->used_exact ? "exact (GLPK)" : "heuristic (the plan meets the lower bound)";
    if (b->glpk_timeout)
        return b->used_exact ? "exact (GLPK, stopped at its time or work limit)"
                             : "heuristic (GLPK stopped at its time or work limit)";
    if (b->glpk_skipped)
        return b->used_exact ? "exact (GLPK) where it ran; some parts too large for GLPK"
                             : "heuristic (too large for GLPK)";
    if (b->used_exact)
        return "exact (GLPK) for MIG and pools; not proven optimal";
    return b->glpk_ran ? "heuristic (GLPK found no layout with fewer cards for the parts it "
                         "solved; not proven optimal)"
                       : "heuristic";
}

void plan_summarise(struct plan *p)
{
    struct plan_summary *s = &p->summary;
    s->gpus_total = (int)p->ngpus;
    s->gpus_used = 0;
    s->reserved_unused_gib = s->idle_gib = 0;
    for (size_t i = 0; i < p->ngpus; i++) {
        const struct plan_gpu *g = &p->gpus[i];
        if (g->mode == PLAN_FREE)
            continue;
        s->gpus_used++;
        double reserved = 0;
        for (size_t k = 0; k < g->ninst; k++) {
            const struct plan_inst *in = &g->inst[k];
            if (in->guest)
                continue;
            reserved += in->mem_gib;
            /* a multi-GPU replica's need is spread over its GPUs; a held
             * instance (kept under its need by a replan) reserves none unused */
            if (in->row && !in->held)
                s->reserved_unused_gib += in->mem_gib - in->row->need_gib / in->row->gpus;
        }
        if (g->model->memory_gib > reserved)
            s->idle_gib += g->model->memory_gib - reserved;
    }
    s->cost_per_hour = plan_cost_per_hour(p);
    s->naive = plan_naive(p->decisions);
    s->savings_percent = s->naive > 0 ? 100.0 * (s->naive - s->gpus_used) / s->naive : 0;
    s->dedicated = plan_dedicated(p->decisions);
    s->savings_dedicated_percent = s->dedicated > 0
                                       ? 100.0 * (s->dedicated - s->gpus_used) / s->dedicated
                                       : 0;
    s->optimal = s->gpus_used <= s->lower_bound;
    s->cost_gap_percent = !plan_has_cost_bound(s) ? 0
                          : s->cost_lower_bound > 0
                              ? 100.0 * (double)(s->cost_per_hour - s->cost_lower_bound) /
                                    (double)s->cost_lower_bound
                          : s->cost_per_hour > 0 ? -1
                                                 : 0;
}

int plan_has_cost_bound(const struct plan_summary *s)
{
    return s->cost_per_hour >= 0 && s->cost_lower_bound >= 0;
}

static void totals(struct plan_build *b)
{
    struct plan_summary *s = &b->p->summary;
    s->lower_bound = b->bound;
    s->cost_lower_bound = b->cost_bound ? plan__cost_bound(b->m, b->cat, b->d, b->bound) : -1;
    plan_summarise(b->p);
    s->solver = solver_note(b, s);
}

/* The planner's input cap: instances (replicas x GPUs) over all workloads. */
static ts_status check_size(struct plan_build *b)
{
    long total = 0;
    for (size_t i = 0; i < b->d->nrows; i++)
        total += (long)b->d->rows[i].workload->replicas * b->d->rows[i].gpus;
    if (total <= PLAN_MAX_INSTANCES)
        return TS_OK;
    plan__fail(b, NULL,
               "the spec asks for %ld GPU instances (replicas x GPUs over all "
               "workloads); tessera plans at most %d in one run: split the fleet into several "
               "specs",
               total, PLAN_MAX_INSTANCES);
    return TS_TOO_LARGE;
}

/* One layout, up to the pools: whole GPUs before MIG (whole_first) or after. */
static ts_status layout(struct plan_build *b, int whole_first, struct plan **out)
{
    struct plan *p = calloc(1, sizeof(*p));
    if (!p)
        return TS_NOMEM;
    ts_arena_init(&p->arena);
    p->model = b->m;
    p->decisions = b->d;
    b->p = p;
    b->whole_done = 0;
    ts_status st = check_size(b);
    if (st == TS_OK)
        st = make_cards(b);
    if (st == TS_OK && b->hold_spread)
        st = plan__hold(b);
    if (st == TS_OK && whole_first)
        st = plan__whole(b);
    if (st == TS_OK)
        st = plan__mig(b);
    if (b->hold_spread)
        plan__hold_release(b);
    if (st == TS_OK && b->spare)
        st = plan__spare_add(b);
    int before = b->diag->count + b->diag->dropped;
    b->pools_failed = 0;
    if (st == TS_OK) {
        st = plan__pools(b);
        b->pools_failed = before == 0 &&
                          (st == TS_INFEASIBLE || b->diag->count + b->diag->dropped > before);
    }
    if (st == TS_OK && (b->diag->count || b->diag->dropped))
        st = TS_INFEASIBLE;
    if (st != TS_OK) {
        plan_free(p);
        return st;
    }
    plan_summarise(p);
    *out = p;
    return TS_OK;
}

/* Is a cheaper than b: lower PriceBook cost (when both have one), else
 * fewer cards? */
static int cheaper(const struct plan *a, const struct plan *b)
{
    const struct plan_summary *x = &a->summary, *y = &b->summary;
    if (x->cost_per_hour >= 0 && y->cost_per_hour >= 0 && x->cost_per_hour != y->cost_per_hour)
        return x->cost_per_hour < y->cost_per_hour;
    return x->gpus_used < y->gpus_used;
}

/* The layout with the pools packed as ever (the group's bound opened, then
 * worst fit) and improved by GLPK where it runs (not in a quick trial). */
static ts_status improved_layout(struct plan_build *b, int whole_first, struct plan **out)
{
    ts_status st = layout(b, whole_first, out);
    if (st == TS_OK && !b->quick)
        st = plan__improve_pools(b);
    if (st == TS_OK && b->spare)
        st = plan__spare_remove(b);
    if (st != TS_OK) {
        if (*out)
            plan_free(*out);
        *out = NULL;
        return st;
    }
    plan_summarise(*out);
    return TS_OK;
}

/* When only the pools place not everything: the pools packed first fit
 * decreasing, then with the clients that spread first (pool_ffd 1, 2),
 * then as at first with spare cards (plan/spare.c), each improved by
 * GLPK; the first that places everything replaces b.
 * Worst fit and first fit decreasing both strand a spread client where
 * packing by size leaves each card too full for one of its replicas
 * (issue 30: 20, 20, 12, 12 and a spread 4 GiB x2 on two 40 GiB cards).
 * Otherwise st, with b's errors (the first layout's). */
static ts_status rescued_layout(struct plan_build *b, int whole_first, ts_status st,
                                struct plan **out)
{
    /* spare cards only where GLPK's pass may empty them */
    int last = b->opt->solver == PLAN_SOLVER_HEURISTIC ? 2 : 3;
    for (int ffd = 1; st == TS_INFEASIBLE && b->pools_failed && !b->quick && ffd <= last; ffd++) {
        struct plan_build f = *b;
        f.diag = calloc(1, sizeof(*f.diag));
        f.pool_ffd = ffd < 3 ? ffd : 0;
        f.spare = ffd == 3;
        f.used_exact = f.glpk_ran = f.glpk_skipped = f.glpk_timeout = 0;
        f.bound = 0; /* the first may have stopped before summing it */
        f.bound_known = !b->cost_bound;
        ts_status fst = f.diag ? improved_layout(&f, whole_first, out) : TS_NOMEM;
        free(f.diag);
        if (fst == TS_INFEASIBLE)
            continue;
        if (fst == TS_OK) {
            f.diag = b->diag;
            memset(b->diag, 0, sizeof(*b->diag)); /* the first layout's errors */
            *b = f;
        }
        return fst;
    }
    return st;
}

/* That layout and, unless it meets the lower bound, the pools packed first
 * fit decreasing: the cheaper of the two. Neither rule wins on every spec
 * (bench/RESULTS.md), so the plan is never worse than first-fit decreasing.
 * GLPK does not run again on the second (it found nothing there on the
 * trace fleets and took seconds). Failures are the first layout's (the
 * second is tried only when the first places everything; when it does
 * not, rescued_layout). */
static ts_status best_layout(struct plan_build *b, int whole_first, struct plan **out)
{
    struct plan *p = NULL, *q = NULL;
    ts_status st = improved_layout(b, whole_first, &p);
    if (st == TS_INFEASIBLE)
        return rescued_layout(b, whole_first, st, out);
    if (st != TS_OK || p->summary.gpus_used <= b->bound) {
        *out = p;
        return st;
    }
    struct plan_build f = *b;
    f.diag = calloc(1, sizeof(*f.diag));
    f.pool_ffd = 1;
    f.used_exact = f.glpk_ran = f.glpk_skipped = f.glpk_timeout = 0;
    f.bound_known = 1; /* the same decisions: the same bound */
    ts_status fst = f.diag ? layout(&f, whole_first, &q) : TS_NOMEM;
    free(f.diag);
    if (fst == TS_OK && cheaper(q, p)) {
        plan_free(p);
        f.diag = b->diag;
        *b = f;
        p = q;
    } else {
        plan_free(q);
        b->p = p;
    }
    if (fst == TS_NOMEM) {
        plan_free(p);
        return fst;
    }
    *out = p;
    return TS_OK;
}

/* One plan: the best layout, canonical order, totals. */
static ts_status attempt(struct plan_build *b, int whole_first, struct plan **out)
{
    struct plan *p = NULL;
    ts_status st = best_layout(b, whole_first, &p);
    if (st == TS_OK)
        st = canonical_order(p);
    if (st != TS_OK) {
        if (p)
            plan_free(p);
        return st;
    }
    totals(b);
    *out = p;
    return TS_OK;
}

/* Whole GPUs first, so that MIG cannot fragment the nodes a multi-GPU
 * replica needs; when that fails (canary slices or MIG replicas spread
 * across nodes wanted the cards), MIG first; when that fails too, whole
 * GPUs first with cards held for pools spread by node. The errors are the
 * MIG-first try's. */
ts_status plan_build(const struct spec_model *m, const struct cat_catalog *cat,
                     const struct decide_result *d, const struct plan_options *opt,
                     struct plan **out, struct ts_diag *diag)
{
    return plan__build(m, cat, d, opt, 1, out, diag, NULL);
}

ts_status plan__build(const struct spec_model *m, const struct cat_catalog *cat,
                      const struct decide_result *d, const struct plan_options *opt, int cost_bound,
                      struct plan **out, struct ts_diag *diag,
                      const struct cat_model **failed_model)
{
    static const struct plan_options defaults = PLAN_OPTIONS_DEFAULT;
    struct plan_options no_time = {PLAN_SOLVER_HEURISTIC, 0};
    struct ts_diag *scratch = calloc(1, sizeof(*scratch));
    if (!scratch)
        return TS_NOMEM;
    if (opt && opt->time_limit_s <= 0) /* GLPK gets no time: the heuristic's layout */
        opt = &no_time;
    struct ts_diag *mig_first = calloc(1, sizeof(*mig_first));
    if (!mig_first) {
        free(scratch);
        return TS_NOMEM;
    }
    struct plan_build b = {.m = m,
                           .cat = cat,
                           .d = d,
                           .opt = opt ? opt : &defaults,
                           .diag = scratch,
                           .cost_bound = cost_bound > 0,
                           .bound_known = cost_bound <= 0,
                           .quick = cost_bound < 0};
    ts_status st = attempt(&b, 1, out);
    int ran_mig_first = st == TS_INFEASIBLE && !b.quick;
    const struct cat_model *failed = b.failed_model;
    if (ran_mig_first) {
        b = (struct plan_build){.m = m,
                                .cat = cat,
                                .d = d,
                                .opt = b.opt,
                                .diag = mig_first,
                                .cost_bound = cost_bound > 0,
                                .bound_known = cost_bound <= 0};
        st = attempt(&b, 0, out);
        failed = b.failed_model;
    }
    if (st == TS_INFEASIBLE && ran_mig_first && plan__hold_wanted(d)) {
        memset(scratch, 0, sizeof(*scratch));
        b = (struct plan_build){.m = m,
                                .cat = cat,
                                .d = d,
                                .opt = b.opt,
                                .diag = scratch,
                                .hold_spread = 1,
                                .cost_bound = cost_bound > 0,
                                .bound_known = cost_bound <= 0};
        ts_status held = attempt(&b, 1, out);
        st = held == TS_INFEASIBLE ? st : held;
    }
    for (int i = 0; st != TS_OK && ran_mig_first && i < mig_first->count; i++)
        ts_diag_add(diag, &mig_first->items[i]);
    if (st != TS_OK && ran_mig_first)
        diag->dropped += mig_first->dropped;
    if (failed_model)
        *failed_model = st == TS_OK ? NULL : failed;
    free(scratch);
    free(mig_first);
    return st;
}

void plan_free(struct plan *p)
{
    if (!p)
        return;
    ts_arena_free(&p->arena);
    free(p);
}

const char *plan_inst_owner(const struct plan_inst *in, char *buf, size_t size)
{
    if (!in->row)
        snprintf(buf, size, "canary");
    else
        snprintf(buf, size, "%s/%s", in->row->tenant->name, in->row->workload->name);
    return buf;
}
