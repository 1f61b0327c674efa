/*
 * decide.c - the decision table (see decide.h and docs/spec.md, "Choosing
 * the mechanism").
 *
 * decide_run first checks the fleet against the catalog, then walks every
 * workload through decide_one: an explicit `isolation:` request is
 * validated against the contract, otherwise the rules R1..R6 are tried in
 * order. Each rule that fires fills one decide_row with a reason string
 * that quotes the numbers.
 */
#include "decide/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "spec/spec.h"
#include "util/limits.h"

const char *const decide_mech_names[] = {"whole",           "mig",  "mps", "time-slicing",
                                         "memory-fraction", "vgpu", NULL};

int decide_mech_shares_card(int mech)
{
    return mech == DECIDE_MPS || mech == DECIDE_TIME_SLICING || mech == DECIDE_MEMORY_FRACTION;
}

int decide_mech_has_memory_cap(int mech)
{
    return mech == DECIDE_MPS || mech == DECIDE_MEMORY_FRACTION;
}

/* ---- profiles ---- */

static const struct cat_profile *smallest_profile(const struct cat_model *model, double need,
                                                  int compute)
{
    const struct cat_profile *best = NULL;
    for (size_t i = 0; i < model->nprofiles; i++) {
        const struct cat_profile *p = &model->profiles[i];
        if (!cat_profile_plain(p) || p->memory_gib < need || p->compute < compute)
            continue;
        if (!best || p->mem_units < best->mem_units ||
            (p->mem_units == best->mem_units && p->compute < best->compute))
            best = p;
    }
    return best;
}

static double largest_profile_gib(const struct cat_model *model)
{
    double best = 0;
    for (size_t i = 0; i < model->nprofiles; i++)
        if (cat_profile_plain(&model->profiles[i]) && model->profiles[i].memory_gib > best)
            best = model->profiles[i].memory_gib;
    return best;
}

/* ---- decision helpers ---- */

struct wctx {
    const struct spec_tenant *t;
    const struct spec_workload *w;
    struct decide_row *row;
    unsigned long long full; /* models[i] full for this workload: bit i */
    double need;
    const char *sizing; /* "30 GiB + 8 GiB KV cache = 38 GiB" */
};

static void fail(struct decide__ctx *c, const struct wctx *x, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(struct decide__ctx *c, const struct wctx *x, const char *fmt, ...)
{
    const struct spec_loc *loc = &x->w->loc;
    va_list ap;
    va_start(ap, fmt);
    ts_diag_vaddf(c->diag, TS_SEV_ERROR, TS_INVALID, loc->file, loc->line, loc->column, loc->path,
                  fmt, ap);
    va_end(ap);
}

static void set(struct decide__ctx *c, struct wctx *x, int mech, const struct cat_model *model,
                const char *rule, const char *reason)
{
    x->row->mech = mech;
    x->row->model = model;
    x->row->rule = rule;
    x->row->reason = ts_arena_printf(c->arena, "%s: %s", rule, reason);
    x->row->security_boundary = !decide_mech_shares_card(mech); /* a shared card isolates no data */
}

/* Candidate models for x: its gpuModels in their order, else the fleet's
 * models cheapest first (only its gpuModel if set); none that is full for
 * x. NULL-terminated in out. */
static size_t candidates(struct decide__ctx *c, const struct wctx *x, const struct cat_model **out)
{
    size_t n = 0;
    for (size_t k = 0; k < x->w->ngpu_models; k++)
        for (size_t i = 0; i < c->nmodels; i++)
            if (cat_model_find(c->cat, x->w->gpu_models[k]) == c->models[i] && !(x->full >> i & 1))
                out[n++] = c->models[i];
    for (size_t i = 0; i < c->nmodels && !x->w->ngpu_models; i++)
        if ((!x->w->gpu_model || cat_model_find(c->cat, x->w->gpu_model) == c->models[i]) &&
            !(x->full >> i & 1))
            out[n++] = c->models[i];
    out[n] = NULL;
    return n;
}

/* The MIG candidate where the smallest fitting profile costs least (its
 * card share at the model's price; the first that fits when the workload
 * lists gpuModels); sets *profile. */
static const struct cat_model *mig_fit(struct decide__ctx *c, const struct wctx *x,
                                       const struct cat_profile **profile)
{
    const struct cat_model *cands[DECIDE_MODELS_MAX + 1], *best = NULL;
    double best_cost = 0;
    candidates(c, x, cands);
    for (size_t i = 0; cands[i]; i++) {
        if (!cands[i]->mig)
            continue;
        const struct cat_profile *p = smallest_profile(cands[i], x->need, x->w->compute_slices);
        double cost = p ? decide__model_price(c, cands[i]) * decide__profile_share(cands[i], p) : 0;
        if (p && (!best || cost < best_cost - 1e-9)) {
            best = cands[i];
            best_cost = cost;
            *profile = p;
        }
        if (best && x->w->ngpu_models)
            break; /* gpuModels: the first listed that fits */
    }
    return best;
}

static int any_mig(struct decide__ctx *c, const struct wctx *x)
{
    const struct cat_model *cands[DECIDE_MODELS_MAX + 1];
    candidates(c, x, cands);
    for (size_t i = 0; cands[i]; i++)
        if (cands[i]->mig)
            return 1;
    return 0;
}

/* The candidate where a replica's whole cards cost least (the first that
 * fits when the workload lists gpuModels); sets *gpus. */
static const struct cat_model *whole_fit(struct decide__ctx *c, const struct wctx *x, int *gpus)
{
    const struct cat_model *cands[DECIDE_MODELS_MAX + 1], *best = NULL;
    double best_cost = 0;
    candidates(c, x, cands);
    for (size_t i = 0; cands[i] && !(best && x->w->ngpu_models); i++) {
        int n = (int)ceil(x->need / cands[i]->memory_gib - 1e-9);
        if (n < 1)
            n = 1;
        if (n > x->w->gpus && !(x->w->gpus > 1 && n <= SPEC_REPLICA_GPUS_MAX))
            continue;
        n = n > x->w->gpus ? n : x->w->gpus;
        double cost = decide__model_price(c, cands[i]) * n;
        if (!best || cost < best_cost - 1e-9) {
            best = cands[i];
            best_cost = cost;
            *gpus = n;
        }
    }
    return best;
}

static void decide_mig(struct decide__ctx *c, struct wctx *x, const struct cat_model *model,
                       const struct cat_profile *p, const char *rule, const char *why)
{
    x->row->profile = p;
    x->row->gpus = 1;
    const char *compute = x->w->compute_slices > 1
                              ? ts_arena_printf(c->arena, " and %d compute slices",
                                                x->w->compute_slices)
                              : "";
    set(c, x, DECIDE_MIG, model, rule,
        ts_arena_printf(c->arena, "%s; %s%s -> %s on %s (%.2f GiB, %.2f GiB headroom)", why,
                        x->sizing, compute, p->name, model->name, p->memory_gib,
                        p->memory_gib - x->need));
}

static void decide_whole(struct decide__ctx *c, struct wctx *x, const char *rule, const char *why)
{
    int gpus = 1;
    const struct cat_model *model = whole_fit(c, x, &gpus);
    if (!model) {
        const struct cat_model *cands[DECIDE_MODELS_MAX + 1];
        candidates(c, x, cands);
        double biggest = 0;
        for (size_t i = 0; cands[i]; i++)
            biggest = cands[i]->memory_gib > biggest ? cands[i]->memory_gib : biggest;
        fail(c, x,
             "needs %.1f GiB, more than any card in the fleet (largest %.1f GiB); set "
             "gpus: %d to spread it over several GPUs",
             x->need, biggest, biggest > 0 ? (int)ceil(x->need / biggest) : 2);
        return;
    }
    x->row->gpus = gpus;
    set(c, x, DECIDE_WHOLE, model, rule,
        ts_arena_printf(c->arena, "%s; %s -> %d whole %s (%.1f GiB each)", why, x->sizing, gpus,
                        model->name, model->memory_gib));
}

/* A model for a sharing mechanism: the first candidate that holds the
 * need where a row of mech (and enforce) may run on some node (on every node
 * holding it when all_nodes); mech < 0: any candidate that holds the need. */
static const struct cat_model *share_model(struct decide__ctx *c, const struct wctx *x, int mech,
                                           int enforce, int all_nodes)
{
    const struct cat_model *cands[DECIDE_MODELS_MAX + 1];
    candidates(c, x, cands);
    for (size_t i = 0; cands[i]; i++) {
        if (x->need > cands[i]->memory_gib)
            continue;
        int held = 0, ok = mech < 0 ? 1 : decide__eligible_nodes(c, cands[i], mech, enforce, &held);
        if (ok > 0 && (!all_nodes || ok == held))
            return cands[i];
    }
    return NULL;
}

/* A sharing pool's memory cap: the need rounded up to a quarter GiB. */
static double cap_for(double need) { return ceil(need * 4.0 - 1e-9) / 4.0; }

static int default_sm_percent(double need, double card)
{
    int pct = (int)ceil(need / card * 100.0 / 5.0 - 1e-9) * 5;
    return pct < 5 ? 5 : pct > 100 ? 100 : pct;
}

int decide_mps_sm_percent(const struct decide_row *r, const struct cat_model *model)
{
    return r->workload->sm_percent ? r->workload->sm_percent
                                   : default_sm_percent(r->need_gib, model->memory_gib);
}

static void decide_mps(struct decide__ctx *c, struct wctx *x, const char *why)
{
    const struct cat_model *model = share_model(c, x, DECIDE_MPS, 0, 0);
    if (!model) {
        fail(c, x,
             "MPS needs a node that allows it (mps: true) with a card of at least %.1f "
             "GiB; none in the fleet",
             x->need);
        return;
    }
    x->row->gpus = 1;
    x->row->cap_gib = cap_for(x->need);
    x->row->sm_percent = decide_mps_sm_percent(x->row, model);
    set(c, x, DECIDE_MPS, model, "R4",
        ts_arena_printf(c->arena,
                        "%s shares one MPS server per tenant; %s -> %g GiB pinned-"
                        "memory cap, %d%% of SMs on %s (not a security boundary)",
                        why, x->sizing, x->row->cap_gib, x->row->sm_percent, model->name));
}

/* The SM share of a row the shim holds (time-sliced, or a fraction whose cap
 * the shim enforces): the spec's smPercent, which render writes into the
 * limit file, and the words the reason adds ("" without one). Elsewhere no
 * shim runs, so an smPercent is said to go unenforced. */
static const char *shim_sm_share(struct decide__ctx *c, struct wctx *x, int shimmed)
{
    int pct = x->w->sm_percent;
    x->row->sm_percent = shimmed ? pct : 0;
    if (!pct)
        return "";
    if (!shimmed)
        return ts_arena_printf(c->arena,
                               "; smPercent %d is not enforced (no shim runs where the "
                               "driver enforces the cap)",
                               pct);
    return ts_arena_printf(c->arena,
                           "; smPercent %d: tessera's shim holds it to %d%% of the card's time, "
                           "throughput shaping between tenants that accept time-slicing, not "
                           "latency isolation",
                           pct, pct);
}

/* Who enforces a fraction's cap on model, in words that are true of the
 * fleet: the driver when every node holding model runs CUDA 13.4+ (so every
 * placement is driver-enforced), else tessera's shim, whose limit render
 * writes for every replica. */
static const char *fraction_enforcer(struct decide__ctx *c, const struct cat_model *model,
                                     int enforce)
{
    if (enforce == DECIDE_ENFORCE_DRIVER)
        return ts_arena_printf(c->arena, "the driver (every node with %s runs CUDA 13.4+)",
                               model->name);
    int held = 0;
    int new_driver = decide__eligible_nodes(c, model, DECIDE_MEMORY_FRACTION, DECIDE_ENFORCE_DRIVER,
                                            &held);
    return ts_arena_printf(c->arena,
                           "tessera's shim (%d of %d nodes with %s run%s CUDA below 13.4)",
                           held - new_driver, held, model->name, held - new_driver == 1 ? "s" : "");
}

static void decide_fraction(struct decide__ctx *c, struct wctx *x, const char *rule,
                            const char *why)
{
    const struct cat_model *model = share_model(c, x, DECIDE_MEMORY_FRACTION, DECIDE_ENFORCE_DRIVER,
                                                1);
    int enforce = DECIDE_ENFORCE_DRIVER;
    if (!model) {
        model = share_model(c, x, -1, 0, 0);
        enforce = DECIDE_ENFORCE_SHIM;
    }
    if (!model) {
        fail(c, x,
             "needs %.1f GiB, more than any card in the fleet; lower "
             "memoryHighWaterGiB or add a larger card",
             x->need);
        return;
    }
    x->row->gpus = 1;
    x->row->cap_gib = cap_for(x->need);
    x->row->enforce = enforce;
    set(c, x, DECIDE_MEMORY_FRACTION, model, rule,
        ts_arena_printf(c->arena,
                        "%s; %s -> %g GiB memory-enforced fraction of %s, enforced "
                        "by %s (not a security boundary)%s",
                        why, x->sizing, x->row->cap_gib, model->name,
                        fraction_enforcer(c, model, enforce),
                        shim_sm_share(c, x, enforce == DECIDE_ENFORCE_SHIM)));
}

static void decide_timeslice(struct decide__ctx *c, struct wctx *x, const char *why)
{
    const struct cat_model *model = share_model(c, x, -1, 0, 0);
    if (!model) {
        fail(c, x, "needs %.1f GiB, more than any card in the fleet", x->need);
        return;
    }
    x->row->gpus = 1;
    x->row->cap_gib = cap_for(x->need);
    set(c, x, DECIDE_TIME_SLICING, model, "R6",
        ts_arena_printf(c->arena,
                        "%s time-slices: no isolation and no guarantee (an SM share shapes "
                        "throughput, not latency: an SLA needs MIG or MPS); %s%s",
                        why, x->sizing, shim_sm_share(c, x, 1)));
}

/* A model for x's vGPU on a vGPU-licensed node: MIG-backed, with the
 * smallest fitting profile (sets *profile). NULL when no licensed node has
 * a MIG card with a profile that holds it. A vGPU on a card without MIG
 * would be a time-sliced type sized to the whole card: render names vGPU
 * types only MIG-backed, so such a VM gets the card by pass-through. */
static const struct cat_model *vgpu_fit(struct decide__ctx *c, const struct wctx *x,
                                        const struct cat_profile **profile)
{
    const struct cat_model *cands[DECIDE_MODELS_MAX + 1];
    candidates(c, x, cands);
    for (size_t i = 0; cands[i] && x->w->gpus == 1; i++) {
        if (!cands[i]->mig || !decide__eligible_nodes(c, cands[i], DECIDE_VGPU, 0, NULL))
            continue;
        if ((*profile = smallest_profile(cands[i], x->need, x->w->compute_slices)))
            return cands[i];
    }
    return NULL;
}

/* Why a VM gets no vGPU, true of the fleet. */
static const char *no_vgpu_reason(struct decide__ctx *c, const struct wctx *x)
{
    if (!decide__fleet_licensed(c))
        return "no node is vGPU-licensed";
    if (x->w->gpus > 1)
        return ts_arena_printf(c->arena, "a vGPU is one GPU and it needs %d per replica",
                               x->w->gpus);
    return ts_arena_printf(c->arena,
                           "no vGPU-licensed node has a MIG %s with a profile that holds %g GiB "
                           "(a vGPU is MIG-backed here; without MIG it would be the whole card)",
                           x->w->gpu_model     ? x->w->gpu_model
                           : x->w->ngpu_models ? "card of its gpuModels"
                                               : "card",
                           x->need);
}

static void decide_vm(struct decide__ctx *c, struct wctx *x)
{
    const struct cat_profile *p = NULL;
    const struct cat_model *model = vgpu_fit(c, x, &p);
    if (model) {
        decide_mig(c, x, model, p, "R1", "runs in a VM on a vGPU-licensed node: MIG-backed vGPU");
        x->row->mech = DECIDE_VGPU;
        return;
    }
    const char *why = no_vgpu_reason(c, x);
    if (x->w->isolation == SPEC_ISO_VGPU) {
        fail(c, x, "isolation: vgpu was requested but %s", why);
        return;
    }
    /* A MIG instance reaches a VM only as a MIG-backed vGPU (a licensed
     * node); without one the VM gets what PCI pass-through gives: whole
     * cards, the device render names (10DE:<PCI device ID>). */
    decide_whole(c, x, "R1",
                 ts_arena_printf(c->arena,
                                 "runs in a VM and %s: the whole GPU is passed through (a MIG "
                                 "instance reaches a VM only as a MIG-backed vGPU)",
                                 why));
}

/* Why R3 applies, or NULL. */
static const char *boundary_reason(struct decide__ctx *c, const struct wctx *x)
{
    const char *why = NULL;
    if (x->w->trust == SPEC_TRUST_UNTRUSTED)
        why = "untrusted data";
    else if (x->t->data_class != SPEC_DATA_INTERNAL)
        why = ts_arena_printf(c->arena, "%s data", spec_data_class_names[x->t->data_class]);
    else if (x->t->contract == SPEC_CONTRACT_DEDICATED)
        why = "a dedicated-compute contract";
    else if (x->t->contract == SPEC_CONTRACT_ISOLATED)
        why = "an isolated (SLA) contract";
    if (why && x->w->p99_ms > 0)
        why = ts_arena_printf(c->arena, "%s with a %g ms p99", why, x->w->p99_ms);
    return why;
}

static int needs_boundary_for_data(const struct wctx *x)
{
    return x->w->trust == SPEC_TRUST_UNTRUSTED || x->t->data_class != SPEC_DATA_INTERNAL ||
           x->t->contract == SPEC_CONTRACT_DEDICATED;
}

/* Why x gets no MIG, true of the fleet: its gpuModel, or the fleet. */
static const char *no_mig_phrase(const struct decide__ctx *c, const struct wctx *x)
{
    for (size_t i = 0; (x->w->gpu_model || x->w->ngpu_models) && i < c->nmodels; i++)
        if (c->models[i]->mig)
            return "its gpuModel(s) not MIG-capable";
    return "no MIG-capable card in the fleet";
}

static void decide_boundary(struct decide__ctx *c, struct wctx *x, const char *why)
{
    const struct cat_profile *p = NULL;
    const struct cat_model *model = mig_fit(c, x, &p);
    if (model) {
        decide_mig(c, x, model, p, "R3",
                   ts_arena_printf(c->arena, "%s needs a hardware boundary", why));
        return;
    }
    if (any_mig(c, x)) {
        decide_whole(c, x, "R2",
                     ts_arena_printf(c->arena,
                                     "%s needs a hardware boundary and "
                                     "no MIG profile is large enough",
                                     why));
        return;
    }
    if (needs_boundary_for_data(x)) {
        decide_whole(c, x, "R3",
                     ts_arena_printf(c->arena, "%s needs a hardware boundary; %s, so a whole GPU",
                                     why, no_mig_phrase(c, x)));
        return;
    }
    decide_fraction(c, x, "R3",
                    ts_arena_printf(c->arena,
                                    "%s and %s: SLA memory is protected by an "
                                    "enforced fraction",
                                    why, no_mig_phrase(c, x)));
}

static int big_for_mig(struct decide__ctx *c, const struct wctx *x)
{
    const struct cat_model *cands[DECIDE_MODELS_MAX + 1];
    candidates(c, x, cands);
    double largest = 0;
    int mig = 0;
    for (size_t i = 0; cands[i]; i++)
        if (cands[i]->mig) {
            mig = 1;
            double g = largest_profile_gib(cands[i]);
            largest = g > largest ? g : largest;
        }
    return mig && x->need > largest;
}

/* R2's trigger text, or NULL. */
static const char *whole_reason(struct decide__ctx *c, const struct wctx *x)
{
    const struct spec_workload *w = x->w;
    if (w->gpus > 1)
        return ts_arena_printf(c->arena, "needs %d GPUs per replica%s", w->gpus,
                               w->peer_to_peer ? " with peer-to-peer" : "");
    if (w->kind == SPEC_WK_FINE_TUNE || w->kind == SPEC_WK_TRAINING)
        return ts_arena_printf(c->arena, "%s needs whole-card bandwidth",
                               spec_wkind_names[w->kind]);
    if (big_for_mig(c, x))
        return "memory above the largest MIG profile";
    return NULL;
}

/* The mechanism an isolation request names; -1 for auto and CUDA streams. */
static int requested_mech(int iso)
{
    switch (iso) {
    case SPEC_ISO_WHOLE: return DECIDE_WHOLE;
    case SPEC_ISO_MIG: return DECIDE_MIG;
    case SPEC_ISO_MPS: return DECIDE_MPS;
    case SPEC_ISO_TIME_SLICING: return DECIDE_TIME_SLICING;
    case SPEC_ISO_MEMORY_FRACTION: return DECIDE_MEMORY_FRACTION;
    case SPEC_ISO_VGPU: return DECIDE_VGPU;
    default: return -1;
    }
}

/* 1 for a workload that runs in a VM (vm: true, or a tenant of contract vm). */
static int is_vm(const struct wctx *x) { return x->w->vm || x->t->contract == SPEC_CONTRACT_VM; }

/* An explicit isolation request: check it against the contract (the
 * spec's rule; a loaded spec has passed it already). */
static const char *forbid_request(const struct wctx *x)
{
    if (!decide_mech_shares_card(requested_mech(x->w->isolation)))
        return NULL;
    return spec_isolation_forbidden(x->t, x->w);
}

static void decide_requested(struct decide__ctx *c, struct wctx *x)
{
    const char *no = forbid_request(x);
    const char *iso = spec_isolation_names[x->w->isolation];
    if (no) {
        fail(c, x, "isolation: %s is not allowed for tenant '%s': %s", iso, x->t->name, no);
        return;
    }
    if (is_vm(x) && x->w->isolation != SPEC_ISO_WHOLE && x->w->isolation != SPEC_ISO_VGPU) {
        fail(c, x,
             "isolation: %s cannot be given to a VM: a VM gets whole GPUs (PCI pass-through) "
             "or a vGPU (isolation: whole or vgpu)",
             iso);
        return;
    }
    const char *why = ts_arena_printf(c->arena, "isolation: %s was requested", iso);
    const struct cat_profile *p = NULL;
    const struct cat_model *model;
    switch (x->w->isolation) {
    case SPEC_ISO_WHOLE: decide_whole(c, x, "R2", why); break;
    case SPEC_ISO_MIG:
        model = mig_fit(c, x, &p);
        if (model)
            decide_mig(c, x, model, p, "R3", why);
        else
            fail(c, x,
                 "isolation: mig was requested but no MIG-capable card in the fleet has a "
                 "profile with %.1f GiB%s",
                 x->need,
                 x->w->gpu_model || x->w->ngpu_models ? " (gpuModel or gpuModels limits the choice)"
                                                      : "");
        break;
    case SPEC_ISO_MPS: decide_mps(c, x, why); break;
    case SPEC_ISO_MEMORY_FRACTION: decide_fraction(c, x, "R5", why); break;
    case SPEC_ISO_TIME_SLICING: decide_timeslice(c, x, why); break;
    case SPEC_ISO_VGPU: decide_vm(c, x); break;
    default: break;
    }
}

static void decide_auto(struct decide__ctx *c, struct wctx *x)
{
    const struct spec_workload *w = x->w;
    const char *why;
    if (is_vm(x))
        decide_vm(c, x);
    else if ((why = whole_reason(c, x)))
        decide_whole(c, x, "R2", why);
    else if ((why = boundary_reason(c, x)))
        decide_boundary(c, x, why);
    else if (w->p99_ms > 0 && !w->best_effort)
        decide_mps(
            c, x,
            ts_arena_printf(c->arena, "trusted latency-sensitive work (%g ms p99)", w->p99_ms));
    else if (!w->best_effort && x->t->contract != SPEC_CONTRACT_BEST_EFFORT &&
             w->kind != SPEC_WK_DEV)
        decide_fraction(c, x, "R5", "trusted work without a latency target: OOM is the main risk");
    else
        decide_timeslice(
            c, x, ts_arena_printf(c->arena, "best-effort %s work", spec_wkind_names[w->kind]));
}

static void decide_one(struct decide__ctx *c, struct wctx *x)
{
    const struct spec_workload *w = x->w;
    x->need = w->memory_gib + w->kv_cache_gib;
    x->row->need_gib = x->need;
    x->sizing = w->kv_cache_gib > 0 ? ts_arena_printf(c->arena, "%g GiB + %g GiB KV cache = %g GiB",
                                                      w->memory_gib, w->kv_cache_gib, x->need)
                                    : ts_arena_printf(c->arena, "%g GiB", x->need);
    if (w->gpu_model && !cat_model_find(c->cat, w->gpu_model)) {
        fail(c, x, "gpuModel: unknown GPU model '%s'", w->gpu_model);
        return;
    }
    if (w->gpu_model && w->ngpu_models) {
        fail(c, x, "gpuModel and gpuModels: set one (gpuModel is gpuModels with one entry)");
        return;
    }
    for (size_t k = 0; k < w->ngpu_models; k++)
        if (!cat_model_find(c->cat, w->gpu_models[k])) {
            fail(c, x, "gpuModels[%zu]: unknown GPU model '%s'", k, w->gpu_models[k]);
            return;
        }
    const struct cat_model *cands[DECIDE_MODELS_MAX + 1];
    if (candidates(c, x, cands) == 0 && !x->full) {
        if (w->gpu_model)
            fail(c, x, "gpuModel: no node in the fleet has a '%s'", w->gpu_model);
        else
            fail(c, x, "gpuModels: no node in the fleet has any of the %zu models listed",
                 w->ngpu_models);
        return;
    }
    if (w->isolation == SPEC_ISO_CUDA_STREAMS) {
        fail(c, x,
             "isolation: CUDA streams are not a tenancy mechanism (no memory or fault "
             "isolation, one context); use mig for a boundary or mps for trusted sharing");
        return;
    }
    if (w->isolation != SPEC_ISO_AUTO)
        decide_requested(c, x);
    else
        decide_auto(c, x);
}

static void decide_spilling(struct decide__ctx *c, struct wctx *x)
{
    const struct decide_row start = *x->row;
    int before = c->diag->count + c->diag->dropped;
    decide_one(c, x);
    if (c->diag->count + c->diag->dropped != before || decide__fits_capacity(c, x->row))
        goto reserve;
    struct ts_diag *real = c->diag, *scratch = calloc(1, sizeof(*scratch));
    const struct decide_row first = *x->row;
    const char *full = NULL;
    while (scratch) {
        full = full ? ts_arena_printf(c->arena, "%s, %s", full, x->row->model->name)
                    : x->row->model->name;
        x->full |= 1ull << decide__model_slot(c, x->row->model);
        *x->row = start;
        const struct cat_model *cands[DECIDE_MODELS_MAX + 1];
        if (candidates(c, x, cands) == 0) {
            *x->row = first;
            break;
        }
        memset(scratch, 0, sizeof(*scratch));
        c->diag = scratch;
        decide_one(c, x);
        c->diag = real;
        if (scratch->count + scratch->dropped) {
            *x->row = first;
            break;
        }
        if (decide__fits_capacity(c, x->row)) {
            x->row->reason = ts_arena_printf(c->arena, "%s; spilled from %s (full)", x->row->reason,
                                             full);
            break;
        }
    }
    free(scratch);
reserve:
    decide__reserve(c, x->row);
}

/* Workloads naming one pool must share a mechanism and trust each other. */
static void check_pools(struct decide__ctx *c, const struct decide_result *r)
{
    for (size_t i = 0; i < r->nrows; i++) {
        const struct decide_row *a = &r->rows[i];
        if (!a->workload->pool)
            continue;
        struct wctx x = {.t = a->tenant, .w = a->workload};
        if (!decide_mech_shares_card(a->mech)) {
            fail(c, &x, "pool: '%s' is a sharing pool, but this workload gets %s (%s)",
                 a->workload->pool, decide_mech_names[a->mech], a->rule);
            continue;
        }
        for (size_t j = 0; j < i; j++) {
            const struct decide_row *b = &r->rows[j];
            if (!b->workload->pool || strcmp(a->workload->pool, b->workload->pool) != 0)
                continue;
            if (!spec_tenants_trust(c->m, a->tenant->name, b->tenant->name))
                fail(c, &x,
                     "pool: tenants '%s' and '%s' do not trust each other, so they cannot "
                     "share pool '%s' (each must list the other in trusts)",
                     a->tenant->name, b->tenant->name, a->workload->pool);
            else if (a->mech != b->mech || a->model != b->model)
                fail(c, &x,
                     "pool: '%s' mixes %s on %s with %s on %s (%s/%s); one pool is one "
                     "mechanism on one card model",
                     a->workload->pool, decide_mech_names[a->mech], a->model->name,
                     decide_mech_names[b->mech], b->model->name, b->tenant->name,
                     b->workload->name);
            else
                continue;
            break;
        }
    }
}

/* 1 if diag has an error at path or inside it (path.field, path[i]): the
 * loader found it wrong, so decide does not judge it again. */
static int named_at(const struct ts_diag *diag, const char *path)
{
    size_t n = path ? strlen(path) : 0;
    for (int i = 0; n && i < diag->count; i++) {
        const struct ts_error *e = &diag->items[i];
        char next = e->path[strlen(e->path) < n ? 0 : n];
        if (e->severity == TS_SEV_ERROR && strncmp(e->path, path, n) == 0 &&
            (next == '\0' || next == '.' || next == '['))
            return 1;
    }
    return 0;
}

/* 1 if every error in diag is inside a Tenant or PriceBook document: the
 * fleet and the model's shape are sound, so the rest can be decided. */
static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int only_tenants_named(const struct ts_diag *diag)
{
    for (int i = 0; i < diag->count; i++) {
        const char *path = diag->items[i].path;
        if (diag->items[i].severity == TS_SEV_ERROR && !starts_with(path, "Tenant/") &&
            !starts_with(path, "PriceBook/"))
            return 0;
    }
    return diag->dropped == 0;
}

ts_status decide_run(const struct spec_model *m, const struct cat_catalog *cat,
                     struct decide_result **out, struct ts_diag *diag)
{
    struct decide_result *r = calloc(1, sizeof(*r));
    if (!r)
        return TS_NOMEM;
    ts_arena_init(&r->arena);
    struct decide__ctx c = {.m = m, .cat = cat, .arena = &r->arena, .diag = diag};
    int before = ts_diag_errors(diag); /* the loader's, when it reports on */
    decide__check_fleet(&c);
    int fleet_ok = ts_diag_errors(diag) == before;
    decide__order_by_cost(&c);
    decide__groups_init(&c);
    size_t total = 0;
    for (size_t i = 0; i < m->ntenants; i++)
        total += m->tenants[i].nworkloads;
    r->rows = ts_arena_array(&r->arena, total ? total : 1, sizeof(*r->rows));
    /* every tenant's workloads, so one run reports every workload's problem */
    for (size_t i = 0; r->rows && fleet_ok && i < m->ntenants; i++)
        for (size_t j = 0; j < m->tenants[i].nworkloads; j++) {
            if (named_at(diag, m->tenants[i].workloads[j].loc.path))
                continue;
            struct decide_row *row = &r->rows[r->nrows];
            row->tenant = &m->tenants[i];
            row->workload = &m->tenants[i].workloads[j];
            row->index = (int)r->nrows++;
            struct wctx x = {.t = row->tenant, .w = row->workload, .row = row};
            decide_spilling(&c, &x);
        }
    if (r->rows && ts_diag_errors(diag) == before)
        check_pools(&c, r);
    if (!r->rows || ts_diag_errors(diag) > 0) {
        ts_status st = r->rows ? TS_INVALID : TS_NOMEM;
        decide_free(r);
        return st;
    }
    *out = r;
    return TS_OK;
}

void decide_report_rest(const struct spec_model *m, const struct cat_catalog *cat,
                        struct ts_diag *diag)
{
    struct decide_result *r = NULL;
    if (m->fleet && only_tenants_named(diag) && decide_run(m, cat, &r, diag) == TS_OK)
        decide_free(r);
}

void decide_free(struct decide_result *r)
{
    if (!r)
        return;
    ts_arena_free(&r->arena);
    free(r);
}
