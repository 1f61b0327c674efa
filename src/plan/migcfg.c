/*
 * migcfg.c - MIG packing in cutting-stock form (plan/config.c): an item
 * type is a profile, or a profile and a workload whose replicas must sit on
 * distinct cards (at most one of that type per card). Gives the
 * configuration lower bound of a model's MIG instances and, when every
 * free card may take every instance (no canary slice, no node spread, the
 * same eligibility), the fewest cards exactly: GLPK on configurations is
 * far smaller than on placements (item x card x start) and proves small
 * fleets optimal within a fraction of a second.
 */
#include "plan/internal.h"

#include <stdlib.h>

struct mig_class {
    const struct plan_mig *pm;
    const struct cat_profile **prof; /* per type */
    int *group;                      /* per type: spread group, -1 none */
    int *demand;
    int *type_of; /* per item */
    size_t ntypes;
};

static int mig_fits(const void *ctx, const int *counts)
{
    const struct mig_class *mc = ctx;
    const struct cat_profile *list[PLAN_MAX_PER_CARD];
    int starts[PLAN_MAX_PER_CARD];
    size_t n = 0;
    for (size_t t = 0; t < mc->ntypes; t++) {
        if (mc->group[t] >= 0 && counts[t] > 1)
            return 0;
        for (int k = 0; k < counts[t]; k++) {
            if (n == PLAN_MAX_PER_CARD)
                return 0;
            list[n++] = mc->prof[t];
        }
    }
    /* biggest first, equal profiles together (types are sorted so) */
    return plan__place(mc->pm->model, list, n, starts);
}

static int cmp_type(const struct cat_profile *a, int ga, const struct cat_profile *b, int gb)
{
    if (a->mem_units != b->mem_units)
        return b->mem_units - a->mem_units;
    if (a->compute != b->compute)
        return b->compute - a->compute;
    return a->id != b->id ? a->id - b->id : ga - gb;
}

/* Types of pm's items, sorted; 0 on out of memory. */
static int build(struct mig_class *mc, const struct plan_mig *pm)
{
    size_t n = pm->nitems + 1;
    *mc = (struct mig_class){pm,
                             calloc(n, sizeof(*mc->prof)),
                             calloc(n, sizeof(int)),
                             calloc(n, sizeof(int)),
                             calloc(n, sizeof(int)),
                             0};
    if (!mc->prof || !mc->group || !mc->demand || !mc->type_of)
        return 0;
    for (size_t i = 0; i < pm->nitems; i++) {
        const struct plan_item *it = &pm->items[i];
        size_t t = 0;
        while (t < mc->ntypes && (mc->prof[t] != it->profile || mc->group[t] != it->group))
            t++;
        if (t == mc->ntypes) { /* insert in order */
            while (t > 0 &&
                   cmp_type(mc->prof[t - 1], mc->group[t - 1], it->profile, it->group) > 0) {
                mc->prof[t] = mc->prof[t - 1];
                mc->group[t] = mc->group[t - 1];
                mc->demand[t] = mc->demand[t - 1];
                t--;
            }
            mc->prof[t] = it->profile;
            mc->group[t] = it->group;
            mc->demand[t] = 0;
            mc->ntypes++;
        }
        mc->demand[t]++;
    }
    return 1;
}

static void release(struct mig_class *mc)
{
    free(mc->prof);
    free(mc->group);
    free(mc->demand);
    free(mc->type_of);
}

int plan__mig_cfg_bound(const struct plan_mig *pm)
{
    struct mig_class mc;
    int bound = 0;
    if (pm->nitems && build(&mc, pm)) {
        struct plan_cfg c = {mc.ntypes, mc.demand, mig_fits, &mc, NULL, 0, NULL, 0, 0};
        bound = plan__cfg_enumerate(&c) ? plan__cfg_lp_bound(&c) : 0;
        plan__cfg_free(&c);
    }
    if (pm->nitems)
        release(&mc);
    return bound;
}

/* Every item may go on every free card; the free cards, in order. */
static size_t free_cards(const struct plan_mig *pm, size_t *idx)
{
    size_t n = 0;
    for (size_t c = 0; c < pm->ncards; c++)
        if (pm->cards[c]->mode == PLAN_FREE)
            idx[n++] = c;
    for (size_t i = 0; i < pm->nitems; i++) {
        if (pm->items[i].node || pm->items[i].spread_node)
            return 0;
        for (size_t k = 0; k < n; k++)
            if (!plan__item_allowed(pm, i, idx[k]))
                return 0;
    }
    return n;
}

/* Items onto cards: configuration j's copies take the next free cards. */
static void realize(const struct mig_class *mc, const struct plan_cfg *c, const int *x,
                    const size_t *idx, int *card_of)
{
    const struct plan_mig *pm = mc->pm;
    size_t next = 0;
    for (size_t i = 0; i < pm->nitems; i++)
        card_of[i] = -1;
    for (size_t j = 0; j < c->nconfigs; j++)
        for (int copy = 0; copy < x[j]; copy++, next++)
            for (size_t t = 0; t < mc->ntypes; t++) {
                int want = c->configs[j * c->ntypes + t];
                for (size_t i = 0; i < pm->nitems && want > 0; i++)
                    if (card_of[i] < 0 && pm->items[i].profile == mc->prof[t] &&
                        pm->items[i].group == mc->group[t]) {
                        card_of[i] = (int)idx[next];
                        want--;
                    }
            }
}

int plan__mig_cfg_exact(const struct plan_mig *pm, double time_limit_s, int *card_of, int *optimal)
{
    *optimal = 0;
    size_t *idx = calloc(pm->ncards + 1, sizeof(*idx));
    size_t nfree = idx ? free_cards(pm, idx) : 0;
    struct mig_class mc;
    int used = PLAN_EXACT_TOO_LARGE;
    if (nfree && pm->nitems && build(&mc, pm)) {
        struct plan_cfg c = {mc.ntypes, mc.demand, mig_fits, &mc, NULL, 0, NULL, 0, 0};
        int *x = plan__cfg_enumerate(&c) ? calloc(c.nconfigs + 1, sizeof(int)) : NULL;
        used = x ? plan__cfg_ilp(&c, time_limit_s, (int)nfree, x, optimal) : used;
        if (used >= 0)
            realize(&mc, &c, x, idx, card_of);
        free(x);
        plan__cfg_free(&c);
    }
    if (nfree && pm->nitems)
        release(&mc);
    free(idx);
    return used;
}
