/*
 * choose.c - plan_choose_models: the cost program's integer solution
 * (plan/cost.c) as card models for the workloads, laid out beside decide's
 * and kept only when their plan costs less (then fewer cards); and
 * plan_decide, the decisions every planning verb uses. A layout the
 * program's relaxations promised but the fleet does not hold (node
 * constraints, trust on time-sliced cards) is retried without the moves
 * of sharing-pool workloads, which the program relaxes most. A layout
 * that fails or costs more than the program said is told to the program
 * and it is solved again (a few rounds, counted): on a small program those
 * models are ruled out; on a large one, the pool groups it uses get their
 * cuts and a model whose cards ran out gets fewer. A medium program's
 * kept search is laid out first (try_kept).
 */
#include "plan/internal.h"

#include <glpk.h>
#include <stdlib.h>
#include <string.h>
#include "util/units.h"

/* A plan's cost and cards for comparing (cost -2: it does not build). */
struct cost_trial {
    int64_t cost;
    int cards;
    const struct cat_model *failed; /* the model of the workload it failed on, or NULL */
};

/* d laid out (quick: a large program's trial, compared with quick ones
 * only: it fails at its first failed layout, and its pools are not
 * improved by GLPK, which the plan of the models chosen then does). */
static struct cost_trial trial(const struct spec_model *m, const struct cat_catalog *cat,
                               const struct decide_result *d, const struct plan_options *opt,
                               int quick)
{
    struct cost_trial t = {-2, 0, NULL};
    struct plan *p = NULL;
    struct ts_diag *diag = calloc(1, sizeof(*diag));
    if (diag && plan__build(m, cat, d, opt, quick ? -1 : 0, &p, diag, &t.failed) == TS_OK) {
        t.cost = p->summary.cost_per_hour;
        t.cards = p->summary.gpus_used;
    }
    plan_free(p);
    free(diag);
    return t;
}

/* 1 when a's plan costs less than base's (then uses fewer cards); a plan
 * that builds beats one that does not. */
static int cheaper_than(struct cost_trial a, struct cost_trial base)
{
    if (a.cost < 0)
        return 0;
    if (base.cost < 0 || a.cost != base.cost)
        return base.cost < 0 || a.cost < base.cost;
    return a.cards < base.cards;
}

/* 1 when some row's pin moves it off d's model. */
static int moves_any(const struct decide_result *d, const struct cat_model **pins)
{
    for (size_t r = 0; r < d->nrows; r++)
        if (pins[r] && pins[r] != d->rows[r].model)
            return 1;
    return 0;
}

/* d's decisions with pins applied; NULL when they cannot be made. */
static struct decide_result *pinned(const struct spec_model *m, const struct cat_catalog *cat,
                                    const struct decide_result *d, const struct cat_model **pins)
{
    struct ts_diag *diag = calloc(1, sizeof(*diag));
    struct decide_result *alt = NULL;
    if (diag && plan__decide_pinned(m, cat, pins, d, &alt, diag) != TS_OK)
        alt = NULL;
    free(diag);
    return alt;
}

/* The cheapest models laid out so far, compared in full (GLPK's pass over
 * the pools included): a quick trial leaves the pools as the heuristic
 * packed them, which may rank models otherwise (3,000 GPUs at load 0.8,
 * seed 2: 3259.50 against 3247.10 quick, 3227.00 against 3247.10 in full;
 * 1,000 GPUs at load 0.7, seed 3: 825.60 kept for 830.10 by quick trials). */
struct choice {
    struct decide_result *alt; /* NULL: decide's */
    struct cost_trial best;    /* their trial in full (cost -3: not made yet) */
    struct cost_trial quick;   /* their quick trial (cost -3: not made yet) */
};

/* ch's models' trial in full (quick: their quick one), made when not yet. */
static struct cost_trial best_of(const struct spec_model *m, const struct cat_catalog *cat,
                                 const struct decide_result *d, const struct plan_options *opt,
                                 struct choice *ch, int quick)
{
    struct cost_trial *t = quick ? &ch->quick : &ch->best;
    if (t->cost == -3)
        *t = trial(m, cat, ch->alt ? ch->alt : d, opt, quick);
    return *t;
}

/* How the models of a solution are laid out (plan_choose_models). */
enum trial_way {
    TRIAL_FULL,  /* a small program: in full at once */
    TRIAL_QUICK, /* quick first (it stops at its first failed layout), in full
                  * when that builds */
    TRIAL_BOTH,  /* quick first, then in full either way (the search's integer
                  * solution: where it fills a model's cards, only the full
                  * layout's last rescue, spare cards, may build it) */
    TRIAL_RANK,  /* a fleet of over PLAN_COST_FULL_TRIAL_GPUS: quick, kept when
                  * cheaper than ch's quick; else (failed too: as TRIAL_BOTH)
                  * in full, compared in full (a full layout there takes a
                  * second or more) */
};

/* alt (freed unless kept) laid out as way says; kept in ch when cheaper.
 * Its first trial in *first; 1 when kept. */
static int keep_cheaper(const struct spec_model *m, const struct cat_catalog *cat,
                        const struct decide_result *d, const struct plan_options *opt,
                        struct decide_result *alt, enum trial_way way, struct choice *ch,
                        struct cost_trial *first)
{
    *first = alt ? trial(m, cat, alt, opt, way != TRIAL_FULL) : (struct cost_trial){-2, 0, NULL};
    struct cost_trial full = {-3, 0, NULL}, quick = way == TRIAL_FULL ? full : *first;
    /* ranked by quick trials only against one that built (ch's may have been
     * kept in full after its quick one failed) */
    struct cost_trial ch_quick = way == TRIAL_RANK ? best_of(m, cat, d, opt, ch, 1) : full;
    int by_quick = ch_quick.cost >= 0 && cheaper_than(quick, ch_quick);
    if (!by_quick) {
        int again = alt && (way == TRIAL_BOTH || way == TRIAL_RANK ||
                            (way == TRIAL_QUICK && first->cost >= 0));
        full = again ? trial(m, cat, alt, opt, 0) : *first;
        if (full.cost < 0 || !cheaper_than(full, best_of(m, cat, d, opt, ch, 0))) {
            decide_free(alt);
            return 0;
        }
    }
    decide_free(ch->alt);
    ch->alt = alt;
    ch->best = full;
    ch->quick = quick;
    return 1;
}

/* pins' models kept in ch when their plan costs less; on a small program
 * (not quick) when they do not, the same without the moves of sharing-pool
 * workloads (in scratch: pools are what the program relaxes most, decide's
 * models stand for them); on a large one the program is told and solved
 * again instead. pins' own first trial in *first. */
static void try_all(const struct spec_model *m, const struct cat_catalog *cat,
                    const struct decide_result *d, const struct plan_options *opt,
                    const struct cat_model **pins, const struct cat_model **scratch,
                    enum trial_way way, struct choice *ch, struct cost_trial *first)
{
    if (keep_cheaper(m, cat, d, opt, pinned(m, cat, d, pins), way, ch, first) || way != TRIAL_FULL)
        return;
    for (size_t r = 0; r < d->nrows; r++)
        scratch[r] = decide_mech_shares_card(d->rows[r].mech) ? NULL : pins[r];
    struct cost_trial without;
    if (moves_any(d, scratch))
        keep_cheaper(m, cat, d, opt, pinned(m, cat, d, scratch), TRIAL_FULL, ch, &without);
}

/* ch's models' cost as laid out so far: in full where known, else quick. */
static struct cost_trial known(const struct choice *ch)
{
    return ch->best.cost != -3 ? ch->best : ch->quick;
}

/* The fleet's cards. */
static long fleet_gpus(const struct spec_model *m)
{
    long n = 0;
    for (size_t i = 0; i < m->fleet->nnodes; i++)
        for (size_t g = 0; g < m->fleet->nodes[i].ngpus; g++)
            n += m->fleet->nodes[i].gpus[g].count;
    return n;
}

/* 1 when the program's objective obj (currency units) is below t's cost by
 * more than gap. */
static int saves(double obj, struct cost_trial t, double gap)
{
    return t.cost < 0 || obj * TS_MICRO < (double)t.cost * (1 - gap) - 1e-3;
}

/* The program told what the trial t of its models pins showed: on a
 * small program whose search closed (closed), those models are ruled out
 * (plan__cost_exclude; its relaxations: memory as a fluid in a pool of
 * spreading clients, alike workloads of one class sharing a spread count);
 * else the cuts of the pool groups its solution uses that have none yet
 * (cut: its integer solution, whose search its budget stopped before its
 * own rounds of cuts), and where the layout ran out of a model's cards,
 * fewer of them (plan__cost_fewer). 0 when nothing was told. */
static int told(struct cost *c, const struct cost_trial *t, int closed, int cut,
                const struct cat_model *const *pins)
{
    if (closed)
        return plan__cost_exclude(c, pins);
    int cuts = cut ? plan__cost_cut_used(c) : 0;
    int fewer = t->failed && plan__cost_fewer(c, t->failed);
    return cuts > 0 || fewer;
}

/* How a large program's answers are laid out (rounding: the LP rounded). */
static enum trial_way large_way(const struct spec_model *m, int rounding)
{
    return fleet_gpus(m) > PLAN_COST_FULL_TRIAL_GPUS ? TRIAL_RANK
           : rounding                                ? TRIAL_QUICK
                                                     : TRIAL_BOTH;
}

/* A medium program's kept search (plan__cost_kept), its models laid out
 * before the full search's: it keeps the LP's whole choices, so it finds
 * answers near the LP that the full search's budget may not reach (the
 * 1,000-GPU trace fleet at load 0.7, seed 3: 821.70 where the search's
 * lay out at 825.40), and the full search is not laid out where it finds
 * no saving on them. n: the rows plus one (pins holds two sets). */
static void try_kept(const struct spec_model *m, const struct cat_catalog *cat,
                     const struct decide_result *d, const struct plan_options *opt, struct cost *c,
                     double limit, const struct cat_model **pins, size_t n, struct choice *ch)
{
    double obj;
    struct cost_trial first;
    if (!plan__cost_kept(c, limit, pins, &obj) || !moves_any(d, pins))
        return;
    if (saves(obj, best_of(m, cat, d, opt, ch, 1), PLAN_COST_MIP_GAP))
        try_all(m, cat, d, opt, pins, pins + n, large_way(m, 0), ch, &first);
}

/* The search, then its models laid out; where the layout fails or costs
 * more than the program said, the program is told (told) and solved
 * again, at most PLAN_COST_RESOLVE_ROUNDS times (counted; the wall clock
 * a ceiling, as the search's); the cheapest layout found stands. */
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
    size_t n = d->nrows + 1;
    const struct cat_model **pins = calloc(3 * n, sizeof(*pins));
    const struct cat_model **tried = pins ? pins + 2 * n : NULL;
    double limit = opt->time_limit_s < PLAN_COST_TIME_S ? opt->time_limit_s : PLAN_COST_TIME_S;
    double obj = 0, start = glp_time(); /* the wall clock as the search's: a ceiling */
    int worth = c && pins && plan__cost_worth_search(c);
    struct choice ch = {NULL, {-3, 0, NULL}, {-3, 0, NULL}};
    struct cost_trial first;
    if (worth)
        try_kept(m, cat, d, opt, c, limit, pins, n, &ch);
    double left = limit - glp_difftime(glp_time(), start);
    int solved = worth && left > 0 ? plan__cost_ilp(c, left, pins, &obj) : 0;
    int rounding = worth && !solved; /* no integer solution in its budget */
    if (rounding)
        solved = plan__cost_rounded(c, pins, &obj);
    solved = solved && moves_any(d, pins) ? solved : 0;
    double gap = solved ? plan__cost_gap(c) : PLAN_COST_MIP_GAP;
    int quick = gap > 0 || solved != 2; /* a large program: quick trials first */
    if (solved)
        best_of(m, cat, d, opt, &ch, quick);
    /* the program finds no saving on the best plan: no trial of its models */
    for (int round = 0; solved && saves(obj, known(&ch), gap); round++) {
        enum trial_way way = quick ? large_way(m, rounding) : TRIAL_FULL;
        try_all(m, cat, d, opt, pins, pins + n, way, &ch, &first);
        left = limit - glp_difftime(glp_time(), start);
        int rounds = quick ? PLAN_COST_FEWER_ROUNDS : PLAN_COST_RESOLVE_ROUNDS;
        if (!saves(obj, known(&ch), gap) || round == rounds || left <= 0 ||
            !told(c, &first, !quick, !rounding, pins))
            break;
        memcpy(tried, pins, n * sizeof(*pins));
        solved = rounding ? plan__cost_rounded(c, pins, &obj) : plan__cost_ilp(c, left, pins, &obj);
        /* models tried already: nothing new to lay out */
        solved = solved && moves_any(d, pins) && memcmp(tried, pins, n * sizeof(*pins)) ? solved
                                                                                        : 0;
    }
    plan__cost_close(c);
    free(pins);
    *out = ch.alt;
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
