/*
 * internal.h - what decide.c and fleet.c share: the run's context and the
 * fleet-wide facts one decision needs (the fleet's models cheapest first,
 * node eligibility, the card shares the rows so far take).
 */
#ifndef DECIDE_INTERNAL_H
#define DECIDE_INTERNAL_H

#include "decide/decide.h"
#include "util/limits.h"

struct decide__elig {
    struct {
        const struct cat_model *model;
        int mig, mech, enforce;
        double cards;
    } seen[DECIDE_ELIG_MEMO_MAX];
    size_t n;
};

struct decide__ctx {
    const struct spec_model *m;
    const struct cat_catalog *cat;
    struct ts_arena *arena;
    struct ts_diag *diag;
    const struct cat_model *models[DECIDE_MODELS_MAX]; /* distinct fleet models, cheapest first */
    size_t nmodels;
    double reserved[DECIDE_MODELS_MAX]; /* cards of models[i] the rows so far take at least */
    /* Sharing pools by group: MPS per tenant, time-slicing and memory
     * fractions per set of tenants that trust each other (tenant i's set
     * is named by trust_set[i]); group[(tenant * DECIDE_MODELS_MAX + model)
     * * 3 + mechanism] holds its card shares, and reserved counts each
     * group in whole cards. NULL when out of memory: fluid shares. */
    size_t *trust_set;
    double *group;
    /* Eligible cards per kind of row (decide_card_refuses asks only its
     * model, MIG profile or not, mechanism and enforcer), counted once. */
    struct decide__elig *elig;
    /* Each node's GPU entries' catalog models, looked up once (NULL when
     * out of memory: then looked up each time): node i's entry g is
     * entry_models[entry_first[i] + g]. */
    const struct cat_model **entry_models;
    size_t *entry_first;
};

/* Check the fleet against the catalog (diag) and fill c->models. */
void decide__check_fleet(struct decide__ctx *c);
/* The catalog model of node i's GPU entry g (NULL: not in the catalog). */
const struct cat_model *decide__entry_model(const struct decide__ctx *c, size_t i, size_t g);
/* A card of model's price per hour (the highest listed when unlisted). */
double decide__model_price(const struct decide__ctx *c, const struct cat_model *model);
/* c->models cheapest first. */
void decide__order_by_cost(struct decide__ctx *c);
/* The part of a card one instance of p, or one replica of r, takes. */
double decide__profile_share(const struct cat_model *m, const struct cat_profile *p);
double decide__replica_share(const struct decide_row *r);
/* Nodes holding model that may host mech (enforce: a fraction's enforcer);
 * *holding: the nodes with the model at all. */
int decide__eligible_nodes(const struct decide__ctx *c, const struct cat_model *model, int mech,
                           int enforce, int *holding);
/* 1 when some node is vGPU-licensed. */
int decide__fleet_licensed(const struct decide__ctx *c);
/* model's index in c->models. */
size_t decide__model_slot(const struct decide__ctx *c, const struct cat_model *model);
/* 1 when r's replicas fit, by card share, in what its model has left. */
int decide__fits_capacity(const struct decide__ctx *c, const struct decide_row *r);
/* Take r's replicas from what its model has left. */
void decide__reserve(struct decide__ctx *c, const struct decide_row *r);
/* The trust sets and pool groups decide__reserve counts. */
void decide__groups_init(struct decide__ctx *c);

#endif
