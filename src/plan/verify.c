/*
 * verify.c - plan_verify: re-check a finished plan against the hard rules,
 * independently of how it was built: MIG geometries valid on the board,
 * sharing caps within the card, only mutually trusting tenants on a shared
 * card, replicas spread as asked, every replica placed exactly once.
 * Tests and the fuzz target call it on every plan they make.
 */
#include "plan/internal.h"

#include <string.h>

static ts_status check_mig(const struct plan_gpu *g, struct ts_error *err)
{
    const struct cat_profile *profs[PLAN_MAX_PER_CARD];
    int starts[PLAN_MAX_PER_CARD];
    if (g->ninst > PLAN_MAX_PER_CARD)
        return ts_err(err, TS_INTERNAL, "%s gpu %d: too many instances", g->node->name, g->index);
    for (size_t k = 0; k < g->ninst; k++) {
        profs[k] = g->inst[k].profile;
        starts[k] = g->inst[k].start;
        if (!profs[k])
            return ts_err(err, TS_INTERNAL, "%s gpu %d: MIG card holds a non-MIG instance",
                          g->node->name, g->index);
    }
    struct ts_error e;
    if (cat_geometry_check(g->model, profs, starts, g->ninst, &e) != TS_OK)
        return ts_err(err, TS_INTERNAL, "%s gpu %d: %s", g->node->name, g->index, e.msg);
    return TS_OK;
}

static ts_status check_shared(const struct spec_model *m, const struct plan_gpu *g,
                              struct ts_error *err)
{
    double mem = 0;
    int sm = 0;
    for (size_t k = 0; k < g->ninst; k++) {
        const struct plan_inst *a = &g->inst[k];
        if (g->mode != PLAN_WHOLE || !a->guest)
            mem += a->mem_gib;
        sm += g->mode == PLAN_MPS ? a->sm_percent : 0;
        for (size_t j = 0; j < k; j++)
            if (!spec_tenants_trust(m, a->row->tenant->name, g->inst[j].row->tenant->name))
                return ts_err(err, TS_INTERNAL,
                              "%s gpu %d: tenants %s and %s share it without "
                              "trusting each other",
                              g->node->name, g->index, a->row->tenant->name,
                              g->inst[j].row->tenant->name);
    }
    if (mem > g->model->memory_gib + 1e-6)
        return ts_err(err, TS_INTERNAL, "%s gpu %d: memory caps %.2f GiB exceed the card's %.2f",
                      g->node->name, g->index, mem, g->model->memory_gib);
    if (sm > 100)
        return ts_err(err, TS_INTERNAL, "%s gpu %d: MPS shares add up to %d%%", g->node->name,
                      g->index, sm);
    return TS_OK;
}

/* Each replica (and GPU part) placed exactly once, spread as asked. */
static ts_status check_row(const struct plan *p, const struct decide_row *r, struct ts_error *err)
{
    int parts = r->profile ? 1 : (r->mech == DECIDE_WHOLE || r->mech == DECIDE_VGPU) ? r->gpus : 1;
    for (int rep = 0; rep < r->workload->replicas; rep++) {
        int found = 0;
        for (size_t i = 0; i < p->ngpus; i++)
            for (size_t k = 0; k < p->gpus[i].ninst; k++) {
                const struct plan_inst *in = &p->gpus[i].inst[k];
                if (in->row != r || in->replica != rep)
                    continue;
                found++;
                for (size_t j = 0; j < p->ngpus && r->workload->spread != SPEC_SPREAD_NONE; j++)
                    for (size_t l = 0; l < p->gpus[j].ninst; l++) {
                        const struct plan_inst *o = &p->gpus[j].inst[l];
                        int same = r->workload->spread == SPEC_SPREAD_NODE
                                       ? p->gpus[j].node == p->gpus[i].node
                                       : j == i;
                        if (o->row == r && o->replica != rep && same)
                            return ts_err(err, TS_INTERNAL,
                                          "%s/%s: replicas %d and %d share a "
                                          "%s",
                                          r->tenant->name, r->workload->name, rep + 1,
                                          o->replica + 1,
                                          r->workload->spread == SPEC_SPREAD_NODE ? "node" : "GPU");
                    }
            }
        if (found != parts)
            return ts_err(err, TS_INTERNAL, "%s/%s replica %d placed %d times (expected %d)",
                          r->tenant->name, r->workload->name, rep + 1, found, parts);
    }
    return TS_OK;
}

ts_status plan_verify(const struct plan *p, struct ts_error *err)
{
    for (size_t i = 0; i < p->ngpus; i++) {
        const struct plan_gpu *g = &p->gpus[i];
        ts_status st = TS_OK;
        if (g->mode == PLAN_MIG)
            st = check_mig(g, err);
        else if (g->mode != PLAN_FREE && g->mode != PLAN_VGPU)
            st = check_shared(p->model, g, err);
        else if (g->mode == PLAN_FREE && g->ninst)
            st = ts_err(err, TS_INTERNAL, "%s gpu %d: free card holds instances", g->node->name,
                        g->index);
        if (st)
            return st;
    }
    for (size_t i = 0; i < p->decisions->nrows; i++) {
        ts_status st = check_row(p, &p->decisions->rows[i], err);
        if (st)
            return st;
    }
    return TS_OK;
}
