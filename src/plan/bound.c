/*
 * bound.c - how few cards any layout could use, and how many the naive
 * layout uses.
 *
 * Lower bound, per GPU model: whole-GPU demand, plus for MIG the largest of
 * (memory units / grid, compute slices / card, per-profile count / max
 * count, replicas of one workload that must sit on distinct cards), plus
 * for each sharing mechanism its memory / card memory. Guests (best-effort
 * time-slicing) cost nothing: they can ride on other cards.
 * Naive: each workload its own guaranteed whole GPU(s); replicas count once.
 */
#include "plan/internal.h"

#include <math.h>

static int ceil_div(double a, double b)
{
    return b > 0 ? (int)ceil(a / b - 1e-9) : 0;
}

int plan__mig_bound(const struct plan_mig *pm)
{
    const struct cat_model *m = pm->model;
    int units = 0, compute = 0, bound = 0;
    for (size_t i = 0; i < pm->nitems; i++) {
        units += pm->items[i].profile->mem_units;
        compute += pm->items[i].profile->compute;
    }
    bound = ceil_div(units, m->grid);
    int b = ceil_div(compute, m->compute_slices);
    bound = b > bound ? b : bound;
    for (size_t p = 0; p < m->nprofiles; p++) {
        int count = 0;
        for (size_t i = 0; i < pm->nitems; i++)
            count += pm->items[i].profile == &m->profiles[p];
        b = ceil_div(count, m->profiles[p].max_count);
        bound = b > bound ? b : bound;
    }
    for (size_t i = 0; i < pm->nitems; i++) {
        const struct plan_item *it = &pm->items[i];
        if (it->group >= 0 && it->replica + 1 > bound)
            bound = it->replica + 1;
    }
    return bound;
}

int plan__is_guest(const struct decide_row *r)
{
    return r->mech == DECIDE_TIME_SLICING &&
           (r->workload->best_effort || r->tenant->contract == SPEC_CONTRACT_BEST_EFFORT ||
            r->workload->kind == SPEC_WK_DEV);
}

/* Sharing mechanisms: memory / card, per mechanism. */
static int pool_bound(const struct decide_result *d, const struct cat_model *model, int mech)
{
    double mem = 0;
    int spread = 0;
    for (size_t i = 0; i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        if (r->model != model || r->mech != mech || plan__is_guest(r))
            continue;
        mem += r->cap_gib * r->workload->replicas;
        if (r->workload->spread != SPEC_SPREAD_NONE && r->workload->replicas > spread)
            spread = r->workload->replicas;
    }
    int b = ceil_div(mem, model->memory_gib);
    return spread > b ? spread : b;
}

int plan__other_bound(const struct decide_result *d, const struct cat_model *model)
{
    int whole = 0;
    for (size_t i = 0; i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        if (r->model == model && !r->profile &&
            (r->mech == DECIDE_WHOLE || r->mech == DECIDE_VGPU))
            whole += r->gpus * r->workload->replicas;
    }
    return whole + pool_bound(d, model, DECIDE_MPS) +
           pool_bound(d, model, DECIDE_MEMORY_FRACTION) +
           pool_bound(d, model, DECIDE_TIME_SLICING);
}

int plan_naive(const struct decide_result *d)
{
    int n = 0;
    for (size_t i = 0; i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        int cards = ceil_div(r->need_gib, r->model->memory_gib);
        cards = cards < 1 ? 1 : cards;
        n += r->gpus > cards ? r->gpus : cards;
    }
    return n;
}
