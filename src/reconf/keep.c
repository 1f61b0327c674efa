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
 * memory, shares and flags; the result must pass plan_verify, so a shared
 * card keeps only what still fits it (memory, MPS shares and clients,
 * trust: a pool client that grew may not) and the rest moves, the fewest
 * instances it can (keep_card). The no-drain
 * plan (partial) may hold a row at the MIG profile it runs on (pin.c): a
 * kept instance under the workload's need is marked held, and the row is
 * named as not placed at its new size (no replica of it is added); or keep
 * a row as it runs (pin.c's as_runs): each running instance copied from
 * the running plan (profile, start, memory, share, part), the row named.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "reconf/internal.h"
#include "util/grow.h"

struct cand;

struct keep {
    const struct plan *fresh;
    struct plan *p;
    const struct reconf_plan *cur;
    int *placed; /* replicas per decision row */
    struct rmap {
        int cur, neu;
        size_t next; /* the row's previous entry + 1, 0: none */
    } * map;         /* multi-GPU replicas: running number -> new number */
    size_t nmap, capmap;
    size_t *head; /* per row: its last map entry + 1, 0: none */
    const char *why;
    struct ts_arena *a;
    size_t released; /* index of the drained card in p->gpus, or SIZE_MAX */
    int *held_back;  /* per row: instances of the released card to put back */
    const struct reconf__keepix *ix;
    struct reconf_replan *partial; /* not NULL: what does not fit goes to its unplaced */
    char *gave_up;                 /* per row: partial, its missing replicas named */
    int *parts;                    /* per row: the most GPU parts a running replica has */
    struct cand *cand;             /* keep_card's scratch: one card's kept candidates */
    int *untrust;
    size_t capcand, capuntrust;
};

static int row_of(const struct keep *k, const char *tenant, const char *workload)
{
    return reconf__row(&k->ix->rows, tenant, workload);
}

/* The template of row (the fresh plan's first instance, or the one it is
 * pinned to) and its card's mode; NULL when the fresh plan has none. */
static const struct plan_inst *template_of(const struct keep *k, int row, int *mode)
{
    *mode = k->ix->mode[row];
    return k->ix->has[row] ? &k->ix->tpl[row] : NULL;
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
    for (size_t i = k->head[row]; i; i = k->map[i - 1].next)
        if (k->map[i - 1].cur == cur)
            return k->map[i - 1].neu;
    if (k->placed[row] >= k->ix->d->rows[row].workload->replicas)
        return -1;
    if (!ts_grow((void **)&k->map, &k->capmap, k->nmap, sizeof(*k->map)))
        return -2;
    k->map[k->nmap++] = (struct rmap){cur, k->placed[row], k->head[row]};
    k->head[row] = k->nmap;
    return k->placed[row]++;
}

/* 1 when running instance h of card c may stay as an instance like tpl:
 * the same MIG profile, or off MIG the same kind of card. A time-slicing
 * client's guest flag is a label on a time-sliced card (the pod runs the
 * same either way), so such a card keeps a client or guest of a
 * time-slicing row whichever the template is, and a guest riding a whole
 * card stays a guest there. */
static int fits_kind(const struct reconf_card *c, const struct reconf_want *h,
                     const struct plan_inst *tpl, int mode)
{
    if (c->mig)
        return tpl->profile && h->profile && !strcmp(tpl->profile->name, h->profile);
    if (tpl->profile)
        return 0;
    if (tpl->row->mech == DECIDE_TIME_SLICING)
        return !strcmp(c->mode, plan_mode_names[PLAN_TIME_SLICING]) ||
               (h->guest && !strcmp(c->mode, plan_mode_names[PLAN_WHOLE]));
    return !strcmp(c->mode, plan_mode_names[mode]) && h->guest == tpl->guest;
}

/* The fresh plan's instance like running instance h of card c on g, or
 * NULL when its workload left the spec or is decided otherwise now. */
static const struct plan_inst *keepable(const struct keep *k, const struct plan_gpu *g,
                                        const struct reconf_card *c, const struct reconf_want *h,
                                        int *row, int *mode)
{
    *row = row_of(k, h->tenant, h->workload);
    const struct plan_inst *tpl = *row < 0 ? NULL : template_of(k, *row, mode);
    if (!tpl || !fits_kind(c, h, tpl, *mode) || tpl->row->model != g->model ||
        decide_card_refuses(tpl->row, g->node, g->model))
        return NULL;
    return tpl;
}

/* The plan mode named mode (a card of a running plan), or PLAN_FREE. */
static int mode_of(const char *mode)
{
    for (int m = 0; plan_mode_names[m]; m++)
        if (!strcmp(plan_mode_names[m], mode))
            return m;
    return PLAN_FREE;
}

/* Running instance h of card c, exactly as it runs, for a row kept as it
 * runs (pin.c): its profile, start, memory, share and part; held when
 * under the workload's need. 0: not kept. */
static int as_runs_inst(const struct keep *k, const struct plan_gpu *g, const struct reconf_card *c,
                        const struct reconf_want *h, int row, struct plan_inst *in)
{
    const struct decide_row *r = &k->ix->d->rows[row];
    const struct cat_profile *p = c->mig && h->profile ? cat_profile_find(g->model, h->profile)
                                                       : NULL;
    if (c->mig && !p)
        return 0; /* not a profile of the card (checked with the plan): not kept */
    *in = (struct plan_inst){.row = r,
                             .profile = p,
                             .start = p ? h->start : 0,
                             .size = p ? h->size : 0,
                             .gpu_part = h->gpu_part,
                             .mem_gib = h->mem_gib,
                             .sm_percent = h->sm_percent,
                             .guest = h->guest,
                             .held = p ? !plan_profile_holds(p, r)
                                       : h->mem_gib + 1e-9 < r->need_gib / (r->gpus ? r->gpus : 1)};
    return 1;
}

/* The instance running instance h of card c stays as on g (its replica
 * not yet numbered), and its row; 0: not kept (removed, or decided
 * otherwise now). */
static int kept_inst(const struct keep *k, const struct plan_gpu *g, const struct reconf_card *c,
                     const struct reconf_want *h, int *row, struct plan_inst *in)
{
    int mode;
    *row = row_of(k, h->tenant, h->workload);
    if (*row >= 0 && k->ix->as_runs[*row])
        return as_runs_inst(k, g, c, h, *row, in);
    const struct plan_inst *tpl = keepable(k, g, c, h, row, &mode);
    if (!tpl)
        return 0;
    if (!c->mig && !tpl->guest && !tpl->profile &&
        (tpl->row->mech == DECIDE_WHOLE || tpl->row->mech == DECIDE_VGPU) &&
        k->parts[*row] != tpl->row->gpus)
        return 0; /* a replica of another number of GPUs now: it moves whole */
    *in = *tpl;
    in->gpu_part = h->gpu_part;
    in->guest = c->mig ? 0 : h->guest;
    if (c->mig) {
        in->start = h->start;
        in->size = h->size;
        in->held = k->ix->wanted[*row] && !plan_profile_holds(in->profile, in->row);
    }
    return 1;
}

/* ---- what a shared card keeps ---------------------------------------------- */

/* A card's kept candidates: the instance each would be, its row, and
 * whether it stays. */
struct cand {
    struct plan_inst in;
    int row, h, on;
};

/* Memory, MPS share and clients of the candidates on, and the pairs of
 * tenants that do not trust each other (untrust[i]: i's). */
struct load {
    double mem;
    int sm, clients, distrust;
};

static struct load load_of(const struct keep *k, int mode, struct cand *x, int n, int *untrust)
{
    struct load l = {0};
    for (int i = 0; i < n; i++) {
        untrust[i] = 0;
        if (!x[i].on)
            continue;
        l.mem += mode == PLAN_WHOLE && x[i].in.guest ? 0 : x[i].in.mem_gib;
        l.sm += mode == PLAN_MPS ? x[i].in.sm_percent : 0;
        l.clients++;
        for (int j = 0; j < i; j++)
            if (x[j].on && !spec_tenants_trust(k->p->model, x[i].in.row->tenant->name,
                                               x[j].in.row->tenant->name)) {
                untrust[i]++;
                untrust[j]++;
                l.distrust++;
            }
    }
    return l;
}

static int load_fits(const struct plan_gpu *g, int mode, struct load l)
{
    return l.mem <= g->model->memory_gib + 1e-6 && l.sm <= 100 && !l.distrust &&
           (mode != PLAN_MPS || l.clients <= g->model->mps_max_clients);
}

/* 1 when candidate x grew: the instance it becomes is larger than it runs. */
static int grew(const struct cand *x, const struct reconf_want *h)
{
    return x->in.mem_gib > h->mem_gib + 1e-6 || x->in.sm_percent > h->sm_percent;
}

/* The candidate that moves next off an overfull card: one that tenants
 * distrust most; else of those whose move alone makes the card fit, a
 * grown one, then the smallest; else the largest (a grown one first). */
static int victim(const struct keep *k, const struct plan_gpu *g, const struct reconf_card *c,
                  int mode, struct cand *x, int n, int *untrust)
{
    struct load l = load_of(k, mode, x, n, untrust);
    int best = -1, most = 0, alone = 0;
    for (int i = 0; l.distrust && i < n; i++)
        if (x[i].on && untrust[i] > most)
            best = i, most = untrust[i];
    if (best >= 0)
        return best;
    for (int i = 0; i < n; i++) {
        if (!x[i].on)
            continue;
        struct load w = l;
        w.mem -= mode == PLAN_WHOLE && x[i].in.guest ? 0 : x[i].in.mem_gib;
        w.sm -= mode == PLAN_MPS ? x[i].in.sm_percent : 0;
        w.clients--;
        int fixes = load_fits(g, mode, w), up = grew(&x[i], &c->held[x[i].h]);
        double m = x[i].in.mem_gib;
        if (best < 0 || fixes > alone ||
            (fixes == alone && (up > grew(&x[best], &c->held[x[best].h]) ||
                                (up == grew(&x[best], &c->held[x[best].h]) &&
                                 (fixes ? m <= x[best].in.mem_gib : m >= x[best].in.mem_gib)))))
            best = i, alone = fixes;
    }
    return best;
}

/* Off MIG, the keep plan (not the no-drain one) keeps what fits on the
 * card: memory, MPS shares and clients, trust, as plan_verify checks; the
 * rest moves (is placed like new work), the fewest it can. */
static void fit_card(const struct keep *k, const struct plan_gpu *g, const struct reconf_card *c,
                     struct cand *x, int n, int *untrust)
{
    int mode = mode_of(c->mode);
    if (c->mig || k->partial)
        return;
    while (!load_fits(g, mode, load_of(k, mode, x, n, untrust))) {
        int v = victim(k, g, c, mode, x, n, untrust);
        if (v < 0)
            return;
        x[v].on = 0;
    }
}

/* Running card c's instances kept on g: those that fit it (fit_card), of
 * rows that still want a replica, spread as asked; 0: NOMEM. */
static int keep_card(struct keep *k, struct plan_gpu *g, const struct reconf_card *c)
{
    int n = 0;
    if (!ts_grow((void **)&k->cand, &k->capcand, (size_t)c->nheld, sizeof(*k->cand)) ||
        !ts_grow((void **)&k->untrust, &k->capuntrust, (size_t)c->nheld, sizeof(*k->untrust)))
        return 0;
    for (int h = 0; h < c->nheld; h++) {
        struct cand *x = &k->cand[n];
        if (kept_inst(k, g, c, &c->held[h], &x->row, &x->in))
            x->h = h, x->on = 1, n++;
    }
    fit_card(k, g, c, k->cand, n, k->untrust);
    for (int i = 0; i < n; i++) {
        struct cand *x = &k->cand[i];
        const struct reconf_want *h = &c->held[x->h];
        if (!x->on ||
            (!k->partial && x->in.row->gpus <= 1 && !reconf__spread_ok(k->p, g, x->in.row)))
            continue;
        int rep = replica_for(k, x->row, h->replica);
        if (rep == -2)
            return 0;
        if (rep < 0)
            continue;
        x->in.replica = rep;
        g->mode = c->mig ? PLAN_MIG : mode_of(c->mode);
        g->sharing |= x->in.guest && g->mode == PLAN_WHOLE;
        if (!add_inst(k->p, g, &x->in))
            return 0;
    }
    return 1;
}

/* Each row's most GPU parts a running replica has (k->parts). */
static void count_parts(struct keep *k)
{
    for (int c = 0; c < k->cur->n; c++)
        for (int h = 0; h < k->cur->t[c].nheld; h++) {
            const struct reconf_want *w = &k->cur->t[c].held[h];
            int row = row_of(k, w->tenant, w->workload);
            if (row >= 0 && w->gpu_part + 1 > k->parts[row])
                k->parts[row] = w->gpu_part + 1;
        }
}

static int keep_running(struct keep *k)
{
    count_parts(k);
    for (size_t i = 0; i < k->p->ngpus; i++) {
        struct plan_gpu *g = &k->p->gpus[i];
        const struct reconf_card *c = reconf_plan_card(k->cur, g->node->name, g->index);
        if (!c || strcmp(c->model, g->model->name))
            continue;
        for (int h = 0; i == k->released && h < c->nheld; h++) {
            int row = row_of(k, c->held[h].tenant, c->held[h].workload);
            k->held_back[row < 0 ? k->ix->d->nrows : (size_t)row] += !c->held[h].gpu_part;
        }
        if (i != k->released && !keep_card(k, g, c))
            return 0;
    }
    return 1;
}

/* ---- placing what is missing ------------------------------------------------ */

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

int reconf__mig_start(const struct plan_gpu *g, const struct cat_profile *pr)
{
    return mig_start(NULL, g, pr, NULL);
}

/* One more MIG replica of row; 1 placed, 0 no room, -1 NOMEM. */
static int place_mig(struct keep *k, int row, const struct plan_inst *tpl)
{
    const struct decide_row *r = &k->ix->d->rows[row];
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < k->p->ngpus; i++) {
            struct plan_gpu *g = &k->p->gpus[i];
            const struct reconf_card *avoid = i == k->released
                                                  ? reconf_plan_card(k->cur, g->node->name,
                                                                     g->index)
                                                  : NULL;
            int s = (g->mode == PLAN_MIG) == (pass == 0) && reconf__usable(k->p, g, r)
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
    const struct decide_row *r = &k->ix->d->rows[row];
    struct plan_gpu *take[SPEC_REPLICA_GPUS_MAX];
    for (size_t i = 0; i < k->p->ngpus; i++) {
        int n = 0;
        for (size_t j = i; j < k->p->ngpus && n < r->gpus; j++) {
            struct plan_gpu *g = &k->p->gpus[j];
            if (g->node == k->p->gpus[i].node && g->mode == PLAN_FREE && reconf__usable(k->p, g, r))
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

/* One more client of a sharing pool (MPS, time-slicing, memory fraction):
 * a card of that pool with room and tenants it trusts, else a free card. */
static int place_pool(struct keep *k, int row, const struct plan_inst *tpl, int mode)
{
    const struct decide_row *r = &k->ix->d->rows[row];
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < k->p->ngpus; i++) {
            struct plan_gpu *g = &k->p->gpus[i];
            if ((g->mode == mode) != (pass == 0) || !reconf__usable(k->p, g, r) ||
                !reconf__pool_room(k->p, g, tpl, mode))
                continue;
            struct plan_inst in = *tpl;
            in.replica = k->placed[row]++;
            in.guest = tpl->guest && g->ninst > 0; /* a guest joins a card, or opens one */
            g->mode = mode;
            return add_inst(k->p, g, &in) ? 1 : -1;
        }
    return 0;
}

/* A row that cannot get all its replicas: the candidate fails (k->why),
 * or, partial, the missing replicas are named and the rest goes on. */
static int give_up(struct keep *k, size_t row, int want, const char *why)
{
    const struct decide_row *r = &k->ix->d->rows[row];
    struct reconf_replan *u = k->partial;
    if (!u) {
        k->why = why;
        return 1;
    }
    size_t cap = u->nunplaced;
    if (!ts_arena_grow(&u->arena, (void **)&u->unplaced, &cap, u->nunplaced, sizeof(*u->unplaced)))
        return 0;
    u->unplaced[u->nunplaced++] = (struct reconf_unplaced){.tenant = r->tenant->name,
                                                           .workload = r->workload->name,
                                                           .replicas = want - k->placed[row],
                                                           .why = ts_arena_strdup(&u->arena, why)};
    k->gave_up[row] = 1;
    return 1;
}

/* Row row of the no-drain plan named as not placed (kept: how many of its
 * replicas run on as they run), none of its replicas added; 0: NOMEM. */
static int name_row(struct keep *k, size_t row, const char *why, const struct decide_row *was)
{
    struct reconf_replan *u = k->partial;
    const struct decide_row *r = &k->ix->d->rows[row];
    size_t cap = u->nunplaced;
    if (!why ||
        !ts_arena_grow(&u->arena, (void **)&u->unplaced, &cap, u->nunplaced, sizeof(*u->unplaced)))
        return 0;
    u->unplaced[u->nunplaced++] = (struct reconf_unplaced){
        .tenant = r->tenant->name,
        .workload = r->workload->name,
        .replicas = r->workload->replicas,
        .why = why,
        .kept = k->placed[row],
        .kept_profile = r->profile ? r->profile->name : NULL,
        .new_profile = was->profile ? was->profile->name : NULL,
        .kept_mode = decide_mech_names[r->mech],
        .new_mode = decide_mech_names[was->mech]};
    k->gave_up[row] = 1;
    return 1;
}

/* The no-drain plan's rows kept under their new size or as they run
 * (pin.c's hold): each named as not placed; 0: NOMEM. */
static int name_held(struct keep *k)
{
    struct ts_arena *a = k->partial ? &k->partial->arena : NULL;
    for (size_t row = 0; a && row < k->ix->d->nrows; row++) {
        const struct decide_row *r = &k->ix->d->rows[row], *was = k->ix->was[row];
        const struct cat_profile *want = k->ix->wanted[row];
        int ok = 1;
        if (k->ix->as_runs[row])
            ok = name_row(
                k, row, reconf__as_runs_why(a, r, k->placed[row], was, row >= k->ix->nfresh), was);
        else if (want && !plan_profile_holds(r->profile, r))
            ok = name_row(k, row, reconf__held_why(a, r, k->placed[row], want), was);
        if (!ok)
            return 0;
    }
    return 1;
}

/* Place replicas of row up to want; 0 NOMEM, 1 done or k->why set. */
static int place_row(struct keep *k, size_t row, int want)
{
    int mode;
    const struct plan_inst *tpl = template_of(k, (int)row, &mode);
    const struct decide_row *r = &k->ix->d->rows[row];
    if (tpl && r->mech == DECIDE_TIME_SLICING)
        mode = PLAN_TIME_SLICING; /* a guest riding a whole card, new: a time-sliced client */
    while (tpl && !k->why && !k->gave_up[row] && k->placed[row] < want) {
        int got = mode == PLAN_MIG                    ? place_mig(k, (int)row, tpl)
                  : mode == PLAN_WHOLE && !tpl->guest ? place_whole(k, (int)row, tpl)
                  : plan_mode_shares_card(mode)       ? place_pool(k, (int)row, tpl, mode)
                                                      : -2;
        if (got == -1)
            return 0;
        if (got == -2 &&
            !give_up(k, row, want,
                     ts_arena_printf(k->a,
                                     "it places only new MIG instances, whole GPUs "
                                     "and pool clients; %s/%s (%s%s) needs the fresh "
                                     "plan",
                                     r->tenant->name, r->workload->name, plan_mode_names[mode],
                                     tpl->guest ? " guest" : "")))
            return 0;
        if (!got && !give_up(k, row, want,
                             ts_arena_printf(k->a,
                                             "no free MIG slices, pool room or cards for replica "
                                             "r%d of %s/%s without moving running work",
                                             k->placed[row], r->tenant->name, r->workload->name)))
            return 0;
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
    const struct decide_result *d = k->ix->d;
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
        if (!tpl || k->placed[row] >= k->ix->d->rows[row].workload->replicas ||
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
    const struct decide_result *d = k->ix->d;
    if (!place_new(k) || !put_back(k))
        return 0;
    for (size_t row = 0; !k->why && row < d->nrows; row++)
        if (!place_row(k, row, d->rows[row].workload->replicas))
            return 0;
    return 1;
}

/* ---- the candidate ------------------------------------------------------------ */

static struct plan *empty_like(const struct plan *f, const struct decide_result *d)
{
    struct plan *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    ts_arena_init(&p->arena);
    p->model = f->model;
    p->decisions = d;
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

/* The plan's rows become its own (copies in its arena): the pinned
 * decisions outlive the search, and, partial, the rows whose replicas did
 * not all fit hold as many as were placed, so the plan verifies as what it
 * is. */
static int narrow(struct keep *k)
{
    if (!reconf__own_rows(k->p))
        return 0;
    struct decide_row *rows = (struct decide_row *)k->p->decisions->rows;
    for (size_t r = 0; r < k->p->decisions->nrows; r++) {
        struct spec_workload *w = k->gave_up[r] ? ts_arena_alloc(&k->p->arena, sizeof(*w)) : NULL;
        if (k->gave_up[r] && !w)
            return 0;
        if (w) {
            *w = *rows[r].workload;
            w->replicas = k->placed[r];
            rows[r].workload = w;
        }
    }
    return 1;
}

static int finish(struct keep *k)
{
    struct ts_error e = {0};
    for (size_t i = 0; i < k->p->ngpus; i++)
        if (k->p->gpus[i].mode == PLAN_MIG && k->p->gpus[i].ninst > 1)
            qsort(k->p->gpus[i].inst, k->p->gpus[i].ninst, sizeof(struct plan_inst), cmp_start);
    /* rows of their own: the pinned decisions (ix), or fewer replicas */
    if (((k->partial && k->partial->nunplaced) || k->ix->d != k->fresh->decisions) && !narrow(k))
        return 0;
    plan_summarise(k->p);
    k->p->summary.solver = "replan: running placements kept";
    if (!k->why && plan_verify(k->p, &e) != TS_OK)
        k->why = ts_arena_printf(k->a, "the kept layout fails verification: %s", e.msg);
    return 1;
}

/* One keep candidate releasing card released (SIZE_MAX: none); partial:
 * what does not fit is named there instead of failing. */
static ts_status keep_one(const struct plan *fresh, const struct reconf_plan *cur,
                          const struct reconf__keepix *ix, size_t released,
                          struct reconf_replan *partial, struct plan **out, const char **why,
                          struct ts_arena *a)
{
    struct keep k = {.fresh = fresh,
                     .p = empty_like(fresh, ix->d),
                     .cur = cur,
                     .a = a,
                     .released = released,
                     .ix = ix,
                     .partial = partial};
    size_t n = ix->d->nrows + 1;
    k.placed = calloc(n, sizeof(int));
    k.held_back = calloc(n, sizeof(int));
    k.gave_up = calloc(n, 1);
    k.head = calloc(n, sizeof(*k.head));
    k.parts = calloc(n, sizeof(int));
    int ok = k.p && k.placed && k.held_back && k.gave_up && k.head && k.parts && keep_running(&k) &&
             name_held(&k) && place_missing(&k) && finish(&k);
    free(k.placed);
    free(k.held_back);
    free(k.gave_up);
    free(k.head);
    free(k.map);
    free(k.cand);
    free(k.untrust);
    free(k.parts);
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
                            const struct reconf__keepix *ix, struct plan **out, const char **why,
                            struct ts_arena *a)
{
    ts_status st = keep_one(fresh, cur, ix, SIZE_MAX, NULL, out, why, a);
    int tries = 0;
    if (*out)
        return st;
    for (size_t i = 0; st == TS_OK && i < fresh->ngpus; i++) {
        struct plan *p;
        const char *no;
        if (!releasable(fresh, cur, i) || ++tries > RECONF_RELEASE_TRIES_MAX)
            continue;
        st = keep_one(fresh, cur, ix, i, NULL, &p, &no, a);
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

ts_status reconf__keep_partial(const struct plan *fresh, const struct reconf_plan *cur,
                               const struct reconf__keepix *ix, struct plan **out,
                               struct reconf_replan *unplaced, const char **why, struct ts_arena *a)
{
    return keep_one(fresh, cur, ix, SIZE_MAX, unplaced, out, why, a);
}
