/*
 * bound.c - how few cards any layout could use, and how many the naive
 * layout uses.
 *
 * Lower bound, per GPU model: whole-GPU demand, plus for MIG the largest of
 * (memory units / grid, compute slices / card, per-profile count / max
 * count, replicas of one workload that must sit on distinct cards), plus
 * the configuration LP bound of the profiles (cutting-stock form), plus for
 * each sharing pool its configuration bound, per trust group (plan/poolcfg.c). Guests
 * (best-effort time-slicing) count with the time-slicing pools unless a
 * scheduled whole card of the model might host them for nothing.
 * Naive: each workload its own guaranteed whole GPU(s); replicas count once.
 * Dedicated: each replica its own whole GPU(s).
 */
#include "plan/internal.h"

#include <math.h>
#include <string.h>

static int ceil_div(double a, double b) { return b > 0 ? (int)ceil(a / b - 1e-9) : 0; }

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
    b = plan__mig_cfg_bound(pm);
    return b > bound ? b : bound;
}

int plan__is_guest(const struct decide_row *r)
{
    return r->mech == DECIDE_TIME_SLICING &&
           (r->workload->best_effort || r->tenant->contract == SPEC_CONTRACT_BEST_EFFORT ||
            r->workload->kind == SPEC_WK_DEV);
}

/* Rows whose clients may share cards with r's: same mechanism and model,
 * and the same named pool, or (MPS) the same tenant, or (fractions and
 * time-slicing) any tenant; trust is checked card by card. */
int plan__same_group(const struct decide_row *a, const struct decide_row *r)
{
    if (!a) /* a canary slice belongs to no group */
        return 0;
    if (a->mech != r->mech || a->model != r->model || a->profile || plan__is_guest(a))
        return 0;
    if (a->workload->pool || r->workload->pool)
        return a->workload->pool && r->workload->pool &&
               strcmp(a->workload->pool, r->workload->pool) == 0;
    return r->mech != DECIDE_MPS || a->tenant == r->tenant;
}

/* Cards r's group needs at least: memory, SM shares, clients, spread. */
int plan__group_bound(const struct decide_result *d, const struct decide_row *r)
{
    double mem = 0, sm = 0, clients = 0;
    int spread = 1;
    for (size_t i = 0; i < d->nrows; i++) {
        const struct decide_row *a = &d->rows[i];
        if (!plan__same_group(a, r))
            continue;
        mem += a->cap_gib * a->workload->replicas;
        sm += (double)a->sm_percent * a->workload->replicas;
        clients += a->workload->replicas;
        if (a->workload->spread != SPEC_SPREAD_NONE && a->workload->replicas > spread)
            spread = a->workload->replicas;
    }
    double need = mem / r->model->memory_gib;
    if (r->mech == DECIDE_MPS) {
        need = sm / 100.0 > need ? sm / 100.0 : need;
        need = clients / r->model->mps_max_clients > need ? clients / r->model->mps_max_clients
                                                          : need;
    }
    int bound = (int)(need + 1.0 - 1e-9);
    return spread > bound ? spread : bound;
}

int plan__other_bound(const struct spec_model *m, const struct decide_result *d,
                      const struct cat_model *model)
{
    int whole = 0;
    for (size_t i = 0; i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        if (r->model == model && !r->profile && (r->mech == DECIDE_WHOLE || r->mech == DECIDE_VGPU))
            whole += r->gpus * r->workload->replicas;
    }
    return whole + plan__pools_bound(m, d, model, DECIDE_MPS) +
           plan__pools_bound(m, d, model, DECIDE_MEMORY_FRACTION) +
           plan__pools_bound(m, d, model, DECIDE_TIME_SLICING);
}

/* Whole cards one replica of r needs on its own. */
static int replica_cards(const struct decide_row *r)
{
    int cards = ceil_div(r->need_gib, r->model->memory_gib);
    cards = cards < 1 ? 1 : cards;
    return r->gpus > cards ? r->gpus : cards;
}

int plan_naive(const struct decide_result *d)
{
    int n = 0;
    for (size_t i = 0; i < d->nrows; i++)
        n += replica_cards(&d->rows[i]);
    return n;
}

int plan_dedicated(const struct decide_result *d)
{
    int n = 0;
    for (size_t i = 0; i < d->nrows; i++)
        n += replica_cards(&d->rows[i]) * d->rows[i].workload->replicas;
    return n;
}
