/*
 * fleet.c - the fleet-wide facts decide needs: the fleet checked against
 * the catalog, its card models ordered by PriceBook cost, node eligibility
 * (decide_card_refuses), and the card capacity the decisions so far take,
 * which tells decide when a workload must spill to another model.
 */
#include "decide/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- fleet checks ---- */

static void suggest_models(struct decide__ctx *c, const struct spec_loc *loc, const char *name)
{
    char list[600] = "";
    for (size_t i = 0; i < c->cat->nmodels; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", c->cat->models[i].name);
    }
    spec_report_loc(c->diag, loc, "model: unknown GPU model '%s' (known: %s)", name, list);
}

static void add_model(struct decide__ctx *c, const struct cat_model *model)
{
    for (size_t i = 0; i < c->nmodels; i++)
        if (c->models[i] == model)
            return;
    if (c->nmodels < DECIDE_MODELS_MAX)
        c->models[c->nmodels++] = model;
}

static void check_canary(struct decide__ctx *c, const struct spec_fleet_node *n, const char *canary,
                         int explicit_on_node)
{
    int has_mig = 0;
    for (size_t g = 0; g < n->ngpus; g++) {
        const struct cat_model *model = cat_model_find(c->cat, n->gpus[g].model);
        if (!model || !model->mig)
            continue;
        has_mig = 1;
        if (!cat_profile_find(model, canary))
            spec_report_loc(c->diag, &n->loc,
                            "canary: %s has no MIG profile '%s' (set this "
                            "node's canary to one of its profiles; see tessera catalog show %s)",
                            model->name, canary, model->name);
    }
    if (!has_mig && explicit_on_node)
        spec_report_loc(c->diag, &n->loc,
                        "canary: node '%s' has no MIG-capable GPU to keep a "
                        "'%s' slice free on",
                        n->name, canary);
}

/* Each PriceBook entry a model of the catalog, each model priced once
 * ("L40S" and "l40s" are one model). */
static void check_prices(struct decide__ctx *c, const struct spec_pricebook *pb)
{
    for (size_t i = 0; i < pb->nprices; i++) {
        const struct spec_price *p = &pb->prices[i];
        const struct cat_model *model = cat_model_find(c->cat, p->model);
        if (!model) {
            suggest_models(c, &p->loc, p->model);
            continue;
        }
        for (size_t j = 0; j < i; j++)
            if (cat_model_find(c->cat, pb->prices[j].model) == model) {
                spec_report_loc(c->diag, &p->loc, "'%s' names %s, priced already as '%s' (line %d)",
                                p->model, model->name, pb->prices[j].model, pb->prices[j].loc.line);
                break;
            }
    }
}

/* Room for each GPU entry's model (left NULL when out of memory). */
static void alloc_entries(struct decide__ctx *c)
{
    const struct spec_fleet *f = c->m->fleet;
    size_t n = 0;
    c->entry_first = ts_arena_array(c->arena, f->nnodes + 1, sizeof(*c->entry_first));
    for (size_t i = 0; c->entry_first && i < f->nnodes; i++) {
        c->entry_first[i] = n;
        n += f->nodes[i].ngpus;
    }
    c->entry_models = c->entry_first ? ts_arena_array(c->arena, n + 1, sizeof(void *)) : NULL;
}

const struct cat_model *decide__entry_model(const struct decide__ctx *c, size_t i, size_t g)
{
    if (c->entry_models)
        return c->entry_models[c->entry_first[i] + g];
    return cat_model_find(c->cat, c->m->fleet->nodes[i].gpus[g].model);
}

void decide__check_fleet(struct decide__ctx *c)
{
    const struct spec_fleet *f = c->m->fleet;
    alloc_entries(c);
    for (size_t i = 0; i < f->nnodes; i++) {
        const struct spec_fleet_node *n = &f->nodes[i];
        for (size_t g = 0; g < n->ngpus; g++) {
            const struct cat_model *model = cat_model_find(c->cat, n->gpus[g].model);
            if (c->entry_models)
                c->entry_models[c->entry_first[i] + g] = model;
            if (!model)
                suggest_models(c, &n->gpus[g].loc, n->gpus[g].model);
            else
                add_model(c, model);
        }
        const char *canary = n->canary ? n->canary : f->canary;
        if (canary)
            check_canary(c, n, canary, n->canary != NULL);
    }
    if (c->m->pricebook)
        check_prices(c, c->m->pricebook);
}

/* ---- cost: which model first ---- */

/* A model's price per GPU hour in micro-units: the PriceBook's, the highest
 * listed price for a model it does not list, 1 for every model without a
 * PriceBook (then cost is card count). */
double decide__model_price(const struct decide__ctx *c, const struct cat_model *model)
{
    const struct spec_pricebook *pb = c->m->pricebook;
    if (!pb)
        return 1;
    int64_t price = cat_price_of(pb, model);
    double top = 1;
    for (size_t i = 0; price < 0 && i < pb->nprices; i++)
        top = (double)pb->prices[i].per_gpu_hour > top ? (double)pb->prices[i].per_gpu_hour : top;
    return price >= 0 ? (double)price : top;
}

/* Order the fleet's models by price per GiB of card memory, cheapest first
 * (fleet order among equals): every rule takes the first candidate that
 * fits, so each workload goes to the model where its memory costs least. */
void decide__order_by_cost(struct decide__ctx *c)
{
    for (size_t a = 1; a < c->nmodels; a++)
        for (size_t b = a; b > 0; b--) {
            const struct cat_model *x = c->models[b - 1], *y = c->models[b];
            if (decide__model_price(c, y) / y->memory_gib >=
                decide__model_price(c, x) / x->memory_gib - 1e-12)
                break;
            c->models[b - 1] = y;
            c->models[b] = x;
        }
}

/* The part of a card of m a MIG instance of p takes: its memory slices or
 * its compute slices, whichever is the larger share. */
double decide__profile_share(const struct cat_model *m, const struct cat_profile *p)
{
    double u = (double)p->mem_units / m->grid;
    double k = (double)p->compute / m->compute_slices;
    return u > k ? u : k;
}

/* The least part of a card one replica of r takes: its whole GPUs, its MIG
 * profile's memory or compute slices, or its pool cap (and MPS share). */
double decide__replica_share(const struct decide_row *r)
{
    const struct cat_model *m = r->model;
    if (r->profile)
        return decide__profile_share(m, r->profile);
    if (!decide_mech_shares_card(r->mech))
        return r->gpus;
    double s = r->cap_gib / m->memory_gib;
    if (r->mech == DECIDE_MPS && r->sm_percent / 100.0 > s)
        s = r->sm_percent / 100.0;
    if (r->mech == DECIDE_MPS && m->mps_max_clients > 0 && 1.0 / m->mps_max_clients > s)
        s = 1.0 / m->mps_max_clients;
    /* a card holds whole clients: floor(1 / s) of this size at most */
    double per_card = s > 0 ? floor(1.0 / s + 1e-9) : 0;
    return per_card >= 1 ? 1.0 / per_card : s;
}

/* ---- node eligibility ---- */

const char *decide_card_refuses(const struct decide_row *r, const struct spec_fleet_node *n,
                                const struct cat_model *model)
{
    if (model != r->model)
        return "the card is not the GPU model it was decided for";
    if (r->profile && !model->mig)
        return "a MIG profile needs a MIG-capable card";
    if (r->mech == DECIDE_VGPU && !n->vgpu_licensed)
        return "vGPU needs a node with vgpuLicensed: true";
    if (r->mech == DECIDE_MPS && !n->mps_allowed)
        return "MPS needs a node with mps: true";
    if (r->mech == DECIDE_MEMORY_FRACTION && r->enforce == DECIDE_ENFORCE_DRIVER &&
        spec_cuda_version(n->cuda_version) < DECIDE_CUDA_FRACTIONS)
        return "a driver-enforced memory fraction needs a node with cudaVersion 13.4 or later";
    return NULL;
}

static int node_holds(const struct decide__ctx *c, size_t i, const struct cat_model *model)
{
    for (size_t g = 0; g < c->m->fleet->nodes[i].ngpus; g++)
        if (decide__entry_model(c, i, g) == model)
            return 1;
    return 0;
}

/* Nodes holding model where a row of mech (and enforce) may run, by
 * decide_card_refuses; *holding (optional) counts the nodes holding model. */
int decide__eligible_nodes(const struct decide__ctx *c, const struct cat_model *model, int mech,
                           int enforce, int *holding)
{
    struct decide_row trial = {.mech = mech, .model = model, .enforce = enforce};
    const struct spec_fleet *fl = c->m->fleet;
    int ok = 0, held = 0;
    for (size_t i = 0; i < fl->nnodes; i++) {
        if (!node_holds(c, i, model))
            continue;
        held++;
        ok += decide_card_refuses(&trial, &fl->nodes[i], model) == NULL;
    }
    if (holding)
        *holding = held;
    return ok;
}

/* 1 if any node of the fleet is vGPU-licensed. */
int decide__fleet_licensed(const struct decide__ctx *c)
{
    for (size_t i = 0; i < c->m->fleet->nnodes; i++)
        if (c->m->fleet->nodes[i].vgpu_licensed)
            return 1;
    return 0;
}

/* ---- capacity: what the rows so far take ---- */

size_t decide__model_slot(const struct decide__ctx *c, const struct cat_model *model)
{
    for (size_t i = 0; i < c->nmodels; i++)
        if (c->models[i] == model)
            return i;
    return 0;
}

static double count_eligible(const struct decide__ctx *c, const struct decide_row *r);

/* Cards of r's model on nodes that may host r (remembered per kind). */
static double eligible_cards(const struct decide__ctx *c, const struct decide_row *r)
{
    struct decide__elig *e = c->elig;
    int mig = r->profile != NULL;
    for (size_t i = 0; e && i < e->n; i++)
        if (e->seen[i].model == r->model && e->seen[i].mig == mig && e->seen[i].mech == r->mech &&
            e->seen[i].enforce == r->enforce)
            return e->seen[i].cards;
    double n = count_eligible(c, r);
    if (e && e->n < DECIDE_ELIG_MEMO_MAX) {
        e->seen[e->n].model = r->model;
        e->seen[e->n].mig = mig;
        e->seen[e->n].mech = r->mech;
        e->seen[e->n].enforce = r->enforce;
        e->seen[e->n++].cards = n;
    }
    return n;
}

static double count_eligible(const struct decide__ctx *c, const struct decide_row *r)
{
    double n = 0;
    const struct spec_fleet *fl = c->m->fleet;
    for (size_t i = 0; i < fl->nnodes; i++)
        for (size_t g = 0; g < fl->nodes[i].ngpus; g++)
            if (decide__entry_model(c, i, g) == r->model &&
                !decide_card_refuses(r, &fl->nodes[i], r->model))
                n += fl->nodes[i].gpus[g].count;
    return n;
}

/* r's pool mechanism among the three sharing ones, or -1. */
static int pool_slot(const struct decide_row *r)
{
    if (r->profile)
        return -1;
    return r->mech == DECIDE_MPS               ? 0
           : r->mech == DECIDE_TIME_SLICING    ? 1
           : r->mech == DECIDE_MEMORY_FRACTION ? 2
                                               : -1;
}

static size_t set_of(size_t *set, size_t i)
{
    while (set[i] != i)
        i = set[i] = set[set[i]];
    return i;
}

void decide__groups_init(struct decide__ctx *c)
{
    size_t n = c->m->ntenants;
    c->elig = ts_arena_alloc(c->arena, sizeof(*c->elig));
    c->trust_set = ts_arena_array(c->arena, n + 1, sizeof(*c->trust_set));
    c->group = ts_arena_array(c->arena, (n + 1) * DECIDE_MODELS_MAX * 3, sizeof(*c->group));
    if (!c->trust_set || !c->group) {
        c->group = NULL;
        return;
    }
    for (size_t i = 0; i < n; i++)
        c->trust_set[i] = i;
    for (size_t i = 0; i < n; i++) {
        const struct spec_tenant *t = &c->m->tenants[i];
        for (size_t k = 0; k < t->ntrusts; k++) {
            const struct spec_tenant *o = spec_tenant_find(c->m, t->trusts[k]);
            if (o && spec_tenants_trust(c->m, t->name, o->name))
                c->trust_set[set_of(c->trust_set, i)] = set_of(c->trust_set,
                                                               (size_t)(o - c->m->tenants));
        }
    }
}

/* r's pool group's card shares, or NULL outside pools. */
static double *group_of(const struct decide__ctx *c, const struct decide_row *r)
{
    int g = pool_slot(r);
    if (g < 0 || !c->group)
        return NULL;
    size_t t = (size_t)(r->tenant - c->m->tenants);
    if (g > 0) /* time-slicing, fractions: any tenants that trust each other */
        t = set_of(c->trust_set, t);
    return &c->group[(t * DECIDE_MODELS_MAX + decide__model_slot(c, r->model)) * 3 + (size_t)g];
}

static double cards_of(double share) { return ceil(share - 1e-9); }

/* Cards r's replicas add to its model's reserve: their shares, or for a
 * sharing pool the whole cards its group grows by. Pools pack per group
 * (one MPS server per tenant; shared cards only among tenants that trust
 * each other), so counting them as fluid shares of the model sent more
 * pool work to a model than its cards could hold. */
static double added_cards(const struct decide__ctx *c, const struct decide_row *r)
{
    double want = decide__replica_share(r) * r->workload->replicas;
    const double *g = group_of(c, r);
    return g ? cards_of(*g + want) - cards_of(*g) : want;
}

/* 1 when r's replicas fit in what its model has left (and replicas kept
 * on distinct cards find as many cards). */
int decide__fits_capacity(const struct decide__ctx *c, const struct decide_row *r)
{
    double cards = eligible_cards(c, r);
    if (r->workload->spread != SPEC_SPREAD_NONE && r->workload->replicas > cards + 1e-9)
        return 0;
    return c->reserved[decide__model_slot(c, r->model)] + added_cards(c, r) <= cards + 1e-9;
}

void decide__reserve(struct decide__ctx *c, const struct decide_row *r)
{
    if (!r->model)
        return;
    c->reserved[decide__model_slot(c, r->model)] += added_cards(c, r);
    double *g = group_of(c, r);
    if (g)
        *g += decide__replica_share(r) * r->workload->replicas;
}

/* Decide x; when its model has no room left (by the card shares the rows
 * before it take), decide it again without that model: the workload spills
 * to the next model that fits. A spill that fails keeps the first answer
 * (the plan then says what does not fit). */
