/*
 * frag.c - fragmentation explained: when MIG instances cannot be placed,
 * lay them out first-fit (biggest first) to find the first one left over,
 * and if some card has enough free slices (memory units and compute) for
 * it but no legal start of its profile is free, say so, name the starts and
 * what covers them, and look for one move (an instance on that card to
 * another card that takes it) that frees a legal start.
 */
#include "plan/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fcard {
    const struct plan_item *on[PLAN_MAX_PER_CARD];
    int n, units, compute;
};

struct frag {
    const struct plan_mig *pm;
    struct fcard *cards;
};

/* Would card c hold its instances (less skip) and it? starts for the list. */
static int takes(const struct frag *f, size_t c, int skip, const struct plan_item *it,
                 const struct plan_item **list, int *starts)
{
    const struct fcard *k = &f->cards[c];
    const struct cat_profile *profs[PLAN_MAX_PER_CARD];
    size_t n = 0;
    for (int i = 0; i < k->n; i++)
        if (i != skip && n < PLAN_MAX_PER_CARD - 1)
            list[n++] = k->on[i];
    if (it)
        list[n++] = it;
    for (size_t a = 1; a < n; a++) /* biggest first, equal profiles together */
        for (size_t b = a; b > 0 && plan__item_order(list[b - 1], list[b]) > 0; b--) {
            const struct plan_item *x = list[b];
            list[b] = list[b - 1];
            list[b - 1] = x;
        }
    for (size_t i = 0; i < n; i++)
        profs[i] = list[i]->profile;
    return plan__place(f->pm->model, profs, n, starts);
}

static int group_on(const struct fcard *k, const struct plan_item *it, int skip)
{
    for (int i = 0; i < k->n; i++)
        if (i != skip && it->group >= 0 && k->on[i]->group == it->group)
            return 1;
    return 0;
}

static int may_go(const struct frag *f, size_t c, const struct plan_item *it)
{
    const struct plan_item *list[PLAN_MAX_PER_CARD];
    int starts[PLAN_MAX_PER_CARD];
    size_t i = (size_t)(it - f->pm->items);
    return f->pm->cards[c]->mode == PLAN_FREE && plan__item_allowed(f->pm, i, c) &&
           !group_on(&f->cards[c], it, -1) && f->cards[c].n < PLAN_MAX_PER_CARD - 1 &&
           takes(f, c, -1, it, list, starts);
}

static void put(struct fcard *k, const struct plan_item *it)
{
    k->on[k->n++] = it;
    k->units += it->profile->mem_units;
    k->compute += it->profile->compute;
}

/* First fit, biggest first; the first item left over, or NULL. */
static const struct plan_item *first_fit(struct frag *f)
{
    const struct plan_mig *pm = f->pm;
    const struct plan_item **order = malloc((pm->nitems + 1) * sizeof(*order));
    const struct plan_item *stuck = NULL;
    for (size_t i = 0; order && i < pm->nitems; i++)
        order[i] = &pm->items[i];
    for (size_t a = 1; order && a < pm->nitems; a++)
        for (size_t b = a; b > 0 && plan__item_order(order[b - 1], order[b]) > 0; b--) {
            const struct plan_item *x = order[b];
            order[b] = order[b - 1];
            order[b - 1] = x;
        }
    for (size_t i = 0; order && i < pm->nitems && !stuck; i++) {
        size_t c = 0;
        while (c < pm->ncards && !may_go(f, c, order[i]))
            c++;
        if (c < pm->ncards)
            put(&f->cards[c], order[i]);
        else
            stuck = order[i];
    }
    free(order);
    return stuck;
}

/* A card with room in slices for it but no legal start; -1 when none. */
static int fragmented(const struct frag *f, const struct plan_item *it)
{
    const struct cat_model *m = f->pm->model;
    for (size_t c = 0; c < f->pm->ncards; c++) {
        const struct fcard *k = &f->cards[c];
        if (k->n > 0 && f->pm->cards[c]->mode == PLAN_FREE &&
            plan__item_allowed(f->pm, (size_t)(it - f->pm->items), c) &&
            k->units + it->profile->mem_units <= m->grid &&
            k->compute + it->profile->compute <= m->compute_slices && !group_on(k, it, -1))
            return (int)c;
    }
    return -1;
}

static const char *owner(const struct plan_item *it, char *buf, size_t size)
{
    if (!it->row)
        return "the canary slice";
    snprintf(buf, size, "%s/%s r%d (%s)", it->row->tenant->name, it->row->workload->name,
             it->replica, it->profile->name);
    return buf;
}

/* Legal starts of it's profile and what covers each, as text. */
static void starts_text(const struct frag *f, size_t c, const struct plan_item *it, char *buf,
                        size_t size)
{
    const struct plan_item *list[PLAN_MAX_PER_CARD];
    int starts[PLAN_MAX_PER_CARD], len = 0;
    size_t n = (size_t)f->cards[c].n;
    takes(f, c, -1, NULL, list, starts);
    buf[0] = '\0';
    for (size_t s = 0; s < it->profile->nstarts && len < (int)size; s++) {
        int a = it->profile->starts[s], e = a + it->profile->mem_units;
        char who[160] = "";
        for (size_t i = 0; i < n && !who[0]; i++)
            if (starts[i] < e && a < starts[i] + list[i]->profile->mem_units)
                owner(list[i], who, sizeof(who));
        len += snprintf(buf + len, size - (size_t)len, "%s%d (%s)", s ? ", " : "", a,
                        who[0] ? who : "free");
    }
}

/* One move that frees a legal start on card c: the instance index moved
 * and its destination in *to; -1 when none. */
static int find_move(const struct frag *f, size_t c, const struct plan_item *it, size_t *to)
{
    const struct plan_item *list[PLAN_MAX_PER_CARD];
    int starts[PLAN_MAX_PER_CARD];
    for (int k = 0; k < f->cards[c].n; k++) {
        if (!takes(f, c, k, it, list, starts))
            continue;
        for (size_t d = 0; d < f->pm->ncards; d++)
            if (d != c && may_go(f, d, f->cards[c].on[k])) {
                *to = d;
                return k;
            }
    }
    return -1;
}

static void report(struct plan_build *b, const struct frag *f, const struct plan_item *it, size_t c)
{
    const struct plan_gpu *g = f->pm->cards[c];
    char what[160], where[512], moved[160], move[400] = "; no single move frees one";
    size_t to;
    int k = find_move(f, c, it, &to);
    if (k >= 0)
        snprintf(move, sizeof(move), "; moving %s to %s gpu %d would make it fit",
                 owner(f->cards[c].on[k], moved, sizeof(moved)), f->pm->cards[to]->node->name,
                 f->pm->cards[to]->index);
    starts_text(f, c, it, where, sizeof(where));
    plan__fail(b, it->row,
               "%s does not fit: %s gpu %d has %d free slices of %d (it needs %d) but no legal "
               "start left for %s: its starts are %s%s; add cards or shrink the workloads",
               owner(it, what, sizeof(what)), g->node->name, g->index,
               f->pm->model->grid - f->cards[c].units, f->pm->model->grid, it->profile->mem_units,
               it->profile->name, where, move);
}

int plan__explain_fragment(struct plan_build *b, const struct plan_mig *pm)
{
    struct frag f = {pm, calloc(pm->ncards + 1, sizeof(struct fcard))};
    int said = 0;
    const struct plan_item *it = f.cards ? first_fit(&f) : NULL;
    int c = it ? fragmented(&f, it) : -1;
    if (c >= 0) {
        report(b, &f, it, (size_t)c);
        said = 1;
    }
    free(f.cards);
    return said;
}
