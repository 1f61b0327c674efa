/*
 * steps.c - replanning steps: what turns the cards that run now (a
 * previous plan's JSON, with who holds each instance) into a target plan.
 * An instance is kept when the same tenant/workload holds the same MIG
 * profile at the same start (or, off MIG, the same kind of place on a card
 * of the same mode). A running instance of a workload the spec still has
 * that is not kept must move: its card is cordoned, drained, changed and
 * uncordoned alone (one wave). What removed tenants left is destroyed and
 * new instances created in free space without a drain (wave 0). Also the
 * text and JSON of those steps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "reconf/reconf.h"

const char *const reconf_op_names[] = {"cordon",       "drain",  "destroy",
                                       "set-mig-mode", "create", "uncordon"};

void reconf_replan_release(struct reconf_replan *r)
{
    ts_arena_free(&r->arena);
    memset(r, 0, sizeof *r);
}

/* The decision row of tenant/workload, or -1 (removed from the spec). */
static int row_of(const struct plan *p, const char *tenant, const char *workload)
{
    for (size_t i = 0; tenant && workload && i < p->decisions->nrows; i++) {
        const struct decide_row *r = &p->decisions->rows[i];
        if (!strcmp(r->tenant->name, tenant) && !strcmp(r->workload->name, workload))
            return (int)i;
    }
    return -1;
}

static int live(const struct plan *p, const char *tenant, const char *workload)
{
    return row_of(p, tenant, workload) >= 0;
}

static int same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* 1 when held instance h of card c is target instance in of card g. */
static int same_place(const struct reconf_want *h, const struct reconf_card *c,
                      const struct plan_gpu *g, const struct plan_inst *in)
{
    const char *tenant = in->row ? in->row->tenant->name : NULL;
    const char *workload = in->row ? in->row->workload->name : NULL;
    if (!same_str(h->tenant, tenant) || !same_str(h->workload, workload))
        return 0;
    if (g->mode == PLAN_MIG)
        return c->mig && h->profile && !strcmp(h->profile, in->profile->name) &&
               h->start == in->start;
    return !strcmp(c->mode, plan_mode_names[g->mode]) && h->guest == in->guest &&
           h->gpu_part == in->gpu_part;
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

static int add_op(struct reconf_replan *r, int kind, int wave, const struct plan_gpu *g,
                  const char *what, const char *tenants, const char *why)
{
    if (!ts_arena_grow(&r->arena, (void **)&r->op, &r->cap, r->nop, sizeof(*r->op)))
        return 0;
    r->op[r->nop++] = (struct reconf_op){
        kind, wave, g->node->name, g->model->name, g->index, what, tenants, why, -1};
    return 1;
}

/* One card's comparison: which held and target instances are kept. */
struct card_cmp {
    const struct plan_gpu *g;
    const struct reconf_card *c; /* NULL: the card ran nothing we know of */
    int *kept_h, *kept_t;
    int disturbed; /* running instances of live workloads that must move */
};

static void compare(const struct plan *p, struct card_cmp *k)
{
    for (size_t t = 0; t < k->g->ninst; t++)
        for (int h = 0; k->c && h < k->c->nheld && !k->kept_t[t]; h++)
            if (!k->kept_h[h] && same_place(&k->c->held[h], k->c, k->g, &k->g->inst[t]))
                k->kept_h[h] = k->kept_t[t] = 1;
    for (int h = 0; k->c && h < k->c->nheld; h++)
        k->disturbed += !k->kept_h[h] && live(p, k->c->held[h].tenant, k->c->held[h].workload);
}

/* The pods a drain evicts: the moving instances, "a/b r0, c/d r1". */
static const char *evicted(struct ts_arena *a, const struct plan *p, const struct card_cmp *k)
{
    const char *s = NULL;
    for (int h = 0; h < k->c->nheld; h++) {
        const struct reconf_want *w = &k->c->held[h];
        if (k->kept_h[h] || !live(p, w->tenant, w->workload))
            continue;
        const char *one = who(a, w->tenant, w->workload, w->replica);
        s = s ? ts_arena_printf(a, "%s, %s", s, one) : one;
    }
    return s;
}

static int destroys(struct reconf_replan *r, const struct plan *p, const struct card_cmp *k,
                    int wave)
{
    int ok = 1;
    for (int h = 0; ok && k->c && h < k->c->nheld; h++) {
        const struct reconf_want *w = &k->c->held[h];
        if (k->kept_h[h])
            continue;
        const char *why = !w->tenant                        ? "the canary moves"
                          : live(p, w->tenant, w->workload) ? "moves to a new instance"
                                                            : "removed from the spec";
        ok = add_op(r, RECONF_OP_DESTROY, wave, k->g, held_what(&r->arena, w, k->c->mode),
                    who(&r->arena, w->tenant, w->workload, w->replica), why);
        if (ok && !w->gpu_part)
            r->op[r->nop - 1].row = row_of(p, w->tenant, w->workload);
    }
    return ok;
}

static int creates(struct reconf_replan *r, const struct plan *p, const struct card_cmp *k,
                   int wave)
{
    const struct decide_row *r_rows = p->decisions->rows;
    int ok = 1;
    for (size_t t = 0; ok && t < k->g->ninst; t++) {
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
        ok = add_op(r, RECONF_OP_CREATE, wave, k->g,
                    held_what(&r->arena, &w, plan_mode_names[k->g->mode]),
                    who(&r->arena, tenant, workload, -1), NULL);
        if (ok && in->row && !in->gpu_part)
            r->op[r->nop - 1].row = (int)(in->row - r_rows);
    }
    return ok;
}

/* MIG mode must change (an operator's step): the card ran MIG and the plan
 * uses it otherwise, or the reverse. */
static int mode_flips(const struct card_cmp *k)
{
    if (!k->c || k->g->mode == PLAN_FREE || !strcmp(k->c->mode, "free"))
        return 0;
    return k->c->mig != (k->g->mode == PLAN_MIG);
}

static int emit_card(struct reconf_replan *r, const struct plan *p, struct card_cmp *k)
{
    int wave = k->disturbed ? ++r->drains : 0, ok = 1;
    const char *ev = k->disturbed ? evicted(&r->arena, p, k) : NULL;
    if (k->disturbed)
        ok = add_op(r, RECONF_OP_CORDON, wave, k->g, NULL, NULL, NULL) &&
             add_op(r, RECONF_OP_DRAIN, wave, k->g, NULL, ev, NULL);
    ok = ok && destroys(r, p, k, wave);
    if (ok && mode_flips(k))
        ok = add_op(r, RECONF_OP_MIG_MODE, wave, k->g,
                    k->g->mode == PLAN_MIG ? "enable" : "disable", NULL,
                    "an operator runs nvidia-smi -mig; tessera never changes MIG mode");
    ok = ok && creates(r, p, k, wave);
    if (ok && k->disturbed)
        ok = add_op(r, RECONF_OP_UNCORDON, wave, k->g, NULL, NULL, NULL);
    return ok;
}

/* Running replicas per decision row in cur (first GPU parts). */
static int *running(const struct plan *p, const struct reconf_plan *cur)
{
    int *n = calloc(p->decisions->nrows + 1, sizeof(int));
    for (int i = 0; n && i < cur->n; i++)
        for (int h = 0; h < cur->t[i].nheld; h++) {
            const struct reconf_want *w = &cur->t[i].held[h];
            int row = w->gpu_part ? -1 : row_of(p, w->tenant, w->workload);
            n[row < 0 ? p->decisions->nrows : (size_t)row] += row >= 0;
        }
    return n;
}

/* The replica rule, by playing the steps in order: a workload that runs
 * two or more replicas must keep a slot through every step (a pod evicted
 * by a drain lands on a slot created earlier, on any card). */
static int check_safe(struct reconf_replan *r, const struct plan *p, const struct reconf_plan *cur)
{
    int *slots = running(p, cur), *had = running(p, cur);
    for (size_t i = 0; slots && had && i < r->nop && !r->unsafe; i++) {
        const struct reconf_op *o = &r->op[i];
        if (o->row < 0)
            continue;
        slots[o->row] += o->kind == RECONF_OP_CREATE ? 1 : -1;
        if (o->kind == RECONF_OP_DESTROY && slots[o->row] <= 0 && had[o->row] >= 2)
            r->unsafe = ts_arena_printf(&r->arena, "%s/%s", p->decisions->rows[o->row].tenant->name,
                                        p->decisions->rows[o->row].workload->name);
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

static int card_open(const struct plan *p, const struct reconf_plan *cur, size_t i,
                     struct card_cmp *k)
{
    const struct plan_gpu *g = &p->gpus[i];
    *k = (struct card_cmp){g, current_card(cur, g), NULL, NULL, 0};
    k->kept_h = calloc((size_t)(k->c ? k->c->nheld : 0) + 1, sizeof(int));
    k->kept_t = calloc(g->ninst + 1, sizeof(int));
    if (!k->kept_h || !k->kept_t)
        return 0;
    compare(p, k);
    return 1;
}

static void card_close(struct card_cmp *k)
{
    free(k->kept_h);
    free(k->kept_t);
}

/* Pass 0: cards that need no drain; pass 1: a drained card, its own wave. */
static int card_pass(struct reconf_replan *r, const struct plan *p, const struct reconf_plan *cur,
                     size_t i, int pass)
{
    struct card_cmp k;
    int ok = card_open(p, cur, i, &k), changed = 0;
    for (size_t t = 0; ok && t < k.g->ninst; t++)
        changed |= !k.kept_t[t];
    for (int h = 0; ok && k.c && h < k.c->nheld; h++)
        changed |= !k.kept_h[h];
    if (ok && pass == (k.disturbed > 0)) {
        r->cards_changed += changed;
        r->cards_kept += !changed && k.g->ninst > 0;
        ok = !changed || emit_card(r, p, &k);
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
static int drain_safe(const struct plan *p, const struct card_cmp *k, const int *slots,
                      const int *had)
{
    for (int h = 0; h < k->c->nheld; h++) {
        const struct reconf_want *w = &k->c->held[h];
        int row = k->kept_h[h] || w->gpu_part ? -1 : row_of(p, w->tenant, w->workload), gone = 0;
        for (int x = 0; row >= 0 && had[row] >= 2 && x < k->c->nheld; x++)
            gone += !k->kept_h[x] && !k->c->held[x].gpu_part &&
                    row_of(p, k->c->held[x].tenant, k->c->held[x].workload) == row;
        if (row >= 0 && had[row] >= 2 && slots[row] - gone <= 0)
            return 0;
    }
    return 1;
}

/* The first drained card (fleet order) whose drain is safe now, else 0. */
static size_t next_safe(const struct plan *p, const struct reconf_plan *cur, const size_t *todo,
                        size_t n, const int *slots, const int *had, int *ok)
{
    for (size_t j = 0; *ok && j < n; j++) {
        struct card_cmp k;
        *ok = card_open(p, cur, todo[j], &k);
        int safe = *ok && drain_safe(p, &k, slots, had);
        card_close(&k);
        if (safe)
            return j;
    }
    return 0;
}

/* The drained cards, one wave each, a card whose drain is safe first (an
 * earlier wave may create the instances a later drain's pods move to). */
static int drained_waves(struct reconf_replan *r, const struct plan *p,
                         const struct reconf_plan *cur)
{
    size_t n = 0, *todo = calloc(p->ngpus + 1, sizeof(*todo));
    int *slots = running(p, cur), *had = running(p, cur);
    int ok = todo && slots && had;
    for (size_t i = 0; ok && i < p->ngpus; i++) {
        struct card_cmp k;
        ok = card_open(p, cur, i, &k);
        if (ok && k.disturbed)
            todo[n++] = i;
        card_close(&k);
    }
    if (ok)
        play(r, 0, slots);
    while (ok && n) {
        size_t j = next_safe(p, cur, todo, n, slots, had, &ok), from = r->nop;
        ok = ok && card_pass(r, p, cur, todo[j], 1);
        play(r, from, slots);
        memmove(&todo[j], &todo[j + 1], (n - j - 1) * sizeof(*todo));
        n--;
    }
    free(todo);
    free(slots);
    free(had);
    return ok;
}

ts_status reconf_steps(const struct plan *target, const struct reconf_plan *cur,
                       struct reconf_replan *out)
{
    memset(out, 0, sizeof *out);
    ts_arena_init(&out->arena);
    for (size_t i = 0; i < target->ngpus; i++)
        if (!card_pass(out, target, cur, i, 0))
            return TS_NOMEM;
    if (!drained_waves(out, target, cur))
        return TS_NOMEM;
    return check_safe(out, target, cur) ? TS_OK : TS_NOMEM;
}

/* ---- text and JSON ---------------------------------------------------------- */

void reconf_replan_text(const struct reconf_replan *r, struct ts_sbuf *out)
{
    ts_sbuf_printf(out, "\nReplanning (%s)\n", r->strategy ? r->strategy : "");
    if (r->note)
        ts_sbuf_printf(out, "  note: %s\n", r->note);
    ts_sbuf_printf(out,
                   "  cards kept %d, changed %d, drained %d (one at a time, in waves; "
                   "[no drain] steps disturb no running pod)\n",
                   r->cards_kept, r->cards_changed, r->drains);
    if (!r->nop)
        ts_sbuf_puts(out, "  no step: every card keeps what it runs\n");
    for (size_t i = 0; i < r->nop; i++) {
        const struct reconf_op *o = &r->op[i];
        char tag[32] = "no drain";
        if (o->wave)
            snprintf(tag, sizeof tag, "wave %d", o->wave);
        ts_sbuf_printf(out, "  %zu. [%s] %s %s GPU %d", i + 1, tag, reconf_op_names[o->kind],
                       o->node, o->index);
        if (o->what)
            ts_sbuf_printf(out, ": %s", o->what);
        if (o->tenants)
            ts_sbuf_printf(out, " %s %s", o->kind == RECONF_OP_DRAIN ? "evicts" : "for",
                           o->tenants);
        if (o->why)
            ts_sbuf_printf(out, " (%s)", o->why);
        ts_sbuf_puts(out, "\n");
    }
}

json_t *reconf_replan_json(const struct reconf_replan *r, const struct reconf_replan_opts *o)
{
    json_t *steps = json_array();
    for (size_t i = 0; i < r->nop; i++) {
        const struct reconf_op *s = &r->op[i];
        json_array_append_new(
            steps, json_pack("{s:i, s:s, s:i, s:s, s:i, s:s, s:s?, s:s?, s:s?}", "step", (int)i + 1,
                             "action", reconf_op_names[s->kind], "wave", s->wave, "node", s->node,
                             "index", s->index, "model", s->model, "what", s->what, "tenants",
                             s->tenants, "why", s->why));
    }
    json_t *max = o->max_drains < 0 ? json_null() : json_integer(o->max_drains);
    return json_pack("{s:s, s:s?, s:s, s:o, s:i, s:i, s:i, s:o}", "strategy", r->strategy, "note",
                     r->note, "prefer", reconf_prefer_names[o->prefer], "maxDrains", max, "drains",
                     r->drains, "cardsKept", r->cards_kept, "cardsChanged", r->cards_changed,
                     "steps", steps);
}
