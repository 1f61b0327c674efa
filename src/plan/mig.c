/*
 * mig.c - the MIG phase of plan_build: per MIG-capable model, collect the
 * instances to place (workload replicas and canary slices), pack them with
 * the heuristic and, when it may do better, with GLPK, then write each
 * card's instances at their canonical placements.
 */
#include "plan/internal.h"

#include <stdlib.h>
#include <string.h>

/* The canary profile of node n on model, or NULL. */
static const struct cat_profile *canary_for(const struct plan_build *b,
                                            const struct spec_fleet_node *n,
                                            const struct cat_model *model)
{
    const char *name = n->canary ? n->canary : b->m->fleet->canary;
    if (!name)
        return NULL;
    /* one canary per node: on its first MIG model that has the profile */
    for (size_t g = 0; g < n->ngpus; g++) {
        const struct cat_model *first = cat_model_find(b->cat, n->gpus[g].model);
        if (first && first->mig && cat_profile_find(first, name))
            return first == model ? cat_profile_find(model, name) : NULL;
    }
    return NULL;
}

static size_t count_items(const struct plan_build *b, const struct cat_model *model)
{
    size_t n = 0;
    for (size_t i = 0; i < b->d->nrows; i++)
        if (b->d->rows[i].profile && b->d->rows[i].model == model)
            n += (size_t)b->d->rows[i].workload->replicas;
    return n + b->m->fleet->nnodes;
}

static void collect_items(const struct plan_build *b, struct plan_mig *pm)
{
    for (size_t i = 0; i < b->d->nrows; i++) {
        const struct decide_row *r = &b->d->rows[i];
        if (!r->profile || r->model != pm->model)
            continue;
        int spread = r->workload->replicas > 1 && r->workload->spread != SPEC_SPREAD_NONE;
        for (int k = 0; k < r->workload->replicas; k++)
            pm->items[pm->nitems++] = (struct plan_item){r,
                                                         k,
                                                         r->profile,
                                                         NULL,
                                                         spread ? r->index : -1,
                                                         r->workload->spread == SPEC_SPREAD_NODE};
    }
    const struct spec_fleet *f = b->m->fleet;
    for (size_t n = 0; n < f->nnodes; n++) {
        const struct cat_profile *c = canary_for(b, &f->nodes[n], pm->model);
        if (c)
            pm->items[pm->nitems++] = (struct plan_item){NULL, 0, c, &f->nodes[n], -1, 0};
    }
}

static int collect_cards(struct plan_build *b, struct plan_mig *pm)
{
    pm->cards = ts_arena_array(&b->p->arena, b->p->ngpus + 1, sizeof(*pm->cards));
    if (!pm->cards)
        return 0;
    for (size_t i = 0; i < b->p->ngpus; i++)
        if (b->p->gpus[i].model == pm->model)
            pm->cards[pm->ncards++] = &b->p->gpus[i];
    return 1;
}

static int cmp_on_card(const void *a, const void *b)
{
    return plan__item_order(*(const struct plan_item *const *)a,
                            *(const struct plan_item *const *)b);
}

static ts_status write_card(struct plan_build *b, const struct plan_mig *pm, const int *card_of,
                            size_t c)
{
    const struct plan_item *items[PLAN_MAX_PER_CARD];
    const struct cat_profile *profs[PLAN_MAX_PER_CARD];
    int starts[PLAN_MAX_PER_CARD];
    size_t n = 0;
    for (size_t i = 0; i < pm->nitems; i++)
        if (card_of[i] == (int)c && n < PLAN_MAX_PER_CARD)
            items[n++] = &pm->items[i];
    if (n == 0)
        return TS_OK;
    qsort(items, n, sizeof(items[0]), cmp_on_card);
    for (size_t i = 0; i < n; i++)
        profs[i] = items[i]->profile;
    if (!plan__place(pm->model, profs, n, starts))
        return TS_INTERNAL; /* the solvers only return placeable cards */
    struct plan_gpu *gpu = pm->cards[c];
    gpu->mode = PLAN_MIG;
    for (size_t i = 0; i < n; i++) {
        struct plan_inst in = {items[i]->row,
                               items[i]->replica,
                               profs[i],
                               starts[i],
                               profs[i]->mem_units,
                               0,
                               profs[i]->memory_gib,
                               0,
                               0,
                               0};
        if (!plan__add_inst(b->p, gpu, &in))
            return TS_NOMEM;
    }
    return TS_OK;
}

/* 1 when pm's free cards are interchangeable: every item may go on every
 * card (no canary node, no node spread, the same node eligibility), so any
 * `used` of them hold what the heuristic's `used` cards hold. */
static int interchangeable(const struct plan_mig *pm)
{
    for (size_t i = 0; i < pm->nitems; i++) {
        if (pm->items[i].spread_node)
            return 0;
        for (size_t c = 0; c < pm->ncards; c++)
            if (pm->cards[c]->mode != PLAN_FREE || !plan__item_allowed(pm, i, c))
                return 0;
    }
    return 1;
}

/* GLPK on configurations when every free card may take every item
 * (plan/migcfg.c); else GLPK on placements on pm, or, when its cards are interchangeable and the heuristic
 * used `used` of them, on only the first `used` cards (a layout with fewer
 * cards fits there as well as anywhere): the model stays small on large
 * fleets. card_of indexes pm->cards either way. */
static int exact_on_needed(struct plan_build *b, const struct plan_mig *pm, int used, int *card_of,
                           int *optimal)
{
    int e = plan__mig_cfg_exact(pm, b->opt->time_limit_s, card_of, optimal);
    if (e != PLAN_EXACT_TOO_LARGE)
        return e;
    if (used <= 0 || (size_t)used >= pm->ncards || !interchangeable(pm))
        return plan__exact(pm, b->opt->time_limit_s, card_of, optimal);
    struct plan_mig sub = *pm;
    sub.ncards = (size_t)used; /* the first cards: pm->cards is in fleet order */
    return plan__exact(&sub, b->opt->time_limit_s, card_of, optimal);
}

/* Heuristic, then GLPK when it might save a card; the better wins. */
static int solve(struct plan_build *b, const struct plan_mig *pm, int *card_of, int bound)
{
    int used = plan__heuristic(pm, card_of);
    int solver = b->opt->solver;
    int want_exact = solver == PLAN_SOLVER_EXACT ||
                     (solver == PLAN_SOLVER_AUTO && (used < 0 || used > bound));
    if (!want_exact)
        return used;
    int *exact = malloc((pm->nitems + 1) * sizeof(*exact));
    int optimal = 0;
    int e = exact ? exact_on_needed(b, pm, used, exact, &optimal) : -1;
    if (e == PLAN_EXACT_TOO_LARGE) {
        b->glpk_skipped = 1;
        free(exact);
        return used;
    }
    b->glpk_ran = 1;
    if (e >= 0 && (used < 0 || e < used)) { /* ties keep the heuristic's tidier layout */
        memcpy(card_of, exact, pm->nitems * sizeof(*exact));
        used = e;
        b->used_exact = 1;
    }
    b->glpk_timeout |= !optimal;
    free(exact);
    return used;
}

static int nodes_with_model(const struct plan_mig *pm)
{
    int n = 0;
    for (size_t c = 0; c < pm->ncards; c++)
        n += c == 0 || pm->cards[c]->node != pm->cards[c - 1]->node;
    return n;
}

static void explain_failure(struct plan_build *b, const struct plan_mig *pm, int bound)
{
    const struct decide_row *r = NULL;
    for (size_t i = 0; i < pm->nitems; i++) {
        const struct plan_item *it = &pm->items[i];
        if (it->spread_node && it->replica + 1 > nodes_with_model(pm)) {
            plan__fail(b, it->row,
                       "%d replicas spread across nodes need %d nodes with %s "
                       "cards; the fleet has %d (use spread: gpu, or add nodes)",
                       it->row->workload->replicas, it->row->workload->replicas, pm->model->name,
                       nodes_with_model(pm));
            return;
        }
        r = r ? r : it->row;
    }
    if (plan__explain_fragment(b, pm))
        return;
    const char *note = "";
    for (size_t i = 0; i < pm->nitems && !*note; i++)
        if (pm->items[i].row)
            note = plan__constraint_note(b, pm->items[i].row);
    plan__fail(b, r,
               "cannot place %zu MIG instances on the fleet's %zu %s cards (they need at "
               "least %d, and replica spread or canary slices may need more)%s; add cards or "
               "shrink the workloads",
               pm->nitems, pm->ncards, pm->model->name, bound, note);
}

static ts_status mig_model(struct plan_build *b, const struct cat_model *model)
{
    struct plan_mig pm = {model, NULL, 0, NULL, 0};
    pm.items = ts_arena_array(&b->p->arena, count_items(b, model), sizeof(*pm.items));
    if (!pm.items || !collect_cards(b, &pm))
        return TS_NOMEM;
    collect_items(b, &pm);
    int bound = plan__mig_bound(&pm);
    if (!b->bound_known)
        b->bound += bound + plan__other_bound(b->m, b->d, model);
    if (pm.nitems == 0)
        return TS_OK;
    int *card_of = ts_arena_array(&b->p->arena, pm.nitems, sizeof(int));
    if (!card_of)
        return TS_NOMEM;
    if (solve(b, &pm, card_of, bound) < 0) {
        explain_failure(b, &pm, bound);
        return TS_INFEASIBLE;
    }
    for (size_t c = 0; c < pm.ncards; c++) {
        ts_status st = write_card(b, &pm, card_of, c);
        if (st)
            return st;
    }
    return TS_OK;
}

static int in_fleet(const struct plan *p, const struct cat_model *model)
{
    for (size_t i = 0; i < p->ngpus; i++)
        if (p->gpus[i].model == model)
            return 1;
    return 0;
}

ts_status plan__mig(struct plan_build *b)
{
    for (size_t k = 0; k < b->cat->nmodels; k++) {
        const struct cat_model *model = &b->cat->models[k];
        if (!in_fleet(b->p, model))
            continue;
        ts_status st = model->mig ? mig_model(b, model) : TS_OK;
        if (!model->mig && !b->bound_known)
            b->bound += plan__other_bound(b->m, b->d, model);
        if (st)
            return st;
    }
    return TS_OK;
}
