/*
 * choose.c - plan_choose_models: the cost program's integer solution
 * (plan/cost.c) as card models for the workloads, laid out beside decide's
 * and kept only when their plan costs less (then fewer cards); and
 * plan_decide, the decisions every planning verb uses. A layout the
 * program's relaxations promised but the fleet does not hold (node
 * constraints, trust on time-sliced cards) is retried without the moves
 * of sharing-pool workloads, which the program relaxes most.
 */
#include "plan/internal.h"

#include <stdlib.h>
#include "util/units.h"

/* A plan's cost and cards for comparing (cost -2: it does not build). */
struct cost_trial {
    int64_t cost;
    int cards;
};

static struct cost_trial trial(const struct spec_model *m, const struct cat_catalog *cat,
                               const struct decide_result *d, const struct plan_options *opt)
{
    struct cost_trial t = {-2, 0};
    struct plan *p = NULL;
    struct ts_diag *diag = calloc(1, sizeof(*diag));
    if (diag && plan__build(m, cat, d, opt, 0, &p, diag) == TS_OK)
        t = (struct cost_trial){p->summary.cost_per_hour, p->summary.gpus_used};
    plan_free(p);
    free(diag);
    return t;
}

/* 1 when a's plan costs less than base's (then uses fewer cards); a plan
 * that builds beats one that does not. */
static int cheaper_than(struct cost_trial a, struct cost_trial base)
{
    if (a.cost == -2 || a.cost == -1)
        return 0;
    if (base.cost < 0 || a.cost != base.cost)
        return base.cost < 0 || a.cost < base.cost;
    return a.cards < base.cards;
}

/* The decisions with pins applied when their plan costs less than base
 * (d's plan); else NULL. */
static struct decide_result *try_pins(const struct spec_model *m, const struct cat_catalog *cat,
                                      const struct decide_result *d, const struct plan_options *opt,
                                      const struct cat_model **pins, struct cost_trial base)
{
    struct ts_diag *diag = calloc(1, sizeof(*diag));
    struct decide_result *alt = NULL;
    if (diag && plan__decide_pinned(m, cat, pins, d, &alt, diag) != TS_OK)
        alt = NULL;
    free(diag);
    if (alt && !cheaper_than(trial(m, cat, alt, opt), base)) {
        decide_free(alt);
        alt = NULL;
    }
    return alt;
}

/* 1 when some row's pin moves it off d's model. */
static int moves_any(const struct decide_result *d, const struct cat_model **pins)
{
    for (size_t r = 0; r < d->nrows; r++)
        if (pins[r] && pins[r] != d->rows[r].model)
            return 1;
    return 0;
}

ts_status plan_choose_models(const struct spec_model *m, const struct cat_catalog *cat,
                             const struct decide_result *d, const struct plan_options *opt,
                             struct decide_result **out)
{
    static const struct plan_options defaults = PLAN_OPTIONS_DEFAULT;
    opt = opt ? opt : &defaults;
    *out = NULL;
    if (!m->pricebook || opt->time_limit_s <= 0 || opt->solver == PLAN_SOLVER_HEURISTIC)
        return TS_OK;
    struct cost *c = plan__cost_open(m, cat, d, 1);
    const struct cat_model **pins = calloc(d->nrows + 1, sizeof(*pins));
    double limit = opt->time_limit_s < PLAN_COST_TIME_S ? opt->time_limit_s : PLAN_COST_TIME_S;
    double obj = 0;
    int solved = c && pins && plan__cost_worth_search(c) && plan__cost_ilp(c, limit, pins, &obj) &&
                 moves_any(d, pins);
    double gap = solved ? plan__cost_gap(c) : PLAN_COST_MIP_GAP;
    plan__cost_close(c);
    struct cost_trial base = solved ? trial(m, cat, d, opt) : (struct cost_trial){-2, 0};
    /* the program finds no saving on d's plan: no trial of its models */
    solved &= base.cost < 0 || obj * TS_MICRO < (double)base.cost * (1 - gap) - 1e-3;
    struct decide_result *alt = solved ? try_pins(m, cat, d, opt, pins, base) : NULL;
    for (size_t r = 0; solved && !alt && r < d->nrows; r++)
        if (decide_mech_shares_card(d->rows[r].mech))
            pins[r] = NULL; /* pools are what the program relaxes most: decide's stand */
    if (solved && !alt && moves_any(d, pins))
        alt = try_pins(m, cat, d, opt, pins, base);
    free(pins);
    *out = alt;
    return TS_OK;
}

ts_status plan_decide(const struct spec_model *m, const struct cat_catalog *cat,
                      const struct plan_options *opt, struct decide_result **out,
                      struct ts_diag *diag)
{
    struct decide_result *d = NULL, *cheaper = NULL;
    ts_status st = decide_run(m, cat, &d, diag);
    if (st == TS_OK)
        st = plan_choose_models(m, cat, d, opt, &cheaper);
    if (st != TS_OK) {
        decide_free(d);
        return st;
    }
    if (cheaper) {
        decide_free(d);
        d = cheaper;
    }
    *out = d;
    return TS_OK;
}
