/*
 * place.c - placement search on one card: given the profiles a card must
 * hold, find a start unit for each so that every start is allowed, nothing
 * overlaps, counts and compute slices stay within the board's limits.
 * Depth-first, lowest start first: the first answer is the canonical one.
 */
#include "plan/internal.h"

struct search {
    const struct cat_model *model;
    const struct cat_profile *const *profiles;
    size_t n;
    int *starts;
};

static int dfs(struct search *s, size_t k, unsigned long long used)
{
    if (k == s->n)
        return 1;
    const struct cat_profile *p = s->profiles[k];
    for (size_t i = 0; i < p->nstarts; i++) {
        int start = p->starts[i];
        unsigned long long mask = ((1ull << p->mem_units) - 1ull) << start;
        if (used & mask)
            continue;
        /* equal profiles take ascending starts: skips mirror-image retries */
        if (k > 0 && s->profiles[k - 1] == p && start < s->starts[k - 1])
            continue;
        s->starts[k] = start;
        if (dfs(s, k + 1, used | mask))
            return 1;
    }
    return 0;
}

int plan__place(const struct cat_model *model, const struct cat_profile *const *profiles, size_t n,
                int *starts)
{
    int compute = 0;
    for (size_t i = 0; i < n; i++) {
        size_t same = 0;
        for (size_t j = 0; j < n; j++)
            same += profiles[j] == profiles[i];
        if ((int)same > profiles[i]->max_count)
            return 0;
        compute += profiles[i]->compute;
    }
    if (compute > model->compute_slices || n > PLAN_MAX_PER_CARD)
        return 0;
    struct search s = {model, profiles, n, starts};
    return dfs(&s, 0, 0);
}

int plan__item_order(const struct plan_item *x, const struct plan_item *y)
{
    if (x->profile->mem_units != y->profile->mem_units)
        return y->profile->mem_units - x->profile->mem_units;
    if (x->profile->compute != y->profile->compute)
        return y->profile->compute - x->profile->compute;
    if (x->profile->id != y->profile->id)
        return x->profile->id - y->profile->id;
    int xi = x->row ? x->row->index : 1 << 30, yi = y->row ? y->row->index : 1 << 30;
    return xi != yi ? xi - yi : x->replica - y->replica;
}
