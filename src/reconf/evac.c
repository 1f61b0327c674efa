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
 * more than the best found for as many cards. Then the same search again
 * with the new work placed after emptying, not before (lift): the keep
 * plan's MIG instances not where they run are taken out, the running ones
 * of their workloads put back at their own starts (a card released for new
 * work runs as it did), and the work taken out placed among each step's
 * moves where it fits, what does not carried to the next step (which may
 * lay one card out again for it alone), and each step's plan, the work in
 * the used cards' free space, a candidate when all of it fits. The best
 * plan for each number of cards (fewer than the keep plan's) is one plan;
 * last, relay.c's exact re-layout of the used MIG cards replaces one where
 * it drains fewer. The caller counts their drains (reconf_steps) and
 * keeps the Pareto points.
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

int reconf__same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

int reconf__at_place(const struct plan_inst *in, const struct reconf_want *h)
{
    return in->row && reconf__same_str(h->tenant, in->row->tenant->name) &&
           reconf__same_str(h->workload, in->row->workload->name) &&
           (!in->profile ||
            (h->start == in->start && reconf__same_str(h->profile, in->profile->name)));
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
            kept = reconf__at_place(&g->inst[t], &c->held[h]);
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

/* An instance being placed: pend when it is new work not placed yet (it
 * may stay so), k its place in the list it came from, to its card. */
struct mv {
    struct plan_inst in;
    int pend;
    size_t k;
    struct plan_gpu *to;
};

/* Largest first; of one size, what must move before new work. */
static int cmp_mv(const void *a, const void *b)
{
    const struct mv *x = a, *y = b;
    int s = cmp_size(&x->in, &y->in);
    if (s || x->pend != y->pend)
        return s ? s : x->pend - y->pend;
    return (x->k > y->k) - (x->k < y->k);
}

/* m[0..n) placed in order (b first, at its highest starts when top, then
 * the other used cards of mode at their lowest), each one's card in its
 * to (NULL: a pending one that found none); *k: how many were tried.
 * 1, 0 one that must move did not fit, -1 NOMEM. */
static int place_all(struct plan *p, struct mv *m, size_t n, int mode, size_t from,
                     struct plan_gpu *b, int top, size_t *k)
{
    for (*k = 0; *k < n; (*k)++) {
        struct plan_inst in = m[*k].in;
        struct plan_gpu *g = m[*k].to = home2(p, &in, mode, from, b);
        if (!g && m[*k].pend)
            continue;
        if (!g)
            return 0;
        if (in.profile)
            in.start = top && g == b ? top_start(g, in.profile) : reconf__mig_start(g, in.profile);
        if (!ts_arena_grow(&p->arena, (void **)&g->inst, &g->cap, g->ninst, sizeof(in))) {
            m[*k].to = NULL;
            return -1;
        }
        g->inst[g->ninst++] = in;
    }
    return 1;
}

/* New work not placed yet (MIG instances only), carried along a path;
 * their rows point into rows (a plan's decision rows: each plan copy has
 * its own). */
struct pending {
    struct plan_inst *in;
    size_t n;
    const struct decide_row *rows;
};

/* The instances of g, of b, and pending work on MIG (its rows p's), into
 * m: *n of them. */
static struct mv *gather(const struct plan *p, const struct plan_gpu *g, const struct plan_gpu *b,
                         const struct pending *w, int mode, size_t *n)
{
    size_t ng = g ? g->ninst : 0, nb = b ? b->ninst : 0, nw = mode == PLAN_MIG ? w->n : 0;
    struct mv *m = malloc((ng + nb + nw + 1) * sizeof(*m));
    *n = 0;
    for (size_t t = 0; m && t < ng + nb + nw; t++) {
        const struct plan_inst *in = t < ng        ? &g->inst[t]
                                     : t < ng + nb ? &b->inst[t - ng]
                                                   : &w->in[t - ng - nb];
        m[(*n)++] = (struct mv){.in = *in, .pend = t >= ng + nb, .k = t};
        if (t >= ng + nb)
            m[*n - 1].in.row = &p->decisions->rows[in->row - w->rows];
    }
    if (m && *n)
        qsort(m, *n, sizeof(*m), cmp_mv);
    return m;
}

/* Move every instance of card i (or none: (size_t)-1) elsewhere, card j (a
 * used MIG card, or none) laid out again with them, j's first (from its
 * top when top), pending work w placed among them where it fits (left in
 * *left, when not NULL; a try with no card emptied must place some);
 * probe: undo even when it works. 1 done, 0 not (p unchanged), -1 NOMEM. */
static int empty_card(struct plan *p, size_t i, size_t j, int top, const struct pending *w,
                      struct pending *left, int probe)
{
    struct plan_gpu *g = i < p->ngpus ? &p->gpus[i] : NULL, *b = j < p->ngpus ? &p->gpus[j] : NULL;
    size_t ng = g ? g->ninst : 0, nb = b ? b->ninst : 0, n = 0, k = 0, placed = 0;
    int mode = g ? g->mode : PLAN_MIG, ok = -1;
    struct plan_inst *was = malloc((ng + nb + 1) * sizeof(*was));
    struct mv *m = was ? gather(p, g, b, w, mode, &n) : NULL;
    if (m) {
        if (g) {
            memcpy(was, g->inst, ng * sizeof(*was));
            g->ninst = 0;
            g->mode = PLAN_FREE;
        }
        if (b) {
            memcpy(was + ng, b->inst, nb * sizeof(*was));
            b->ninst = 0;
        }
        ok = place_all(p, m, n, mode, i, b, top, &k);
        for (size_t u = 0; u < k; u++)
            placed += m[u].pend && m[u].to;
        ok = ok == 1 && !g && !placed ? 0 : ok;
    }
    if (m && (ok != 1 || probe)) { /* undo: each card took its instances last */
        for (size_t u = k; u-- > 0;)
            if (m[u].to)
                m[u].to->ninst--;
        if (g) {
            memcpy(g->inst, was, ng * sizeof(*was));
            g->ninst = ng;
            g->mode = mode;
        }
        if (b) {
            memcpy(b->inst, was + ng, nb * sizeof(*was));
            b->ninst = nb;
        }
    }
    if (ok == 1 && !probe && left) {
        left->n = 0;
        left->rows = p->decisions->rows;
        for (size_t u = 0; u < n; u++)
            if (m[u].pend && !m[u].to)
                left->in[left->n++] = m[u].in;
    }
    for (size_t u = 0; ok == 1 && !probe && mode == PLAN_MIG && u < n; u++)
        if (m[u].to)
            qsort(m[u].to->inst, m[u].to->ninst, sizeof(*m[u].to->inst), cmp_start);
    free(was);
    free(m);
    return ok;
}

int reconf__drained(const struct plan_gpu *g, const struct reconf_plan *cur,
                    const struct reconf__rows *rows)
{
    const struct reconf_card *c = reconf_plan_card(cur, g->node->name, g->index);
    int same = c && !strcmp(c->model, g->model->name) && !strcmp(c->mode, plan_mode_names[g->mode]);
    for (int h = 0; c && h < c->nheld; h++) {
        int kept = 0;
        for (size_t t = 0; same && !kept && t < g->ninst; t++)
            kept = reconf__at_place(&g->inst[t], &c->held[h]);
        if (!kept && reconf__row(rows, c->held[h].tenant, c->held[h].workload) >= 0)
            return 1;
    }
    return 0;
}

/* Cards of p a drain empties now. */
static int drains(const struct plan *p, const struct reconf_plan *cur,
                  const struct reconf__rows *rows)
{
    int n = 0;
    for (size_t i = 0; i < p->ngpus; i++)
        n += reconf__drained(&p->gpus[i], cur, rows);
    return n;
}

/* Cards of p that hold something. */
static size_t used(const struct plan *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->ngpus; i++)
        n += p->gpus[i].ninst > 0;
    return n;
}

int reconf__relaid(const struct plan *p, const struct reconf_plan *cur,
                   const struct reconf__rows *rows)
{
    int n = 0;
    for (size_t i = 0; i < p->ngpus; i++)
        n += p->gpus[i].ninst && reconf__drained(&p->gpus[i], cur, rows);
    return n;
}

/* The search: the best plan found for each number of cards saved (one
 * card fewer than the keep plan at [0], ...). */
struct evac {
    const struct reconf_plan *cur;
    struct reconf__rows rows;
    struct plan *best[RECONF_EVACUATIONS_MAX];
    int best_drains[RECONF_EVACUATIONS_MAX];
    size_t cards; /* the keep plan's */
    long budget;  /* cards to scan left, past the first order's one-card tries */
    int first;    /* still on the first order (the depth-first path's way down) */
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

/* The slot of p's card count in e->best, or -1 (no card saved). */
static int slot(const struct evac *e, const struct plan *p)
{
    size_t u = used(p);
    return u < e->cards && e->cards - u <= RECONF_EVACUATIONS_MAX ? (int)(e->cards - u - 1) : -1;
}

/* Complete plan q (owned) kept when it drains fewer cards than the best
 * for as many; 1 kept, 0 not (freed). */
static int keep_best(struct evac *e, struct plan *q, int at, int d)
{
    if (at < 0 || (e->best[at] && d >= e->best_drains[at])) {
        plan_free(q);
        return 0;
    }
    plan_free(e->best[at]);
    e->best[at] = q;
    e->best_drains[at] = d;
    return 1;
}

/* Pending work w placed into p's used cards' free space, on a copy kept
 * when it drains fewer cards than the best. 0, or -1 NOMEM. */
static int complete(struct evac *e, const struct plan *p, const struct pending *w)
{
    struct plan *q = reconf__plan_copy(p);
    size_t n = 0, k = 0;
    struct mv *m = q ? gather(q, NULL, NULL, w, PLAN_MIG, &n) : NULL;
    int ok = m ? place_all(q, m, n, PLAN_MIG, (size_t)-1, NULL, 0, &k) : -1;
    for (size_t u = 0; ok == 1 && u < n; u++)
        ok = m[u].to ? 1 : 0;
    for (size_t u = 0; ok == 1 && u < n; u++)
        qsort(m[u].to->inst, m[u].to->ninst, sizeof(*m[u].to->inst), cmp_start);
    free(m);
    if (ok == 1)
        keep_best(e, q, slot(e, q), drains(q, e->cur, &e->rows));
    else
        plan_free(q);
    return ok < 0 ? -1 : 0;
}

static int descend(struct evac *e, struct plan *p, const struct pending *w, size_t depth);

/* Card i emptied (j laid out again with it) works on p: its plan q, with
 * the pending work placed, is kept when it drains fewer cards than the
 * best for as many, and searched on unless it drains more. 1 went on, 0
 * not, -1 NOMEM. */
static int take(struct evac *e, const struct plan *p, const struct pending *w, size_t depth,
                size_t i, size_t j, int top)
{
    struct plan *q = reconf__plan_copy(p);
    struct pending left = {malloc((w->n + 1) * sizeof(*left.in)), 0, NULL};
    int ok = q && left.in ? empty_card(q, i, j, top, w, &left, 0) : -1;
    int d = ok == 1 ? drains(q, e->cur, &e->rows) : 0, at = ok == 1 ? slot(e, q) : -1;
    struct plan *c = NULL;
    if (ok == 1 && at >= 0 && e->best[at] && d > e->best_drains[at])
        ok = 0; /* it drains more than the best for as many cards */
    else if (ok == 1 && !left.n && at >= 0 && (!e->best[at] || d < e->best_drains[at]))
        ok = (c = reconf__plan_copy(q)) ? keep_best(e, c, at, d) : -1;
    else if (ok == 1 && left.n)
        ok = complete(e, q, &left) < 0 ? -1 : 1;
    if (ok == 1 && depth + 1 < RECONF_EVACUATIONS_MAX)
        ok = descend(e, q, &left, depth + 1) < 0 ? -1 : 1;
    plan_free(q);
    free(left.in);
    return ok;
}

/* One try: card i emptied (none: (size_t)-1), j (or none) laid out again
 * (from its top when top); probed first in place. */
static int try_one(struct evac *e, struct plan *p, const struct pending *w, size_t depth, size_t i,
                   size_t j, int top)
{
    long cost = ((long)p->ngpus + 1) * (long)(1 + w->n);
    if (!(e->first && j >= p->ngpus) && (e->budget -= cost) < 0)
        return 0;
    int ok = empty_card(p, i, j, top, w, NULL, 1);
    return ok == 1 ? take(e, p, w, depth, i, j, top) : ok;
}

/* Every card of p emptied alone, then with another MIG card laid out
 * again, then (pending work) a MIG card laid out again with it, each that
 * works searched on: depth first, so the first path is the old
 * one-card-at-a-time order. -1 NOMEM. */
static int descend(struct evac *e, struct plan *p, const struct pending *w, size_t depth)
{
    size_t n = 0;
    struct order *o = ordered(p, e, &n);
    int st = o ? 0 : -1;
    for (size_t t = 0; st >= 0 && t < n && t < RECONF_EVAC_TRIES_MAX; t++)
        st = try_one(e, p, w, depth, o[t].i, (size_t)-1, 0);
    for (size_t t = 0; st >= 0 && t < n && t < RECONF_EVAC_TRIES_MAX; t++)
        for (size_t u = 0; st >= 0 && u < n && u < RECONF_EVAC_PAIRS_MAX; u++)
            if (u != t && p->gpus[o[t].i].mode == PLAN_MIG && p->gpus[o[u].i].mode == PLAN_MIG)
                for (int top = 0; st >= 0 && top < 2; top++)
                    st = try_one(e, p, w, depth, o[t].i, o[u].i, top);
    for (size_t u = 0; st >= 0 && w->n && u < n && u < RECONF_EVAC_PAIRS_MAX; u++)
        for (int top = 0; st >= 0 && p->gpus[o[u].i].mode == PLAN_MIG && top < 2; top++)
            st = try_one(e, p, w, depth, (size_t)-1, o[u].i, top);
    e->first = 0;
    free(o);
    return st < 0 ? -1 : 0;
}

/* 1 when a taken instance in may go back where running instance h of g
 * ran: its workload and profile, the start free, count, compute, spread. */
static int goes_back(const struct plan *p, const struct plan_gpu *g, const struct plan_inst *in,
                     const struct reconf_want *h)
{
    struct plan_inst at = *in;
    at.start = h->start;
    return (g->mode == PLAN_MIG || g->mode == PLAN_FREE) && reconf__at_place(&at, h) &&
           in->size == h->size && !reconf__overlaps(g, NULL, h->start, in->size) &&
           reconf__mig_start(g, in->profile) >= 0 && reconf__usable(p, g, in->row);
}

/* Running instances of g's card that p does not keep, put back at their
 * own start from w (the work taken out) where one of theirs may go. */
static int put_back(struct plan *p, struct plan_gpu *g, const struct reconf_card *c,
                    struct pending *w)
{
    for (int h = 0; c && c->mig && h < c->nheld; h++) {
        int kept = 0;
        for (size_t t = 0; !kept && t < g->ninst; t++)
            kept = reconf__at_place(&g->inst[t], &c->held[h]);
        for (size_t k = 0; !kept && k < w->n; k++) {
            if (!goes_back(p, g, &w->in[k], &c->held[h]))
                continue;
            struct plan_inst in = w->in[k];
            in.start = c->held[h].start;
            if (!ts_arena_grow(&p->arena, (void **)&g->inst, &g->cap, g->ninst, sizeof(in)))
                return 0;
            g->inst[g->ninst++] = in;
            g->mode = PLAN_MIG;
            w->in[k] = w->in[--w->n];
            kept = 1;
        }
    }
    return 1;
}

/* p (a copy of the keep plan) with its MIG instances that are not where
 * they run taken out into w (new work, and what a released card held): at
 * most RECONF_EVAC_PENDING_MAX, else 0 (p then unusable); then each
 * running instance put back at its own start where one of its workload and
 * profile was taken out. 1, 0, -1 NOMEM. */
static int lift(struct plan *p, const struct evac *e, struct pending *w)
{
    for (size_t i = 0; i < p->ngpus; i++) {
        struct plan_gpu *g = &p->gpus[i];
        const struct reconf_card *c = reconf_plan_card(e->cur, g->node->name, g->index);
        int same = c && c->mig && g->mode == PLAN_MIG && !strcmp(c->model, g->model->name);
        size_t n = 0;
        for (size_t t = 0; g->mode == PLAN_MIG && t < g->ninst; t++) {
            int kept = !g->inst[t].row || !g->inst[t].profile;
            for (int h = 0; same && !kept && h < c->nheld; h++)
                kept = reconf__at_place(&g->inst[t], &c->held[h]);
            if (!kept && w->n == RECONF_EVAC_PENDING_MAX)
                return 0;
            if (kept)
                g->inst[n++] = g->inst[t];
            else
                w->in[w->n++] = g->inst[t];
        }
        g->ninst = g->mode == PLAN_MIG ? n : g->ninst;
        g->mode = g->ninst ? g->mode : PLAN_FREE;
    }
    for (size_t i = 0; i < p->ngpus; i++) {
        struct plan_gpu *g = &p->gpus[i];
        if (!put_back(p, g, reconf_plan_card(e->cur, g->node->name, g->index), w))
            return -1;
        if (g->mode == PLAN_MIG)
            qsort(g->inst, g->ninst, sizeof(*g->inst), cmp_start);
    }
    return 1;
}

/* The search again from the keep plan with its new work taken out and its
 * released card put back (lift), the work placed as cards are emptied. */
static int search_lifted(struct evac *e, const struct plan *base)
{
    struct plan *p = reconf__plan_copy(base);
    struct pending w = {malloc((RECONF_EVAC_PENDING_MAX + 1) * sizeof(*w.in)), 0,
                        p ? p->decisions->rows : NULL};
    int st = p && w.in ? lift(p, e, &w) : -1;
    e->budget = RECONF_EVAC_SEARCH_MAX;
    if (st == 1 && w.n)
        st = complete(e, p, &w) < 0 ? -1 : descend(e, p, &w, 0);
    plan_free(p);
    free(w.in);
    return st < 0 ? -1 : 0;
}

/* The exact re-layout's plans (relay.c) with fewer MIG cards than base's,
 * each kept where it drains fewer cards than the search's best for as
 * many (and than the fresh plan, at its count). 0, or -1 NOMEM. */
static int exact(struct evac *e, const struct plan *base, const struct reconf__found *fresh)
{
    size_t mig = 0, other = e->cards;
    for (size_t i = 0; i < base->ngpus; i++)
        mig += base->gpus[i].mode == PLAN_MIG && base->gpus[i].ninst;
    other -= mig;
    struct plan **x = calloc(mig + 1, sizeof(*x));
    int *known = malloc((mig + 1) * sizeof(*known));
    int st = x && known ? 0 : -1;
    for (size_t k = 0; !st && k < mig; k++) { /* k MIG cards: slot cards - (other + k) - 1 */
        size_t at = e->cards - (other + k) - 1;
        known[k] = at < RECONF_EVACUATIONS_MAX && e->best[at] ? e->best_drains[at] : -1;
        if (other + k == fresh->cards && (known[k] < 0 || fresh->drains < known[k]))
            known[k] = fresh->drains;
    }
    if (!st && reconf__relay(base, e->cur, &e->rows, known, x, mig) != TS_OK)
        st = -1;
    for (size_t k = 0; x && k < mig; k++)
        if (x[k] && !st)
            keep_best(e, x[k], slot(e, x[k]), drains(x[k], e->cur, &e->rows));
        else
            plan_free(x[k]);
    free(x);
    free(known);
    return st;
}

ts_status reconf__evacuate(const struct plan *base, const struct reconf_plan *cur,
                           const struct reconf__found *fresh, struct plan ***out, int **relays,
                           size_t *n)
{
    struct evac e = {.cur = cur, .cards = used(base), .budget = RECONF_EVAC_SEARCH_MAX, .first = 1};
    struct plan *p = reconf__plan_copy(base);
    struct pending none = {0};
    int st = p && reconf__rows_index(p->decisions, &e.rows) ? descend(&e, p, &none, 0) : -1;
    st = st < 0 ? st : search_lifted(&e, base);
    st = st < 0 ? st : exact(&e, base, fresh);
    *out = malloc((RECONF_EVACUATIONS_MAX + 1) * sizeof(**out));
    *relays = malloc((RECONF_EVACUATIONS_MAX + 1) * sizeof(**relays));
    *n = 0;
    st = !*out || !*relays ? -1 : st;
    for (size_t k = 0; k < RECONF_EVACUATIONS_MAX; k++) {
        if (st < 0 || !e.best[k]) {
            plan_free(e.best[k]);
            continue;
        }
        plan_summarise(e.best[k]);
        e.best[k]->summary.solver = "replan: running placements kept, cards emptied";
        (*relays)[*n] = reconf__relaid(e.best[k], cur, &e.rows);
        (*out)[(*n)++] = e.best[k];
    }
    if (st < 0) {
        free(*out);
        free(*relays);
        *out = NULL;
        *relays = NULL;
    }
    plan_free(p);
    reconf__rows_free(&e.rows);
    return st < 0 ? TS_NOMEM : TS_OK;
}
