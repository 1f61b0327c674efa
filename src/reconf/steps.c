/*
 * steps.c - replanning steps: what turns the cards that run now (a
 * previous plan's JSON, with who holds each instance) into a target plan.
 * An instance is kept when the same tenant/workload holds the same MIG
 * profile at the same start (or, off MIG, the same kind of place on a card
 * of the same mode). A running instance of a workload the spec still has
 * that is not kept must move: its card is cordoned, drained, changed and
 * uncordoned alone (one wave). Not moves: what removed tenants left, and
 * the replicas a workload no longer has (a scale-down: of its instances
 * that are not kept, as many as it now has fewer, on the cards where that
 * saves a drain); both are destroyed without a drain (wave 0). A running
 * instance of a workload the spec has but the target leaves out (a spec
 * the fleet cannot hold whole) stops: its pods are evicted, so its card is
 * drained as for a move, and the drain counted. A card of the running plan
 * that the target has not (a node removed from the fleet) is torn down:
 * cordon, drain, destroy, its last waves. New instances go into free space
 * without a drain (wave 0).
 */
#include <stdlib.h>
#include <string.h>
#include "reconf/internal.h"

const char *const reconf_op_names[] = {"cordon",       "drain",  "destroy",
                                       "set-mig-mode", "create", "uncordon"};

void reconf_replan_release(struct reconf_replan *r)
{
    ts_arena_free(&r->arena);
    memset(r, 0, sizeof *r);
}

/* What one reconf_steps call shares: rows by name, the running cards'
 * row per instance, which running instances are dropped, which cards the
 * target has. */
struct sx {
    const struct plan *p;
    const struct reconf_plan *cur;
    struct reconf__rows rows;
    int **hrow;     /* [card of cur][held]: decision row, -1 removed or left out */
    char **dropped; /* [card of cur][held]: a replica the spec dropped */
    char **left;    /* [card of cur][held]: in the spec, not in the target's rows */
    char *matched;  /* [card of cur]: the target has the card */
};

static int hrow(const struct sx *x, const struct reconf_card *c, int h)
{
    return x->hrow[c - x->cur->t][h];
}

/* 1 when held instance h of card c is target instance in of card g. */
static int same_place(const struct reconf_want *h, const struct reconf_card *c,
                      const struct plan_gpu *g, const struct plan_inst *in)
{
    const char *tenant = in->row ? in->row->tenant->name : NULL;
    const char *workload = in->row ? in->row->workload->name : NULL;
    if (!reconf__same_str(h->tenant, tenant) || !reconf__same_str(h->workload, workload))
        return 0;
    if (g->mode == PLAN_MIG)
        return c->mig && h->profile && !strcmp(h->profile, in->profile->name) &&
               h->start == in->start;
    /* a time-sliced card's guest flag is a label: its pod runs the same */
    return !strcmp(c->mode, plan_mode_names[g->mode]) &&
           (g->mode == PLAN_TIME_SLICING || h->guest == in->guest) && h->gpu_part == in->gpu_part;
}

static const char *held_what(struct ts_arena *a, const struct reconf_want *h, const char *mode)
{
    if (h->profile && h->start >= 0)
        return ts_arena_printf(a, "%s at %d:%d", h->profile, h->start, h->size);
    if (h->guest)
        return "time-slicing guest";
    if (!strcmp(mode, "whole"))
        return h->gpu_part ? ts_arena_printf(a, "whole card (GPU %d of the replica)", h->gpu_part)
                           : "whole card";
    return ts_arena_printf(a, "%s client", mode);
}

/* "tenant/workload r1" (the running plan's replica number; -1: none, for
 * a new instance, which any evicted pod of the workload may take). */
static const char *who(struct ts_arena *a, const char *tenant, const char *workload, int replica)
{
    if (!tenant || !workload)
        return "canary";
    if (replica < 0)
        return ts_arena_printf(a, "%s/%s", tenant, workload);
    return ts_arena_printf(a, "%s/%s r%d", tenant, workload, replica);
}

/* One card's comparison: which held and target instances are kept. g is
 * NULL for a running card the target has not (a removed node). */
struct card_cmp {
    const struct plan_gpu *g;
    const struct reconf_card *c; /* NULL: the card ran nothing we know of */
    const char *node, *model;
    int index;
    int *kept_h, *kept_t;
    int disturbed; /* running instances of live workloads that must move */
};

static int add_op(struct reconf_replan *r, int kind, int wave, const struct card_cmp *k,
                  const char *what, const char *tenants, const char *why)
{
    if (!ts_arena_grow(&r->arena, (void **)&r->op, &r->cap, r->nop, sizeof(*r->op)))
        return 0;
    r->op[r->nop++] = (struct reconf_op){.kind = kind,
                                         .wave = wave,
                                         .node = k->node,
                                         .model = k->model,
                                         .index = k->index,
                                         .what = what,
                                         .tenants = tenants,
                                         .why = why,
                                         .row = -1};
    return 1;
}

/* A running instance whose pods are evicted: live (or left out), not kept,
 * not dropped. */
static int moves(const struct sx *x, const struct card_cmp *k, int h)
{
    size_t c = (size_t)(k->c - x->cur->t);
    return !k->kept_h[h] && (hrow(x, k->c, h) >= 0 ? !x->dropped[c][h] : x->left[c][h]);
}

static void compare(const struct sx *x, struct card_cmp *k)
{
    for (size_t t = 0; k->g && t < k->g->ninst; t++)
        for (int h = 0; k->c && h < k->c->nheld && !k->kept_t[t]; h++)
            if (!k->kept_h[h] && same_place(&k->c->held[h], k->c, k->g, &k->g->inst[t]))
                k->kept_h[h] = k->kept_t[t] = 1;
    k->disturbed = 0;
    for (int h = 0; k->c && h < k->c->nheld; h++)
        k->disturbed += moves(x, k, h);
}

/* The pods a drain evicts: the moving instances, "a/b r0, c/d r1". */
static const char *evicted(struct ts_arena *a, const struct sx *x, const struct card_cmp *k)
{
    const char *s = NULL;
    for (int h = 0; h < k->c->nheld; h++) {
        const struct reconf_want *w = &k->c->held[h];
        if (!moves(x, k, h))
            continue;
        const char *one = who(a, w->tenant, w->workload, w->replica);
        s = s ? ts_arena_printf(a, "%s, %s", s, one) : one;
    }
    return s;
}

static const char *destroy_why(const struct sx *x, const struct card_cmp *k, int h)
{
    if (!k->c->held[h].tenant)
        return k->g ? "the canary moves" : "its node leaves the fleet";
    if (x->left[k->c - x->cur->t][h])
        return "left out: the fleet cannot hold it now; see not placed";
    if (hrow(x, k->c, h) < 0)
        return "removed from the spec";
    if (x->dropped[k->c - x->cur->t][h])
        return "a replica the spec no longer has (scale the workload down first)";
    return k->g ? "moves to a new instance" : "its node leaves the fleet: moves";
}

static int destroys(struct reconf_replan *r, const struct sx *x, const struct card_cmp *k, int wave)
{
    int ok = 1;
    for (int h = 0; ok && k->c && h < k->c->nheld; h++) {
        const struct reconf_want *w = &k->c->held[h];
        if (k->kept_h[h])
            continue;
        ok = add_op(r, RECONF_OP_DESTROY, wave, k, held_what(&r->arena, w, k->c->mode),
                    who(&r->arena, w->tenant, w->workload, w->replica), destroy_why(x, k, h));
        if (ok && w->tenant) { /* copied: the steps outlive cur */
            struct reconf_op *op = &r->op[r->nop - 1];
            op->tenant = ts_arena_strdup(&r->arena, w->tenant);
            op->workload = ts_arena_strdup(&r->arena, w->workload);
            ok = op->tenant && op->workload;
        }
        if (ok && !w->gpu_part)
            r->op[r->nop - 1].row = hrow(x, k->c, h);
    }
    return ok;
}

static int creates(struct reconf_replan *r, const struct plan *p, const struct card_cmp *k,
                   int wave)
{
    int ok = 1;
    for (size_t t = 0; ok && k->g && t < k->g->ninst; t++) {
        const struct plan_inst *in = &k->g->inst[t];
        if (k->kept_t[t])
            continue;
        struct reconf_want w = {.profile = in->profile ? in->profile->name : NULL,
                                .start = in->profile ? in->start : -1,
                                .size = in->size,
                                .replica = in->replica,
                                .gpu_part = in->gpu_part,
                                .guest = in->guest};
        const char *tenant = in->row ? in->row->tenant->name : NULL;
        const char *workload = in->row ? in->row->workload->name : NULL;
        ok = add_op(r, RECONF_OP_CREATE, wave, k,
                    held_what(&r->arena, &w, plan_mode_names[k->g->mode]),
                    who(&r->arena, tenant, workload, -1), NULL);
        if (ok && in->row && !in->gpu_part)
            r->op[r->nop - 1].row = (int)(in->row - p->decisions->rows);
    }
    return ok;
}

/* MIG mode must change (an operator's step): the card ran MIG and the plan
 * uses it otherwise, or the reverse. */
static int mode_flips(const struct card_cmp *k)
{
    if (!k->g || !k->c || k->g->mode == PLAN_FREE || !strcmp(k->c->mode, "free"))
        return 0;
    return k->c->mig != (k->g->mode == PLAN_MIG);
}

static int emit_card(struct reconf_replan *r, const struct sx *x, struct card_cmp *k)
{
    int wave = k->disturbed ? ++r->drains : 0, ok = 1;
    const char *ev = k->disturbed ? evicted(&r->arena, x, k) : NULL;
    if (k->disturbed)
        ok = add_op(r, RECONF_OP_CORDON, wave, k, NULL, NULL, NULL) &&
             add_op(r, RECONF_OP_DRAIN, wave, k, NULL, ev, NULL);
    ok = ok && destroys(r, x, k, wave);
    if (ok && mode_flips(k))
        ok = add_op(r, RECONF_OP_MIG_MODE, wave, k, k->g->mode == PLAN_MIG ? "enable" : "disable",
                    NULL, "an operator runs nvidia-smi -mig; tessera never changes MIG mode");
    ok = ok && creates(r, x->p, k, wave);
    if (ok && k->disturbed && k->g) /* a removed node's card stays cordoned */
        ok = add_op(r, RECONF_OP_UNCORDON, wave, k, NULL, NULL, NULL);
    r->removed_drains += k->disturbed && !k->g;
    r->evicted += k->disturbed;
    return ok;
}

/* Running replicas per decision row in cur (first GPU parts). */
static int *running(const struct sx *x)
{
    int *n = calloc(x->p->decisions->nrows + 1, sizeof(int));
    for (int i = 0; n && i < x->cur->n; i++)
        for (int h = 0; h < x->cur->t[i].nheld; h++)
            if (!x->cur->t[i].held[h].gpu_part && x->hrow[i][h] >= 0)
                n[x->hrow[i][h]]++;
    return n;
}

/* The replica rule, by playing the steps in order: a workload that runs
 * two or more replicas must keep a slot through every step (a pod evicted
 * by a drain lands on a slot created earlier, on any card). A scale-down's
 * destroy counts only against the replicas the spec keeps. */
static int check_safe(struct reconf_replan *r, const struct sx *x)
{
    int *slots = running(x), *had = running(x);
    for (size_t i = 0; slots && had && i < r->nop && !r->unsafe; i++) {
        const struct reconf_op *o = &r->op[i];
        if (o->row < 0)
            continue;
        slots[o->row] += o->kind == RECONF_OP_CREATE ? 1 : -1;
        int keep = x->p->decisions->rows[o->row].workload->replicas;
        if (o->kind == RECONF_OP_DESTROY && slots[o->row] <= 0 && had[o->row] >= 2 && keep > 0)
            r->unsafe = ts_arena_printf(&r->arena, "%s/%s",
                                        x->p->decisions->rows[o->row].tenant->name,
                                        x->p->decisions->rows[o->row].workload->name);
    }
    int ok = slots && had;
    free(slots);
    free(had);
    return ok;
}

static const struct reconf_card *current_card(const struct reconf_plan *cur,
                                              const struct plan_gpu *g)
{
    const struct reconf_card *c = reconf_plan_card(cur, g->node->name, g->index);
    return c && !strcmp(c->model, g->model->name) ? c : NULL;
}

/* Card i of the target (i < ngpus), else running card i - ngpus, which the
 * target has not. */
static int card_open(const struct sx *x, size_t i, struct card_cmp *k)
{
    const struct plan_gpu *g = i < x->p->ngpus ? &x->p->gpus[i] : NULL;
    const struct reconf_card *c = g ? current_card(x->cur, g) : &x->cur->t[i - x->p->ngpus];
    *k = (struct card_cmp){g,
                           c,
                           g ? g->node->name : c->node,
                           g ? g->model->name : c->model,
                           g ? g->index : c->index,
                           NULL,
                           NULL,
                           0};
    k->kept_h = calloc((size_t)(c ? c->nheld : 0) + 1, sizeof(int));
    k->kept_t = calloc((g ? g->ninst : 0) + 1, sizeof(int));
    if (!k->kept_h || !k->kept_t)
        return 0;
    compare(x, k);
    return 1;
}

static void card_close(struct card_cmp *k)
{
    free(k->kept_h);
    free(k->kept_t);
}

/* The cards steps look at: the target's, then the running ones it lacks. */
static size_t ncards(const struct sx *x) { return x->p->ngpus + (size_t)x->cur->n; }

static int skip(const struct sx *x, size_t i)
{
    return i >= x->p->ngpus && x->matched[i - x->p->ngpus];
}

/* Pass 0: cards that need no drain; pass 1: a drained card, its own wave. */
static int card_pass(struct reconf_replan *r, const struct sx *x, size_t i, int pass)
{
    struct card_cmp k;
    int ok = card_open(x, i, &k), changed = 0;
    for (size_t t = 0; ok && k.g && t < k.g->ninst; t++)
        changed |= !k.kept_t[t];
    for (int h = 0; ok && k.c && h < k.c->nheld; h++)
        changed |= !k.kept_h[h];
    if (ok && pass == (k.disturbed > 0)) {
        r->cards_changed += changed;
        r->cards_kept += !changed && k.g && k.g->ninst > 0;
        ok = !changed || emit_card(r, x, &k);
    }
    card_close(&k);
    return ok;
}

/* Instances per row after the steps from op index from on. */
static void play(const struct reconf_replan *r, size_t from, int *slots)
{
    for (size_t i = from; i < r->nop; i++)
        if (r->op[i].row >= 0)
            slots[r->op[i].row] += r->op[i].kind == RECONF_OP_CREATE ? 1 : -1;
}

/* 1 when draining k's card now leaves each workload that runs two or more
 * replicas an instance somewhere. */
static int drain_safe(const struct sx *x, const struct card_cmp *k, const int *slots,
                      const int *had)
{
    for (int h = 0; h < k->c->nheld; h++) {
        int row = k->kept_h[h] || k->c->held[h].gpu_part ? -1 : hrow(x, k->c, h), gone = 0;
        for (int y = 0; row >= 0 && had[row] >= 2 && y < k->c->nheld; y++)
            gone += !k->kept_h[y] && !k->c->held[y].gpu_part && hrow(x, k->c, y) == row;
        if (row >= 0 && had[row] >= 2 && slots[row] - gone <= 0)
            return 0;
    }
    return 1;
}

/* The first drained card (fleet order) whose drain is safe now, else 0. */
static size_t next_safe(const struct sx *x, const size_t *todo, size_t n, const int *slots,
                        const int *had, int *ok)
{
    for (size_t j = 0; *ok && j < n; j++) {
        struct card_cmp k;
        *ok = card_open(x, todo[j], &k);
        int safe = *ok && drain_safe(x, &k, slots, had);
        card_close(&k);
        if (safe)
            return j;
    }
    return 0;
}

/* The drained cards, one wave each, a card whose drain is safe first (an
 * earlier wave may create the instances a later drain's pods move to);
 * a removed node's cards after the target's. */
static int drained_waves(struct reconf_replan *r, const struct sx *x)
{
    size_t n = 0, *todo = calloc(ncards(x) + 1, sizeof(*todo));
    int *slots = running(x), *had = running(x);
    int ok = todo && slots && had;
    for (size_t i = 0; ok && i < ncards(x); i++) {
        struct card_cmp k;
        if (skip(x, i))
            continue;
        ok = card_open(x, i, &k);
        if (ok && k.disturbed)
            todo[n++] = i;
        card_close(&k);
    }
    if (ok)
        play(r, 0, slots);
    while (ok && n) {
        size_t j = next_safe(x, todo, n, slots, had, &ok), from = r->nop;
        ok = ok && card_pass(r, x, todo[j], 1);
        play(r, from, slots);
        memmove(&todo[j], &todo[j + 1], (n - j - 1) * sizeof(*todo));
        n--;
    }
    free(todo);
    free(slots);
    free(had);
    return ok;
}

/* ---- the shared state: rows, matched cards, scale-down drops --------------- */

/* 1 when the spec of m has workload tenant/workload (a target without its
 * row left it out: the fleet cannot hold it). */
static int in_spec(const struct spec_model *m, const char *tenant, const char *workload)
{
    const struct spec_tenant *t = m && tenant && workload ? spec_tenant_find(m, tenant) : NULL;
    for (size_t i = 0; t && i < t->nworkloads; i++)
        if (!strcmp(t->workloads[i].name, workload))
            return 1;
    return 0;
}

static int sx_open(struct sx *x, const struct plan *p, const struct reconf_plan *cur)
{
    *x = (struct sx){.p = p, .cur = cur};
    x->hrow = calloc((size_t)cur->n + 1, sizeof(*x->hrow));
    x->dropped = calloc((size_t)cur->n + 1, sizeof(*x->dropped));
    x->left = calloc((size_t)cur->n + 1, sizeof(*x->left));
    x->matched = calloc((size_t)cur->n + 1, 1);
    int ok = x->hrow && x->dropped && x->left && x->matched &&
             reconf__rows_index(p->decisions, &x->rows);
    for (int i = 0; ok && i < cur->n; i++) {
        x->hrow[i] = malloc(((size_t)cur->t[i].nheld + 1) * sizeof(int));
        x->dropped[i] = calloc((size_t)cur->t[i].nheld + 1, 1);
        x->left[i] = calloc((size_t)cur->t[i].nheld + 1, 1);
        ok = x->hrow[i] && x->dropped[i] && x->left[i];
        for (int h = 0; ok && h < cur->t[i].nheld; h++) {
            const struct reconf_want *w = &cur->t[i].held[h];
            x->hrow[i][h] = reconf__row(&x->rows, w->tenant, w->workload);
            x->left[i][h] = (char)(x->hrow[i][h] < 0 && in_spec(p->model, w->tenant, w->workload));
        }
    }
    for (size_t i = 0; ok && i < p->ngpus; i++) {
        const struct reconf_card *c = current_card(cur, &p->gpus[i]);
        if (c)
            x->matched[c - cur->t] = 1;
    }
    return ok;
}

static void sx_close(struct sx *x)
{
    for (int i = 0; x->hrow && x->dropped && x->left && i < x->cur->n; i++) {
        free(x->hrow[i]);
        free(x->dropped[i]);
        free(x->left[i]);
    }
    free(x->hrow);
    free(x->dropped);
    free(x->left);
    free(x->matched);
    reconf__rows_free(&x->rows);
}

/* One replica part per instance: the rows a drop may apply to. */
static int one_part(const struct sx *x, int row)
{
    const struct decide_row *r = &x->p->decisions->rows[row];
    return r->profile || r->gpus <= 1;
}

/* Replicas the target holds per row. */
static int *planned(const struct sx *x)
{
    int *n = calloc(x->p->decisions->nrows + 1, sizeof(int));
    for (size_t i = 0; n && i < x->p->ngpus; i++)
        for (size_t t = 0; t < x->p->gpus[i].ninst; t++) {
            const struct plan_inst *in = &x->p->gpus[i].inst[t];
            if (in->row && !in->gpu_part)
                n[in->row - x->p->decisions->rows]++;
        }
    return n;
}

/* Drop a row's surplus running instances (running - planned), taking the
 * non-kept ones of cards with the fewest moving instances first (pass 1:
 * cards where it spares the drain, pass 2: any). */
static void drop_on(struct sx *x, struct card_cmp *k, int *surplus, int all)
{
    int live = 0, drop = 0;
    for (int h = 0; h < k->c->nheld; h++) {
        int row = hrow(x, k->c, h);
        live += moves(x, k, h);
        drop += moves(x, k, h) && row >= 0 && surplus[row] > 0 && one_part(x, row);
    }
    for (int h = 0; (all || live == drop) && h < k->c->nheld; h++) {
        int row = hrow(x, k->c, h);
        if (moves(x, k, h) && row >= 0 && surplus[row] > 0 && one_part(x, row)) {
            x->dropped[k->c - x->cur->t][h] = 1;
            surplus[row]--;
        }
    }
}

static int drops(struct sx *x)
{
    int *surplus = running(x), *want = planned(x), ok = surplus && want;
    for (size_t row = 0; ok && row < x->p->decisions->nrows; row++)
        surplus[row] -= want[row];
    for (int all = 0; ok && all < 2; all++)
        for (size_t i = 0; ok && i < ncards(x); i++) {
            struct card_cmp k;
            if (skip(x, i))
                continue;
            ok = card_open(x, i, &k);
            if (ok && k.c && k.g) /* a removed node's pods are evicted, never dropped */
                drop_on(x, &k, surplus, all);
            card_close(&k);
        }
    free(surplus);
    free(want);
    return ok;
}

ts_status reconf_steps(const struct plan *target, const struct reconf_plan *cur,
                       struct reconf_replan *out)
{
    struct sx x;
    memset(out, 0, sizeof *out);
    ts_arena_init(&out->arena);
    int ok = sx_open(&x, target, cur) && drops(&x);
    for (size_t i = 0; ok && i < ncards(&x); i++)
        ok = skip(&x, i) || card_pass(out, &x, i, 0);
    ok = ok && drained_waves(out, &x) && check_safe(out, &x);
    sx_close(&x);
    return ok ? TS_OK : TS_NOMEM;
}
