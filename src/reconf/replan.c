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
 * --prefer orders them (drains then cards, or cards then drains); the first
 * within --max-drains that never drains every replica of a workload wins.
 */
#include <stdlib.h>
#include <string.h>
#include "reconf/internal.h"
#include "reconf/reconf.h"

const char *const reconf_prefer_names[] = {"fewer-drains", "fewer-cards", NULL};

static int same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* ---- fresh: renumber cards, keep starts ----------------------------------- */

/* Instances of g that c runs (same tenant, workload and MIG profile). */
static int score(const struct plan_gpu *g, const struct reconf_card *c)
{
    int n = 0, used[INV_GIS_MAX * 8] = {0};
    for (size_t t = 0; c && t < g->ninst; t++) {
        const struct plan_inst *in = &g->inst[t];
        const char *prof = in->profile ? in->profile->name : NULL;
        for (int h = 0; in->row && h < c->nheld && h < INV_GIS_MAX * 8; h++)
            if (!used[h] && same_str(c->held[h].tenant, in->row->tenant->name) &&
                same_str(c->held[h].workload, in->row->workload->name) &&
                same_str(c->held[h].profile, prof)) {
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
    for (int h = 0; in->row && h < c->nheld; h++)
        if (c->held[h].start == in->start && same_str(c->held[h].profile, in->profile->name) &&
            same_str(c->held[h].tenant, in->row->tenant->name) &&
            same_str(c->held[h].workload, in->row->workload->name))
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

/* ---- choosing ------------------------------------------------------------- */

struct cand {
    struct plan *p;
    struct reconf_replan r;
    const char *why; /* not usable: why */
};

static const char *refusal(struct ts_arena *a, const struct cand *c, int max_drains)
{
    if (c->why)
        return c->why;
    if (max_drains >= 0 && c->r.drains > max_drains)
        return ts_arena_printf(a, "it drains %d card%s, over --max-drains %d", c->r.drains,
                               c->r.drains == 1 ? "" : "s", max_drains);
    if (c->r.unsafe)
        return ts_arena_printf(a, "one drain would stop every running replica of %s", c->r.unsafe);
    return NULL;
}

/* 1 when candidate b goes before a under prefer. */
static int better(const struct cand *a, const struct cand *b, int prefer)
{
    int da = a->r.drains, db = b->r.drains;
    int ca = a->p->summary.gpus_used, cb = b->p->summary.gpus_used;
    if (prefer == RECONF_PREFER_FEWER_CARDS)
        return cb < ca || (cb == ca && db < da);
    return db < da || (db == da && cb < ca);
}

static ts_status pick(struct cand *c, const struct reconf_replan_opts *o, struct plan **p,
                      struct reconf_replan *out, struct ts_error *err)
{
    struct ts_arena a;
    ts_arena_init(&a);
    const char *no[2] = {refusal(&a, &c[0], o->max_drains), refusal(&a, &c[1], o->max_drains)};
    int first = no[1] ? 0 : no[0] ? 1 : better(&c[0], &c[1], o->prefer);
    ts_status st = TS_OK;
    if (no[first])
        st = ts_err(err, TS_INFEASIBLE,
                    "no plan meets the replanning limits: the fresh plan: %s; keeping running "
                    "placements: %s",
                    no[0], no[1]);
    else if (no[!first])
        c[first].r.note = ts_arena_printf(&c[first].r.arena, "not the %s plan: %s",
                                          first ? "fresh" : "keep", no[!first]);
    else
        c[first].r.note = ts_arena_printf(
            &c[first].r.arena, "not the %s plan (%d drains, %d cards): --prefer %s",
            first ? "fresh" : "keep", c[!first].r.drains, c[!first].p->summary.gpus_used,
            reconf_prefer_names[o->prefer]);
    ts_arena_free(&a);
    if (st != TS_OK)
        return st;
    c[first].r.strategy = first ? "running placements kept, new work in free space"
                                : "fresh plan, cards renumbered to keep running instances";
    *out = c[first].r;
    *p = c[first].p;
    c[first].p = NULL;
    c[first].r = (struct reconf_replan){0};
    return TS_OK;
}

ts_status reconf_replan(struct plan **p, const struct reconf_plan *cur,
                        const struct reconf_replan_opts *o, struct reconf_replan *out,
                        struct ts_error *err)
{
    struct cand c[2] = {{.p = *p}, {.p = NULL}};
    struct ts_arena why;
    ts_arena_init(&why);
    remap(*p, cur);
    ts_status st = reconf_steps(c[0].p, cur, &c[0].r);
    if (st == TS_OK)
        st = reconf__keep_plan(*p, cur, &c[1].p, &c[1].why, &why);
    if (st == TS_OK && c[1].p)
        st = reconf_steps(c[1].p, cur, &c[1].r);
    if (st == TS_OK)
        st = pick(c, o, p, out, err);
    else
        ts_err(err, st, "out of memory");
    for (int k = 0; k < 2; k++) {
        if (c[k].p && c[k].p != *p)
            plan_free(c[k].p);
        reconf_replan_release(&c[k].r);
    }
    ts_arena_free(&why);
    return st;
}
