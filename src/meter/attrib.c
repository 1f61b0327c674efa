/*
 * attrib.c - charging a scraped device to tenants (see attrib.h).
 */
#include "meter/attrib.h"
#include "util/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/jsonread.h"
#include "util/units.h"

static int has(const char *s) { return s && *s; }

static int is_mig(const char *profile)
{
    return has(profile) && strcmp(profile, "<<<NULL>>>") != 0;
}

/* snprintf's "%s" without its cost: these run for every sample stored. */
static void set(char dst[METER_NAME_MAX], const char *src) { ts_copy(dst, METER_NAME_MAX, src); }

/* a, b and c into dst (size bytes), cut to fit, as "%s%s%s" would. */
static void join3(char *dst, size_t size, const char *a, const char *b, const char *c)
{
    const char *parts[] = {a, b, c};
    size_t n = 0;
    for (size_t i = 0; i < 3; i++) {
        ts_copy(dst + n, size - n, parts[i]);
        n += strlen(dst + n);
    }
}

/* ---- custody facts from the ledger ---- */

static int cmp_custody(const void *x, const void *y)
{
    const struct meter_custody *a = x, *b = y;
    int c = strcmp(a->device, b->device);
    return c ? c : (a->ts_ms > b->ts_ms) - (a->ts_ms < b->ts_ms);
}

static int add_custody(void *arg, const struct store_ledger_entry *e)
{
    struct meter_ctx *ctx = arg;
    /* observed entries are what tessera itself reported, not custody given */
    if (strcmp(e->source, "observed") == 0 || !has(e->gpu_uuid))
        return 0;
    if (!ts_grow((void **)&ctx->custody, &ctx->custody_cap, ctx->ncustody, sizeof(*ctx->custody)))
        return 1;
    struct meter_custody *c = &ctx->custody[ctx->ncustody++];
    snprintf(c->device, sizeof(c->device), "%s%s%s", e->gpu_uuid, has(e->gi_id) ? "/" : "",
             e->gi_id);
    set(c->tenant, e->tenant);
    snprintf(c->profile, sizeof(c->profile), "%s",
             has(e->gi_id) && has(e->profile) && strcmp(e->profile, "whole") ? e->profile : "");
    c->ts_ms = e->ts_ms;
    return 0;
}

ts_status meter_ctx_load_custody(struct meter_ctx *ctx, struct store *st, struct ts_error *err)
{
    if (!st)
        return TS_OK;
    ts_status s = store_ledger_scan(st, add_custody, ctx, err);
    if (ctx->ncustody)
        qsort(ctx->custody, ctx->ncustody, sizeof(*ctx->custody), cmp_custody);
    return s;
}

void meter_ctx_release(struct meter_ctx *ctx)
{
    free(ctx->custody);
    ctx->custody = NULL;
    ctx->ncustody = ctx->custody_cap = 0;
}

/* The ledger's latest fact for device at or before ts_ms, or NULL. The
 * facts are sorted by device, then time: find the device's first, walk its
 * run. */
static const struct meter_custody *custody_at(const struct meter_ctx *ctx, const char *device,
                                              int64_t ts_ms)
{
    size_t lo = 0, hi = ctx->ncustody;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(ctx->custody[mid].device, device) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct meter_custody *fact = NULL;
    for (size_t i = lo; i < ctx->ncustody && ctx->custody[i].ts_ms <= ts_ms &&
                        strcmp(ctx->custody[i].device, device) == 0;
         i++)
        fact = &ctx->custody[i];
    return fact;
}

/* Whether the ledger's profile a and the scrape's b name different
 * profiles of d's model (through the catalog: an exporter's "7g.79gb" is
 * the catalog's 7g.80gb), by name where the catalog knows neither. */
static int other_profile(const struct meter_ctx *ctx, const struct meter_seen *d, const char *a,
                         const char *b)
{
    const struct cat_model *m = has(d->model) ? cat_model_find(ctx->cat, d->model) : NULL;
    const struct cat_profile *pa = m ? cat_profile_find(m, a) : NULL;
    const struct cat_profile *pb = m ? cat_profile_find(m, b) : NULL;
    return pa && pb ? pa != pb : strcmp(a, b) != 0;
}

/* The tenant the ledger gives the device of d at ts_ms, or NULL: none, or
 * "unassigned", or a fact of another profile than the scrape's (the GPU
 * instance id reused after a repartition whose entry is not in the ledger
 * yet: said in v->stale). */
static const char *custody_tenant(const struct meter_ctx *ctx, const char *device,
                                  const struct meter_seen *d, int64_t ts_ms,
                                  struct meter_verdict *v)
{
    const struct meter_custody *f = custody_at(ctx, device, ts_ms);
    if (!f || strcmp(f->tenant, "unassigned") == 0)
        return NULL;
    if (f->profile[0] && is_mig(d->profile) && other_profile(ctx, d, f->profile, d->profile)) {
        snprintf(v->stale, sizeof(v->stale),
                 "the scrape shows a %s, the ledger's latest entry (tenant '%s', at %lld ms) a "
                 "%s: the GPU instance id was reused, the entry not applied",
                 d->profile, f->tenant, (long long)f->ts_ms, f->profile);
        return NULL;
    }
    return f->tenant;
}

/* ---- the plan's side ---- */

static const struct plan_gpu *plan_card(const struct meter_ctx *ctx, const struct meter_seen *d)
{
    if (!ctx->plan || !has(d->node) || !has(d->gpu_index))
        return NULL;
    char *end;
    long index = strtol(d->gpu_index, &end, 10);
    if (*end)
        return NULL;
    for (size_t i = 0; i < ctx->plan->ngpus; i++) {
        const struct plan_gpu *g = &ctx->plan->gpus[i];
        if (g->index == index && strcmp(g->node->name, d->node) == 0)
            return g;
    }
    return NULL;
}

static const char *inst_tenant(const struct plan_inst *in)
{
    return in->row ? in->row->tenant->name : NULL; /* the canary slice has none */
}

static int is_shared(const struct plan_gpu *g) { return g && plan_mode_shares_card(g->mode); }

/* The one tenant the plan gives the device, or NULL (*ambiguous set when
 * several tenants hold instances of that profile on the card). */
static const char *planned_tenant(const struct plan_gpu *g, const struct meter_seen *d,
                                  int *ambiguous)
{
    const char *tenant = NULL;
    /* a MIG instance on a card the plan does not partition belongs to
     * whoever the plan gives the card */
    int mig = is_mig(d->profile) && g && g->mode == PLAN_MIG;
    const struct cat_profile *want = mig ? cat_profile_find(g->model, d->profile) : NULL;
    for (size_t i = 0; g && i < g->ninst; i++) {
        const struct plan_inst *in = &g->inst[i];
        if (mig && (!want || in->profile != want))
            continue;
        if (!mig && in->guest)
            continue;
        const char *t = inst_tenant(in);
        if (t && tenant && strcmp(t, tenant) != 0)
            *ambiguous = 1;
        tenant = tenant ? tenant : t;
    }
    return *ambiguous ? NULL : tenant;
}

/* ---- shares ---- */

static int64_t mig_share(const struct spec_model *sm, const struct cat_model *m,
                         const struct cat_profile *p)
{
    int64_t mem = (int64_t)p->mem_units * TS_PPM / m->grid;
    int64_t compute = m->compute_slices ? (int64_t)p->compute * TS_PPM / m->compute_slices : mem;
    int basis = sm->pricebook ? sm->pricebook->mig_share : SPEC_SHARE_MEMORY;
    if (basis == SPEC_SHARE_COMPUTE)
        return compute;
    return basis == SPEC_SHARE_MAX && compute > mem ? compute : mem;
}

/* A sharing client's share of its card: MPS its thread %, time-slicing
 * 1/N, a memory fraction its memory over the card's. */
static int64_t client_share(const struct plan_gpu *g, const struct plan_inst *in)
{
    if (g->mode == PLAN_MPS && in->sm_percent > 0)
        return (int64_t)in->sm_percent * TS_PPM / 100;
    if (g->mode == PLAN_MEMORY_FRACTION && g->model->memory_gib > 0)
        return (int64_t)(in->mem_gib * TS_PPM / g->model->memory_gib + 0.5);
    return g->ninst ? TS_PPM / (int64_t)g->ninst : TS_PPM;
}

int64_t meter_plan_share(const struct spec_model *sm, const struct plan_gpu *g,
                         const struct plan_inst *in)
{
    if (in->profile && g->model->grid > 0)
        return mig_share(sm, g->model, in->profile);
    return is_shared(g) ? client_share(g, in) : TS_PPM;
}

/* The average share of tenant's clients on a shared card, 0 if it has none. */
static int64_t tenant_share(const struct plan_gpu *g, const char *tenant)
{
    int64_t sum = 0, n = 0;
    for (size_t i = 0; i < g->ninst; i++)
        if (inst_tenant(&g->inst[i]) && strcmp(inst_tenant(&g->inst[i]), tenant) == 0) {
            sum += client_share(g, &g->inst[i]);
            n++;
        }
    return n ? sum / n : 0;
}

static int64_t whole_share(const struct meter_ctx *ctx, const struct meter_seen *d)
{
    if (!is_mig(d->profile))
        return TS_PPM;
    const struct cat_model *m = has(d->model) ? cat_model_find(ctx->cat, d->model) : NULL;
    const struct cat_profile *p = m ? cat_profile_find(m, d->profile) : NULL;
    return p ? mig_share(ctx->model, m, p) : -1; /* -1: unknown profile */
}

/* Add a charge; NULL (nothing added) when the verdict is full. */
static struct meter_charge *charge(struct meter_verdict *v, const char *tenant, const char *suffix,
                                   int64_t share)
{
    if (v->ncharges == METER_CHARGES_MAX)
        return NULL;
    struct meter_charge *c = &v->charges[v->ncharges++];
    c->workload[0] = '\0';
    set(c->tenant, tenant);
    ts_copy(c->suffix, sizeof(c->suffix), suffix);
    c->share_ppm = share;
    return c;
}

/* A shared card with no pod label: every plan client is charged its share. */
static void charge_clients(struct meter_verdict *v, const struct plan_gpu *g)
{
    for (size_t i = 0; i < g->ninst; i++) {
        const struct plan_inst *in = &g->inst[i];
        if (!in->row)
            continue;
        char suffix[METER_SUFFIX_MAX];
        snprintf(suffix, sizeof(suffix), "#%s/%s/%d", in->row->tenant->name,
                 in->row->workload->name, in->replica);
        struct meter_charge *c = charge(v, in->row->tenant->name, suffix, client_share(g, in));
        if (c)
            set(c->workload, in->row->workload->name);
    }
}

/* Is tenant a best-effort guest the owner of card g trusts? */
static int is_guest(const struct plan_gpu *g, const char *tenant)
{
    for (size_t i = 0; i < g->ninst; i++)
        if (g->inst[i].guest && inst_tenant(&g->inst[i]) &&
            strcmp(inst_tenant(&g->inst[i]), tenant) == 0)
            return 1;
    return 0;
}

static const char *owner_of(const struct spec_model *m, const char *ns)
{
    for (size_t i = 0; has(ns) && i < m->ntenants; i++)
        for (size_t j = 0; j < m->tenants[i].nnamespaces; j++)
            if (strcmp(m->tenants[i].namespaces[j], ns) == 0)
                return m->tenants[i].name;
    return "unattributed";
}

/* A pod was seen on the device: bill its tenant, flag a contradiction. */
static void charge_observed(const struct meter_ctx *ctx, const struct meter_seen *d,
                            const struct plan_gpu *g, struct meter_verdict *v)
{
    const char *tenant = owner_of(ctx->model, d->ns);
    if (is_shared(g) && !is_mig(d->profile)) {
        char suffix[METER_SUFFIX_MAX];
        snprintf(suffix, sizeof(suffix), "#%s/%s", d->ns, has(d->pod) ? d->pod : "");
        int64_t share = tenant_share(g, tenant);
        v->violation = share == 0;
        charge(v, tenant, suffix, share ? share : client_share(g, &g->inst[0]));
        return;
    }
    int64_t share = whole_share(ctx, d);
    if (d->pods > 1) { /* pods sharing a device the plan does not share: 1/N each */
        char suffix[METER_SUFFIX_MAX];
        snprintf(suffix, sizeof(suffix), "#%s/%s", d->ns, has(d->pod) ? d->pod : "");
        share = share < 0 ? share : share / d->pods + (d->pod_index < share % d->pods);
        charge(v, tenant, suffix, share);
    } else {
        charge(v, tenant, "", share);
    }
    v->violation = v->planned[0] && strcmp(v->planned, tenant) != 0 &&
                   !(g && !is_mig(d->profile) && is_guest(g, tenant));
}

/* A whole card its owner also time-slices to guests (plan_gpu.sharing). */
static int guest_card(const struct plan_gpu *g, const struct meter_seen *d)
{
    return g && g->sharing && g->mode != PLAN_MIG && !is_shared(g) && !is_mig(d->profile);
}

/* A pod on a card its owner time-slices to guests: a pod not of the owner
 * is charged 1/N of the card (the plan's N clients on it) under its own
 * key, a custody violation unless it is a guest there; the owner the rest
 * (1 less the other pods' shares, never below 0) under the card's key, once
 * a scrape (with the first pod listed), whether its own pod runs or not. */
static void charge_guest_card(const struct meter_ctx *ctx, const struct meter_seen *d,
                              const struct plan_gpu *g, struct meter_verdict *v)
{
    const char *tenant = owner_of(ctx->model, d->ns);
    int64_t share = g->ninst ? TS_PPM / (int64_t)g->ninst : TS_PPM;
    if (strcmp(tenant, v->planned) != 0) {
        char suffix[METER_SUFFIX_MAX];
        snprintf(suffix, sizeof(suffix), "#%s/%s", d->ns, has(d->pod) ? d->pod : "");
        charge(v, tenant, suffix, share);
        v->violation = !is_guest(g, tenant);
    }
    int64_t rest = TS_PPM - (int64_t)d->foreign * share;
    if (d->pod_index == 0)
        charge(v, v->planned, "", rest > 0 ? rest : 0);
}

static const char *mode_of(int mig) { return mig ? "MIG" : "not MIG"; }

/* Does the scrape contradict the plan's card (its model, or MIG or not)?
 * Then v->disagree says how. A sample without a model label is not
 * checked for its model. */
static int disagree(const struct meter_ctx *ctx, const struct plan_gpu *g,
                    const struct meter_seen *d, struct meter_verdict *v)
{
    const struct cat_model *m = has(d->model) ? cat_model_find(ctx->cat, d->model) : NULL;
    if (has(d->model) && m != g->model)
        snprintf(v->disagree, sizeof(v->disagree),
                 "the scrape shows a %s, the plan a %s on node %s GPU %d", d->model, g->model->name,
                 g->node->name, g->index);
    else if (is_mig(d->profile) != (g->mode == PLAN_MIG))
        snprintf(v->disagree, sizeof(v->disagree),
                 "the scrape shows the card %s (profile '%s'), the plan %s on node %s GPU %d",
                 mode_of(is_mig(d->profile)), has(d->profile) ? d->profile : "",
                 mode_of(g->mode == PLAN_MIG), g->node->name, g->index);
    return v->disagree[0] != 0;
}

/* The plan's card of d and who holds the device at ts_ms (v->planned, by
 * the ledger, else the plan); *held: the ledger's tenant, or NULL. */
/* An empty verdict. Only its head is cleared (the charges are 37 KB, and
 * this runs for every device of every scrape); charges[0] reads as no
 * tenant while there is none. */
static void verdict_reset(struct meter_verdict *v)
{
    v->ncharges = 0;
    memset(&v->charges[0], 0, sizeof(v->charges[0]));
    v->planned[0] = v->disagree[0] = v->stale[0] = '\0';
    v->violation = v->ambiguous = 0;
}

static const struct plan_gpu *holder(const struct meter_ctx *ctx, const struct meter_seen *d,
                                     int64_t ts_ms, struct meter_verdict *v, const char **held)
{
    verdict_reset(v);
    const struct plan_gpu *g = plan_card(ctx, d);
    char device[2 * METER_NAME_MAX];
    join3(device, sizeof(device), has(d->uuid) ? d->uuid : "",
          is_mig(d->profile) && has(d->gi_id) ? "/" : "",
          is_mig(d->profile) && has(d->gi_id) ? d->gi_id : "");
    *held = custody_tenant(ctx, device, d, ts_ms, v);
    const char *planned = *held ? *held : planned_tenant(g, d, &v->ambiguous);
    set(v->planned, planned);
    if (*held)
        v->ambiguous = 0;
    return g;
}

int meter_pod_foreign(const struct meter_ctx *ctx, const struct meter_seen *d, int64_t ts_ms)
{
    if (!has(d->ns) || !guest_card(plan_card(ctx, d), d))
        return 0; /* most pods: no ledger lookup */
    struct meter_verdict v;
    const char *held;
    holder(ctx, d, ts_ms, &v, &held);
    return v.planned[0] && strcmp(owner_of(ctx->model, d->ns), v.planned) != 0;
}

/* The one workload of tenant t that runs in namespace ns, else NULL. */
static const char *workload_in_ns(const struct spec_tenant *t, const char *ns)
{
    const char *found = NULL;
    for (size_t i = 0; t && has(ns) && i < t->nworkloads; i++)
        if (t->workloads[i].namespace_ && strcmp(t->workloads[i].namespace_, ns) == 0) {
            if (found)
                return NULL;
            found = t->workloads[i].name;
        }
    return found;
}

/* The one workload the plan gives tenant on card g (for a MIG instance, of
 * its profile), else NULL. */
static const char *workload_on_card(const struct plan_gpu *g, const struct meter_seen *d,
                                    const char *tenant)
{
    const char *found = NULL;
    int mig = is_mig(d->profile) && g && g->mode == PLAN_MIG;
    const struct cat_profile *want = mig ? cat_profile_find(g->model, d->profile) : NULL;
    for (size_t i = 0; g && i < g->ninst; i++) {
        const struct plan_inst *in = &g->inst[i];
        if (!in->row || strcmp(in->row->tenant->name, tenant) != 0 || (mig && in->profile != want))
            continue;
        if (found && strcmp(found, in->row->workload->name) != 0)
            return NULL;
        found = in->row->workload->name;
    }
    return found;
}

/* Name the workload of each charge that has none yet (attrib.h). */
static void name_workloads(const struct meter_ctx *ctx, const struct plan_gpu *g,
                           const struct meter_seen *d, struct meter_verdict *v)
{
    for (size_t i = 0; i < v->ncharges; i++) {
        struct meter_charge *c = &v->charges[i];
        if (c->workload[0])
            continue;
        const char *w = workload_in_ns(spec_tenant_find(ctx->model, c->tenant), d->ns);
        set(c->workload, w ? w : workload_on_card(g, d, c->tenant));
    }
}

static void decide(const struct meter_ctx *ctx, const struct meter_seen *d, int64_t ts_ms,
                   struct meter_verdict *v, const struct plan_gpu **card)
{
    const char *held;
    const struct plan_gpu *g = holder(ctx, d, ts_ms, v, &held);
    *card = g;
    const char *planned = v->planned[0] ? v->planned : NULL;
    if (has(d->ns) && guest_card(g, d) && planned) {
        charge_guest_card(ctx, d, g, v);
        return;
    }
    if (has(d->ns)) {
        charge_observed(ctx, d, g, v);
        return;
    }
    if (!held && g && g->ninst && disagree(ctx, g, d, v)) { /* a free card bills nobody */
        charge(v, "unattributed", "", whole_share(ctx, d));
        return;
    }
    if (!held && is_shared(g) && !is_mig(d->profile))
        charge_clients(v, g);
    else
        charge(v, planned ? planned : "unattributed", "", whole_share(ctx, d));
}

void meter_attribute(const struct meter_ctx *ctx, const struct meter_seen *d, int64_t ts_ms,
                     struct meter_verdict *v)
{
    const struct plan_gpu *g = NULL;
    decide(ctx, d, ts_ms, v, &g);
    name_workloads(ctx, g, d, v);
}

void meter_seen_of(const struct meter_sample *x, struct meter_seen *d)
{
    const char *uuid = meter_label(x, "UUID"), *host = meter_label(x, "Hostname");
    const char *ns = meter_label(x, "namespace"), *pod = meter_label(x, "pod");
    *d = (struct meter_seen){host ? host : meter_label(x, "hostname"),
                             meter_label(x, "gpu"),
                             uuid ? uuid : meter_label(x, "uuid"),
                             meter_label(x, "GPU_I_ID"),
                             meter_label(x, "modelName"),
                             meter_label(x, "GPU_I_PROFILE"),
                             ns ? ns : meter_label(x, "pod_namespace"),
                             pod ? pod : meter_label(x, "pod_name"),
                             0,
                             0,
                             0};
}

const char *meter_tenant_of_sample(const struct meter_ctx *ctx, const struct meter_sample *x)
{
    struct meter_seen d;
    meter_seen_of(x, &d);
    struct meter_verdict v;
    meter_attribute(ctx, &d, x->has_timestamp ? x->timestamp_ms : INT64_MAX, &v);
    if (v.ncharges != 1 && !has(d.ns))
        return v.ncharges ? "shared" : "unattributed";
    const struct spec_tenant *t = spec_tenant_find(ctx->model, v.charges[0].tenant);
    return t ? t->name : "unattributed";
}
