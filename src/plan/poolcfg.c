/*
 * poolcfg.c - sharing pools and best-effort guests as bin-packing classes
 * (plan/config.c): which clients one card holds (memory caps adding up to
 * no more than the card; for MPS, SM shares up to 100% and the board's
 * client limit; one named pool or none; replicas that spread on distinct
 * cards; only tenants that trust each other), and the configuration lower
 * bound of a model's pools and guests: alike clients as one type, per
 * component of clients that may share a card (tenants that do not trust
 * each other never share one, so the components' bounds add up); a
 * component too large to list its configurations counts its memory (MPS:
 * SM shares, clients) as a fluid.
 */
#include "plan/internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Replicas of r kept on distinct cards (one replica: nothing to keep apart). */
static int spreads(const struct decide_row *r)
{
    return r->workload->spread != SPEC_SPREAD_NONE && r->workload->replicas > 1;
}

static int same_pool(const struct decide_row *a, const struct decide_row *b)
{
    const char *pa = a->workload->pool, *pb = b->workload->pool;
    return (!pa && !pb) || (pa && pb && strcmp(pa, pb) == 0);
}

unsigned char *plan__pool_trust_memo(const struct spec_model *m)
{
    if (!m || m->ntenants > PLAN_TRUST_MEMO_TENANTS_MAX)
        return NULL;
    return calloc(m->ntenants * m->ntenants + 1, 1);
}

static int trust(const struct plan_pool_class *pc, const struct spec_tenant *a,
                 const struct spec_tenant *b)
{
    if (a == b)
        return 1;
    if (!pc->trust)
        return spec_tenants_trust(pc->m, a->name, b->name);
    unsigned char *t =
        &pc->trust[(size_t)(a - pc->m->tenants) * pc->m->ntenants + (size_t)(b - pc->m->tenants)];
    if (!*t)
        *t = spec_tenants_trust(pc->m, a->name, b->name) ? 1 : 2;
    return *t == 1;
}

/* May rows a and b share a card (guests join any pool, trust permitting)? */
static int compatible(const struct plan_pool_class *pc, const struct decide_row *a,
                      const struct decide_row *b)
{
    if (!plan__is_guest(a) && !plan__is_guest(b)) {
        if (!same_pool(a, b))
            return 0;
        if (a->mech == DECIDE_MPS && !a->workload->pool && a->tenant != b->tenant)
            return 0; /* one MPS server per tenant */
    }
    return !pc->m || trust(pc, a->tenant, b->tenant);
}

int plan__pool_compatible(const struct plan_pool_class *pc, const struct decide_row *a,
                          const struct decide_row *b)
{
    return compatible(pc, a, b);
}

int plan__pool_same_client(const struct decide_row *a, const struct decide_row *b)
{
    if (a == b)
        return 1;
    return a->tenant == b->tenant && a->mech == b->mech && a->model == b->model &&
           a->cap_gib == b->cap_gib && a->sm_percent == b->sm_percent &&
           plan__is_guest(a) == plan__is_guest(b) && same_pool(a, b) && !spreads(a) && !spreads(b);
}

static size_t root(size_t *set, size_t i)
{
    while (set[i] != i)
        i = set[i] = set[set[i]];
    return i;
}

size_t plan__pool_components(const struct plan_pool_class *pc, size_t *comp)
{
    size_t *id = malloc((pc->ntypes + 1) * sizeof(*id)), n = 0;
    for (size_t t = 0; t < pc->ntypes; t++)
        comp[t] = id ? t : 0;
    if (!id)
        return pc->ntypes > 0; /* one component: weaker, still true */
    for (size_t t = 0; t < pc->ntypes; t++)
        for (size_t u = t + 1; u < pc->ntypes; u++) {
            size_t a = root(comp, t), b = root(comp, u);
            if (a != b && compatible(pc, pc->rows[t], pc->rows[u]))
                comp[a > b ? a : b] = a < b ? a : b; /* a set's root: its first type */
        }
    for (size_t t = 0; t < pc->ntypes; t++) /* numbered by their first type */
        id[t] = root(comp, t) == t ? n++ : id[root(comp, t)];
    memcpy(comp, id, pc->ntypes * sizeof(*comp));
    free(id);
    return n;
}

/* Memory, SM shares and clients within the card (sums as plan__pool_fits
 * adds them: the same rounding). */
static int totals_fit(const struct plan_pool_class *pc, double mem, int sm, int clients)
{
    if (mem > pc->model->memory_gib + 1e-9)
        return 0;
    return pc->mech != DECIDE_MPS || (sm <= 100 && clients <= pc->model->mps_max_clients);
}

const struct plan_cfg_sums *plan__pool_sums(const struct plan_pool_class *pc,
                                            struct plan_cfg_sums *s)
{
    size_t n = pc->ntypes;
    int mps = pc->mech == DECIDE_MPS;
    *s = (struct plan_cfg_sums){0};
    if (n > PLAN_CFG_SUMS_TYPES_MAX)
        return NULL;
    *s = (struct plan_cfg_sums){
        .nres = mps ? 3 : 1,
        .cap = {pc->model->memory_gib + 1e-9, 100, pc->model->mps_max_clients},
        .use = calloc(3 * n + 1, sizeof(double)),
        .most = calloc(n + 1, sizeof(int)),
        .apart = calloc(n * n + 1, 1)};
    if (!s->use || !s->most || !s->apart) {
        plan__cfg_sums_free(s);
        return NULL;
    }
    for (size_t t = 0; t < n; t++) {
        const struct decide_row *r = pc->rows[t];
        double *use = &s->use[t * s->nres];
        use[0] = r->cap_gib;
        if (mps) {
            use[1] = r->sm_percent;
            use[2] = 1;
        }
        s->most[t] = spreads(r) ? 1 : INT_MAX;
        for (size_t u = 0; u < n; u++)
            s->apart[t * n + u] = u != t && !compatible(pc, pc->rows[u], r);
    }
    return s;
}

int plan__pool_fits(const void *ctx, const int *counts)
{
    const struct plan_pool_class *pc = ctx;
    double mem = 0;
    int sm = 0, clients = 0;
    for (size_t t = 0; t < pc->ntypes; t++) {
        const struct decide_row *r = pc->rows[t];
        if (!counts[t])
            continue;
        if (counts[t] > 1 && spreads(r))
            return 0;
        for (size_t u = 0; u < t; u++)
            if (counts[u] && !compatible(pc, pc->rows[u], r))
                return 0;
        mem += r->cap_gib * counts[t];
        sm += r->sm_percent * counts[t];
        clients += counts[t];
    }
    return totals_fit(pc, mem, sm, clients);
}

/* The configuration bound of pc, or -1 when it is too large to enumerate. */
int plan__pool_cfg_bound(const struct plan_pool_class *pc)
{
    if (pc->ntypes == 0)
        return 0;
    struct plan_cfg_sums sums;
    struct plan_cfg c = {
        pc->ntypes, pc->demand, plan__pool_fits, pc, NULL, 0, plan__pool_sums(pc, &sums), 0, 0};
    int bound = plan__cfg_enumerate(&c) ? plan__cfg_lp_bound(&c) : -1;
    plan__cfg_free(&c);
    plan__cfg_sums_free(&sums);
    return bound;
}

/* Cards component pc needs when its configurations are too many to list:
 * memory (and for MPS, SM shares and clients) as fluids, spread replicas. */
static int fluid_bound(const struct plan_pool_class *pc)
{
    double mem = 0, sm = 0, clients = 0;
    int spread = 0;
    for (size_t t = 0; t < pc->ntypes; t++) {
        const struct decide_row *r = pc->rows[t];
        mem += r->cap_gib * pc->demand[t];
        sm += (double)r->sm_percent * pc->demand[t];
        clients += pc->demand[t];
        if (spreads(r) && pc->demand[t] > spread)
            spread = pc->demand[t];
    }
    double need = mem / pc->model->memory_gib;
    if (pc->mech == DECIDE_MPS) {
        need = sm / 100.0 > need ? sm / 100.0 : need;
        if (pc->model->mps_max_clients > 0 && clients / pc->model->mps_max_clients > need)
            need = clients / pc->model->mps_max_clients;
    }
    int bound = (int)ceil(need - 1e-9);
    return spread > bound ? spread : bound;
}

/* The configuration bound of pc taken apart: alike clients (the same tenant,
 * size and pool, not spread) one type, and the types in components of
 * clients that may share a card (trust, pool, MPS server): no card holds
 * two components, so their bounds add up. Each component's is its
 * configuration LP's, or its fluid bound when too large to list. -1 when
 * out of memory. */
int plan__pool_split_bound(const struct plan_pool_class *pc)
{
    size_t n = pc->ntypes;
    const struct decide_row **rows = calloc(n + 1, sizeof(*rows)), **sub = NULL;
    int *demand = calloc(n + 1, sizeof(*demand)), *subd = NULL, total = 0;
    size_t *comp = calloc(n + 1, sizeof(*comp)), ntypes = 0, ncomp = 0;
    sub = rows && demand && comp ? calloc(n + 1, sizeof(*sub)) : NULL;
    subd = sub ? calloc(n + 1, sizeof(*subd)) : NULL;
    if (!subd)
        total = -1;
    for (size_t t = 0; subd && t < n; t++) {
        size_t u = 0;
        while (u < ntypes && !plan__pool_same_client(rows[u], pc->rows[t]))
            u++;
        if (u == ntypes)
            rows[ntypes++] = pc->rows[t];
        demand[u] += pc->demand[t];
    }
    struct plan_pool_class all = *pc;
    all.rows = rows;
    all.demand = demand;
    all.ntypes = ntypes;
    if (subd)
        ncomp = plan__pool_components(&all, comp);
    for (size_t k = 0; subd && k < ncomp; k++) {
        struct plan_pool_class one = *pc;
        one.rows = sub;
        one.demand = subd;
        one.ntypes = 0;
        for (size_t t = 0; t < ntypes; t++)
            if (comp[t] == k) {
                sub[one.ntypes] = rows[t];
                subd[one.ntypes++] = demand[t];
            }
        int b = plan__pool_cfg_bound(&one), f = fluid_bound(&one);
        total += b > f ? b : f;
    }
    free(rows);
    free(demand);
    free(comp);
    free(sub);
    free(subd);
    return total;
}

/* Rows of d on model with mechanism mech taken by keep(a, r), r the first. */
static size_t collect(struct plan_pool_class *pc, const struct decide_result *d,
                      const struct decide_row *r,
                      int (*keep)(const struct decide_row *, const struct decide_row *))
{
    pc->ntypes = 0;
    for (size_t i = 0; i < d->nrows; i++)
        if (keep(&d->rows[i], r)) {
            pc->rows[pc->ntypes] = &d->rows[i];
            pc->demand[pc->ntypes++] = d->rows[i].workload->replicas;
        }
    return pc->ntypes;
}

static int any_time_slicing(const struct decide_row *a, const struct decide_row *r)
{
    return a->mech == DECIDE_TIME_SLICING && a->model == r->model && !a->profile;
}

/* A guest costs nothing where a scheduled whole card might host it. */
static int guests_may_ride(const struct decide_result *d, const struct cat_model *model)
{
    for (size_t i = 0; i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        if (r->model == model && !r->profile && r->workload->schedule &&
            (r->mech == DECIDE_WHOLE || r->mech == DECIDE_VGPU))
            return 1;
    }
    return 0;
}

/* Cards a group needs: its configuration bound, at least the simple one. */
static int group_bound(const struct spec_model *m, const struct decide_result *d,
                       const struct decide_row *r, struct plan_pool_class *pc)
{
    int simple = plan__group_bound(d, r);
    *pc = (struct plan_pool_class){m, r->model, r->mech, pc->rows, 0, pc->demand, pc->trust};
    collect(pc, d, r, plan__same_group);
    int cfg = plan__pool_split_bound(pc);
    return cfg > simple ? cfg : simple;
}

/* Time-slicing pools and guests together: guests need room somewhere. */
static int time_slicing_bound(const struct spec_model *m, const struct decide_result *d,
                              const struct decide_row *r, struct plan_pool_class *pc)
{
    *pc = (struct plan_pool_class){m,          r->model, DECIDE_TIME_SLICING, pc->rows, 0,
                                   pc->demand, pc->trust};
    collect(pc, d, r, any_time_slicing);
    int cfg = plan__pool_split_bound(pc);
    if (cfg >= 0)
        return cfg;
    double mem = 0;
    for (size_t t = 0; t < pc->ntypes; t++)
        mem += pc->rows[t]->cap_gib * pc->demand[t];
    return (int)ceil(mem / r->model->memory_gib - 1e-9);
}

int plan__pools_bound(const struct spec_model *m, const struct decide_result *d,
                      const struct cat_model *model, int mech)
{
    struct plan_pool_class pc = {0};
    pc.rows = calloc(d->nrows + 1, sizeof(*pc.rows));
    pc.demand = calloc(d->nrows + 1, sizeof(*pc.demand));
    pc.trust = plan__pool_trust_memo(m);
    int total = 0, guests = 0;
    const struct decide_row *ts = NULL;
    for (size_t i = 0; pc.rows && pc.demand && i < d->nrows; i++) {
        const struct decide_row *r = &d->rows[i];
        if (r->model != model || r->mech != mech || r->profile)
            continue;
        ts = ts ? ts : r;
        guests |= plan__is_guest(r);
        int first = !plan__is_guest(r);
        for (size_t j = 0; j < i && first; j++)
            first = !plan__same_group(&d->rows[j], r);
        total += first ? group_bound(m, d, r, &pc) : 0;
    }
    if (ts && mech == DECIDE_TIME_SLICING && guests && !guests_may_ride(d, model)) {
        int joint = time_slicing_bound(m, d, ts, &pc);
        total = joint > total ? joint : total;
    }
    free(pc.rows);
    free(pc.demand);
    free(pc.trust);
    return total;
}
