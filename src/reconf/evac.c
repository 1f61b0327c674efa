/*
 * evac.c - replanning's trade of drains for cards: from a plan (the keep
 * candidate), empty one used card at a time by moving its instances into
 * free space on the other used cards of its kind (MIG slices, or pool room
 * among tenants that trust each other), never onto a free card. A card that
 * holds no instance kept from the running plan, or is drained anyway, goes
 * first (moving what is not running yet, or off a drained card, costs no
 * more drain), then the cards with the fewest kept instances and the least
 * load. Each emptied card gives one more plan, one
 * card fewer; the caller counts its drains (reconf_steps) and keeps the
 * Pareto points.
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

/* Move every instance of card i elsewhere; 1 done, 0 not (p unchanged), -1 NOMEM. */
static int empty_card(struct plan *p, size_t i)
{
    struct plan_gpu *g = &p->gpus[i];
    size_t n = g->ninst, k = 0;
    int mode = g->mode, ok = 1;
    struct plan_inst *moved = malloc((n + 1) * sizeof(*moved));
    struct plan_gpu **to = malloc((n + 1) * sizeof(*to));
    if (!moved || !to) {
        free(moved);
        free(to);
        return -1;
    }
    memcpy(moved, g->inst, n * sizeof(*moved));
    qsort(moved, n, sizeof(*moved), cmp_size);
    g->ninst = 0;
    g->mode = PLAN_FREE;
    for (; ok == 1 && k < n; k++) {
        struct plan_inst in = moved[k];
        to[k] = home(p, &in, mode, i);
        if (to[k] && in.profile)
            in.start = reconf__mig_start(to[k], in.profile);
        ok = !to[k] ? 0
             : ts_arena_grow(&p->arena, (void **)&to[k]->inst, &to[k]->cap, to[k]->ninst,
                             sizeof(in))
                 ? 1
                 : -1;
        if (ok == 1)
            to[k]->inst[to[k]->ninst++] = in;
    }
    if (ok != 1) {                       /* undo: each card took its instances last */
        for (size_t u = k - 1; u-- > 0;) /* k - 1 failed and was not added */
            to[u]->ninst--;
        memcpy(g->inst, moved, n * sizeof(*moved));
        g->ninst = n;
        g->mode = mode;
    }
    for (size_t u = 0; ok == 1 && u < n; u++)
        if (mode == PLAN_MIG)
            qsort(to[u]->inst, to[u]->ninst, sizeof(*to[u]->inst), cmp_start);
    free(moved);
    free(to);
    return ok;
}

/* One round: empty the first card in order that can be; 1, 0 none, -1 NOMEM. */
static int round_once(struct plan *p, const struct reconf_plan *cur,
                      const struct reconf__rows *rows)
{
    struct order *o = malloc((p->ngpus + 1) * sizeof(*o));
    size_t n = 0;
    int got = 0;
    if (!o)
        return -1;
    for (size_t i = 0; i < p->ngpus; i++)
        if (emptiable(&p->gpus[i]))
            o[n++] = (struct order){i, kept_here(&p->gpus[i], cur, rows), load(&p->gpus[i])};
    qsort(o, n, sizeof(*o), cmp_order);
    for (size_t t = 0; !got && t < n && t < RECONF_EVAC_TRIES_MAX; t++)
        got = empty_card(p, o[t].i);
    free(o);
    return got;
}

ts_status reconf__evacuate(const struct plan *base, const struct reconf_plan *cur,
                           struct plan ***out, size_t *n)
{
    struct plan *p = reconf__plan_copy(base);
    struct reconf__rows rows = {0};
    size_t cap = 0;
    int got = p && reconf__rows_index(p->decisions, &rows) ? 1 : -1;
    *out = NULL;
    *n = 0;
    while (got == 1 && *n < RECONF_EVACUATIONS_MAX) {
        got = round_once(p, cur, &rows);
        struct plan *q = got == 1 ? reconf__plan_copy(p) : NULL;
        if (got == 1 && (!q || !ts_grow((void **)out, &cap, *n, sizeof(**out)))) {
            plan_free(q);
            got = -1;
        } else if (got == 1) {
            plan_summarise(q);
            q->summary.solver = "replan: running placements kept, cards emptied";
            (*out)[(*n)++] = q;
        }
    }
    plan_free(p);
    reconf__rows_free(&rows);
    return got < 0 ? TS_NOMEM : TS_OK;
}
