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
 * or nodes) and canary node restrictions are respected. Fast enough for
 * thousands of items; the exact solver (exact.c) improves on it where it can.
 */
#include "plan/internal.h"

#include <stdlib.h>
#include <string.h>

/* Canonical order: bigger first, then profile id, then spec order. */
static int cmp_items(const void *a, const void *b, void *arg)
{
    const struct plan_mig *pm = arg;
    const struct plan_item *x = &pm->items[*(const size_t *)a];
    const struct plan_item *y = &pm->items[*(const size_t *)b];
    if (x->profile->mem_units != y->profile->mem_units)
        return y->profile->mem_units - x->profile->mem_units;
    if (x->profile->compute != y->profile->compute)
        return y->profile->compute - x->profile->compute;
    if (x->profile->id != y->profile->id)
        return x->profile->id - y->profile->id;
    int xi = x->row ? x->row->index : 1 << 30, yi = y->row ? y->row->index : 1 << 30;
    if (xi != yi)
        return xi - yi;
    return x->replica - y->replica;
}

int plan__item_allowed(const struct plan_mig *pm, size_t i, size_t c)
{
    return !pm->items[i].node || pm->items[i].node == pm->cards[c]->node;
}

static int spread_ok(const struct plan_mig *pm, const int *card_of, size_t i, size_t c)
{
    const struct plan_item *it = &pm->items[i];
    if (it->group < 0)
        return 1;
    for (size_t j = 0; j < pm->nitems; j++) {
        if (j == i || card_of[j] < 0 || pm->items[j].group != it->group)
            continue;
        if ((size_t)card_of[j] == c)
            return 0;
        if (it->spread_node && pm->cards[card_of[j]]->node == pm->cards[c]->node)
            return 0;
    }
    return 1;
}

static int fits(const struct plan_mig *pm, const int *card_of, size_t i, size_t c, int *units)
{
    const struct cat_profile *profs[PLAN_MAX_PER_CARD];
    int starts[PLAN_MAX_PER_CARD];
    size_t n = 0;
    *units = 0;
    for (size_t j = 0; j < pm->nitems; j++)
        if (card_of[j] == (int)c) {
            if (n == PLAN_MAX_PER_CARD - 1)
                return 0;
            profs[n++] = pm->items[j].profile;
            *units += pm->items[j].profile->mem_units;
        }
    profs[n++] = pm->items[i].profile;
    /* same order as the canonical sort, so equal profiles sit together */
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0; b--) {
            const struct cat_profile *x = profs[b - 1], *y = profs[b];
            int swap = x->mem_units < y->mem_units ||
                       (x->mem_units == y->mem_units &&
                        (x->compute < y->compute || (x->compute == y->compute && x->id > y->id)));
            if (!swap)
                break;
            profs[b - 1] = y;
            profs[b] = x;
        }
    return plan__place(pm->model, profs, n, starts);
}

static int place_item(const struct plan_mig *pm, int *card_of, char *open, size_t i,
                      int worst_fit)
{
    int best = -1, best_units = -1, units;
    for (size_t c = 0; c < pm->ncards; c++) {
        if (!open[c] || !plan__item_allowed(pm, i, c) || !spread_ok(pm, card_of, i, c) ||
            !fits(pm, card_of, i, c, &units))
            continue;
        int better = worst_fit ? units < best_units : units > best_units;
        if (best < 0 || better) {
            best = (int)c;
            best_units = units;
        }
    }
    for (size_t c = 0; best < 0 && c < pm->ncards; c++)
        if (!open[c] && pm->cards[c]->mode == PLAN_FREE && plan__item_allowed(pm, i, c) &&
            spread_ok(pm, card_of, i, c) && fits(pm, card_of, i, c, &units)) {
            best = (int)c;
            open[c] = 1;
        }
    card_of[i] = best;
    return best >= 0;
}

/* One strategy; returns cards used or -1. */
static int run(const struct plan_mig *pm, const size_t *order, int *card_of, char *open,
               int preopen, int worst_fit)
{
    memset(open, 0, pm->ncards + 1);
    for (size_t i = 0; i < pm->nitems; i++)
        card_of[i] = -1;
    for (size_t c = 0; c < pm->ncards && preopen > 0; c++)
        if (pm->cards[c]->mode == PLAN_FREE) {
            open[c] = 1;
            preopen--;
        }
    for (size_t k = 0; k < pm->nitems; k++)
        if (!place_item(pm, card_of, open, order[k], worst_fit))
            return -1;
    int used = 0;
    for (size_t c = 0; c < pm->ncards; c++)
        for (size_t i = 0; i < pm->nitems; i++)
            if (card_of[i] == (int)c) {
                used++;
                break;
            }
    return used;
}

int plan__heuristic(const struct plan_mig *pm, int *card_of)
{
    size_t *order = malloc((pm->nitems + 1) * sizeof(*order));
    char *open = calloc(pm->ncards + 1, 1);
    int *trial = malloc((pm->nitems + 1) * sizeof(*trial));
    int best = -1;
    if (!order || !open || !trial)
        goto out;
    for (size_t i = 0; i < pm->nitems; i++)
        order[i] = i;
    qsort_r(order, pm->nitems, sizeof(*order), cmp_items, (void *)pm);
    int bound = plan__mig_bound(pm);
    for (int strategy = 0; strategy < 4; strategy++) {
        int used = run(pm, order, trial, open, strategy & 2 ? bound : 0, strategy & 1);
        if (used >= 0 && (best < 0 || used < best)) {
            best = used;
            memcpy(card_of, trial, pm->nitems * sizeof(*trial));
        }
    }
out:
    free(order);
    free(open);
    free(trial);
    return best;
}
