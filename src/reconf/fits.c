/*
 * fits.c - replanning a spec the fleet cannot hold whole. The workloads
 * that run unchanged (a running instance of the same tenant and workload on
 * the decision's model, with its MIG profile) go first, then the others in
 * decision order, so that the plan of what fits (plan_build_partial, which
 * takes workloads in order) keeps what runs and leaves out new or changed
 * work; what it leaves out is named beside the replan's own unplaced, and
 * the steps that destroy its running instances say why.
 */
#include <stdlib.h>
#include <string.h>
#include "reconf/internal.h"

/* A running instance that serves a workload. */
struct held_ref {
    const struct reconf_card *card;
    const struct reconf_want *want;
};

static int cmp_names(const char *t1, const char *w1, const char *t2, const char *w2)
{
    int c = strcmp(t1, t2);
    return c ? c : strcmp(w1, w2);
}

static int cmp_held(const void *a, const void *b)
{
    const struct reconf_want *x = ((const struct held_ref *)a)->want,
                             *y = ((const struct held_ref *)b)->want;
    return cmp_names(x->tenant, x->workload, y->tenant, y->workload);
}

/* Every instance of cur that names its workload, sorted by (tenant,
 * workload) into *out (NULL when there is none); -1: NOMEM. */
static int held_index(const struct reconf_plan *cur, struct held_ref **out)
{
    size_t n = 0, k = 0;
    for (int c = 0; c < cur->n; c++)
        n += (size_t)cur->t[c].nheld;
    *out = n ? malloc(n * sizeof(**out)) : NULL;
    if (n && !*out)
        return -1;
    for (int c = 0; c < cur->n; c++)
        for (int h = 0; h < cur->t[c].nheld; h++)
            if (cur->t[c].held[h].tenant && cur->t[c].held[h].workload)
                (*out)[k++] = (struct held_ref){&cur->t[c], &cur->t[c].held[h]};
    if (k)
        qsort(*out, k, sizeof(**out), cmp_held);
    return (int)k;
}

/* 1 when one of the n sorted instances serves r as r is decided now. */
static int runs_unchanged(const struct held_ref *ix, size_t n, const struct decide_row *r)
{
    const char *prof = r->profile ? r->profile->name : NULL;
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first instance not before r's names */
        size_t mid = lo + (hi - lo) / 2;
        const struct reconf_want *w = ix[mid].want;
        if (cmp_names(w->tenant, w->workload, r->tenant->name, r->workload->name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < n; i++) {
        const struct reconf_want *w = ix[i].want;
        if (cmp_names(w->tenant, w->workload, r->tenant->name, r->workload->name) != 0)
            break;
        if (ix[i].card->model && strcmp(ix[i].card->model, r->model->name) == 0 &&
            (prof ? w->profile && strcmp(w->profile, prof) == 0 : !w->profile))
            return 1;
    }
    return 0;
}

ts_status reconf_running_first(const struct reconf_plan *cur, const struct decide_result *d,
                               struct decide_result *out)
{
    memset(out, 0, sizeof(*out));
    struct held_ref *ix = NULL;
    int n = held_index(cur, &ix);
    char *runs = calloc(d->nrows + 1, 1);
    out->rows = malloc((d->nrows + 1) * sizeof(*out->rows));
    if (n < 0 || !runs || !out->rows) {
        free(ix);
        free(runs);
        free(out->rows);
        out->rows = NULL;
        return TS_NOMEM;
    }
    for (size_t i = 0; i < d->nrows; i++)
        runs[i] = (char)runs_unchanged(ix, (size_t)n, &d->rows[i]);
    for (int pass = 1; pass >= 0; pass--)
        for (size_t i = 0; i < d->nrows; i++)
            if (runs[i] == pass)
                out->rows[out->nrows++] = d->rows[i];
    free(ix);
    free(runs);
    return TS_OK;
}

/* 1 when op destroys an instance of tenant/workload. */
static int destroys_of(const struct reconf_op *op, const char *tenant, const char *workload)
{
    return op->kind == RECONF_OP_DESTROY && op->tenant && op->workload &&
           !strcmp(op->tenant, tenant) && !strcmp(op->workload, workload);
}

ts_status reconf_replan_unplaced_add(struct reconf_replan *r, const char *tenant,
                                     const char *workload, int replicas, const char *why)
{
    for (size_t i = 0; i < r->nop; i++) /* steps.c took it for a workload the spec dropped */
        if (destroys_of(&r->op[i], tenant, workload))
            r->op[i].why = "left out: the fleet cannot hold it now; see not placed";
    size_t cap = r->nunplaced;
    const char *copy = ts_arena_strdup(&r->arena, why);
    if (!copy ||
        !ts_arena_grow(&r->arena, (void **)&r->unplaced, &cap, r->nunplaced, sizeof(*r->unplaced)))
        return TS_NOMEM;
    r->unplaced[r->nunplaced++] = (struct reconf_unplaced){
        .tenant = tenant, .workload = workload, .replicas = replicas, .why = copy};
    return TS_OK;
}
