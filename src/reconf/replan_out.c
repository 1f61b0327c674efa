/*
 * replan_out.c - a replan as text and as the plan JSON's "replan" key
 * (docs/plan-json.md): the steps, the plans found with their drains, cards
 * and cost (the Pareto points an operator chooses among), and what a
 * no-drain plan could not place, with why (the texts keep.c names it by).
 */
#include <stdio.h>
#include "reconf/internal.h"
#include "reconf/reconf.h"
#include "util/units.h"

static void point_text(const struct reconf_point *pt, struct ts_sbuf *out)
{
    ts_sbuf_printf(out, "  %s %2d drain%s, %3d card%s",
                   pt->chosen   ? "*"
                   : pt->pareto ? "+"
                                : " ",
                   pt->drains, pt->drains == 1 ? " " : "s", pt->cards, pt->cards == 1 ? " " : "s");
    if (pt->cost >= 0)
        ts_sbuf_printf(out, ", %.2f per hour", (double)pt->cost / TS_MICRO);
    ts_sbuf_printf(out, ": %s", pt->how);
    if (pt->unplaced)
        ts_sbuf_printf(out, " (leaves %d replica%s out)", pt->unplaced,
                       pt->unplaced == 1 ? "" : "s");
    if (pt->held)
        ts_sbuf_printf(out, " (keeps %d replica%s as running, short of the new placement)",
                       pt->held, pt->held == 1 ? "" : "s");
    if (pt->removed_drains)
        ts_sbuf_printf(out, " (%d of the drains on nodes that leave the fleet)",
                       pt->removed_drains);
    if (pt->why)
        ts_sbuf_printf(out, " (refused: %s)", pt->why);
    ts_sbuf_puts(out, "\n");
}

static void points_text(const struct reconf_replan *r, struct ts_sbuf *out)
{
    if (!r->npoints)
        return;
    ts_sbuf_puts(out, "  plans found (* chosen, + Pareto: no other has fewer drains, cards "
                      "and cost with one of them fewer):\n");
    for (size_t i = 0; i < r->npoints; i++)
        point_text(&r->points[i], out);
}

static void unplaced_text(const struct reconf_replan *r, struct ts_sbuf *out)
{
    if (!r->nunplaced)
        return;
    ts_sbuf_puts(out, "  not placed (running work kept; each needs a drain or more cards):\n");
    for (size_t i = 0; i < r->nunplaced; i++)
        ts_sbuf_printf(out, "    %s/%s: %d replica%s: %s\n", r->unplaced[i].tenant,
                       r->unplaced[i].workload, r->unplaced[i].replicas,
                       r->unplaced[i].replicas == 1 ? "" : "s", r->unplaced[i].why);
}

static void op_text(size_t i, const struct reconf_op *o, struct ts_sbuf *out)
{
    char tag[32] = "no drain";
    if (o->wave)
        snprintf(tag, sizeof tag, "wave %d", o->wave);
    ts_sbuf_printf(out, "  %zu. [%s] %s %s GPU %d", i + 1, tag, reconf_op_names[o->kind], o->node,
                   o->index);
    if (o->what)
        ts_sbuf_printf(out, ": %s", o->what);
    if (o->tenants)
        ts_sbuf_printf(out, " %s %s", o->kind == RECONF_OP_DRAIN ? "evicts" : "for", o->tenants);
    if (o->why)
        ts_sbuf_printf(out, " (%s)", o->why);
    ts_sbuf_puts(out, "\n");
}

void reconf_replan_text(const struct reconf_replan *r, struct ts_sbuf *out)
{
    ts_sbuf_printf(out, "\nReplanning (%s)\n", r->strategy ? r->strategy : "");
    if (r->note)
        ts_sbuf_printf(out, "  note: %s\n", r->note);
    points_text(r, out);
    unplaced_text(r, out);
    ts_sbuf_printf(out,
                   "  cards kept %d, changed %d, drained %d (one at a time, in waves; "
                   "[no drain] steps disturb no running pod)\n",
                   r->cards_kept, r->cards_changed, r->drains);
    if (r->removed_drains)
        ts_sbuf_printf(out, "  of the drained, %d on nodes that leave the fleet\n",
                       r->removed_drains);
    if (!r->nop)
        ts_sbuf_puts(out, "  no step: every card keeps what it runs\n");
    for (size_t i = 0; i < r->nop; i++)
        op_text(i, &r->op[i], out);
}

static json_t *points_json(const struct reconf_replan *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->npoints; i++) {
        const struct reconf_point *p = &r->points[i];
        json_t *cost = p->cost >= 0 ? json_real((double)p->cost / TS_MICRO) : json_null();
        json_array_append_new(a, json_pack("{s:s, s:i, s:i, s:i, s:o, s:i, s:i, s:b, s:b, s:s?}",
                                           "how", p->how, "drains", p->drains, "removedDrains",
                                           p->removed_drains, "cards", p->cards, "costPerHour",
                                           cost, "unplaced", p->unplaced, "held", p->held, "pareto",
                                           p->pareto, "chosen", p->chosen, "refused", p->why));
    }
    return a;
}

static json_t *unplaced_json(const struct reconf_replan *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->nunplaced; i++) {
        const struct reconf_unplaced *u = &r->unplaced[i];
        json_array_append_new(
            a, json_pack("{s:s, s:s, s:i, s:s, s:i, s:s?, s:s?, s:s?, s:s?}", "tenant", u->tenant,
                         "workload", u->workload, "replicas", u->replicas, "reason", u->why, "kept",
                         u->kept, "keptProfile", u->kept_profile, "newProfile", u->new_profile,
                         "keptMode", u->kept_mode, "newMode", u->new_mode));
    }
    return a;
}

static json_t *steps_json(const struct reconf_replan *r)
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
    return steps;
}

json_t *reconf_replan_json(const struct reconf_replan *r, const struct reconf_replan_opts *o)
{
    json_t *max = o->max_drains < 0 ? json_null() : json_integer(o->max_drains);
    json_t *cards = o->max_cards > 0 ? json_integer(o->max_cards) : json_null();
    json_t *cost = o->max_cost > 0 ? json_real((double)o->max_cost / TS_MICRO) : json_null();
    return json_pack(
        "{s:s, s:s?, s:s, s:o, s:o, s:o, s:i, s:i, s:i, s:i, s:o, s:o, s:o}", "strategy",
        r->strategy, "note", r->note, "prefer", reconf_prefer_names[o->prefer], "maxDrains", max,
        "maxCards", cards, "maxCostPerHour", cost, "drains", r->drains, "removedDrains",
        r->removed_drains, "cardsKept", r->cards_kept, "cardsChanged", r->cards_changed, "points",
        points_json(r), "unplaced", unplaced_json(r), "steps", steps_json(r));
}

/* ---- why a row of the no-drain plan is named ---------------------------------- */

/* "kept" or "kept N" (n of r's replicas); NULL: NOMEM. */
static const char *kept_words(struct ts_arena *a, const struct decide_row *r, int n)
{
    return n == r->workload->replicas ? "kept" : ts_arena_printf(a, "kept %d", n);
}

/* "mps 30.00 GiB on h100-80gb-sxm", "mig 1g.20gb on ...", "whole, 2 GPUs a
 * replica, on ...": row r's placement. */
static const char *placement(struct ts_arena *a, const struct decide_row *r)
{
    const char *what = r->profile ? r->profile->name : "";
    if (!r->profile && r->gpus > 1)
        what = ts_arena_printf(a, ", %d GPUs a replica,", r->gpus);
    else if (decide_mech_shares_card(r->mech))
        what = ts_arena_printf(a, " %.2f GiB", r->cap_gib);
    return what ? ts_arena_printf(a, "%s%s%s on %s", decide_mech_names[r->mech],
                                  r->profile ? " " : "", what, r->model->name)
                : NULL;
}

/* Why held row r (n of its replicas kept) is named, in a; NULL: NOMEM. */
const char *reconf__held_why(struct ts_arena *a, const struct decide_row *r, int n,
                             const struct cat_profile *want)
{
    const char *kept = kept_words(a, r, n);
    if (!kept)
        return NULL;
    return ts_arena_printf(a,
                           "%s at its running profile %s; its new size %s is not placed "
                           "(growing a running instance drains its card)",
                           kept, r->profile->name, want->name);
}

/* Why row r, kept as it runs (n of its replicas; was: its decision; left:
 * the fleet cannot hold it now), is named, in a; NULL: NOMEM. */
const char *reconf__as_runs_why(struct ts_arena *a, const struct decide_row *r, int n,
                                const struct decide_row *was, int left)
{
    const char *kept = kept_words(a, r, n), *now = placement(a, r), *new = placement(a, was);
    if (!kept || !now || !new)
        return NULL;
    return ts_arena_printf(a, "%s as it runs (%s); its new placement %s %s", kept, now, new,
                           left ? "does not fit the fleet now (moving it drains its card)"
                                : "is not applied (changing a running workload's "
                                  "mechanism, model or size drains its card)");
}
