/*
 * replan.c - replanning against what runs now (a previous plan's JSON):
 * two candidate plans and the choice between them (docs/replanning.md).
 *   fresh: the planner's plan of the new spec, its cards renumbered within
 *     each run of one node and model (cards there are interchangeable, so
 *     eligibility and spread hold) to put each planned card where most of
 *     its instances already run, and each MIG instance moved back to the
 *     start it runs at when that start is free on the card;
 *   keep: every running instance whose workload the spec still has, with
 *     the same decision, stays; what is missing (new workloads, more
 *     replicas) goes into free MIG slices or free cards (MIG and whole GPUs;
 *     a new pool or guest needs the fresh plan). No drain by construction.
 *   keep, cards emptied: the keep plan with its used cards emptied one at
 *     a time into the others' free space (evac.c), each a plan with one
 *     card fewer and the drains that costs, named by the cards emptied and
 *     the drained cards laid out again ("keep, 1 card emptied, 1 re-laid").
 * Every plan found is a point (drains, cards, cost); --prefer orders them
 * (drains, cards or cost first) and the first within --max-drains,
 * --max-cards and --max-cost that never drains every replica of a
 * workload wins. When none is and a drain limit is given, the keep plan
 * without any drain: what does not fit is named (struct reconf_unplaced),
 * a MIG workload that grew past the profile it runs on stays as it runs,
 * its new size named as not placed, and one its new decision cannot keep in
 * place (another mechanism or model, several profiles, grown off MIG, left
 * out) stays as it runs, named (pin.c's hold).
 */
#include <stdlib.h>
#include <string.h>
#include "reconf/internal.h"
#include "util/grow.h"
#include "util/units.h"

const char *const reconf_prefer_names[] = {"fewer-drains", "fewer-cards", "lower-cost", NULL};

/* ---- fresh: renumber cards, keep starts ----------------------------------- */

/* Instances of g that c runs (same tenant, workload and MIG profile). */
static int score(const struct plan_gpu *g, const struct reconf_card *c)
{
    int n = 0, used[INV_GIS_MAX * 8] = {0};
    for (size_t t = 0; c && t < g->ninst; t++) {
        const struct plan_inst *in = &g->inst[t];
        const char *prof = in->profile ? in->profile->name : NULL;
        for (int h = 0; in->row && h < c->nheld && h < INV_GIS_MAX * 8; h++)
            if (!used[h] && reconf__same_str(c->held[h].tenant, in->row->tenant->name) &&
                reconf__same_str(c->held[h].workload, in->row->workload->name) &&
                reconf__same_str(c->held[h].profile, prof)) {
                used[h] = 1;
                n++;
                break;
            }
    }
    return n;
}

static int cmp_start(const void *a, const void *b)
{
    return ((const struct plan_inst *)a)->start - ((const struct plan_inst *)b)->start;
}

/* 1 when c runs in's workload with in's profile at in's start. */
static int runs_there(const struct reconf_card *c, const struct plan_inst *in)
{
    for (int h = 0; h < c->nheld; h++)
        if (reconf__at_place(in, &c->held[h]))
            return 1;
    return 0;
}

/* Move each MIG instance of g to the start its workload runs at on c (one
 * already at such a start stays). */
static void keep_starts(struct plan_gpu *g, const struct reconf_card *c)
{
    for (int h = 0; c && c->mig && g->mode == PLAN_MIG && h < c->nheld; h++) {
        const struct reconf_want *w = &c->held[h];
        for (size_t t = 0; w->tenant && t < g->ninst; t++) {
            struct plan_inst *in = &g->inst[t];
            if (!in->row || runs_there(c, in) || strcmp(in->profile->name, w->profile) ||
                strcmp(in->row->tenant->name, w->tenant) ||
                strcmp(in->row->workload->name, w->workload) ||
                reconf__overlaps(g, in, w->start, in->size))
                continue;
            in->start = w->start;
            break;
        }
    }
    if (g->ninst > 1)
        qsort(g->inst, g->ninst, sizeof(*g->inst), cmp_start);
}

static int cmp_index(const void *a, const void *b)
{
    return ((const struct plan_gpu *)a)->index - ((const struct plan_gpu *)b)->index;
}

/* Cards [i, i + n) share node and model: give card t the index of the
 * current card that runs most of it, greedily. */
static void remap_run(struct plan *p, size_t i, size_t n, const struct reconf_plan *cur)
{
    int idx[SPEC_NODE_GPUS_MAX], done_t[SPEC_NODE_GPUS_MAX] = {0};
    int done_c[SPEC_NODE_GPUS_MAX] = {0}, to[SPEC_NODE_GPUS_MAX];
    static int s[SPEC_NODE_GPUS_MAX][SPEC_NODE_GPUS_MAX];
    for (size_t a = 0; a < n; a++)
        idx[a] = p->gpus[i + a].index;
    for (size_t a = 0; a < n; a++)
        for (size_t b = 0; b < n; b++)
            s[a][b] = score(&p->gpus[i + a], reconf_plan_card(cur, p->gpus[i].node->name, idx[b]));
    for (size_t round = 0; round < n; round++) {
        int bt = -1, bc = -1, best = -1;
        for (size_t a = 0; a < n; a++)
            for (size_t b = 0; b < n; b++)
                if (!done_t[a] && !done_c[b] && s[a][b] > best)
                    best = s[a][b], bt = (int)a, bc = (int)b;
        done_t[bt] = done_c[bc] = 1;
        to[bt] = idx[bc];
    }
    for (size_t a = 0; a < n; a++)
        p->gpus[i + a].index = to[a];
    if (n > 1)
        qsort(&p->gpus[i], n, sizeof(p->gpus[0]), cmp_index);
    for (size_t a = 0; a < n; a++)
        keep_starts(&p->gpus[i + a],
                    reconf_plan_card(cur, p->gpus[i + a].node->name, p->gpus[i + a].index));
}

static void remap(struct plan *p, const struct reconf_plan *cur)
{
    for (size_t i = 0; i < p->ngpus;) {
        size_t j = i + 1;
        while (j < p->ngpus && p->gpus[j].node == p->gpus[i].node &&
               p->gpus[j].model == p->gpus[i].model && j - i < SPEC_NODE_GPUS_MAX)
            j++;
        remap_run(p, i, j - i, cur);
        i = j;
    }
}

/* ---- the candidates ------------------------------------------------------- */

struct cand {
    struct plan *p; /* NULL: no plan (why says why) */
    struct reconf_replan r;
    const char *how, *why;
    int emptied, relaid; /* a "keep, ..." point's cards (add_laid), else 0 */
};

struct search {
    struct cand *c;
    size_t n, cap;
    struct ts_arena a; /* reasons */
};

/* Add plan p (owned from now on; NULL with why: none) and its steps. */
static ts_status add(struct search *s, struct plan *p, const struct reconf_plan *cur,
                     const char *how, const char *why)
{
    if (!ts_grow((void **)&s->c, &s->cap, s->n, sizeof(*s->c))) {
        if (s->n) /* the first, the fresh plan, stays the caller's */
            plan_free(p);
        return TS_NOMEM;
    }
    struct cand *c = &s->c[s->n++];
    *c = (struct cand){.p = p, .how = how, .why = why};
    return p ? reconf_steps(p, cur, &c->r) : TS_OK;
}

static int64_t cost(const struct cand *c) { return c->p->summary.cost_per_hour; }

/* Why c is refused by the options, or NULL. Drains of a removed node's
 * cards are forced: they do not count against --max-drains. */
static const char *refusal(struct ts_arena *a, const struct cand *c,
                           const struct reconf_replan_opts *o)
{
    int drains = c->r.drains - c->r.removed_drains, cards = c->p->summary.gpus_used;
    if (o->max_drains >= 0 && drains > o->max_drains)
        return ts_arena_printf(a, "it drains %d card%s, over --max-drains %d", drains,
                               drains == 1 ? "" : "s", o->max_drains);
    if (o->max_cards > 0 && cards > o->max_cards)
        return ts_arena_printf(a, "it uses %d cards, over --max-cards %d", cards, o->max_cards);
    if (o->max_cost > 0 && cost(c) < 0)
        return "--max-cost needs a PriceBook price for every card model it uses";
    if (o->max_cost > 0 && cost(c) > o->max_cost)
        return ts_arena_printf(a, "it costs %.2f per hour, over --max-cost %.2f",
                               (double)cost(c) / TS_MICRO, (double)o->max_cost / TS_MICRO);
    if (c->r.unsafe)
        return ts_arena_printf(a, "one drain would stop every running replica of %s", c->r.unsafe);
    return NULL;
}

/* -1, 0, 1 as x is less than, equal to or more than y. */
static int cmp3(int64_t x, int64_t y) { return (x > y) - (x < y); }

/* 1 when a goes before b under prefer, then the fewer running instances
 * evicted (else the one found first). Unpriced, cost is the cards. */
static int before(const struct cand *a, const struct cand *b, int prefer)
{
    int d = cmp3(a->r.drains, b->r.drains);
    int c = cmp3(a->p->summary.gpus_used, b->p->summary.gpus_used);
    int m = cost(a) >= 0 && cost(b) >= 0 ? cmp3(cost(a), cost(b)) : c;
    int e = cmp3(a->r.evicted, b->r.evicted);
    int order[][4] = {[RECONF_PREFER_FEWER_DRAINS] = {d, c, m, e},
                      [RECONF_PREFER_FEWER_CARDS] = {c, d, m, e},
                      [RECONF_PREFER_LOWER_COST] = {m, d, c, e}};
    for (int i = 0; i < 4; i++)
        if (order[prefer][i])
            return order[prefer][i] < 0;
    return 0;
}

/* 1 when a is no worse than b in drains, cards and cost, and better in one. */
static int dominates(const struct cand *a, const struct cand *b)
{
    int d = cmp3(a->r.drains, b->r.drains),
        c = cmp3(a->p->summary.gpus_used, b->p->summary.gpus_used);
    int m = cost(a) < 0 || cost(b) < 0 ? 0 : cmp3(cost(a), cost(b));
    return d <= 0 && c <= 0 && m <= 0 && (d || c || m);
}

/* Among the plans that place everything (a no-drain plan that leaves work
 * out is not comparable: it is never a Pareto point and dominates none). */
static int pareto(const struct search *s, size_t i)
{
    if (s->c[i].r.nunplaced)
        return 0;
    for (size_t j = 0; j < s->n; j++)
        if (j != i && s->c[j].p && !s->c[j].r.nunplaced && dominates(&s->c[j], &s->c[i]))
            return 0;
    return 1;
}

/* Replicas r leaves out; kept: those it keeps under their new size. */
static int missing(const struct reconf_replan *r, int kept)
{
    int n = 0;
    for (size_t i = 0; i < r->nunplaced; i++)
        n += kept ? r->unplaced[i].kept : r->unplaced[i].replicas - r->unplaced[i].kept;
    return n;
}

/* Every plan found as a point in r (the chosen one's). */
static int points(struct search *s, size_t chosen, const char *const *no, struct reconf_replan *r)
{
    r->points = ts_arena_array(&r->arena, s->n + 1, sizeof(*r->points));
    for (size_t i = 0; r->points && i < s->n; i++) {
        const struct cand *c = &s->c[i];
        if (!c->p)
            continue;
        r->points[r->npoints++] = (struct reconf_point){
            .how = ts_arena_strdup(&r->arena, c->how),
            .drains = c->r.drains,
            .cards = c->p->summary.gpus_used,
            .removed_drains = c->r.removed_drains,
            .unplaced = missing(&c->r, 0),
            .held = missing(&c->r, 1),
            .cost = cost(c),
            .why = no[i] ? ts_arena_strdup(&r->arena, no[i]) : NULL,
            .chosen = i == chosen,
            .pareto = pareto(s, i)};
    }
    return r->points != NULL;
}

/* The first allowed candidate in --prefer's order, or s->n. */
static size_t best(struct search *s, const struct reconf_replan_opts *o, const char **no)
{
    size_t pick = s->n;
    for (size_t i = 0; i < s->n; i++) {
        no[i] = s->c[i].p ? refusal(&s->a, &s->c[i], o) : s->c[i].why;
        if (!no[i] && (pick == s->n || before(&s->c[i], &s->c[pick], o->prefer)))
            pick = i;
    }
    return pick;
}

/* "the fresh plan: it drains 3 cards, over --max-drains 1; ..." */
static const char *reasons(struct search *s, const char *const *no)
{
    const char *all = NULL;
    for (size_t i = 0; i < s->n; i++) {
        const char *one = ts_arena_printf(&s->a, "\"%s\": %s", s->c[i].how, no[i]);
        all = all ? ts_arena_printf(&s->a, "%s; %s", all, one) : one;
    }
    return all ? all : "no candidate";
}

/* The report's words for the plan c. */
static const char *strategy(struct ts_arena *a, const struct cand *c)
{
    if (!strcmp(c->how, "fresh"))
        return "fresh plan, cards renumbered to keep running instances";
    if (!strcmp(c->how, "keep, no drain"))
        return "running placements kept, no drain: what does not fit is named";
    if (!c->emptied && c->relaid)
        return ts_arena_printf(a,
                               "running placements kept, %d card%s laid out again for the "
                               "new work",
                               c->relaid, c->relaid == 1 ? "" : "s");
    if (!c->emptied)
        return "running placements kept, new work in free space";
    const char *relaid = c->relaid ? ts_arena_printf(a, ", %d re-laid", c->relaid) : "";
    return ts_arena_printf(a,
                           "running placements kept, new work in free space, %d card%s "
                           "emptied into the others%s",
                           c->emptied, c->emptied == 1 ? "" : "s", relaid ? relaid : "");
}

/* Why each other plan lost: "not the fresh plan (...): it drains 3 cards,
 * over --max-drains 0; ...". */
static const char *note(struct search *s, size_t pick, const char *const *no,
                        const struct reconf_replan_opts *o, struct ts_arena *a)
{
    const char *all = NULL;
    for (size_t i = 0; i < s->n; i++) {
        if (i == pick)
            continue;
        const struct cand *c = &s->c[i], *w = &s->c[pick];
        int tie = !no[i] && c->r.drains == w->r.drains &&
                  c->p->summary.gpus_used == w->p->summary.gpus_used && cost(c) == cost(w) &&
                  c->r.evicted != w->r.evicted;
        const char *why = no[i] ? no[i]
                          : tie
                              ? ts_arena_printf(a,
                                                "--prefer %s (%d drains, %d cards; its drains "
                                                "evict %d running instances, not %d)",
                                                reconf_prefer_names[o->prefer], c->r.drains,
                                                c->p->summary.gpus_used, c->r.evicted, w->r.evicted)
                              : ts_arena_printf(a, "--prefer %s (%d drains, %d cards)",
                                                reconf_prefer_names[o->prefer], c->r.drains,
                                                c->p->summary.gpus_used);
        const char *one = ts_arena_printf(a, "not \"%s\": %s", s->c[i].how, why);
        all = all ? ts_arena_printf(a, "%s; %s", all, one) : one;
    }
    return all;
}

/* ---- the search ----------------------------------------------------------- */

/* "keep, 1 card emptied", "keep, 2 cards emptied, 1 re-laid", "keep, 2
 * re-laid": emptied cards (those fewer than the keep plan's, or without
 * one, cards that ran work and hold none), and the drained cards that
 * still hold instances, laid out again. */
static const char *emptied_how(struct ts_arena *a, int emptied, int relaid)
{
    if (!emptied)
        return ts_arena_printf(a, "keep, %d re-laid", relaid);
    const char *how = ts_arena_printf(a, "keep, %d card%s emptied", emptied,
                                      emptied == 1 ? "" : "s");
    return relaid && how ? ts_arena_printf(a, "%s, %d re-laid", how, relaid) : how;
}

/* Plans x[0..n) added as points named by their emptied and re-laid cards
 * (each owned from now on: freed when st or a name fails). */
static ts_status add_laid(struct search *s, ts_status st, const struct reconf_plan *cur,
                          struct plan **x, const int *emptied, const int *relaid, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *how = st == TS_OK ? emptied_how(&s->a, emptied[i], relaid[i]) : NULL;
        st = st == TS_OK && !how ? TS_NOMEM : st;
        if (!how) {
            plan_free(x[i]);
            continue;
        }
        size_t at = s->n;
        st = add(s, x[i], cur, how, NULL);
        if (s->n > at) {
            s->c[at].emptied = emptied[i];
            s->c[at].relaid = relaid[i];
        }
    }
    return st;
}

/* No keep plan: fresh's MIG cards laid out again for fewer drains
 * (relay.c), each a point. */
static ts_status relay_fresh(struct search *s, const struct plan *fresh,
                             const struct reconf_plan *cur)
{
    struct plan **x = NULL;
    int *emptied = NULL, *relaid = NULL;
    size_t n = 0;
    const struct reconf_replan *f = &s->c[0].r;
    ts_status st = reconf__relay_fresh(fresh, cur, f->drains - f->removed_drains, &x, &emptied,
                                       &relaid, &n);
    st = add_laid(s, st, cur, x, emptied, relaid, n);
    free(x);
    free(emptied);
    free(relaid);
    return st;
}

static ts_status keep_and_empty(struct search *s, const struct plan *fresh,
                                const struct reconf_plan *cur, const struct reconf__keepix *ix)
{
    struct plan *keep = NULL, **emptied = NULL;
    int *relaid = NULL;
    const char *why = NULL;
    size_t n = 0;
    ts_status st = reconf__keep_plan(fresh, cur, ix, &keep, &why, &s->a);
    const struct reconf_replan *f = &s->c[0].r;
    struct reconf__found was = {(size_t)fresh->summary.gpus_used, f->drains - f->removed_drains};
    if (st == TS_OK && keep && keep->summary.gpus_used > fresh->summary.gpus_used)
        st = reconf__evacuate(keep, cur, &was, &emptied, &relaid, &n);
    int cards = keep ? keep->summary.gpus_used : 0;
    if (st == TS_OK)
        st = add(s, keep, cur, "keep", why);
    else
        plan_free(keep);
    if (st == TS_OK && !keep)
        st = relay_fresh(s, fresh, cur);
    int *fewer = n ? malloc(n * sizeof(*fewer)) : NULL; /* cards fewer than the keep plan's */
    st = n && !fewer && st == TS_OK ? TS_NOMEM : st;
    for (size_t i = 0; fewer && i < n; i++)
        fewer[i] = cards - emptied[i]->summary.gpus_used;
    st = add_laid(s, st, cur, emptied, fewer, relaid, n);
    free(fewer);
    free(emptied);
    free(relaid);
    return st;
}

/* No candidate is allowed under a drain limit: keep what runs (a grown MIG
 * workload held at the profile it runs), place what fits without a drain,
 * name the rest. */
static ts_status keep_partial(struct search *s, const struct plan *fresh,
                              const struct reconf_plan *cur, const struct reconf_replan_opts *o)
{
    struct plan *p = NULL;
    const char *why = NULL;
    struct reconf_replan names = {0};
    struct reconf__keepix ix = {0};
    ts_arena_init(&names.arena);
    ts_status st = reconf__keepix_build(fresh, cur, &ix, 1, o->left, o->nleft, o->cat) ? TS_OK
                                                                                       : TS_NOMEM;
    if (st == TS_OK)
        st = reconf__keep_partial(fresh, cur, &ix, &p, &names, &why, &s->a);
    reconf__keepix_free(&ix);
    if (st == TS_OK)
        st = add(s, p, cur, "keep, no drain", p ? NULL : why);
    if (st == TS_OK && p) {
        struct reconf_replan *r = &s->c[s->n - 1].r;
        r->unplaced = ts_arena_array(&r->arena, names.nunplaced + 1, sizeof(*r->unplaced));
        for (size_t i = 0; r->unplaced && i < names.nunplaced; i++) {
            r->unplaced[i] = names.unplaced[i];
            r->unplaced[i].why = ts_arena_strdup(&r->arena, names.unplaced[i].why);
        }
        r->nunplaced = r->unplaced ? names.nunplaced : 0;
        st = r->unplaced ? TS_OK : TS_NOMEM;
    }
    reconf_replan_release(&names);
    return st;
}

static ts_status choose(struct search *s, const struct plan *fresh, const struct reconf_plan *cur,
                        const struct reconf_replan_opts *o, size_t *pick, struct reconf_replan *out,
                        struct ts_error *err)
{
    const char **no = calloc(s->n + 2, sizeof(*no));
    if (!no)
        return TS_NOMEM;
    *pick = best(s, o, no);
    ts_status st = TS_OK;
    if (*pick == s->n && o->max_drains >= 0) {
        size_t before_n = s->n;
        const char **more = realloc(no, (s->n + 2) * sizeof(*no));
        st = more ? keep_partial(s, fresh, cur, o) : TS_NOMEM;
        no = more ? more : no;
        *pick = s->n; /* none, unless the no-drain plan was made and meets the limits */
        if (st == TS_OK && s->n > before_n && s->c[before_n].p) {
            no[before_n] = refusal(&s->a, &s->c[before_n], o);
            *pick = no[before_n] ? s->n : before_n;
        } else if (s->n > before_n)
            no[before_n] = s->c[before_n].why;
    }
    if (st == TS_OK && *pick == s->n)
        st = ts_err(err, TS_INFEASIBLE, "no plan meets the replanning limits: %s", reasons(s, no));
    if (st == TS_OK) {
        struct reconf_replan *r = &s->c[*pick].r;
        r->note = note(s, *pick, no, o, &r->arena);
        st = points(s, *pick, no, &s->c[*pick].r) ? TS_OK : TS_NOMEM;
        *out = s->c[*pick].r;
        s->c[*pick].r = (struct reconf_replan){0};
        out->strategy = strategy(&out->arena, &s->c[*pick]);
    }
    free(no);
    return st;
}

ts_status reconf_replan(struct plan **p, const struct reconf_plan *cur,
                        const struct reconf_replan_opts *o, struct reconf_replan *out,
                        struct ts_error *err)
{
    struct search s = {0};
    struct reconf__keepix ix = {0};
    size_t pick = 0;
    ts_arena_init(&s.a);
    remap(*p, cur);
    ts_status st = add(&s, *p, cur, "fresh", NULL);
    if (st == TS_OK)
        st = reconf__keepix_build(*p, cur, &ix, 0, NULL, 0, o->cat) ? TS_OK : TS_NOMEM;
    if (st == TS_OK)
        st = keep_and_empty(&s, *p, cur, &ix);
    if (st == TS_OK)
        st = choose(&s, *p, cur, o, &pick, out, err);
    else
        ts_err(err, st, "out of memory");
    reconf__keepix_free(&ix);
    if (st == TS_OK) {
        *p = s.c[pick].p;
        s.c[pick].p = NULL;
    }
    for (size_t k = st == TS_OK ? 0 : 1; k < s.n; k++) { /* failed: *p stays the caller's */
        plan_free(s.c[k].p);
        reconf_replan_release(&s.c[k].r);
    }
    if (st != TS_OK && s.n)
        reconf_replan_release(&s.c[0].r);
    free(s.c);
    ts_arena_free(&s.a);
    return st;
}
