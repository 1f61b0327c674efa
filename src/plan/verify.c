/*
 * verify.c - plan_verify: re-check a finished plan against the hard rules,
 * independently of how it was built: MIG geometries valid on the board,
 * sharing caps within the card, only mutually trusting tenants on a shared
 * card, replicas spread as asked, every replica placed exactly once, each
 * MIG instance of a profile that holds its workload (only an instance a
 * replan keeps as it runs, marked held, may be smaller), a replica of
 * several GPUs on one node.
 * Tests and the fuzz target call it on every plan they make.
 */
#include "plan/internal.h"

#include <stdlib.h>
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

int plan_profile_holds(const struct cat_profile *pr, const struct decide_row *r)
{
    return pr->memory_gib + 1e-9 >= r->need_gib && pr->compute >= r->workload->compute_slices;
}

/* A MIG instance under its row's need, unless held (a kept running one). */
static ts_status check_size(const struct plan_gpu *g, const struct plan_inst *in,
                            struct ts_error *err)
{
    if (!in->profile || in->held || plan_profile_holds(in->profile, in->row))
        return TS_OK;
    return ts_err(err, TS_INTERNAL,
                  "%s gpu %d: %s/%s r%d: %s (%.2f GiB, compute %d) is under its need "
                  "(%.2f GiB, compute %d)",
                  g->node->name, g->index, in->row->tenant->name, in->row->workload->name,
                  in->replica, in->profile->name, in->profile->memory_gib, in->profile->compute,
                  in->row->need_gib, in->row->workload->compute_slices);
}

/* One instance of a row: where (a card, or for node spread its node) and
 * which replica. */
struct seen {
    size_t where;
    int replica;
    size_t node; /* the card's node: a replica's GPUs are one pod's */
};

static int cmp_seen(const void *a, const void *b)
{
    const struct seen *x = a, *y = b;
    if (x->where != y->where)
        return x->where < y->where ? -1 : 1;
    return (x->replica > y->replica) - (x->replica < y->replica);
}

static int cmp_replica(const void *a, const void *b)
{
    const struct seen *x = a, *y = b;
    if (x->replica != y->replica)
        return (x->replica > y->replica) - (x->replica < y->replica);
    return (x->node > y->node) - (x->node < y->node);
}

/* A replica of several GPUs on one node (one pod): sorted by replica and
 * node, a replica on two nodes has two neighbours that differ in node. */
static ts_status check_one_node(const struct decide_row *r, struct seen *s, size_t n,
                                struct ts_error *err)
{
    qsort(s, n, sizeof(*s), cmp_replica);
    for (size_t k = 1; k < n; k++)
        if (s[k].replica == s[k - 1].replica && s[k].node != s[k - 1].node)
            return ts_err(err, TS_INTERNAL, "%s/%s replica r%d: its GPUs are on two nodes",
                          r->tenant->name, r->workload->name, s[k].replica);
    return TS_OK;
}

/* Each replica (and GPU part) of r placed exactly once, spread as asked:
 * its n instances sorted by place, so a shared place is two neighbours. */
static ts_status check_row(const struct decide_row *r, struct seen *s, size_t n, int *count,
                           struct ts_error *err)
{
    int parts = r->profile ? 1 : (r->mech == DECIDE_WHOLE || r->mech == DECIDE_VGPU) ? r->gpus : 1;
    int reps = r->workload->replicas;
    memset(count, 0, (size_t)reps * sizeof(*count));
    for (size_t k = 0; k < n; k++)
        if (s[k].replica >= 0 && s[k].replica < reps)
            count[s[k].replica]++;
    if (r->workload->spread != SPEC_SPREAD_NONE) {
        qsort(s, n, sizeof(*s), cmp_seen);
        for (size_t k = 1; k < n; k++)
            if (s[k].where == s[k - 1].where && s[k].replica != s[k - 1].replica)
                return ts_err(err, TS_INTERNAL, "%s/%s: replicas r%d and r%d share a %s",
                              r->tenant->name, r->workload->name, s[k - 1].replica, s[k].replica,
                              r->workload->spread == SPEC_SPREAD_NODE ? "node" : "GPU");
    }
    for (int rep = 0; rep < reps; rep++)
        if (count[rep] != parts)
            return ts_err(err, TS_INTERNAL, "%s/%s replica r%d placed %d times (expected %d)",
                          r->tenant->name, r->workload->name, rep, count[rep], parts);
    return parts > 1 ? check_one_node(r, s, n, err) : TS_OK;
}

/* Every row's instances gathered in one pass over the cards (bucketed by
 * row), then checked row by row: about instances x log, not rows x
 * instances. */
static ts_status check_rows(const struct plan *p, struct ts_error *err)
{
    const struct decide_result *d = p->decisions;
    size_t *base = calloc(d->nrows + 2, sizeof(*base)), total = 0;
    int most = 1;
    for (size_t i = 0; base && i < p->ngpus; i++)
        for (size_t k = 0; k < p->gpus[i].ninst; k++)
            if (p->gpus[i].inst[k].row)
                base[(size_t)(p->gpus[i].inst[k].row - d->rows) + 2]++;
    for (size_t r = 0; base && r < d->nrows; r++) {
        base[r + 2] += base[r + 1];
        most = d->rows[r].workload->replicas > most ? d->rows[r].workload->replicas : most;
    }
    total = base ? base[d->nrows + 1] : 0;
    struct seen *s = malloc((total + 1) * sizeof(*s));
    int *count = malloc((size_t)most * sizeof(*count));
    ts_status st = base && s && count ? TS_OK : ts_err(err, TS_NOMEM, "plan_verify: out of memory");
    for (size_t i = 0; st == TS_OK && i < p->ngpus; i++)
        for (size_t k = 0; k < p->gpus[i].ninst; k++) {
            const struct plan_inst *in = &p->gpus[i].inst[k];
            if (!in->row)
                continue;
            if ((st = check_size(&p->gpus[i], in, err)) != TS_OK)
                break;
            size_t node = (size_t)(p->gpus[i].node - p->model->fleet->nodes);
            size_t where = in->row->workload->spread == SPEC_SPREAD_NODE ? node : i;
            s[base[(size_t)(in->row - d->rows) + 1]++] = (struct seen){where, in->replica, node};
        }
    for (size_t r = 0; st == TS_OK && r < d->nrows; r++)
        st = check_row(&d->rows[r], s + base[r], base[r + 1] - base[r], count, err);
    free(base);
    free(s);
    free(count);
    return st;
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
    return check_rows(p, err);
}
