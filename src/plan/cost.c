/*
 * cost.c - the fleet's price per hour as one program over every workload
 * and card model (with a PriceBook): which model each workload runs on.
 *
 * Each workload has alternatives (plan/pin.c): its own decision and, when
 * it may move, the decision decide makes on each other fleet model that
 * isolates as well. The program (GLPK):
 *   y[r,a]  binary: workload r runs on alternative a (one per workload);
 *   x[M,k]  cards of model M filled with MIG configuration k (every maximal
 *           set of the profiles the alternatives use on M, plan/config.c);
 *   z[g]    cards of sharing-pool group g (model, mechanism, and the MPS
 *           tenant or the tenants that trust each other, guests too:
 *           plan/costtrust.c);
 *   whole cards: GPUs x replicas of the alternative.
 * Profile counts cover the chosen replicas, a pool's cards hold its
 * clients' memory caps, MPS SM shares and clients, replicas kept apart
 * (spread) get as many cards, and a model's cards are at most the fleet's.
 * Minimised: the price of the cards. Node constraints, canary slices and
 * best-effort guests on cards a scheduled whole card might host are left
 * out, so the program relaxes the planner's problem: its LP relaxation (or,
 * on a small program, its proven integer optimum) is a lower bound on the
 * cost of any plan of these workloads. Its cuts, its search (the integer
 * solution is the models the planner then tries, plan_choose_models in
 * plan/choose.c) and the bound are plan/costsolve.c's. Alike workloads
 * (the same alternatives) share one integer column per alternative.
 */
#include "plan/cost_int.h"

#include <stdlib.h>
#include "util/grow.h"
#include "util/units.h"

/* ---- the fleet's models and prices ---- */

size_t plan__cost_slot(const struct cost *c, const struct cat_model *model)
{
    for (size_t i = 0; i < c->nmodels; i++)
        if (c->models[i].model == model)
            return i;
    return SIZE_MAX;
}

static double price_of(const struct cost *c, const struct cat_model *model)
{
    const struct spec_pricebook *pb = c->m->pricebook;
    double top = 0;
    for (size_t i = 0; i < pb->nprices; i++) {
        double p = (double)pb->prices[i].per_gpu_hour / TS_MICRO;
        if (cat_model_find(c->cat, pb->prices[i].model) == model)
            return p;
        top = p > top ? p : top;
    }
    return top; /* unlisted: its highest price, as decide counts it */
}

static void fleet_models(struct cost *c)
{
    const struct spec_fleet *f = c->m->fleet;
    for (size_t i = 0; i < f->nnodes; i++)
        for (size_t g = 0; g < f->nodes[i].ngpus; g++) {
            const struct cat_model *model = cat_model_find(c->cat, f->nodes[i].gpus[g].model);
            size_t s = model ? plan__cost_slot(c, model) : SIZE_MAX;
            if (model && s == SIZE_MAX && c->nmodels < DECIDE_MODELS_MAX) {
                s = c->nmodels++;
                c->models[s] = (struct cost_model_row){model, 0, price_of(c, model), 0, 0};
            }
            if (s != SIZE_MAX)
                c->models[s].cards += f->nodes[i].gpus[g].count;
        }
}

/* ---- alternatives ---- */

static int add_alt(struct cost *c, const struct decide_row *r)
{
    if (!ts_grow((void **)&c->alt, &c->altcap, c->nalt, sizeof(*c->alt)))
        return 0;
    c->alt[c->nalt++] = *r;
    return 1;
}

/* 1 when decide gives rows r and q the same answers on every model: what
 * its rules read of the workload and tenant is equal (names aside). */
static int alike(const struct decide_row *r, const struct decide_row *q)
{
    const struct spec_workload *a = r->workload, *b = q->workload;
    return r->tenant->contract == q->tenant->contract &&
           r->tenant->data_class == q->tenant->data_class && a->kind == b->kind &&
           a->memory_gib == b->memory_gib && a->kv_cache_gib == b->kv_cache_gib &&
           a->p99_ms == b->p99_ms && a->best_effort == b->best_effort &&
           a->replicas == b->replicas && a->spread == b->spread && a->gpus == b->gpus &&
           a->peer_to_peer == b->peer_to_peer && a->vm == b->vm && a->trust == b->trust &&
           a->isolation == b->isolation && a->compute_slices == b->compute_slices &&
           a->sm_percent == b->sm_percent && a->ngpu_models == 0 && b->ngpu_models == 0 &&
           r->mech == q->mech && r->model == q->model && r->enforce == q->enforce;
}

/* Row i's other models: an alike earlier row's (rebound to i), else
 * decide on each fleet model. */
static ts_status other_models(struct cost *c, size_t i, size_t *seen, size_t *nseen)
{
    const struct decide_row *r = &c->d->rows[i];
    for (size_t k = 0; k < *nseen; k++) {
        size_t q = seen[k];
        if (!alike(&c->d->rows[q], r))
            continue;
        for (size_t a = c->first[q]; a < c->first[q + 1]; a++) {
            if (c->alt[a].model == r->model)
                continue; /* q's own (first, but for model_order) */
            struct decide_row x = c->alt[a];
            x.tenant = r->tenant;
            x.workload = r->workload;
            x.index = r->index;
            if (!add_alt(c, &x))
                return TS_NOMEM;
        }
        return TS_OK;
    }
    seen[(*nseen)++] = i;
    for (size_t k = 0; k < c->nmodels; k++) {
        struct decide_row a;
        if (c->models[k].model != r->model &&
            plan__decide_on(c->m, c->cat, r, c->models[k].model, &c->arena, &a) && !add_alt(c, &a))
            return TS_NOMEM;
    }
    return TS_OK;
}

/* The bound's program lists row i's alternatives in the fleet's model
 * order, not decide's model first: alike workloads that decide put on
 * different models (the first ones on the cheap cards, the rest on the
 * next) then have the same list and form one class, where a class per
 * decide's model gave GLPK's branch and bound as many interchangeable
 * columns per model (100-GPU trace, load 0.8 seed 3: four classes of 20
 * GiB training; 0.2 s proved nothing, and the bound stayed at the LP,
 * 110.32, under the optimum 113.80). The search keeps decide's first (its
 * classes fix decide's models, plan/costsolve.c's fix_decided). */
static void model_order(struct cost *c, size_t from)
{
    for (size_t i = from + 1; i < c->nalt; i++)
        for (size_t j = i; j > from && plan__cost_slot(c, c->alt[j].model) <
                                           plan__cost_slot(c, c->alt[j - 1].model);
             j--) {
            struct decide_row t = c->alt[j];
            c->alt[j] = c->alt[j - 1];
            c->alt[j - 1] = t;
        }
}

static ts_status alternatives(struct cost *c)
{
    c->first = calloc(c->d->nrows + 1, sizeof(*c->first));
    size_t *seen = calloc(c->d->nrows + 1, sizeof(*seen)), nseen = 0;
    ts_status st = c->first && seen ? TS_OK : TS_NOMEM;
    for (size_t i = 0; st == TS_OK && i < c->d->nrows; i++) {
        const struct decide_row *r = &c->d->rows[i];
        c->first[i] = c->nalt;
        st = add_alt(c, r) ? TS_OK : TS_NOMEM;
        if (st == TS_OK && plan__movable(r) && c->nmodels > 1)
            st = other_models(c, i, seen, &nseen);
        if (st == TS_OK && !c->search)
            model_order(c, c->first[i]);
        c->moves |= c->nalt > c->first[i] + 1;
    }
    if (st == TS_OK)
        c->first[c->d->nrows] = c->nalt;
    free(seen);
    return st;
}

/* 1 when pool clients of alternatives i and j may count as one (one
 * column): the same pool, and on a small fleet the same tenant (its pool
 * groups are their configurations, a type per tenant), else tenants that
 * trust each other (so a group's parts that never share a card stay
 * apart, plan__cost_split_groups). */
static int same_client(struct cost *c, size_t i, size_t j)
{
    const struct spec_tenant *a = c->alt[i].tenant, *b = c->alt[j].tenant;
    if (c->own[i] != c->own[j])
        return 0;
    return a == b || (!c->small && spec_tenants_trust(c->m, a->name, b->name));
}

/* 1 when alternatives i and j take the same cards in the program (the
 * same workload for it, whatever its name). */
static int same_alt(struct cost *c, size_t i, size_t j)
{
    const struct decide_row *a = &c->alt[i], *b = &c->alt[j];
    const struct spec_workload *x = a->workload, *y = b->workload;
    return a->model == b->model && a->mech == b->mech && a->profile == b->profile &&
           a->gpus == b->gpus && a->cap_gib == b->cap_gib && a->sm_percent == b->sm_percent &&
           x->replicas == y->replicas && x->spread == y->spread &&
           plan__is_guest(a) == plan__is_guest(b) && !x->schedule == !y->schedule &&
           (!decide_mech_shares_card(a->mech) || same_client(c, i, j));
}

static int same_alts(struct cost *c, size_t r, size_t q)
{
    size_t n = c->first[r + 1] - c->first[r];
    if (n != c->first[q + 1] - c->first[q])
        return 0;
    for (size_t a = 0; a < n; a++)
        if (!same_alt(c, c->first[r] + a, c->first[q] + a))
            return 0;
    return 1;
}

/* Workloads with the same alternatives form a class: one integer column
 * per alternative counts the class's workloads on it, which keeps the
 * program small on fleets of many alike workloads. */
static ts_status classes(struct cost *c)
{
    size_t *reps = calloc(c->d->nrows + 1, sizeof(*reps)), nreps = 0;
    c->cls = calloc(c->d->nrows + 1, sizeof(*c->cls));
    c->count = calloc(c->nalt + 1, sizeof(*c->count));
    if (!reps || !c->cls || !c->count) {
        free(reps);
        return TS_NOMEM;
    }
    for (size_t r = 0; r < c->d->nrows; r++) {
        size_t k = 0;
        while (k < nreps && !same_alts(c, r, reps[k]))
            k++;
        if (k == nreps)
            reps[nreps++] = r;
        c->cls[r] = reps[k];
        for (size_t a = c->first[reps[k]]; a < c->first[reps[k] + 1]; a++)
            c->count[a]++;
    }
    free(reps);
    return TS_OK;
}

/* ---- the program ---- */

int plan__cost_put(struct cost *c, int row, int col, double v)
{
    if (v == 0)
        return 1;
    if (!ts_grow((void **)&c->nzs, &c->nzcap, c->nz, sizeof(*c->nzs)))
        return 0;
    c->nzs[c->nz++] = (struct cost_nz){row, col, v};
    return 1;
}

static int put(struct cost *c, int row, int col, double v)
{
    return plan__cost_put(c, row, col, v);
}

/* An integer column of objective cost, 0 to ub (ub 0: no upper bound). */
static int new_col(struct cost *c, double cost, int ub)
{
    int j = glp_add_cols(c->lp, 1);
    glp_set_obj_coef(c->lp, j, cost);
    glp_set_col_bnds(c->lp, j, ub > 0 ? GLP_DB : GLP_LO, 0, ub > 0 ? ub : 0);
    glp_set_col_kind(c->lp, j, GLP_IV);
    return j;
}

int plan__cost_row(struct cost *c, double fx)
{
    int i = glp_add_rows(c->lp, 1);
    glp_set_row_bnds(c->lp, i, fx > 0 ? GLP_FX : GLP_LO, fx, fx);
    return i;
}

static int new_row(struct cost *c, double fx) { return plan__cost_row(c, fx); }

int plan__cost_card_col(struct cost *c, size_t k)
{
    int j = new_col(c, c->models[k].price, 0);
    return put(c, c->caprow[k], j, 1) ? j : -1;
}

static int card_col(struct cost *c, size_t k) { return plan__cost_card_col(c, k); }

static int is_whole(const struct decide_row *a)
{
    return !a->profile && (a->mech == DECIDE_WHOLE || a->mech == DECIDE_VGPU);
}

int plan__cost_spread(const struct decide_row *a)
{
    return a->workload->spread != SPEC_SPREAD_NONE && a->workload->replicas > 1;
}

/* Every workload of a class on one alternative; whole cards priced on the
 * column (a class's column counts its workloads there). */
static int assign_rows(struct cost *c)
{
    for (size_t r = 0; r < c->d->nrows; r++) {
        if (c->cls[r] != r)
            continue;
        int n = c->count[c->first[r]], row = new_row(c, n);
        for (size_t a = c->first[r]; a < c->first[r + 1]; a++) {
            const struct decide_row *x = &c->alt[a];
            size_t k = plan__cost_slot(c, x->model);
            double cards = is_whole(x) ? (double)x->gpus * x->workload->replicas : 0;
            c->ycol[a] = new_col(c, k < c->nmodels ? cards * c->models[k].price : 0, n);
            if (!put(c, row, c->ycol[a], 1) ||
                (k < c->nmodels && !put(c, c->caprow[k], c->ycol[a], cards)))
                return 0;
        }
    }
    return 1;
}

/* ---- MIG: configurations of the profiles used on a model ---- */

/* An item type is a profile, or a profile and a class of alike workloads
 * whose replicas spread: at most one of each workload per card, so at
 * most the class's size of that type (as plan/migcfg.c, per workload). */
struct cost_mig {
    const struct cat_model *model;
    const struct cat_profile *prof[PLAN_COST_TYPES_MAX]; /* biggest first */
    size_t alt[PLAN_COST_TYPES_MAX]; /* spread: its alternative, else SIZE_MAX */
    int cap[PLAN_COST_TYPES_MAX];    /* spread: per card at most, else 0 */
    int demand[PLAN_COST_TYPES_MAX];
    int row[PLAN_COST_TYPES_MAX]; /* covering row per type */
    size_t ntypes;
};

static int mig_fits(const void *ctx, const int *counts)
{
    const struct cost_mig *cm = ctx;
    const struct cat_profile *list[PLAN_MAX_PER_CARD];
    int starts[PLAN_MAX_PER_CARD];
    size_t n = 0;
    for (size_t t = 0; t < cm->ntypes; t++) {
        if (cm->cap[t] && counts[t] > cm->cap[t])
            return 0;
        for (int k = 0; k < counts[t]; k++) {
            if (n == PLAN_MAX_PER_CARD)
                return 0;
            list[n++] = cm->prof[t];
        }
    }
    return plan__place(cm->model, list, n, starts);
}

/* 1 when type t of cm goes after profile p (of alternative a). */
static int type_after(const struct cost_mig *cm, size_t t, const struct cat_profile *p, size_t a)
{
    const struct cat_profile *q = cm->prof[t];
    if (q->mem_units != p->mem_units)
        return q->mem_units < p->mem_units;
    return q->compute != p->compute ? q->compute < p->compute : cm->alt[t] > a;
}

/* The type of alternative a (index a, profile p; spread: a type of its
 * own), added in order when new; PLAN_COST_TYPES_MAX when full. */
static size_t mig_type(struct cost_mig *cm, const struct cat_profile *p, size_t a, int cap)
{
    size_t key = cap ? a : SIZE_MAX, t = 0;
    while (t < cm->ntypes && (cm->prof[t] != p || cm->alt[t] != key))
        t++;
    if (t < cm->ntypes || cm->ntypes == PLAN_COST_TYPES_MAX)
        return t;
    for (; t > 0 && type_after(cm, t - 1, p, key); t--) {
        cm->prof[t] = cm->prof[t - 1];
        cm->alt[t] = cm->alt[t - 1];
        cm->cap[t] = cm->cap[t - 1];
        cm->demand[t] = cm->demand[t - 1];
    }
    cm->prof[t] = p;
    cm->alt[t] = key;
    cm->cap[t] = cap;
    cm->demand[t] = 0;
    cm->ntypes++;
    return t;
}

/* Alternative a's MIG type in cm. */
static size_t type_of(struct cost *c, struct cost_mig *cm, size_t a)
{
    return mig_type(cm, c->alt[a].profile, a, plan__cost_spread(&c->alt[a]) ? c->count[a] : 0);
}

/* The configurations' columns, or (too many to list) one column of cards
 * that hold the profiles' memory units and compute slices as fluids. */
static int mig_cards(struct cost *c, size_t k, struct cost_mig *cm, int *urow, int *crow)
{
    struct plan_cfg cfg = {.ntypes = cm->ntypes, .demand = cm->demand, .fits = mig_fits, .ctx = cm};
    int listed = plan__cfg_enumerate(&cfg) && cfg.nconfigs > 0;
    c->nmig = 0;
    for (size_t q = 0; listed && q < cfg.nconfigs; q++) {
        int j = card_col(c, k);
        if (j < 0 || !ts_grow((void **)&c->mig_cols, &c->migcap, c->nmig, sizeof(int)))
            return plan__cfg_free(&cfg), 0;
        c->mig_cols[c->nmig++] = j;
        for (size_t t = 0; t < cm->ntypes; t++)
            if (!put(c, cm->row[t], j, cfg.configs[q * cm->ntypes + t]))
                return plan__cfg_free(&cfg), 0;
    }
    plan__cfg_free(&cfg);
    if (listed)
        return 1;
    int j = card_col(c, k);
    *urow = new_row(c, 0);
    *crow = new_row(c, 0);
    if (j < 0 || !ts_grow((void **)&c->mig_cols, &c->migcap, c->nmig, sizeof(int)))
        return 0;
    c->mig_cols[c->nmig++] = j;
    return put(c, *urow, j, cm->model->grid) && put(c, *crow, j, cm->model->compute_slices);
}

/* A spread workload's replicas on as many of the model's MIG cards (per
 * workload of its class: its column over the class's size, a relaxation). */
static int mig_spread(struct cost *c, int y, double replicas)
{
    int row = new_row(c, 0);
    for (size_t q = 0; q < c->nmig; q++)
        if (!put(c, row, c->mig_cols[q], 1))
            return 0;
    return put(c, row, y, -replicas);
}

static int mig_model(struct cost *c, size_t k)
{
    struct cost_mig cm = {.model = c->models[k].model};
    for (size_t a = 0; a < c->nalt; a++)
        if (c->ycol[a] && c->alt[a].profile && c->alt[a].model == cm.model) {
            size_t t = type_of(c, &cm, a);
            if (t == PLAN_COST_TYPES_MAX)
                return 0;
            cm.demand[t] += c->alt[a].workload->replicas * c->count[a];
        }
    if (cm.ntypes == 0)
        return 1;
    for (size_t t = 0; t < cm.ntypes; t++)
        cm.row[t] = new_row(c, 0);
    int urow = 0, crow = 0;
    if (!mig_cards(c, k, &cm, &urow, &crow))
        return 0;
    for (size_t a = 0; a < c->nalt; a++) {
        const struct decide_row *x = &c->alt[a];
        if (!c->ycol[a] || !x->profile || x->model != cm.model)
            continue;
        int rep = x->workload->replicas, y = c->ycol[a];
        int ok = urow ? put(c, urow, y, -(double)x->profile->mem_units * rep) &&
                            put(c, crow, y, -(double)x->profile->compute * rep)
                      : put(c, cm.row[type_of(c, &cm, a)], y, -rep);
        if (!ok || (plan__cost_spread(x) && !mig_spread(c, y, (double)rep / c->count[a])))
            return 0;
    }
    return 1;
}

/* ---- sharing pools: cards of a group hold its clients' shares ---- */

/* Alternative a's group (model, mechanism, pool), added when new with no
 * cards yet (-1: out of memory). */
static int pool_group(struct cost *c, size_t a)
{
    const struct decide_row *x = &c->alt[a];
    size_t k = plan__cost_slot(c, x->model), owner = c->own[a]; /* guests too: trust */
    for (size_t i = 0; i < c->ngs; i++)
        if (c->gs[i].slot == k && c->gs[i].mech == x->mech && c->gs[i].owner == owner)
            return (int)i;
    if (!ts_grow((void **)&c->gs, &c->gscap, c->ngs, sizeof(*c->gs)))
        return -1;
    c->gs[c->ngs] = (struct cost_group){k, x->mech, owner, 0, 0, 0, 0, 0, NULL};
    return (int)c->ngs++;
}

/* Group g's cards as one column holding its clients' memory caps, MPS SM
 * shares and clients as fluids (where its configurations are too many to
 * list, plan/costcfg.c). */
static int pool_fluid(struct cost *c, struct cost_group *g)
{
    const struct cat_model *model = c->models[g->slot].model;
    int mps = g->mech == DECIDE_MPS, maxc = model->mps_max_clients;
    g->col = card_col(c, g->slot);
    g->mem = new_row(c, 0);
    g->sm = mps ? new_row(c, 0) : 0;
    g->clients = mps && maxc > 0 ? new_row(c, 0) : 0;
    return g->col >= 0 && put(c, g->mem, g->col, model->memory_gib) &&
           (!g->sm || put(c, g->sm, g->col, 100)) &&
           (!g->clients || put(c, g->clients, g->col, maxc));
}

static int pool_client(struct cost *c, const struct cost_group *g, const struct decide_row *x,
                       int y, int n)
{
    int rep = x->workload->replicas;
    if (!put(c, g->mem, y, -x->cap_gib * rep) ||
        (g->sm && !put(c, g->sm, y, -x->sm_percent * rep)) ||
        (g->clients && !put(c, g->clients, y, -rep)))
        return 0;
    if (!plan__cost_spread(x))
        return 1;
    int row = new_row(c, 0);
    return put(c, row, g->col, 1) && put(c, row, y, -(double)rep / n);
}

/* Where guests need time-slicing cards: no scheduled whole card may
 * host them (as plan/poolcfg.c's bound). */
static void guest_hosts(struct cost *c)
{
    for (size_t a = 0; a < c->nalt; a++) {
        const struct decide_row *x = &c->alt[a];
        size_t k = plan__cost_slot(c, x->model);
        if (k >= c->nmodels)
            continue;
        c->models[k].guests |= !x->profile && plan__is_guest(x);
        c->models[k].hosts |= is_whole(x) && x->workload->schedule;
    }
}

/* Alternative a's group, or -1 when it is no sharing-pool client here. */
static int client_group(struct cost *c, size_t a)
{
    const struct decide_row *x = &c->alt[a];
    size_t k = plan__cost_slot(c, x->model);
    if (!c->ycol[a] || x->profile || !decide_mech_shares_card(x->mech) || k >= c->nmodels ||
        (plan__is_guest(x) && c->models[k].hosts))
        return -2;
    return pool_group(c, a);
}

/* Each group's cards: its configurations' columns where few enough and
 * the program small (listed, 1), else one column of fluid cards that its
 * clients fill. */
static int group_cards(struct cost *c, int gi, int listed)
{
    if (listed)
        listed = plan__cost_group_configs(c, gi);
    if (listed != 0)
        return listed > 0;
    if (!pool_fluid(c, &c->gs[gi]))
        return 0;
    for (size_t a = 0; a < c->nalt; a++)
        if (c->grp[a] == gi && !pool_client(c, &c->gs[gi], &c->alt[a], c->ycol[a], c->count[a]))
            return 0;
    return 1;
}

static int pools(struct cost *c)
{
    guest_hosts(c);
    c->grp = malloc((c->nalt + 1) * sizeof(*c->grp));
    int ok = c->grp != NULL;
    for (size_t a = 0; ok && a < c->nalt; a++) {
        int g = client_group(c, a);
        ok = g != -1;
        c->grp[a] = g < 0 ? -1 : g;
    }
    ok = ok && plan__cost_split_groups(c);
    /* Configurations on a small program only (PLAN_COST_PROOF_COLS_MAX
     * before them, as its proof): there rounding to whole cards is much of
     * the cost. A trace fleet's groups have up to thousands: listed, they
     * took its plan from 0.77 to 1.9 s CPU at 10,000 GPUs, and left the
     * LP bound where the cuts had it (585.54 at 1,000 GPUs either way). */
    int listed = c->small && glp_get_num_cols(c->lp) + (int)c->ngs <= PLAN_COST_PROOF_COLS_MAX;
    for (size_t g = 0; ok && g < c->ngs; g++)
        ok = group_cards(c, (int)g, listed);
    return ok;
}

static ts_status program(struct cost *c)
{
    glp_term_out(GLP_OFF); /* GLPK's basis messages go to stdout, msg_lev or not */
    c->lp = glp_create_prob();
    c->ycol = calloc(c->nalt + 1, sizeof(*c->ycol));
    if (!c->ycol)
        return TS_NOMEM;
    glp_set_obj_dir(c->lp, GLP_MIN);
    for (size_t k = 0; k < c->nmodels; k++) {
        c->caprow[k] = glp_add_rows(c->lp, 1);
        glp_set_row_bnds(c->lp, c->caprow[k], GLP_UP, 0, c->models[k].cards);
    }
    int ok = assign_rows(c);
    for (size_t k = 0; ok && k < c->nmodels; k++)
        ok = mig_model(c, k);
    ok = ok && pools(c);
    int *ia = ok ? malloc((c->nz + 1) * sizeof(int)) : NULL;
    int *ja = ia ? malloc((c->nz + 1) * sizeof(int)) : NULL;
    double *ar = ja ? malloc((c->nz + 1) * sizeof(double)) : NULL;
    for (size_t i = 0; ar && i < c->nz; i++) {
        ia[i + 1] = c->nzs[i].i;
        ja[i + 1] = c->nzs[i].j;
        ar[i + 1] = c->nzs[i].v;
    }
    if (ar)
        glp_load_matrix(c->lp, (int)c->nz, ia, ja, ar);
    free(ia);
    free(ja);
    free(ar);
    return ar ? TS_OK : TS_NOMEM;
}

/* ---- opening and closing ---- */

void plan__cost_close(struct cost *c)
{
    if (!c)
        return;
    if (c->lp)
        glp_delete_prob(c->lp);
    free(c->alt);
    free(c->first);
    free(c->trust);
    free(c->clq);
    free(c->clq_root);
    free(c->cpos);
    free(c->own);
    free(c->ycol);
    free(c->count);
    free(c->cls);
    free(c->nzs);
    free(c->mig_cols);
    free(c->sol);
    for (size_t g = 0; g < c->ngs; g++)
        plan__cost_cut_class_free(c->gs[g].cuts);
    free(c->gs);
    free(c->grp);
    ts_arena_free(&c->arena);
    free(c);
}

struct cost *plan__cost_open(const struct spec_model *m, const struct cat_catalog *cat,
                             const struct decide_result *d, int search)
{
    struct cost *c = calloc(1, sizeof(*c));
    if (!c || !m->pricebook) {
        free(c);
        return NULL;
    }
    *c = (struct cost){.m = m, .cat = cat, .d = d, .search = search};
    c->small = d->nrows <= PLAN_COST_PROOF_COLS_MAX;
    ts_arena_init(&c->arena);
    fleet_models(c);
    if (alternatives(c) != TS_OK || plan__cost_owners(c) != TS_OK || classes(c) != TS_OK ||
        program(c) != TS_OK) {
        plan__cost_close(c);
        return NULL;
    }
    return c;
}
