/*
 * pin.c - a workload decided on one card model: the alternatives the cost
 * objective chooses among (plan/cost.c), and the decisions again with some
 * workloads' models pinned. decide picks each workload's model alone (the
 * cheapest share first); to decide a workload on another model, decide
 * runs on a copy of the spec in which that workload names the model as its
 * gpuModel, so mechanism, profile, GPUs and reason stay decide's own. Rows
 * handed out point back into the caller's spec.
 */
#include "plan/internal.h"

#include <stdlib.h>
#include <string.h>

/* 1 when the cost objective may move r to another model: no gpuModel, no
 * named pool (one pool is one model, chosen together). */
int plan__movable(const struct decide_row *r)
{
    return !r->workload->gpu_model && !r->workload->pool;
}

/* 1 when gpuModels (if any) lists model. */
static int listed(const struct cat_catalog *cat, const struct spec_workload *w,
                  const struct cat_model *model)
{
    for (size_t k = 0; k < w->ngpu_models; k++)
        if (cat_model_find(cat, w->gpu_models[k]) == model)
            return 1;
    return w->ngpu_models == 0;
}

/* 1 when a (r decided on another model) isolates as well as r: the same
 * mechanism (a fraction no less enforced), or, for a workload whose
 * isolation is automatic, a whole card (the stronger boundary) for a MIG
 * instance, and (not a VM) for a memory fraction, or a MIG instance for a
 * whole card or a fraction. decide gives a workload MIG on a model only
 * where its rules accept MIG for it (R3's boundary, a profile large
 * enough), so r's whole card or fraction there was for want of MIG room
 * when r was decided: the workloads decided before it took the MIG cards
 * (issue 30: without it, the bound was above a plan decide itself lays out
 * when one of those workloads is pinned elsewhere). */
static int admissible(const struct decide_row *r, const struct decide_row *a)
{
    const struct spec_workload *w = r->workload;
    if (a->mech == r->mech)
        return a->mech != DECIDE_MEMORY_FRACTION || a->enforce <= r->enforce;
    if (w->isolation != SPEC_ISO_AUTO)
        return 0;
    if (r->mech == DECIDE_MIG && a->mech == DECIDE_WHOLE)
        return 1;
    if (w->vm || r->tenant->contract == SPEC_CONTRACT_VM)
        return 0;
    int r_whole = r->mech == DECIDE_WHOLE && !r->profile;
    int r_fraction = r->mech == DECIDE_MEMORY_FRACTION;
    if (a->mech == DECIDE_WHOLE && !a->profile)
        return r_fraction;
    return a->mech == DECIDE_MIG && (r_whole || r_fraction);
}

/* r's workload decided alone on model into *out (reason copied to arena):
 * 1, or 0 when decide refuses it there or it isolates less. */
int plan__decide_on(const struct spec_model *m, const struct cat_catalog *cat,
                    const struct decide_row *r, const struct cat_model *model,
                    struct ts_arena *arena, struct decide_row *out)
{
    if (!listed(cat, r->workload, model))
        return 0;
    struct spec_workload w = *r->workload;
    w.gpu_model = model->name;
    w.gpu_models = NULL;
    w.ngpu_models = 0;
    struct spec_tenant t = *r->tenant;
    t.workloads = &w;
    t.nworkloads = 1;
    struct spec_model one = {.fleet = m->fleet, .tenants = &t, .ntenants = 1};
    one.pricebook = m->pricebook;
    struct ts_diag *diag = calloc(1, sizeof(*diag));
    struct decide_result *d = NULL;
    int ok = diag && decide_run(&one, cat, &d, diag) == TS_OK && d->nrows == 1 &&
             d->rows[0].model == model && admissible(r, &d->rows[0]);
    if (ok) {
        *out = d->rows[0];
        out->tenant = r->tenant;
        out->workload = r->workload;
        out->index = r->index;
        out->reason = ts_arena_strdup(arena, d->rows[0].reason);
        ok = out->reason != NULL;
    }
    decide_free(d);
    free(diag);
    return ok;
}

int plan_decide_on(const struct spec_model *m, const struct cat_catalog *cat,
                   const struct decide_row *r, const struct cat_model *model,
                   struct ts_arena *arena, struct decide_row *out)
{
    return plan__decide_on(m, cat, r, model, arena, out);
}

/* A copy of m's tenants and workloads with row i's workload pinned to
 * pins[i] (NULL: as it is); *wl receives the workloads block to free. */
static struct spec_tenant *pinned_copy(const struct spec_model *m,
                                       const struct cat_model *const *pins,
                                       struct spec_workload **wl)
{
    size_t n = 0;
    for (size_t i = 0; i < m->ntenants; i++)
        n += m->tenants[i].nworkloads;
    struct spec_tenant *t = calloc(m->ntenants + 1, sizeof(*t));
    *wl = calloc(n + 1, sizeof(**wl));
    if (!t || !*wl) {
        free(t);
        free(*wl);
        return NULL;
    }
    size_t row = 0;
    for (size_t i = 0; i < m->ntenants; i++) {
        t[i] = m->tenants[i];
        t[i].workloads = *wl + row;
        for (size_t j = 0; j < m->tenants[i].nworkloads; j++, row++) {
            (*wl)[row] = m->tenants[i].workloads[j];
            if (!pins[row])
                continue;
            (*wl)[row].gpu_model = pins[row]->name;
            (*wl)[row].gpu_models = NULL;
            (*wl)[row].ngpu_models = 0;
        }
    }
    return t;
}

ts_status plan__decide_pinned(const struct spec_model *m, const struct cat_catalog *cat,
                              const struct cat_model *const *pins, const struct decide_result *was,
                              struct decide_result **out, struct ts_diag *diag)
{
    struct spec_workload *wl = NULL;
    struct spec_tenant *t = pinned_copy(m, pins, &wl);
    if (!t)
        return TS_NOMEM;
    struct spec_model copy = {.fleet = m->fleet, .tenants = t, .ntenants = m->ntenants};
    copy.pricebook = m->pricebook;
    ts_status st = decide_run(&copy, cat, out, diag);
    for (size_t i = 0; st == TS_OK && i < (*out)->nrows; i++) {
        struct decide_row *r = &(*out)->rows[i];
        size_t ti = (size_t)(r->tenant - t), wi = (size_t)(r->workload - t[ti].workloads);
        r->tenant = &m->tenants[ti];
        r->workload = &m->tenants[ti].workloads[wi];
        if (pins[i] && i < was->nrows && was->rows[i].model != r->model && r->reason)
            r->reason = ts_arena_printf(&(*out)->arena,
                                        "%s; %s chosen for the fleet's least cost (PriceBook)",
                                        r->reason, r->model->name);
    }
    free(t);
    free(wl);
    return st;
}
