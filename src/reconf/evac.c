/*
 * evac.c - replanning's trade of drains for cards: from a plan (the keep
 * candidate), empty one used card at a time by moving its instances into
 * free space on the other used cards of its kind (MIG slices, or pool room
 * among tenants that trust each other), never onto a free card; or empty a
 * MIG card with one other used MIG card laid out again beside it (the two
 * cards' instances, largest first, into the other card at its lowest free
 * starts, or at its highest, then into the rest's free space), which a
 * swap or a repack of two cards needs. A card that
 * holds no instance kept from the running plan, or is drained anyway, goes
 * first (moving what is not running yet, or off a drained card, costs no
 * more drain), then the cards with the fewest kept instances and the least
 * load. The search is depth first: its first path is that order's first
 * card that empties alone at each step, then the other cards, orders and
 * pairs (bounded: RECONF_EVAC_SEARCH_MAX), a path dropped where it drains
 * more than the best found for as many cards emptied. The best plan for
 * each number of cards emptied is one plan, one card fewer each; the
 * caller counts its drains (reconf_steps) and keeps the Pareto points.
 */
#include <stdlib.h>
#include <string.h>
#include "reconf/internal.h"
#include "util/grow.h"

int reconf__own_rows(struct plan *p)
{
    const struct decide_result *d = p->decisions;
    struct decide_result *own = ts_arena_alloc(&p->arena, sizeof(*own));
    struct decide_row *rows = ts_arena_array(&p->arena, d->nrows + 1, sizeof(*rows));
    if (!own || !rows)
        return 0;
    *own = (struct decide_result){.rows = rows, .nrows = d->nrows};
    if (d->nrows)
        memcpy(rows, d->rows, d->nrows * sizeof(*rows));
    for (size_t r = 0; r < d->nrows; r++)
        if (rows[r].reason && !(rows[r].reason = ts_arena_strdup(&p->arena, rows[r].reason)))
            return 0;
    for (size_t i = 0; i < p->ngpus; i++)
        for (size_t t = 0; t < p->gpus[i].ninst; t++)
            if (p->gpus[i].inst[t].row)
                p->gpus[i].inst[t].row = &rows[p->gpus[i].inst[t].row - d->rows];
    p->decisions = own;
    return 1;
}

struct plan *reconf__plan_copy(const struct plan *p)
{
    struct plan *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    ts_arena_init(&q->arena);
    q->model = p->model;
    q->decisions = p->decisions;
    q->summary = p->summary;
    q->gpus = ts_arena_array(&q->arena, p->ngpus + 1, sizeof(*q->gpus));
    for (size_t i = 0; q->gpus && i < p->ngpus; i++) {
        const struct plan_gpu *g = &p->gpus[i];
        q->gpus[i] = *g;
        q->gpus[i].inst = ts_arena_array(&q->arena, g->ninst + 1, sizeof(*g->inst));
        q->gpus[i].cap = g->ninst + 1;
        if (!q->gpus[i].inst) {
            plan_free(q);
            return NULL;
        }
        if (g->ninst) /* a free card's inst may be NULL */
            memcpy(q->gpus[i].inst, g->inst, g->ninst * sizeof(*g->inst));
        q->ngpus++;
    }
    if (!q->gpus || !reconf__own_rows(q)) {
        plan_free(q);
        return NULL;
    }
    return q;
}

static int same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* 1 when instance in of g is where running instance h of c is. */
static int at_place(const struct plan_inst *in, const struct reconf_want *h)
{
    return in->row && same_str(h->tenant, in->row->tenant->name) &&
           same_str(h->workload, in->row->workload->name) &&
           (!in->profile || (h->start == in->start && same_str(h->profile, in->profile->name)));
}

/* Instances of g that run at the same place now (emptying g drains it);
 * 0 when g is drained anyway (a running instance of a workload the spec
 * keeps is not kept on it), so emptying it costs no more drain. */
static int kept_here(const struct plan_gpu *g, const struct reconf_plan *cur,
                     const struct reconf__rows *rows)
{
    const struct reconf_card *c = reconf_plan_card(cur, g->node->name, g->index);
    int n = 0;
    if (!c || strcmp(c->model, g->model->name) || strcmp(c->mode, plan_mode_names[g->mode]))
        return 0;
    for (int h = 0; h < c->nheld; h++) {
        int kept = 0;
        for (size_t t = 0; !kept && t < g->ninst; t++)
            kept = at_place(&g->inst[t], &c->held[h]);
        if (!kept && reconf__row(rows, c->held[h].tenant, c->held[h].workload) >= 0)
            return 0;
        n += kept;
    }
    return n;
}

/* A card worth emptying: MIG or a pool, holding only workloads' instances. */
static int emptiable(const struct plan_gpu *g)
{
    if (!g->ninst || (g->mode != PLAN_MIG && !plan_mode_shares_card(g->mode)))
        return 0;
    for (size_t t = 0; t < g->ninst; t++)
        if (!g->inst[t].row)
            return 0; /* the canary stays */
    return 1;
}

static double load(const struct plan_gpu *g)
{
    double u = 0;
    for (size_t t = 0; t < g->ninst; t++)
        u += g->inst[t].profile ? g->inst[t].size : g->inst[t].mem_gib;
    return u;
}

struct order {
    size_t i;
    int kept;
    double load;
};

static int cmp_order(const void *a, const void *b)
{
    const struct order *x = a, *y = b;
    if (x->kept != y->kept)
        return x->kept - y->kept;
    if (x->load != y->load)
        return x->load < y->load ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static int cmp_size(const void *a, const void *b)
{
    const struct plan_inst *x = a, *y = b;
    double sx = x->profile ? x->size : x->mem_gib, sy = y->profile ? y->size : y->mem_gib;
    return (sx < sy) - (sx > sy);
}

static int cmp_start(const void *a, const void *b)
{
    return ((const struct plan_inst *)a)->start - ((const struct plan_inst *)b)->start;
}

/* Instance in (of a card of mode) into another used card of that mode. */
static struct plan_gpu *home(struct plan *p, const struct plan_inst *in, int mode, size_t from)
{
    for (size_t j = 0; j < p->ngpus; j++) {
        struct plan_gpu *g = &p->gpus[j];
        if (j == from || g->mode != mode || !g->ninst || !reconf__usable(p, g, in->row))
            continue;
        int ok = mode == PLAN_MIG ? reconf__mig_start(g, in->profile) >= 0
                                  : reconf__pool_room(p, g, in, mode);
        if (ok)
            return g;
    }
    return NULL;
}

/* The highest legal free start for profile pr on MIG card g, or -1. */
static int top_start(const struct plan_gpu *g, const struct cat_profile *pr)
{
    if (reconf__mig_start(g, pr) < 0) /* count, compute, and a start at all */
        return -1;
    for (size_t s = pr->nstarts; s-- > 0;) {
        int at = pr->starts[s];
        if (at + pr->mem_units <= g->model->grid && !reconf__overlaps(g, NULL, at, pr->mem_units))
            return at;
    }
    return -1;
}

/* Instance in of card from into used card b (repacked: tried first) or
 * another used card of mode; NULL: nowhere. */
static struct plan_gpu *home2(struct plan *p, const struct plan_inst *in, int mode, size_t from,
                              struct plan_gpu *b)
{
    if (b && reconf__usable(p, b, in->row) && reconf__mig_start(b, in->profile) >= 0)
        return b;
    return home(p, in, mode, from);
}

/* moved[0..n) placed in order (b first, at its highest starts when top,
 * then the other used cards of mode at their lowest), to[k] each one's
 * card; *k: how many were tried. 1, 0 one did not fit, -1 NOMEM. */
static int place_all(struct plan *p, const struct plan_inst *moved, size_t n, struct plan_gpu **to,
                     int mode, size_t from, struct plan_gpu *b, int top, size_t *k)
{
    int ok = 1;
    for (*k = 0; ok == 1 && *k < n; (*k)++) {
        struct plan_inst in = moved[*k];
        struct plan_gpu *g = to[*k] = home2(p, &in, mode, from, b);
        if (g && in.profile)
            in.start = top && g == b ? top_start(g, in.profile) : reconf__mig_start(g, in.profile);
        if (!g)
            ok = 0;
        else if (!ts_arena_grow(&p->arena, (void **)&g->inst, &g->cap, g->ninst, sizeof(in)))
            ok = -1;
        else
            g->inst[g->ninst++] = in;
    }
    return ok;
}

/* Move every instance of card i elsewhere, card j (a used MIG card, or
 * (size_t)-1 for none) laid out again with them, j's first (from its top
 * when top); probe: undo even when it works. 1 done, 0 not (p unchanged),
 * -1 NOMEM. */
static int empty_card(struct plan *p, size_t i, size_t j, int top, int probe)
{
    struct plan_gpu *g = &p->gpus[i], *b = j < p->ngpus ? &p->gpus[j] : NULL;
    size_t ng = g->ninst, nb = b ? b->ninst : 0, n = ng + nb, k = 0;
    int mode = g->mode, ok = -1;
    struct plan_inst *was = malloc(2 * (n + 1) * sizeof(*was)), *moved = was ? was + n + 1 : NULL;
    struct plan_gpu **to = malloc((n + 1) * sizeof(*to));
    if (was && to) {
        memcpy(was, g->inst, ng * sizeof(*was));
        if (nb)
            memcpy(was + ng, b->inst, nb * sizeof(*was));
        memcpy(moved, was, n * sizeof(*moved));
        qsort(moved, n, sizeof(*moved), cmp_size);
        g->ninst = 0;
        g->mode = PLAN_FREE;
        if (b)
            b->ninst = 0;
        ok = place_all(p, moved, n, to, mode, i, b, top, &k);
    }
    if (was && to && (ok != 1 || probe)) {             /* undo: each card took its instances last */
        for (size_t u = ok == 1 ? k : k - 1; u-- > 0;) /* a failed k - 1 was not added */
            to[u]->ninst--;
        memcpy(g->inst, was, ng * sizeof(*was));
        g->ninst = ng;
        g->mode = mode;
        if (nb)
            memcpy(b->inst, was + ng, nb * sizeof(*was));
        if (b)
            b->ninst = nb;
    }
    for (size_t u = 0; ok == 1 && !probe && mode == PLAN_MIG && u < n; u++)
        qsort(to[u]->inst, to[u]->ninst, sizeof(*to[u]->inst), cmp_start);
    free(was);
    free(to);
    return ok;
}

/* Cards of p a drain empties now: a running instance of a workload the
 * spec keeps that is not where it ran (the drains reconf_steps counts on
 * these MIG and pool moves). */
static int drains(const struct plan *p, const struct reconf_plan *cur,
                  const struct reconf__rows *rows)
{
    int n = 0;
    for (size_t i = 0; i < p->ngpus; i++) {
        const struct plan_gpu *g = &p->gpus[i];
        const struct reconf_card *c = reconf_plan_card(cur, g->node->name, g->index);
        int same = c && !strcmp(c->model, g->model->name) &&
                   !strcmp(c->mode, plan_mode_names[g->mode]);
        for (int h = 0; c && h < c->nheld; h++) {
            int kept = 0;
            for (size_t t = 0; same && !kept && t < g->ninst; t++)
                kept = at_place(&g->inst[t], &c->held[h]);
            if (!kept && reconf__row(rows, c->held[h].tenant, c->held[h].workload) >= 0) {
                n++;
                break;
            }
        }
    }
    return n;
}

/* The search: the best plan found for each number of cards emptied. */
struct evac {
    const struct reconf_plan *cur;
    struct reconf__rows rows;
    struct plan *best[RECONF_EVACUATIONS_MAX];
    int best_drains[RECONF_EVACUATIONS_MAX];
    size_t n;    /* depths found */
    long budget; /* cards to scan left, past the first order's one-card tries */
    int first;   /* still on the first order (the depth-first path's way down) */
};

/* Cards of p worth emptying, in order (kept, load, index): *n of them. */
static struct order *ordered(const struct plan *p, const struct evac *e, size_t *n)
{
    struct order *o = malloc((p->ngpus + 1) * sizeof(*o));
    *n = 0;
    for (size_t i = 0; o && i < p->ngpus; i++)
        if (emptiable(&p->gpus[i]))
            o[(*n)++] = (struct order){i, kept_here(&p->gpus[i], e->cur, &e->rows),
                                       load(&p->gpus[i])};
    if (o && *n)
        qsort(o, *n, sizeof(*o), cmp_order);
    return o;
}

static int descend(struct evac *e, struct plan *p, size_t depth);

/* Card i emptied (j repacked with it) works on p: its plan q is kept at
 * depth when it drains fewer cards than the best there, and searched on
 * unless it drains more. 1 went on, 0 not, -1 NOMEM. */
static int take(struct evac *e, const struct plan *p, size_t depth, size_t i, size_t j, int top)
{
    struct plan *q = reconf__plan_copy(p);
    int ok = q ? empty_card(q, i, j, top, 0) : -1, d = ok == 1 ? drains(q, e->cur, &e->rows) : 0;
    if (ok == 1 && depth == e->n) {
        e->best[e->n++] = q;
        e->best_drains[depth] = d;
        q = reconf__plan_copy(q);
        ok = q ? 1 : -1;
    } else if (ok == 1 && d < e->best_drains[depth]) {
        plan_free(e->best[depth]);
        e->best[depth] = q;
        e->best_drains[depth] = d;
        q = reconf__plan_copy(q);
        ok = q ? 1 : -1;
    } else if (ok == 1 && d > e->best_drains[depth])
        ok = 0;
    if (ok == 1 && depth + 1 < RECONF_EVACUATIONS_MAX)
        ok = descend(e, q, depth + 1) < 0 ? -1 : 1;
    plan_free(q);
    return ok;
}

/* One try: card i emptied, j (or none) repacked (from its top when top);
 * probed first in place. */
static int try_one(struct evac *e, struct plan *p, size_t depth, size_t i, size_t j, int top)
{
    if (!(e->first && j >= p->ngpus) && (e->budget -= (long)p->ngpus + 1) < 0)
        return 0;
    int ok = empty_card(p, i, j, top, 1);
    return ok == 1 ? take(e, p, depth, i, j, top) : ok;
}

/* Every card of p emptied alone, then with another MIG card repacked, each
 * that works searched on: depth first, so the first path is the old
 * one-card-at-a-time order. -1 NOMEM. */
static int descend(struct evac *e, struct plan *p, size_t depth)
{
    size_t n = 0;
    struct order *o = ordered(p, e, &n);
    int st = o ? 0 : -1;
    for (size_t t = 0; st >= 0 && t < n && t < RECONF_EVAC_TRIES_MAX; t++)
        st = try_one(e, p, depth, o[t].i, (size_t)-1, 0);
    for (size_t t = 0; st >= 0 && t < n && t < RECONF_EVAC_TRIES_MAX; t++)
        for (size_t u = 0; st >= 0 && u < n && u < RECONF_EVAC_PAIRS_MAX; u++)
            if (u != t && p->gpus[o[t].i].mode == PLAN_MIG && p->gpus[o[u].i].mode == PLAN_MIG)
                for (int top = 0; st >= 0 && top < 2; top++)
                    st = try_one(e, p, depth, o[t].i, o[u].i, top);
    e->first = 0;
    free(o);
    return st < 0 ? -1 : 0;
}

ts_status reconf__evacuate(const struct plan *base, const struct reconf_plan *cur,
                           struct plan ***out, size_t *n)
{
    struct evac e = {.cur = cur, .budget = RECONF_EVAC_SEARCH_MAX, .first = 1};
    struct plan *p = reconf__plan_copy(base);
    int st = p && reconf__rows_index(p->decisions, &e.rows) ? descend(&e, p, 0) : -1;
    *out = e.n ? malloc(e.n * sizeof(**out)) : NULL;
    *n = 0;
    st = e.n && !*out ? -1 : st;
    for (size_t k = 0; k < e.n; k++) {
        if (st < 0) {
            plan_free(e.best[k]);
            continue;
        }
        plan_summarise(e.best[k]);
        e.best[k]->summary.solver = "replan: running placements kept, cards emptied";
        (*out)[(*n)++] = e.best[k];
    }
    plan_free(p);
    reconf__rows_free(&e.rows);
    return st < 0 ? TS_NOMEM : TS_OK;
}
