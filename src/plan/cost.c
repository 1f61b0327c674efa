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
 *           tenant or the set of tenants that trust each other, guests too);
 *   whole cards: GPUs x replicas of the alternative.
 * Profile counts cover the chosen replicas, a pool's cards hold its
 * clients' memory caps, MPS SM shares and clients, replicas kept apart
 * (spread) get as many cards, and a model's cards are at most the fleet's.
 * Minimised: the price of the cards. Node constraints, canary slices and
 * best-effort guests on cards a scheduled whole card might host are left
 * out, so the program relaxes the planner's problem: its LP relaxation (or,
 * on a small program, its proven integer optimum) is a lower bound on the
 * cost of any plan of these workloads. For the bound, each pool group the
 * LP uses gets a configuration cut (its cards cover the dual prices of its
 * clients' configuration LP), and a short branch and bound's least open
 * bound raises it further; neither cuts off an integer solution. Its
 * integer solution is the
 * models the planner then tries (plan_choose_models, plan/choose.c). Alike workloads
 * (the same alternatives) share one integer column per alternative.
 */
#include "plan/internal.h"

#include <glpk.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "util/units.h"

struct cost_model_row {
    const struct cat_model *model;
    int cards;
    double price; /* per card hour, currency units */
    int guests;   /* some alternative is a best-effort guest on it */
    int hosts;    /* some alternative is a scheduled whole card on it: guests may ride free */
};

struct cost_nz {
    int i, j;
    double v;
};

struct cost_group {
    size_t slot;
    int mech;
    size_t owner;
    int col, mem, sm, clients;
    int cut; /* its configuration cut was tried (group_cut) */
};

struct cost {
    const struct spec_model *m;
    const struct cat_catalog *cat;
    const struct decide_result *d;
    struct ts_arena arena;
    struct decide_row *alt; /* row r's: alt[first[r]] (its own) .. alt[first[r + 1] - 1] */
    size_t nalt, altcap;
    size_t *first;
    int moves; /* some workload has two alternatives or more */
    struct cost_model_row models[DECIDE_MODELS_MAX];
    size_t nmodels;
    size_t *trust; /* per tenant: its trust set (union-find) */
    int search;    /* the search's program: pools per clique of trust (cost_cliques) */
    uint32_t *clq; /* the cliques: members, bits of cpos, of the set of clq_root */
    size_t *clq_root, nclq, clqcap;
    size_t *cpos; /* per tenant: its bit in its trust set's cliques */
    size_t *own;  /* per alternative: the pool it joins (owner_of, or a clique) */
    glp_prob *lp;
    int *ycol;                     /* per alternative: its column (0: not a class's) */
    int *count;                    /* per alternative: its class's workloads (0: not a class's) */
    size_t *cls;                   /* per row: the first row of its class */
    int caprow[DECIDE_MODELS_MAX]; /* per model: its cards */
    struct cost_nz *nzs;           /* the matrix, 1-based rows and columns */
    size_t nz, nzcap;
    int *mig_cols; /* scratch: a model's MIG card columns */
    size_t nmig, migcap;
    struct cost_group *gs; /* the sharing-pool groups */
    size_t ngs, gscap;
    int *grp; /* per alternative: its group, or -1 */
};

/* ---- the fleet's models and prices ---- */

static size_t slot_of(const struct cost *c, const struct cat_model *model)
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
            size_t s = model ? slot_of(c, model) : SIZE_MAX;
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
        for (size_t a = c->first[q] + 1; a < c->first[q + 1]; a++) {
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
        c->moves |= c->nalt > c->first[i] + 1;
    }
    if (st == TS_OK)
        c->first[c->d->nrows] = c->nalt;
    free(seen);
    return st;
}

static size_t trust_root(size_t *set, size_t i)
{
    while (set[i] != i)
        i = set[i] = set[set[i]];
    return i;
}

static ts_status trust_sets(struct cost *c)
{
    const struct spec_model *m = c->m;
    c->trust = calloc(m->ntenants + 1, sizeof(*c->trust));
    if (!c->trust)
        return TS_NOMEM;
    for (size_t i = 0; i < m->ntenants; i++)
        c->trust[i] = i;
    for (size_t i = 0; i < m->ntenants; i++)
        for (size_t k = 0; k < m->tenants[i].ntrusts; k++) {
            const struct spec_tenant *o = spec_tenant_find(m, m->tenants[i].trusts[k]);
            if (o && spec_tenants_trust(m, m->tenants[i].name, o->name))
                c->trust[trust_root(c->trust, i)] = trust_root(c->trust, (size_t)(o - m->tenants));
        }
    return TS_OK;
}

/* The pool a row's clients join: MPS per tenant, else per trust set. */
static size_t owner_of(struct cost *c, const struct decide_row *x)
{
    size_t t = (size_t)(x->tenant - c->m->tenants);
    return x->mech == DECIDE_MPS ? t : trust_root(c->trust, t);
}

/* Bron-Kerbosch on the members of one trust set (bits; adj: whom each
 * trusts): its maximal cliques appended; 0 when over PLAN_COST_CLIQUES_MAX. */
static int cliques_of(struct cost *c, size_t root, const uint32_t *adj, uint32_t r, uint32_t p,
                      uint32_t x)
{
    if (!p && !x) {
        if (c->nclq == PLAN_COST_CLIQUES_MAX ||
            !ts_grow((void **)&c->clq, &c->clqcap, c->nclq, sizeof(*c->clq)))
            return 0;
        c->clq[c->nclq] = r;
        c->clq_root[c->nclq++] = root;
        return 1;
    }
    uint32_t u = p | x, pivot = adj[__builtin_ctz(u)];
    for (uint32_t cand = p & ~pivot; cand; cand &= cand - 1) {
        uint32_t v = cand & -cand;
        size_t b = (size_t)__builtin_ctz(v);
        if (!cliques_of(c, root, adj, r | v, p & adj[b], x & adj[b]))
            return 0;
        p &= ~v;
        x |= v;
    }
    return 1;
}

/* For the search: each trust set that is not a clique (trust need not be
 * transitive: d2 trusts d0 and d1, they do not trust each other) as its
 * maximal cliques, the pools a layout can make; a set of more than 32
 * tenants, or with too many cliques, stays whole. */
static ts_status cost_cliques(struct cost *c)
{
    const struct spec_model *m = c->m;
    c->cpos = calloc(m->ntenants + 1, sizeof(*c->cpos));
    c->clq_root = calloc(PLAN_COST_CLIQUES_MAX + 1, sizeof(*c->clq_root));
    size_t *who = calloc(m->ntenants + 1, sizeof(*who));
    ts_status st = c->cpos && c->clq_root && who ? TS_OK : TS_NOMEM;
    for (size_t root = 0; st == TS_OK && root < m->ntenants; root++) {
        size_t n = 0;
        for (size_t t = 0; t < m->ntenants; t++)
            if (trust_root(c->trust, t) == root && n <= 32)
                c->cpos[t] = n, who[n++] = t;
        if (n < 3 || n > 32)
            continue;
        uint32_t adj[32] = {0}, all = n == 32 ? UINT32_MAX : (UINT32_C(1) << n) - 1;
        int clique = 1;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                if (i != j &&
                    spec_tenants_trust(m, m->tenants[who[i]].name, m->tenants[who[j]].name))
                    adj[i] |= UINT32_C(1) << j;
        for (size_t i = 0; i < n; i++)
            clique &= (adj[i] | (UINT32_C(1) << i)) == all;
        size_t before = c->nclq;
        if (!clique && !cliques_of(c, root, adj, 0, all, 0))
            c->nclq = before; /* too many: the set stays one pool */
    }
    free(who);
    return st;
}

/* Alternative x's copies, one per pool it may join: a sharing-pool client
 * (not MPS, which is per tenant) of a set split into cliques joins one of
 * its tenant's cliques; else its owner_of. Appended to alt and own. */
static int owned_copies(struct cost *c, const struct decide_row *x, struct decide_row **alt,
                        size_t *n, size_t *cap, size_t *owncap)
{
    size_t t = (size_t)(x->tenant - c->m->tenants), root = trust_root(c->trust, t), added = 0;
    int split = c->search && decide_mech_shares_card(x->mech) && !x->profile &&
                x->mech != DECIDE_MPS;
    for (size_t q = 0; split && q <= c->nclq; q++) {
        int mine = q < c->nclq && c->clq_root[q] == root && (c->clq[q] >> c->cpos[t] & 1);
        if (q == c->nclq && added)
            break;
        if (q < c->nclq && !mine)
            continue;
        if (!ts_grow((void **)alt, cap, *n, sizeof(**alt)) ||
            !ts_grow((void **)&c->own, owncap, *n, sizeof(*c->own)))
            return 0;
        (*alt)[*n] = *x;
        c->own[(*n)++] = q < c->nclq ? c->m->ntenants + q : owner_of(c, x);
        added++;
    }
    if (split)
        return 1;
    if (!ts_grow((void **)alt, cap, *n, sizeof(**alt)) ||
        !ts_grow((void **)&c->own, owncap, *n, sizeof(*c->own)))
        return 0;
    (*alt)[*n] = *x;
    c->own[(*n)++] = owner_of(c, x);
    return 1;
}

/* Every alternative with the pool it joins (c->own), copied per clique
 * where the search's program splits a trust set. */
static ts_status owners(struct cost *c)
{
    if (c->search && cost_cliques(c) != TS_OK)
        return TS_NOMEM;
    struct decide_row *alt = NULL;
    size_t n = 0, cap = 0, owncap = 0;
    for (size_t r = 0; r < c->d->nrows; r++) {
        size_t from = c->first[r];
        c->first[r] = n;
        for (size_t a = from; a < c->first[r + 1]; a++)
            if (!owned_copies(c, &c->alt[a], &alt, &n, &cap, &owncap)) {
                free(alt);
                return TS_NOMEM;
            }
    }
    c->first[c->d->nrows] = n;
    free(c->alt);
    c->alt = alt;
    c->nalt = n;
    c->altcap = cap;
    return TS_OK;
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
           (!decide_mech_shares_card(a->mech) || c->own[i] == c->own[j]);
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

static int put(struct cost *c, int row, int col, double v)
{
    if (v == 0)
        return 1;
    if (!ts_grow((void **)&c->nzs, &c->nzcap, c->nz, sizeof(*c->nzs)))
        return 0;
    c->nzs[c->nz++] = (struct cost_nz){row, col, v};
    return 1;
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

/* A row sum >= 0 (covering), or fixed at fx when fx > 0. */
static int new_row(struct cost *c, double fx)
{
    int i = glp_add_rows(c->lp, 1);
    glp_set_row_bnds(c->lp, i, fx > 0 ? GLP_FX : GLP_LO, fx, fx);
    return i;
}

/* A card column of model slot k: priced, counted against its cards. */
static int card_col(struct cost *c, size_t k)
{
    int j = new_col(c, c->models[k].price, 0);
    return put(c, c->caprow[k], j, 1) ? j : -1;
}

static int is_whole(const struct decide_row *a)
{
    return !a->profile && (a->mech == DECIDE_WHOLE || a->mech == DECIDE_VGPU);
}

static int spread(const struct decide_row *a)
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
            size_t k = slot_of(c, x->model);
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
    return mig_type(cm, c->alt[a].profile, a, spread(&c->alt[a]) ? c->count[a] : 0);
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
        if (!ok || (spread(x) && !mig_spread(c, y, (double)rep / c->count[a])))
            return 0;
    }
    return 1;
}

/* ---- sharing pools: cards of a group hold its clients' shares ---- */

static int pool_group(struct cost *c, size_t a, struct cost_group **gs, size_t *n, size_t *cap)
{
    const struct decide_row *x = &c->alt[a];
    size_t k = slot_of(c, x->model), owner = c->own[a]; /* guests too: trust */
    for (size_t i = 0; i < *n; i++)
        if ((*gs)[i].slot == k && (*gs)[i].mech == x->mech && (*gs)[i].owner == owner)
            return (int)i;
    if (!ts_grow((void **)gs, cap, *n, sizeof(**gs)))
        return -1;
    struct cost_group g = {k, x->mech, owner, card_col(c, k), new_row(c, 0), 0, 0, 0};
    int mps = x->mech == DECIDE_MPS, maxc = x->model->mps_max_clients;
    g.sm = mps ? new_row(c, 0) : 0;
    g.clients = mps && maxc > 0 ? new_row(c, 0) : 0;
    if (g.col < 0 || !put(c, g.mem, g.col, x->model->memory_gib) ||
        (g.sm && !put(c, g.sm, g.col, 100)) || (g.clients && !put(c, g.clients, g.col, maxc)))
        return -1;
    (*gs)[*n] = g;
    return (int)(*n)++;
}

static int pool_client(struct cost *c, const struct cost_group *g, const struct decide_row *x,
                       int y, int n)
{
    int rep = x->workload->replicas;
    if (!put(c, g->mem, y, -x->cap_gib * rep) ||
        (g->sm && !put(c, g->sm, y, -x->sm_percent * rep)) ||
        (g->clients && !put(c, g->clients, y, -rep)))
        return 0;
    if (!spread(x))
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
        size_t k = slot_of(c, x->model);
        if (k >= c->nmodels)
            continue;
        c->models[k].guests |= !x->profile && plan__is_guest(x);
        c->models[k].hosts |= is_whole(x) && x->workload->schedule;
    }
}

/* Group gi's clients as a bin-packing class: every workload whose class
 * may join the group (a class's workloads may be of several tenants of the
 * trust set), alike ones one type (plan/poolcfg.c). Its configuration LP's
 * dual prices give a cut: the group's cards are at least the prices of the
 * clients in it (any card holds at most 1). A class's column is priced at
 * the least of its workloads' prices, as any of them may be the ones in the
 * group. Stronger than memory alone where sizes leave room no client
 * fills. No cut when a client spreads or the class is too large to list.
 * Returns 1 with a cut added, 0 without, -1 out of memory. */
static int group_cut(struct cost *c, int gi)
{
    const struct cost_group *g = &c->gs[gi];
    struct plan_pool_class pc = {c->m, c->models[g->slot].model, g->mech, NULL, 0, NULL, NULL};
    size_t n = 0, nrows = c->d->nrows;
    for (size_t r = 0; r < nrows; r++)
        for (size_t a = c->first[c->cls[r]]; a < c->first[c->cls[r] + 1]; a++)
            n += c->grp[a] == gi;
    pc.rows = calloc(n + 1, sizeof(*pc.rows));
    pc.demand = calloc(n + 1, sizeof(*pc.demand));
    size_t *type = calloc(c->nalt + 1, sizeof(*type));
    double *pi = calloc(n + 1, sizeof(*pi)), *price = calloc(c->nalt + 1, sizeof(*price));
    double *val = calloc(n + 2, sizeof(*val));
    int *ind = calloc(n + 2, sizeof(*ind));
    int ok = pc.rows && pc.demand && type && pi && price && val && ind, cut = ok;
    for (size_t r = 0; cut && r < nrows; r++) {
        size_t q = c->cls[r];
        for (size_t a = c->first[q]; cut && a < c->first[q + 1]; a++) {
            if (c->grp[a] != gi)
                continue;
            size_t mine = c->first[r] + (a - c->first[q]); /* r's alternative like a */
            const struct decide_row *x = &c->alt[mine];
            cut = !spread(x);
            size_t t = 0;
            while (t < pc.ntypes && !plan__pool_same_client(pc.rows[t], x))
                t++;
            if (t == pc.ntypes)
                pc.rows[pc.ntypes++] = x;
            pc.demand[t] += x->workload->replicas;
            type[mine] = t;
        }
    }
    struct plan_cfg cfg = {.ntypes = pc.ntypes,
                           .demand = pc.demand,
                           .fits = plan__pool_fits,
                           .ctx = &pc,
                           .more = plan__pool_fits_more,
                           .max_steps = PLAN_COST_CUT_STEPS_MAX};
    pc.trust = cut ? plan__pool_trust_memo(c->m) : NULL;
    cut = cut && plan__cfg_enumerate(&cfg) && plan__cfg_lp_duals(&cfg, pi);
    plan__cfg_free(&cfg);
    for (size_t a = 0; cut && a < c->nalt; a++)
        price[a] = -1;
    for (size_t r = 0; cut && r < nrows; r++) {
        size_t q = c->cls[r];
        for (size_t a = c->first[q]; a < c->first[q + 1]; a++) {
            double p = c->grp[a] == gi ? pi[type[c->first[r] + (a - c->first[q])]] : -1;
            if (c->grp[a] == gi && (price[a] < 0 || p < price[a]))
                price[a] = p;
        }
    }
    int len = 1;
    ind[1] = g->col;
    val[1] = 1;
    for (size_t a = 0; cut && a < c->nalt; a++)
        if (c->grp[a] == gi && price[a] > 0) {
            ind[++len] = c->ycol[a];
            val[len] = -price[a] * c->alt[a].workload->replicas;
        }
    if (cut) {
        int row = glp_add_rows(c->lp, 1);
        glp_set_row_bnds(c->lp, row, GLP_LO, 0, 0);
        glp_set_mat_row(c->lp, row, len, ind, val);
    }
    free(pc.rows);
    free(pc.demand);
    free(pc.trust);
    free(type);
    free(pi);
    free(price);
    free(val);
    free(ind);
    return ok ? cut : -1;
}

/* Cuts for the groups the program's LP solution (mip: its integer
 * solution) uses and that have none yet (groups it leaves empty need none
 * to be bounded; a cut is optional, so a group the solution moves to
 * afterwards is still bounded by its memory). Returns the cuts added, -1
 * when out of memory. */
static int pool_cuts(struct cost *c, int mip)
{
    int n = 0;
    for (size_t g = 0; g < c->ngs; g++) {
        int col = c->gs[g].col;
        double v = mip ? glp_mip_col_val(c->lp, col) : glp_get_col_prim(c->lp, col);
        if (c->gs[g].cut || v <= 1e-9)
            continue;
        c->gs[g].cut = 1;
        int r = group_cut(c, (int)g);
        if (r < 0)
            return -1;
        n += r;
    }
    return n;
}

static int pools(struct cost *c)
{
    guest_hosts(c);
    c->grp = malloc((c->nalt + 1) * sizeof(*c->grp));
    int ok = c->grp != NULL;
    for (size_t a = 0; ok && a < c->nalt; a++) {
        const struct decide_row *x = &c->alt[a];
        size_t k = slot_of(c, x->model);
        c->grp[a] = -1;
        if (!c->ycol[a] || x->profile || !decide_mech_shares_card(x->mech) || k >= c->nmodels ||
            (plan__is_guest(x) && c->models[k].hosts))
            continue;
        int g = pool_group(c, a, &c->gs, &c->ngs, &c->gscap);
        ok = g >= 0 && pool_client(c, &c->gs[g], x, c->ycol[a], c->count[a]);
        c->grp[a] = g;
    }
    return ok;
}

static ts_status program(struct cost *c)
{
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

/* ---- solving ---- */

double plan__cost_lp(struct cost *c)
{
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_ON;
    if (glp_simplex(c->lp, &parm) == 0 && glp_get_status(c->lp) == GLP_OPT)
        return glp_get_obj_val(c->lp);
    return -1;
}

/* Every workload fixed on decide's model (its own alternatives: the
 * first, and its copies for other cliques), or (fix 0) free again. */
static void fix_decided(struct cost *c, int fix)
{
    for (size_t r = 0; r < c->d->nrows; r++)
        for (size_t a = c->first[r]; c->cls[r] == r && a < c->first[r + 1]; a++) {
            double n = c->count[a];
            int off = fix && c->alt[a].model != c->d->rows[r].model;
            glp_set_col_bnds(c->lp, c->ycol[a], off ? GLP_FX : GLP_DB, 0, off ? 0 : n);
        }
}

struct cost_search {
    long nodes, max;
    double bound; /* the least bound of the open nodes (or the incumbent) */
    int seen;
};

/* Keeps the search's bound: the least of its open nodes' bounds and its
 * best layout's cost; stops after max nodes. */
static void search_bound(glp_tree *tree, void *info)
{
    struct cost_search *s = info;
    if (glp_ios_reason(tree) != GLP_ISELECT)
        return;
    glp_prob *lp = glp_ios_get_prob(tree);
    int best = glp_ios_best_node(tree);
    if (best) {
        double b = glp_ios_node_bound(tree, best);
        if (glp_mip_status(lp) == GLP_FEAS && glp_mip_obj_val(lp) < b)
            b = glp_mip_obj_val(lp);
        s->bound = b;
        s->seen = 1;
    }
    if (++s->nodes > s->max)
        glp_ios_terminate(tree);
}

/* The program's integer optimum with decide's models fixed (each pool
 * group a whole number of cards), or lp when branch and bound finds no
 * layout in its node budget (counted, as the bound's). */
static double decided_int(struct cost *c, double lp)
{
    struct cost_search s = {0, PLAN_COST_BOUND_WORK / (glp_get_num_cols(c->lp) + 1), lp, 0};
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = GLP_ON;
    parm.msg_lev = GLP_MSG_OFF;
    parm.mip_gap = PLAN_COST_MIP_GAP;
    parm.cb_func = search_bound;
    parm.cb_info = &s;
    int rc = glp_intopt(c->lp, &parm), st = glp_mip_status(c->lp);
    if ((rc == 0 || rc == GLP_ESTOP || rc == GLP_EMIPGAP) && (st == GLP_OPT || st == GLP_FEAS))
        return glp_mip_obj_val(c->lp);
    return lp;
}

/* 1 when decide's models are as cheap as any (within PLAN_COST_MIP_GAP)
 * by the program's LP, and stay so in whole cards: then its integer
 * solution is not worth the time. The LP alone is not enough: where it
 * fills a dear big card with everything (memory as a fluid), decide's
 * models match it, while in whole cards the big card's last one is
 * mostly empty and cheap small cards would hold the rest (a relaxation
 * agreeing with decide says nothing of rounding). */
static int decided_at_lp(struct cost *c)
{
    double free_lp = plan__cost_lp(c);
    fix_decided(c, 1);
    double fixed = plan__cost_lp(c);
    int at = free_lp >= 0 && fixed >= 0 && fixed <= free_lp * (1 + PLAN_COST_MIP_GAP) + 1e-9;
    if (at)
        at = decided_int(c, fixed) <= free_lp * (1 + PLAN_COST_MIP_GAP) + 1e-9;
    fix_decided(c, 0);
    return at;
}

/* The integer solution's workloads per alternative, handed to the class's
 * rows in spec order; 0 on out of memory. */
static int read_pins(struct cost *c, const struct cat_model **pins)
{
    long *left = calloc(c->nalt + 1, sizeof(*left));
    if (!left)
        return 0;
    for (size_t a = 0; a < c->nalt; a++)
        left[a] = c->ycol[a] ? lround(glp_mip_col_val(c->lp, c->ycol[a])) : 0;
    for (size_t r = 0; r < c->d->nrows; r++) {
        size_t q = c->cls[r], a = c->first[q];
        while (a + 1 < c->first[q + 1] && left[a] <= 0)
            a++;
        left[a]--;
        pins[r] = plan__movable(&c->d->rows[r]) ? c->alt[a].model : NULL;
    }
    free(left);
    return 1;
}

/* The integer program within the time limit; its pool groups without a
 * cut that the solution uses get theirs, and it is solved again (at most
 * PLAN_COST_CUT_ROUNDS times): a group the LP left empty has only its
 * memory row, which lets the integer solution fill its cards as a fluid
 * (small cards that no packing fills that well). */
int plan__cost_ilp(struct cost *c, double time_limit_s, const struct cat_model **pins, double *obj)
{
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = GLP_ON;
    parm.msg_lev = GLP_MSG_OFF;
    parm.mip_gap = PLAN_COST_MIP_GAP;
    parm.tm_lim = (int)(time_limit_s * 1000.0);
    for (int round = 0;; round++) {
        int rc = glp_intopt(c->lp, &parm), st = glp_mip_status(c->lp);
        if (!(rc == 0 || rc == GLP_ETMLIM || rc == GLP_EMIPGAP) ||
            !(st == GLP_OPT || st == GLP_FEAS))
            return 0;
        if (round == PLAN_COST_CUT_ROUNDS || pool_cuts(c, 1) <= 0)
            break;
    }
    *obj = glp_mip_obj_val(c->lp);
    return read_pins(c, pins);
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
    ts_arena_init(&c->arena);
    fleet_models(c);
    if (alternatives(c) != TS_OK || trust_sets(c) != TS_OK || owners(c) != TS_OK ||
        classes(c) != TS_OK || program(c) != TS_OK) {
        plan__cost_close(c);
        return NULL;
    }
    return c;
}

/* ---- what the planner asks ---- */

/* With the pool groups' cuts (which the integer program may keep: no
 * layout violates them), a pool that rounds up to a whole dear card shows
 * its price to the LP, where memory alone made decide's model look the
 * cheapest. */
int plan__cost_worth_search(struct cost *c)
{
    if (!c->moves || glp_get_num_cols(c->lp) > PLAN_COST_ALTS_MAX)
        return 0;
    if (plan__cost_lp(c) >= 0 && pool_cuts(c, 0) < 0)
        return 0;
    return !decided_at_lp(c);
}

/* The program's integer optimum when GLPK proves it within the short
 * budget of a bound (a small program), else the best bound its branch and
 * bound reached in PLAN_COST_BOUND_NODES_MAX nodes (the least over its open
 * nodes: each is a relaxation of its part of the integer program), else
 * lp: the program relaxes the planner's problem, so its integer optimum,
 * and any bound on it, bounds the cost too. */
static double proven_optimum(struct cost *c, double lp)
{
    if (lp < 0)
        return lp;
    int small = glp_get_num_cols(c->lp) <= PLAN_COST_PROOF_COLS_MAX;
    struct cost_search s = {0, PLAN_COST_BOUND_WORK / (glp_get_num_cols(c->lp) + 1), lp, 0};
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = small ? GLP_ON : GLP_OFF; /* off: the tree's bounds are the program's */
    parm.msg_lev = GLP_MSG_OFF;
    if (small)
        parm.tm_lim = (int)(PLAN_COST_PROOF_S * 1000.0);
    else {
        parm.cb_func = search_bound;
        parm.cb_info = &s;
    }
    int rc = glp_intopt(c->lp, &parm);
    if (rc == 0 && glp_mip_status(c->lp) == GLP_OPT && glp_mip_obj_val(c->lp) > lp)
        return glp_mip_obj_val(c->lp);
    if (!small && s.seen && s.bound > lp)
        return s.bound;
    return lp;
}

int64_t plan__cost_bound(const struct spec_model *m, const struct cat_catalog *cat,
                         const struct decide_result *d, int card_bound)
{
    struct cost *c = plan__cost_open(m, cat, d, 0);
    double lp = c ? plan__cost_lp(c) : -1;
    int cuts = lp >= 0 ? pool_cuts(c, 0) : 0;
    lp = cuts > 0 ? plan__cost_lp(c) : cuts < 0 ? -1 : lp;
    lp = c ? proven_optimum(c, lp) : -1;
    if (c && c->nmodels == 1 && card_bound * c->models[0].price > lp)
        lp = card_bound * c->models[0].price; /* one model: cost is cards at one price */
    plan__cost_close(c);
    return lp < 0 ? -1 : (int64_t)floor(lp * TS_MICRO + 1e-3);
}
