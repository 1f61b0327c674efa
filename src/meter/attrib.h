/*
 * attrib.h - who is charged for a GPU or MIG instance seen in a
 * dcgm-exporter scrape, and for how much of the card.
 *
 * The order of evidence:
 *   1. pod labels: the tenant that owns the sample's namespace in the spec
 *      ("unattributed" for a namespace of no tenant: kept, never dropped);
 *   2. without pod labels, the custody ledger (the latest entry for the GPU
 *      UUID and GPU instance id at or before the scrape, recorded from the
 *      node's inventory), then the plan: the card at the sample's node and
 *      GPU index, and on it the instances of the sample's MIG profile, when
 *      they all belong to one tenant, provided the scrape agrees with the
 *      plan on the card's model and on MIG or not (else the sample is
 *      unattributed and the disagreement reported). Reserved capacity is
 *      billed whether used or not (the allocation basis).
 * Every pod listed on a device is charged: on a card the plan shares, its
 * tenant's plan share; on a whole card its owner time-slices to guests,
 * each pod not of the owner 1/N of the card (N: the plan's clients on it)
 * under its own key "#ns/pod", and the owner the rest under the card's; on
 * any other device, 1/N of the device's share for each of the N pods
 * listed at that time.
 * A pod whose tenant is not the one the plan (or ledger) gives the device is
 * a custody violation: it is billed to the tenant observed and reported.
 *
 * Each charge names the tenant's workload where one is known: the plan
 * client's, else the one workload of the tenant in the pod's namespace,
 * else the one workload the plan gives the tenant on that card (of that
 * MIG profile); else "".
 *
 * The share of the card charged: a MIG instance its memory slices over the
 * board's grid, or compute slices, or the larger of both (PriceBook
 * migShareBasis); on a shared card (plan mode MPS, time-slicing or
 * memory-fraction) each tenant its plan share: MPS the active thread
 * percentage, time-slicing 1/N of N clients, a memory fraction its memory
 * over the card's; a whole GPU one.
 */
#ifndef METER_ATTRIB_H
#define METER_ATTRIB_H

#include "catalog/catalog.h"
#include "meter/expo.h"
#include "plan/plan.h"
#include "spec/model.h"
#include "store/store.h"
#include "util/limits.h" /* METER_NAME_MAX, METER_SUFFIX_MAX, METER_CHARGES_MAX */

/* One custody-ledger fact: device (GPU UUID, or UUID/GI id) of profile
 * ("" when the entry names none) held by tenant from ts_ms on. A GPU
 * instance id is reused when a card is repartitioned: a fact applies to a
 * scrape only where the profiles agree (or either is unknown). */
struct meter_custody {
    char device[METER_NAME_MAX];
    char tenant[METER_NAME_MAX];
    char profile[32];
    int64_t ts_ms;
};

struct meter_ctx {
    const struct spec_model *model;
    const struct cat_catalog *cat;
    const struct plan *plan;       /* NULL: pod labels only */
    struct meter_custody *custody; /* sorted by device, then time */
    size_t ncustody, custody_cap;
    /* the scrape times an ingest takes: from its start less max_age_ms to
     * its start plus max_ahead_ms (0: no bound); others are refused */
    int64_t max_age_ms, max_ahead_ms;
};

/* What one scrape says about one device; NULL or "" when a label is absent. */
struct meter_seen {
    const char *node, *gpu_index, *uuid, *gi_id, *model, *profile, *ns, *pod;
    int pods, pod_index; /* pods listed on the device at that time (0: not known,
                          * one), and which of them this is (0-based, sorted) */
    int foreign;         /* of them, pods not of the owner of a card it time-slices
                          * to guests (meter_pod_foreign) */
};

struct meter_charge {
    char tenant[METER_NAME_MAX];
    char suffix[METER_SUFFIX_MAX]; /* added to the device key when a card is split */
    char workload[METER_NAME_MAX]; /* the tenant's workload, "" when not known */
    int64_t share_ppm;
};

struct meter_verdict {
    struct meter_charge charges[METER_CHARGES_MAX];
    size_t ncharges;
    char planned[METER_NAME_MAX];      /* the tenant the plan/ledger gives, "" if none */
    int violation;                     /* a pod of another tenant on the device */
    int ambiguous;                     /* the plan names several tenants for it */
    char disagree[4 * METER_NAME_MAX]; /* no pod labels, and the scrape contradicts the
                                        * plan's card (model, or MIG or not): how; the
                                        * sample is then unattributed */
    char stale[4 * METER_NAME_MAX];    /* the ledger's latest entry for the device is of
                                        * another profile than the scrape's (the GPU
                                        * instance id reused): not applied, how */
};

/* Load the custody facts of the ledger in st (st may be NULL: none). */
ts_status meter_ctx_load_custody(struct meter_ctx *ctx, struct store *st, struct ts_error *err);
void meter_ctx_release(struct meter_ctx *ctx);

/* Decide the charges for device d scraped at ts_ms. */
void meter_attribute(const struct meter_ctx *ctx, const struct meter_seen *d, int64_t ts_ms,
                     struct meter_verdict *out);

/* 1 when d is a pod, on a whole card its owner time-slices to guests, of a
 * tenant other than that owner (counted into meter_seen.foreign). */
int meter_pod_foreign(const struct meter_ctx *ctx, const struct meter_seen *d, int64_t ts_ms);

/* The share of its card (ppm) the plan reserves for instance in of card g,
 * as metering charges it. */
int64_t meter_plan_share(const struct spec_model *sm, const struct plan_gpu *g,
                         const struct plan_inst *in);

/* The tenant of one exposition sample (its labels), for relabelled metrics:
 * the spec's name of the first charge's tenant, "unattributed", or "shared"
 * for a card split between tenants with no pod label. Never NULL. */
const char *meter_tenant_of_sample(const struct meter_ctx *ctx, const struct meter_sample *x);

/* The labels of x that describe its device. */
void meter_seen_of(const struct meter_sample *x, struct meter_seen *d);

#endif
