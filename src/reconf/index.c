/*
 * index.c - look-ups replanning makes once per instance, in log time: a
 * running plan's cards by (node, GPU index), and a decision table's rows by
 * (tenant, workload). Linear scans there made replanning quadratic in the
 * fleet (165 s for 10,000 GPUs, issue 30).
 */
#include <stdlib.h>
#include <string.h>
#include "reconf/internal.h"

static const struct reconf_plan *sort_plan; /* qsort has no context argument */

static int cmp_card_at(const struct reconf_card *a, const char *node, int index)
{
    int k = strcmp(a->node, node);
    return k ? k : (a->index > index) - (a->index < index);
}

static int cmp_card(const void *a, const void *b)
{
    const struct reconf_card *y = &sort_plan->t[*(const int *)b];
    int k = cmp_card_at(&sort_plan->t[*(const int *)a], y->node, y->index);
    return k ? k : *(const int *)a - *(const int *)b;
}

int reconf__plan_index(struct reconf_plan *p)
{
    p->idx = ts_arena_array(&p->arena, (size_t)p->n + 1, sizeof(*p->idx));
    if (!p->idx)
        return 0;
    for (int i = 0; i < p->n; i++)
        p->idx[i] = i;
    sort_plan = p;
    qsort(p->idx, (size_t)p->n, sizeof(*p->idx), cmp_card);
    sort_plan = NULL;
    return 1;
}

const struct reconf_card *reconf_plan_card(const struct reconf_plan *p, const char *node, int index)
{
    if (!p->idx) {
        for (int i = 0; i < p->n; i++)
            if (p->t[i].index == index && !strcmp(p->t[i].node, node))
                return &p->t[i];
        return NULL;
    }
    int lo = 0, hi = p->n; /* the first card at or after (node, index) */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (cmp_card_at(&p->t[p->idx[mid]], node, index) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < p->n && !cmp_card_at(&p->t[p->idx[lo]], node, index))
        return &p->t[p->idx[lo]];
    return NULL;
}

/* ---- decision rows by tenant and workload ---------------------------------- */

static const struct decide_result *sort_rows;

static int cmp_row_at(const struct decide_row *r, const char *tenant, const char *workload)
{
    int k = strcmp(r->tenant->name, tenant);
    return k ? k : strcmp(r->workload->name, workload);
}

static int cmp_row(const void *a, const void *b)
{
    const struct decide_row *y = &sort_rows->rows[*(const int *)b];
    return cmp_row_at(&sort_rows->rows[*(const int *)a], y->tenant->name, y->workload->name);
}

int reconf__rows_index(const struct decide_result *d, struct reconf__rows *ix)
{
    ix->d = d;
    ix->order = malloc((d->nrows + 1) * sizeof(*ix->order));
    if (!ix->order)
        return 0;
    for (size_t i = 0; i < d->nrows; i++)
        ix->order[i] = (int)i;
    sort_rows = d;
    qsort(ix->order, d->nrows, sizeof(*ix->order), cmp_row);
    sort_rows = NULL;
    return 1;
}

void reconf__rows_free(struct reconf__rows *ix)
{
    free(ix->order);
    ix->order = NULL;
}

int reconf__row(const struct reconf__rows *ix, const char *tenant, const char *workload)
{
    if (!tenant || !workload)
        return -1;
    size_t lo = 0, hi = ix->d->nrows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int k = cmp_row_at(&ix->d->rows[ix->order[mid]], tenant, workload);
        if (!k)
            return ix->order[mid];
        if (k < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}
