/*
 * partial.c - when the fleet cannot hold every workload: the plan of the
 * workloads that fit (taken in decision order, each kept when the plan with
 * it still builds) and, for each left out, the planner's reason (plan.h).
 */
#include "plan/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Plan the rows of sub: TS_OK with *out, else the planner's first error in *why. */
static ts_status try_rows(const struct spec_model *m, const struct cat_catalog *cat,
                          const struct decide_result *sub, const struct plan_options *opt,
                          struct plan **out, struct ts_error *why)
{
    struct ts_diag *diag = calloc(1, sizeof(*diag));
    if (!diag)
        return TS_NOMEM;
    *out = NULL;
    ts_status st = plan_build(m, cat, sub, opt, out, diag);
    if (st != TS_OK && diag->count)
        *why = diag->items[0];
    else if (st != TS_OK)
        ts_err(why, st, "%s", ts_status_str(st));
    free(diag);
    return st;
}

/* The planner's error is about another workload, one that fit before r
 * came: the reason is r's (at r's place), saying which then fails. */
static void blame(struct ts_error *why, const struct decide_row *r)
{
    const struct spec_loc *loc = &r->workload->loc;
    char msg[TS_MSG_MAX + TS_PATH_MAX + 64];
    if (!why->path[0] || !loc->path || strcmp(why->path, loc->path) == 0)
        return;
    snprintf(msg, sizeof msg, "with it, %s (placed before it) no longer fits: %s", why->path,
             why->msg);
    ts_err_at(why, why->code, loc->file, loc->line, loc->column, loc->path, "%s", msg);
}

/* Add row r to the fitting rows when the plan still builds, else to left. */
static ts_status add_row(const struct spec_model *m, const struct cat_catalog *cat,
                         const struct plan_options *opt, const struct decide_row *r,
                         struct plan_partial *pp)
{
    struct plan *p = NULL;
    pp->fit.rows[pp->fit.nrows++] = *r;
    ts_status st = try_rows(m, cat, &pp->fit, opt, &p, &pp->why[pp->nleft]);
    if (st == TS_OK) {
        plan_free(pp->plan);
        pp->plan = p;
        return TS_OK;
    }
    pp->fit.nrows--;
    if (st != TS_INFEASIBLE && st != TS_INVALID)
        return st;
    blame(&pp->why[pp->nleft], r);
    pp->left[pp->nleft++] = r;
    return TS_OK;
}

ts_status plan_build_partial(const struct spec_model *m, const struct cat_catalog *cat,
                             const struct decide_result *d, const struct plan_options *opt,
                             struct plan_partial *pp)
{
    memset(pp, 0, sizeof(*pp));
    size_t n = d->nrows ? d->nrows : 1;
    pp->fit.rows = calloc(n, sizeof(*pp->fit.rows));
    pp->left = calloc(n, sizeof(*pp->left));
    pp->why = calloc(n, sizeof(*pp->why));
    if (!pp->fit.rows || !pp->left || !pp->why)
        return TS_NOMEM;
    ts_status st = TS_OK;
    for (size_t i = 0; st == TS_OK && i < d->nrows; i++)
        st = add_row(m, cat, opt, &d->rows[i], pp);
    if (st == TS_OK && !pp->plan) { /* nothing fits: the empty fleet's plan */
        struct ts_error why;
        st = try_rows(m, cat, &pp->fit, opt, &pp->plan, &why);
    }
    return st;
}

void plan_partial_free(struct plan_partial *pp)
{
    plan_free(pp->plan);
    free(pp->fit.rows);
    free(pp->left);
    free(pp->why);
    memset(pp, 0, sizeof(*pp));
}
