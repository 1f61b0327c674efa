/*
 * heur.c - best-fit decreasing for MIG instances.
 *
 * Items go largest first (memory units, then compute slices); each goes on
 * an open card where a valid placement of everything on that card still
 * exists (plan__place), else on the next card that may hold it. Four
 * strategies run and the one using fewest cards wins: best fit (fullest
 * card) or worst fit (emptiest card), starting from no open card or from
 * as many as the lower bound says are needed (which spreads big items
 * before small ones fill the gaps). Spread rules (replicas on distinct GPUs
 * or nodes) and canary node restrictions are respected.
 *
 * Each card keeps what it holds (profiles, spread groups, units, compute),
 * so a try costs O(instances on the card) and the placement search runs
 * only when units and compute leave room: tens of thousands of instances
 * on hundreds of cards plan in well under a second (bench/RESULTS.md).
 */
#include "plan/internal.h"

#include <stdlib.h>
#include <string.h>

struct card {
    const struct cat_profile *profs[PLAN_MAX_PER_CARD];
    int groups[PLAN_MAX_PER_CARD];
    int n, units, compute, open;
};

struct state {
    const struct plan_mig *pm;
    struct card *cards;
    int *card_of;
};

static int cmp_items(const void *a, const void *b, void *arg)
{
    const struct plan_mig *pm = arg;
    return plan__item_order(&pm->items[*(const size_t *)a], &pm->items[*(const size_t *)b]);
}

int plan__item_allowed(const struct plan_mig *pm, size_t i, size_t c)
{
    const struct plan_item *it = &pm->items[i];
    return (!it->node || it->node == pm->cards[c]->node) &&
           (!it->row || plan__eligible(it->row, pm->cards[c]));
}

static int card_has_group(const struct card *k, int group)
{
    for (int j = 0; j < k->n; j++)
        if (k->groups[j] == group)
            return 1;
    return 0;
}

static int spread_ok(const struct state *s, size_t i, size_t c)
{
    const struct plan_item *it = &s->pm->items[i];
    if (it->group < 0)
        return 1;
    if (!it->spread_node)
        return !card_has_group(&s->cards[c], it->group);
    for (size_t d = 0; d < s->pm->ncards; d++)
        if (s->pm->cards[d]->node == s->pm->cards[c]->node &&
            card_has_group(&s->cards[d], it->group))
            return 0;
    return 1;
}

/* Same order as the canonical sort, so equal profiles sit together. */
static void sort_profiles(const struct cat_profile **profs, int n)
{
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0; b--) {
            const struct cat_profile *x = profs[b - 1], *y = profs[b];
            int swap = x->mem_units < y->mem_units ||
                       (x->mem_units == y->mem_units &&
                        (x->compute < y->compute || (x->compute == y->compute && x->id > y->id)));
            if (!swap)
                break;
            profs[b - 1] = y;
            profs[b] = x;
        }
}

static int fits(const struct state *s, size_t i, size_t c)
{
    const struct card *k = &s->cards[c];
    const struct cat_profile *p = s->pm->items[i].profile;
    const struct cat_model *m = s->pm->model;
    if (k->n == PLAN_MAX_PER_CARD || k->units + p->mem_units > m->grid ||
        k->compute + p->compute > m->compute_slices)
        return 0;
    const struct cat_profile *profs[PLAN_MAX_PER_CARD];
    int starts[PLAN_MAX_PER_CARD];
    memcpy(profs, k->profs, (size_t)k->n * sizeof(profs[0]));
    profs[k->n] = p;
    sort_profiles(profs, k->n + 1);
    return plan__place(m, profs, (size_t)k->n + 1, starts);
}

static void put(struct state *s, size_t i, size_t c)
{
    struct card *k = &s->cards[c];
    const struct plan_item *it = &s->pm->items[i];
    k->profs[k->n] = it->profile;
    k->groups[k->n] = it->group;
    k->n++;
    k->units += it->profile->mem_units;
    k->compute += it->profile->compute;
    k->open = 1;
    s->card_of[i] = (int)c;
}

static int may_take(const struct state *s, size_t i, size_t c)
{
    return plan__item_allowed(s->pm, i, c) && spread_ok(s, i, c) && fits(s, i, c);
}

static int place_item(struct state *s, size_t i, int worst_fit)
{
    int best = -1;
    for (size_t c = 0; c < s->pm->ncards; c++) {
        if (!s->cards[c].open)
            continue;
        int units = s->cards[c].units;
        int better = best < 0 ||
                     (worst_fit ? units < s->cards[best].units : units > s->cards[best].units);
        if (better && may_take(s, i, c))
            best = (int)c;
    }
    for (size_t c = 0; best < 0 && c < s->pm->ncards; c++)
        if (!s->cards[c].open && s->pm->cards[c]->mode == PLAN_FREE && may_take(s, i, c))
            best = (int)c;
    if (best < 0)
        return 0;
    put(s, i, (size_t)best);
    return 1;
}

/* One strategy; returns cards used or -1. */
static int run(struct state *s, const size_t *order, int preopen, int worst_fit)
{
    const struct plan_mig *pm = s->pm;
    memset(s->cards, 0, (pm->ncards + 1) * sizeof(*s->cards));
    for (size_t i = 0; i < pm->nitems; i++)
        s->card_of[i] = -1;
    for (size_t c = 0; c < pm->ncards && preopen > 0; c++)
        if (pm->cards[c]->mode == PLAN_FREE) {
            s->cards[c].open = 1;
            preopen--;
        }
    for (size_t k = 0; k < pm->nitems; k++)
        if (!place_item(s, order[k], worst_fit))
            return -1;
    int used = 0;
    for (size_t c = 0; c < pm->ncards; c++)
        used += s->cards[c].n > 0;
    return used;
}

int plan__heuristic(const struct plan_mig *pm, int *card_of)
{
    size_t *order = malloc((pm->nitems + 1) * sizeof(*order));
    struct state s = {pm, calloc(pm->ncards + 1, sizeof(struct card)),
                      malloc((pm->nitems + 1) * sizeof(int))};
    int best = -1;
    if (!order || !s.cards || !s.card_of)
        goto out;
    for (size_t i = 0; i < pm->nitems; i++)
        order[i] = i;
    qsort_r(order, pm->nitems, sizeof(*order), cmp_items, (void *)pm);
    int bound = plan__mig_bound(pm);
    for (int strategy = 0; strategy < 4; strategy++) {
        int used = run(&s, order, strategy & 2 ? bound : 0, strategy & 1);
        if (used >= 0 && (best < 0 || used < best)) {
            best = used;
            memcpy(card_of, s.card_of, pm->nitems * sizeof(int));
        }
    }
out:
    free(order);
    free(s.cards);
    free(s.card_of);
    return best;
}
