/*
 * plan.h - the fleet layout: which card holds what, where.
 *
 * plan_build turns decisions into concrete cards of the fleet:
 *   - MIG instances with explicit placements (start unit on the board's
 *     grid), packed to use as few cards as possible: exactly with GLPK
 *     (plan/exact.c) when the problem is small enough to solve within the
 *     time limit, else (or as its starting point) first-fit decreasing
 *     (plan/heur.c); a canary slice per node when the fleet asks for one;
 *   - whole GPUs (multi-GPU replicas stay on one node);
 *   - sharing pools (MPS, memory-enforced fractions, time-slicing) whose
 *     per-client memory caps add up to no more than the card, holding only
 *     tenants that trust each other;
 *   - best-effort time-sliced guests on cards whose owners trust them;
 *   - replicas on distinct GPUs (distinct nodes when asked).
 * Whole GPUs go first (MIG first only when that fails), so MIG cannot
 * fragment the nodes a multi-GPU replica needs; when both fail, whole GPUs
 * first again with a card held on a node of its own for each replica of a
 * sharing pool spread by node (plan/hold.c). Pools and guests are then
 * packed exactly (GLPK on configurations, plan/improve.c) on the cards the
 * heuristic used. It reports GPUs used against a lower bound that counts
 * every workload (plan/bound.c, the configuration LP of plan/config.c) and
 * the naive one-card-per-workload count; a MIG failure caused by
 * fragmentation says so (plan/frag.c). Output is canonical: equal specs give equal
 * plans (cards of one model on one node are ordered by what they hold).
 */
#ifndef PLAN_PLAN_H
#define PLAN_PLAN_H

#include "decide/decide.h"

enum plan_mode {
    PLAN_FREE,
    PLAN_MIG,
    PLAN_WHOLE,
    PLAN_MPS,
    PLAN_TIME_SLICING,
    PLAN_MEMORY_FRACTION,
    PLAN_VGPU,
};
extern const char *const plan_mode_names[];
/* 1 for a sharing pool's card (MPS, time-slicing, memory fractions): the
 * card of decide_mech_shares_card's mechanisms. */
int plan_mode_shares_card(int mode);

enum plan_solver { PLAN_SOLVER_AUTO, PLAN_SOLVER_EXACT, PLAN_SOLVER_HEURISTIC };
/* "auto", "exact", "heuristic" (indexed by enum plan_solver), NULL-ended. */
extern const char *const plan_solver_names[];

struct plan_inst {
    const struct decide_row *row;      /* NULL for the canary slice */
    int replica;                       /* 0-based */
    const struct cat_profile *profile; /* MIG: the instance's profile */
    int start, size;                   /* placement in grid units (MIG) */
    int gpu_part;                      /* whole: which GPU of a multi-GPU replica */
    double mem_gib;                    /* memory reserved for it */
    int sm_percent;                    /* MPS */
    int guest;                         /* time-sliced guest on a whole card */
    int held; /* a running instance a replan keeps under its row's need (a MIG
               * profile, or a pool client's memory; --max-drains: the workload
               * grew, its growth is named as not placed); plan_verify refuses an
               * under-sized MIG instance without it; the summary counts no unused
               * memory for it */
};

/* A card's instances: MIG ones in start order (plan_build sorts them). */
struct plan_gpu {
    const struct spec_fleet_node *node;
    int index; /* index on the node (nvidia-smi order) */
    const struct cat_model *model;
    int mode;    /* enum plan_mode */
    int sharing; /* whole card also time-sliced by guests */
    struct plan_inst *inst;
    size_t ninst, cap;
};

struct plan_summary {
    int gpus_used;
    int gpus_total;
    int naive;     /* one guaranteed card per workload, replicas once */
    int dedicated; /* one card per replica, times its GPUs */
    int lower_bound;
    double savings_percent;           /* (naive - used) / naive * 100; < 0 possible */
    double savings_dedicated_percent; /* (dedicated - used) / dedicated * 100 */
    double reserved_unused_gib;       /* reserved for workloads beyond their need */
    double idle_gib;                  /* memory of used cards nobody reserved */
    const char *solver;               /* "exact (GLPK)", "heuristic", ... */
    int64_t cost_per_hour; /* used cards at PriceBook prices (micro-units); -1: no PriceBook,
                            * or a used card's model has no price */
    int optimal;           /* 1 when gpus_used is proven minimal */
    /* No plan of these workloads on any of their card models costs less
     * (plan/costsolve.c: the LP of the cost program, or its proven integer
     * optimum when small), micro-units; -1: none (no PriceBook, or no
     * cost). 0 where a model is free. The gap is the cost's over it, in
     * percent; -1 where the bound is 0 and the cost is not. */
    int64_t cost_lower_bound;
    double cost_gap_percent;
};

/* 1 when s has a cost and a cost lower bound (0 included) to print. */
int plan_has_cost_bound(const struct plan_summary *s);

struct plan {
    struct ts_arena arena;
    const struct spec_model *model;
    const struct decide_result *decisions;
    struct plan_gpu *gpus;
    size_t ngpus;
    struct plan_summary summary;
};

struct plan_options {
    int solver;          /* enum plan_solver */
    double time_limit_s; /* GLPK time limit; 0: GLPK never runs (as PLAN_SOLVER_HEURISTIC) */
};

/* The layout `tessera plan` makes unless told otherwise (and every verb that
 * lays the fleet out as it does): the heuristic, GLPK where it may save a
 * card, at most 10 seconds of GLPK per GPU model. */
#define PLAN_TIME_LIMIT_DEFAULT_S 10
#define PLAN_OPTIONS_DEFAULT                                                  \
    {                                                                         \
        .solver = PLAN_SOLVER_AUTO, .time_limit_s = PLAN_TIME_LIMIT_DEFAULT_S \
    }

/* Build the plan. On failure diag says what cannot be placed and why. */
ts_status plan_build(const struct spec_model *m, const struct cat_catalog *cat,
                     const struct decide_result *d, const struct plan_options *opt,
                     struct plan **out, struct ts_diag *diag);
void plan_free(struct plan *p);

/* With a PriceBook, the fleet's price per hour as the objective: each
 * workload's card model chosen jointly over all workloads and models
 * (plan/cost.c: GLPK on the cost program; plan/choose.c: both plans laid
 * out). *out
 * is new decisions (decide_free) when their plan costs less than d's, else
 * NULL (d stands; also without a PriceBook, or with opt's time limit 0 or
 * the heuristic solver). */
ts_status plan_choose_models(const struct spec_model *m, const struct cat_catalog *cat,
                             const struct decide_result *d, const struct plan_options *opt,
                             struct decide_result **out);
/* Row r's workload decided alone on model into *out (its reason in
 * arena): 1, or 0 when decide refuses it there or it would isolate less
 * than r (the cost objective's alternatives; a replan keeps a workload on
 * the model it runs on with it). */
int plan_decide_on(const struct spec_model *m, const struct cat_catalog *cat,
                   const struct decide_row *r, const struct cat_model *model,
                   struct ts_arena *arena, struct decide_row *out);
/* decide_run, then plan_choose_models: the decisions every verb plans. */
ts_status plan_decide(const struct spec_model *m, const struct cat_catalog *cat,
                      const struct plan_options *opt, struct decide_result **out,
                      struct ts_diag *diag);

/* Lower bound on cards for the decisions (plan/bound.c). */
int plan_lower_bound(const struct spec_model *m, const struct cat_catalog *cat,
                     const struct decide_result *d);
/* The naive count: every workload its own whole GPU(s), replicas once (the
 * worked example's 7). It ignores replicas, so a plan can use more. */
int plan_naive(const struct decide_result *d);
/* The dedicated count: every replica its own whole GPU(s). */
int plan_dedicated(const struct decide_result *d);

/* The used cards at the PriceBook's prices per hour, in micro-units of its
 * currency; -1 without a PriceBook or when a used card's model has none. */
int64_t plan_cost_per_hour(const struct plan *p);

/* Recompute the summary's card totals (used, reserved, idle, cost, savings,
 * optimal against summary.lower_bound) after the cards changed. */
void plan_summarise(struct plan *p);

/* Verify a plan's invariants (placements, caps, spread, trust, each MIG
 * instance's profile holding its row's need unless held); TS_OK or err. */
ts_status plan_verify(const struct plan *p, struct ts_error *err);
/* 1 when MIG profile pr holds row r's need: its memory and compute slices
 * (decide's rule for the smallest fitting profile). */
int plan_profile_holds(const struct cat_profile *pr, const struct decide_row *r);

/* When the fleet cannot hold every workload (plan_build's TS_INFEASIBLE):
 * the plan of those that fit, taken in decision order and each kept when
 * the plan with it still builds, and each left out with the planner's
 * reason. plan->decisions is &fit, so pp outlives the plan's readers. */
struct plan_partial {
    struct plan *plan;              /* the workloads that fit */
    struct decide_result fit;       /* their rows (copies; fit.arena unused) */
    const struct decide_row **left; /* the rows left out, of the d given */
    struct ts_error *why;           /* why[i]: why left[i] does not fit */
    size_t nleft;
};
ts_status plan_build_partial(const struct spec_model *m, const struct cat_catalog *cat,
                             const struct decide_result *d, const struct plan_options *opt,
                             struct plan_partial *pp);
void plan_partial_free(struct plan_partial *pp);

/* "client-a/chat" style label of an instance ("canary" for the canary). */
const char *plan_inst_owner(const struct plan_inst *in, char *buf, size_t size);

#endif
