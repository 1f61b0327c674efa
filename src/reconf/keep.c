/*
 * keep.c - replanning's keep candidate: a plan of the new spec that leaves
 * every running instance in place when its workload is still in the spec
 * with the same decision (MIG profile, or the same kind of card), and puts
 * what is missing (new workloads, extra replicas) into free MIG slices
 * (partly used MIG cards first, then free cards) or onto free cards (whole
 * GPUs, multi-GPU replicas on one node). When that fails, the same with
 * one running MIG card released (drained): new work is placed first, with
 * starts on that card chosen to overlap the fewest running instances, then
 * its instances go back to their own starts where still free, else
 * elsewhere; the fewest cards wins. Instances copy their fields from
 * the fresh plan's instance of the same decision, so the two plans agree on
 * memory, shares and flags; the result must pass plan_verify.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "reconf/internal.h"

struct keep {
    const struct plan *fresh;
    struct plan *p;
    const struct reconf_plan *cur;
    int *placed; /* replicas per decision row */
    struct rmap {
        int row, cur, neu;
    } * map; /* multi-GPU replicas: running number -> new number */
    size_t nmap, capmap;
    const char *why;
    struct ts_arena *a;
    size_t released; /* index of the drained card in p->gpus, or SIZE_MAX */
    int *held_back;  /* per row: instances of the released card to put back */
};

static int row_of(const struct decide_result *d, const char *tenant, const char *workload)
{
    for (size_t i = 0; tenant && workload && i < d->nrows; i++)
        if (!strcmp(d->rows[i].tenant->name, tenant) &&
            !strcmp(d->rows[i].workload->name, workload))
            return (int)i;
    return -1;
}

/* The fresh plan's first instance of row and its card's mode. */
static const struct plan_inst *template_of(const struct plan *f, int row, int *mode)
{
    for (size_t i = 0; i < f->ngpus; i++)
        for (size_t k = 0; k < f->gpus[i].ninst; k++)
            if (f->gpus[i].inst[k].row == &f->decisions->rows[row]) {
                *mode = f->gpus[i].mode;
                return &f->gpus[i].inst[k];
            }
    return NULL;
}

static int add_inst(struct plan *p, struct plan_gpu *g, const struct plan_inst *in)
{
    if (!ts_arena_grow(&p->arena, (void **)&g->inst, &g->cap, g->ninst, sizeof(*g->inst)))
        return 0;
    g->inst[g->ninst++] = *in;
    return 1;
}

/* The new replica number for running replica cur of row, or -1 when the
 * spec now asks for fewer. Parts of one multi-GPU replica share one. */
static int replica_for(struct keep *k, int row, int cur)
{
    for (size_t i = 0; i < k->nmap; i++)
        if (k->map[i].row == row && k->map[i].cur == cur)
            return k->map[i].neu;
    if (k->placed[row] >= k->fresh->decisions->rows[row].workload->replicas)
        return -1;
    if (!ts_arena_grow(k->a, (void **)&k->map, &k->capmap, k->nmap, sizeof(*k->map)))
        return -2;
    k->map[k->nmap++] = (struct rmap){row, cur, k->placed[row]};
    return k->placed[row]++;
}

/* 1 when running instance h of card c may stay as an instance like tpl. */
static int fits_kind(const struct reconf_card *c, const struct reconf_want *h,
                     const struct plan_inst *tpl, int mode)
{
    if (c->mig)
        return tpl->profile && h->profile && !strcmp(tpl->profile->name, h->profile);
    return !tpl->profile && !strcmp(c->mode, plan_mode_names[mode]) && h->guest == tpl->guest;
}

/* The fresh plan's instance like running instance h of card c on g, or
 * NULL when its workload left the spec or is decided otherwise now. */
static const struct plan_inst *keepable(const struct keep *k, const struct plan_gpu *g,
                                        const struct reconf_card *c, const struct reconf_want *h,
                                        int *row, int *mode)
{
    *row = row_of(k->fresh->decisions, h->tenant, h->workload);
    const struct plan_inst *tpl = *row < 0 ? NULL : template_of(k->fresh, *row, mode);
    if (!tpl || !fits_kind(c, h, tpl, *mode) || tpl->row->model != g->model ||
        decide_card_refuses(tpl->row, g->node, g->model))
        return NULL;
    return tpl;
}

static int keep_held(struct keep *k, struct plan_gpu *g, const struct reconf_card *c,
                     const struct reconf_want *h)
{
    int mode, row;
    const struct plan_inst *tpl = keepable(k, g, c, h, &row, &mode);
    if (!tpl)
        return 1; /* removed, or decided otherwise now: not kept */
    int rep = replica_for(k, row, h->replica);
    if (rep < 0)
        return rep == -1;
    struct plan_inst in = *tpl;
    in.replica = rep;
    in.gpu_part = h->gpu_part;
    if (c->mig) {
        in.start = h->start;
        in.size = h->size;
    }
    g->mode = c->mig ? PLAN_MIG : mode;
    g->sharing |= in.guest;
    return add_inst(k->p, g, &in);
}

static int keep_running(struct keep *k)
{
    for (size_t i = 0; i < k->p->ngpus; i++) {
        struct plan_gpu *g = &k->p->gpus[i];
        const struct reconf_card *c = reconf_plan_card(k->cur, g->node->name, g->index);
        if (!c || strcmp(c->model, g->model->name))
            continue;
        for (int h = 0; i == k->released && h < c->nheld; h++) {
            int row = row_of(k->fresh->decisions, c->held[h].tenant, c->held[h].workload);
            k->held_back[row < 0 ? k->fresh->decisions->nrows : (size_t)row] +=
                !c->held[h].gpu_part;
        }
        for (int h = 0; i != k->released && h < c->nheld; h++)
            if (!keep_held(k, g, c, &c->held[h]))
                return 0;
    }
    return 1;
}

/* ---- placing what is missing ------------------------------------------------ */

int reconf__overlaps(const struct plan_gpu *g, const struct plan_inst *self, int start, int size)
{
    for (size_t k = 0; k < g->ninst; k++)
        if (&g->inst[k] != self && g->inst[k].profile && g->inst[k].start < start + size &&
            start < g->inst[k].start + g->inst[k].size)
            return 1;
    return 0;
}

/* Running instances of card g (released) that [start, start + size)
 * overlaps and that would go back there (avoid NULL: none). */
static int covers(const struct keep *k, const struct plan_gpu *g, const struct reconf_card *c,
                  int start, int size)
{
    int n = 0, row, mode;
    for (int h = 0; c && h < c->nheld; h++)
        n += c->held[h].start < start + size && start < c->held[h].start + c->held[h].size &&
             keepable(k, g, c, &c->held[h], &row, &mode) != NULL;
    return n;
}

/* A legal free start for profile pr on g, or -1 (count and compute too);
 * of those, the one over the fewest instances of avoid that go back. */
static int mig_start(const struct keep *k, const struct plan_gpu *g, const struct cat_profile *pr,
                     const struct reconf_card *avoid)
{
    int count = 0, compute = 0;
    if (g->mode != PLAN_MIG && g->mode != PLAN_FREE)
        return -1;
    for (size_t i = 0; i < g->ninst; i++) {
        count += g->inst[i].profile == pr;
        compute += g->inst[i].profile ? g->inst[i].profile->compute : 0;
    }
    if (count >= pr->max_count || compute + pr->compute > g->model->compute_slices)
        return -1;
    int best = -1, least = 1 << 30;
    for (size_t s = 0; s < pr->nstarts; s++) {
        int at = pr->starts[s], over = covers(k, g, avoid, at, pr->mem_units);
        if (at + pr->mem_units <= g->model->grid && !reconf__overlaps(g, NULL, at, pr->mem_units) &&
            over < least)
            best = at, least = over;
    }
    return best;
}

/* Spread: may row r get another replica on g? */
static int spread_ok(const struct plan *p, const struct plan_gpu *g, const struct decide_row *r)
{
    int spread = r->workload->spread;
    for (size_t i = 0; spread != SPEC_SPREAD_NONE && i < p->ngpus; i++) {
        const struct plan_gpu *o = &p->gpus[i];
        if (o != g && (spread == SPEC_SPREAD_GPU || o->node != g->node))
            continue;
        for (size_t k = 0; k < o->ninst; k++)
            if (o->inst[k].row == r)
                return 0;
    }
    return 1;
}

static int usable(const struct plan *p, const struct plan_gpu *g, const struct decide_row *r)
{
    return g->model == r->model && !decide_card_refuses(r, g->node, g->model) && spread_ok(p, g, r);
}

/* One more MIG replica of row; 1 placed, 0 no room, -1 NOMEM. */
static int place_mig(struct keep *k, int row, const struct plan_inst *tpl)
{
    const struct decide_row *r = &k->fresh->decisions->rows[row];
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < k->p->ngpus; i++) {
            struct plan_gpu *g = &k->p->gpus[i];
            const struct reconf_card *avoid = i == k->released
                                                  ? reconf_plan_card(k->cur, g->node->name,
                                                                     g->index)
                                                  : NULL;
            int s = (g->mode == PLAN_MIG) == (pass == 0) && usable(k->p, g, r)
                        ? mig_start(k, g, tpl->profile, avoid)
                        : -1;
            if (s < 0)
                continue;
            struct plan_inst in = *tpl;
            in.start = s;
            in.size = tpl->profile->mem_units;
            in.replica = k->placed[row]++;
            g->mode = PLAN_MIG;
            return add_inst(k->p, g, &in) ? 1 : -1;
        }
    return 0;
}

/* One more whole-GPU replica of row on free cards of one node. */
static int place_whole(struct keep *k, int row, const struct plan_inst *tpl)
{
    const struct decide_row *r = &k->fresh->decisions->rows[row];
    struct plan_gpu *take[SPEC_REPLICA_GPUS_MAX];
    for (size_t i = 0; i < k->p->ngpus; i++) {
        int n = 0;
        for (size_t j = i; j < k->p->ngpus && n < r->gpus; j++) {
            struct plan_gpu *g = &k->p->gpus[j];
            if (g->node == k->p->gpus[i].node && g->mode == PLAN_FREE && usable(k->p, g, r))
                take[n++] = g;
        }
        if (n < r->gpus)
            continue;
        for (int part = 0; part < n; part++) {
            struct plan_inst in = *tpl;
            in.replica = k->placed[row];
            in.gpu_part = part;
            take[part]->mode = PLAN_WHOLE;
            if (!add_inst(k->p, take[part], &in))
                return -1;
        }
        k->placed[row]++;
        return 1;
    }
    return 0;
}

/* Place replicas of row up to want; 0 NOMEM, 1 done or k->why set. */
static int place_row(struct keep *k, size_t row, int want)
{
    int mode;
    const struct plan_inst *tpl = template_of(k->fresh, (int)row, &mode);
    const struct decide_row *r = &k->fresh->decisions->rows[row];
    while (tpl && !k->why && k->placed[row] < want) {
        int got = mode == PLAN_MIG                    ? place_mig(k, (int)row, tpl)
                  : mode == PLAN_WHOLE && !tpl->guest ? place_whole(k, (int)row, tpl)
                                                      : -2;
        if (got == -1)
            return 0;
        if (got == -2)
            k->why = ts_arena_printf(k->a,
                                     "it places only new MIG instances and whole GPUs; "
                                     "%s/%s (%s) needs the fresh plan",
                                     r->tenant->name, r->workload->name, plan_mode_names[mode]);
        else if (!got)
            k->why = ts_arena_printf(k->a,
                                     "no free MIG slices or cards for replica r%d of %s/%s "
                                     "without moving running work",
                                     k->placed[row], r->tenant->name, r->workload->name);
    }
    return 1;
}

/* Size rank of a row for first-fit decreasing: whole GPUs, then MIG
 * profiles by memory units. */
static int row_size(const struct decide_row *r)
{
    return r->profile ? r->profile->mem_units : 1000 * r->gpus;
}

/* The new work (what the released card held waits), largest first. */
static int place_new(struct keep *k)
{
    const struct decide_result *d = k->fresh->decisions;
    for (int pass = 0; pass < 2; pass++)
        for (size_t row = 0; row < d->nrows; row++) {
            int big = row_size(&d->rows[row]) >= 1000;
            if (big != (pass == 0))
                continue;
            int want = d->rows[row].workload->replicas - k->held_back[row];
            if (!place_row(k, row, want))
                return 0;
        }
    return 1;
}

/* The released card's instances: at their own start when still free. */
static int put_back(struct keep *k)
{
    struct plan_gpu *g = k->released < k->p->ngpus ? &k->p->gpus[k->released] : NULL;
    const struct reconf_card *c = g ? reconf_plan_card(k->cur, g->node->name, g->index) : NULL;
    for (int h = 0; c && h < c->nheld; h++) {
        const struct reconf_want *w = &c->held[h];
        int mode, row;
        const struct plan_inst *tpl = c->mig ? keepable(k, g, c, w, &row, &mode) : NULL;
        if (!tpl || k->placed[row] >= k->fresh->decisions->rows[row].workload->replicas ||
            (g->mode != PLAN_MIG && g->mode != PLAN_FREE) ||
            reconf__overlaps(g, NULL, w->start, w->size) || mig_start(k, g, tpl->profile, NULL) < 0)
            continue;
        struct plan_inst in = *tpl;
        in.start = w->start;
        in.size = w->size;
        in.replica = k->placed[row]++;
        g->mode = PLAN_MIG;
        if (!add_inst(k->p, g, &in))
            return 0;
    }
    return 1;
}

static int place_missing(struct keep *k)
{
    const struct decide_result *d = k->fresh->decisions;
    if (!place_new(k) || !put_back(k))
        return 0;
    for (size_t row = 0; !k->why && row < d->nrows; row++)
        if (!place_row(k, row, d->rows[row].workload->replicas))
            return 0;
    return 1;
}

/* ---- the candidate ------------------------------------------------------------ */

static struct plan *empty_like(const struct plan *f)
{
    struct plan *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    ts_arena_init(&p->arena);
    p->model = f->model;
    p->decisions = f->decisions;
    p->summary = f->summary;
    p->gpus = ts_arena_array(&p->arena, f->ngpus + 1, sizeof(*p->gpus));
    if (!p->gpus) {
        plan_free(p);
        return NULL;
    }
    for (size_t i = 0; i < f->ngpus; i++)
        p->gpus[p->ngpus++] = (struct plan_gpu){
            .node = f->gpus[i].node, .index = f->gpus[i].index, .model = f->gpus[i].model};
    return p;
}

static int cmp_start(const void *a, const void *b)
{
    return ((const struct plan_inst *)a)->start - ((const struct plan_inst *)b)->start;
}

static void finish(struct keep *k)
{
    struct ts_error e = {0};
    for (size_t i = 0; i < k->p->ngpus; i++)
        if (k->p->gpus[i].mode == PLAN_MIG && k->p->gpus[i].ninst > 1)
            qsort(k->p->gpus[i].inst, k->p->gpus[i].ninst, sizeof(struct plan_inst), cmp_start);
    plan_summarise(k->p);
    k->p->summary.solver = "replan: running placements kept";
    if (!k->why && plan_verify(k->p, &e) != TS_OK)
        k->why = ts_arena_printf(k->a, "the kept layout fails verification: %s", e.msg);
}

/* One keep candidate releasing card released (SIZE_MAX: none). */
static ts_status keep_one(const struct plan *fresh, const struct reconf_plan *cur, size_t released,
                          struct plan **out, const char **why, struct ts_arena *a)
{
    struct keep k = {fresh, empty_like(fresh), cur, NULL, NULL, 0, 0, NULL, a, released, NULL};
    k.placed = calloc(fresh->decisions->nrows + 1, sizeof(int));
    k.held_back = calloc(fresh->decisions->nrows + 1, sizeof(int));
    int ok = k.p && k.placed && k.held_back && keep_running(&k) && place_missing(&k);
    if (ok)
        finish(&k);
    free(k.placed);
    free(k.held_back);
    *out = ok && !k.why ? k.p : NULL;
    *why = k.why;
    if (!*out)
        plan_free(k.p);
    return ok ? TS_OK : TS_NOMEM;
}

/* A card worth releasing: MIG now, running something. */
static int releasable(const struct plan *fresh, const struct reconf_plan *cur, size_t i)
{
    const struct plan_gpu *g = &fresh->gpus[i];
    const struct reconf_card *c = reconf_plan_card(cur, g->node->name, g->index);
    return c && c->mig && c->nheld > 0 && !strcmp(c->model, g->model->name);
}

ts_status reconf__keep_plan(const struct plan *fresh, const struct reconf_plan *cur,
                            struct plan **out, const char **why, struct ts_arena *a)
{
    ts_status st = keep_one(fresh, cur, SIZE_MAX, out, why, a);
    int tries = 0;
    if (*out)
        return st;
    for (size_t i = 0; st == TS_OK && i < fresh->ngpus; i++) {
        struct plan *p;
        const char *no;
        if (!releasable(fresh, cur, i) || ++tries > RECONF_RELEASE_TRIES_MAX)
            continue;
        st = keep_one(fresh, cur, i, &p, &no, a);
        if (p && *out && p->summary.gpus_used >= (*out)->summary.gpus_used)
            plan_free(p);
        else if (p) {
            plan_free(*out);
            *out = p;
        }
    }
    if (*out)
        *why = NULL;
    return st;
}
