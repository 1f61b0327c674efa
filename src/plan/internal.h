/*
 * internal.h - what the plan module's files share: the MIG packing problem
 * (items to place, cards they may go on) and the solvers' entry points.
 * Not part of plan's public interface.
 */
#ifndef PLAN_INTERNAL_H
#define PLAN_INTERNAL_H

#include "plan/plan.h"
#include "util/limits.h" /* PLAN_MAX_INSTANCES, PLAN_EXACT_VARS_MAX */

/* MIG instances on one card: each takes at least one slice of the grid. */
#define PLAN_MAX_PER_CARD TS_MIG_GRID_MAX

/* One MIG instance to place. */
struct plan_item {
    const struct decide_row *row; /* NULL: canary slice */
    int replica;
    const struct cat_profile *profile;
    const struct spec_fleet_node *node; /* canary: only on this node; else NULL */
    int group;                          /* spread group (one per workload), -1 none */
    int spread_node;                    /* group's replicas on distinct nodes */
};

/* Pack items onto cards (all of model); card_of[i] = index into cards. */
struct plan_mig {
    const struct cat_model *model;
    struct plan_item *items;
    size_t nitems;
    struct plan_gpu **cards;
    size_t ncards;
};

/* 1 if item i may go on card c (node restriction only). */
int plan__item_allowed(const struct plan_mig *pm, size_t i, size_t c);

/* Find starts for n profiles on one card of model (DFS, deterministic:
 * profiles in the given order, lowest start first). 1 if found. */
int plan__place(const struct cat_model *model, const struct cat_profile *const *profiles, size_t n,
                int *starts);

/* The canonical order of items: bigger profiles first, then profile ID,
 * then spec order and replica (canary slices last among equals). */
int plan__item_order(const struct plan_item *x, const struct plan_item *y);

/* First-fit decreasing. Returns cards used, or -1 when items do not fit. */
int plan__heuristic(const struct plan_mig *pm, int *card_of);

/* GLPK; returns cards used, -1 (no solution within the limit) or
 * PLAN_EXACT_TOO_LARGE (not attempted: over its variable cap); *optimal is
 * set when GLPK proved the answer. */
#define PLAN_EXACT_TOO_LARGE (-2)
int plan__exact(const struct plan_mig *pm, double time_limit_s, int *card_of, int *optimal);

/* Lower bound on cards for pm's items. */
int plan__mig_bound(const struct plan_mig *pm);
/* Lower bound on the cards of model that whole GPUs and pools need. */
int plan__other_bound(const struct spec_model *m, const struct decide_result *d,
                      const struct cat_model *model);
/* Rows that may share pool cards (same mechanism and model; same named
 * pool, or for MPS the same tenant); and how many cards such a group needs
 * at least (memory, SM shares, MPS clients, replica spread). */
int plan__same_group(const struct decide_row *a, const struct decide_row *r);
int plan__group_bound(const struct decide_result *d, const struct decide_row *r);
/* 1 for best-effort time-slicing that may ride on other tenants' cards. */
int plan__is_guest(const struct decide_row *r);

/* What one card holds as sums: each type's use of nres resources (use[t *
 * nres + r]) within cap[r] in all, at most most[t] of a type, and no type on
 * a card with one it is apart from (apart[t * ntypes + u] nonzero). */
struct plan_cfg_sums {
    size_t nres;
    double cap[PLAN_CFG_RES_MAX];
    double *use;
    int *most;
    unsigned char *apart;
};
void plan__cfg_sums_free(struct plan_cfg_sums *s);

/* A bin-packing class in cutting-stock form (plan/config.c): ntypes item
 * types, demand[t] items of type t, fits(ctx, counts) 1 when one card holds
 * counts[t] items of each type. Enumeration fills configs (nconfigs rows of
 * ntypes counts, maximal ones only); 0 when a cap (PLAN_CFG_MAX) is hit. */
struct plan_cfg {
    size_t ntypes;
    const int *demand;
    int (*fits)(const void *ctx, const int *counts);
    const void *ctx;
    int *configs;
    size_t nconfigs;
    /* Optional, the same test as sums, which the enumeration keeps as it
     * goes (plan__cfg_enumerate; NULL: it asks fits of each step). */
    const struct plan_cfg_sums *sums;
    /* For plan__cfg_ilp: 0, or the branch-and-bound nodes GLPK may open
     * (it then also stops once its best layout meets the proven bound). */
    long max_nodes;
    /* For plan__cfg_enumerate: 0 (PLAN_CFG_NODES_MAX), or fewer search steps. */
    long max_steps;
};
int plan__cfg_enumerate(struct plan_cfg *c);
void plan__cfg_free(struct plan_cfg *c);
/* ceil of the configuration LP's optimum, or -1. */
int plan__cfg_lp_bound(const struct plan_cfg *c);
/* The configuration LP's dual prices, pi[t] >= 0 per type, scaled so that
 * no configuration's sum of prices is over 1: any card holds at most 1 of
 * them, so cards >= sum_t pi[t] * count[t] for any counts up to the
 * demands the configurations were listed for (c->demand may be others: the
 * LP's, which pick the prices). keep: NULL, or where the LP is kept for the
 * next call on the same configurations, solved again from its last basis
 * (the caller deletes it). 0 when the LP is not solved. */
struct glp_prob;
int plan__cfg_lp_duals(const struct plan_cfg *c, struct glp_prob **keep, double *pi);
/* The configuration LP rounded: each configuration's cards rounded down,
 * the items left over packed by the integer program on their own (few
 * configurations; else first fit), on new cards appended to c's
 * configurations. Cards used, x[k] (*x, malloc'd) cards of configuration
 * k; -1 when the LP is not solved or memory runs out. Cheap where the
 * integer program is too large for GLPK: a trace fleet's pool class of 98
 * guests in 3,364 configurations, 16 cards where first fit took 17. */
int plan__cfg_lp_round(struct plan_cfg *c, double time_limit_s, int **x);
/* The integer program: cards used (x[k] cards of configuration k; at most
 * upper when upper >= 0) or -1; *optimal when GLPK proved the answer (for
 * -1: that no layout within upper exists). Stopped by the time limit or
 * max_nodes, it returns the best layout found (or -1), not optimal. */
int plan__cfg_ilp(const struct plan_cfg *c, double time_limit_s, int upper, int *x, int *optimal);

/* Sharing-pool clients as a class (plan/poolcfg.c): rows[t] with demand[t]
 * replicas, all of mech on model; trust checked when m is set. */
struct plan_pool_class {
    const struct spec_model *m;
    const struct cat_model *model;
    int mech;
    const struct decide_row **rows;
    size_t ntypes;
    int *demand;
    unsigned char *trust; /* tenants x tenants memo (plan__pool_trust_memo) or NULL */
};
int plan__pool_fits(const void *ctx, const int *counts);
/* pc's plan__pool_fits as sums (memory; for MPS, SM shares and clients)
 * in *s, for its enumeration: s, or NULL (s zeroed) when pc has over
 * PLAN_CFG_SUMS_TYPES_MAX types or memory runs out: it is then listed by
 * plan__pool_fits alone. Free with plan__cfg_sums_free either way. */
const struct plan_cfg_sums *plan__pool_sums(const struct plan_pool_class *pc,
                                            struct plan_cfg_sums *s);
/* A zeroed tenants x tenants trust memo for m, or NULL (too many tenants,
 * PLAN_TRUST_MEMO_TENANTS_MAX, or no memory: trust is then asked each time). */
unsigned char *plan__pool_trust_memo(const struct spec_model *m);
int plan__pool_cfg_bound(const struct plan_pool_class *pc);
/* May a client of row a share a card with one of row b (trust, pool, MPS
 * server)? */
int plan__pool_compatible(const struct plan_pool_class *pc, const struct decide_row *a,
                          const struct decide_row *b);
/* 1 when rows a and b are the same client for packing (tenant, size,
 * pool, guest or not, neither spread): their replicas are interchangeable. */
int plan__pool_same_client(const struct decide_row *a, const struct decide_row *b);
/* Each type's component in comp (0..n-1, numbered by first type): types
 * joined when their clients may share a card. Returns n. */
size_t plan__pool_components(const struct plan_pool_class *pc, size_t *comp);
/* pc's configuration bound per component of alike clients (-1: no memory). */
int plan__pool_split_bound(const struct plan_pool_class *pc);
/* Cards model's pools of mech need at least (groups' configuration bounds;
 * time-slicing with the guests that no scheduled whole card may host). */
int plan__pools_bound(const struct spec_model *m, const struct decide_result *d,
                      const struct cat_model *model, int mech);
/* The configuration bound of pm's profiles, replicas that spread apart
 * counted (plan/migcfg.c; 0 when too large). */
int plan__mig_cfg_bound(const struct plan_mig *pm);
/* The fewest cards for pm by GLPK on configurations, card_of filled, when
 * every free card may take every item; else PLAN_EXACT_TOO_LARGE. */
int plan__mig_cfg_exact(const struct plan_mig *pm, double time_limit_s, int *card_of, int *optimal);

/* ---- shared by plan.c, mig.c, pools.c ---- */

struct plan_build {
    struct plan *p;
    const struct spec_model *m;
    const struct cat_catalog *cat;
    const struct decide_result *d;
    const struct plan_options *opt;
    struct ts_diag *diag;
    int used_exact;   /* some MIG model's layout came from GLPK */
    int glpk_ran;     /* GLPK was asked (and may have confirmed the heuristic) */
    int glpk_skipped; /* some model was too large for GLPK */
    int glpk_timeout; /* GLPK stopped at its time limit somewhere */
    int bound;        /* lower bound, summed over models */
    int whole_done;   /* plan__whole ran: plan__pools leaves whole GPUs alone */
    int pool_ffd;     /* pool clients by first fit decreasing (else open, then worst fit);
                         2: the clients that spread first */
    int pools_failed; /* the last layout failed in its pools alone (plan.c tries them again) */
    int bound_known;  /* bound is already summed (a second layout): plan__mig keeps it */
    int hold_spread;  /* hold cards for pool replicas spread by node (hold.c) */
    size_t *held;     /* the held cards (indexes into p->gpus) */
    size_t nheld;
    int cost_bound; /* give summary.cost_lower_bound (plan_build; not the cost trials) */
    int quick;      /* a large cost trial: no second try after a failed layout, no
                       GLPK pass over the pools (plan__improve_pools) */
    const struct cat_model *failed_model; /* the first failure's row's model (plan__fail) */
    int spare;                            /* the pools laid out with spare cards (plan/spare.c) */
    size_t fleet_cards; /* the fleet's cards (p->gpus[0..fleet_cards)), before spare ones */
};

/* spare.c: spare cards of each model after the fleet's (plan__spare_add,
 * before the pools); after GLPK's pass over the pools, what is left on
 * them moved to free cards of the fleet and they are gone (plan__spare_
 * remove: TS_INFEASIBLE when some spare card's instances fit on none). */
ts_status plan__spare_add(struct plan_build *b);
ts_status plan__spare_remove(struct plan_build *b);

/* plan_build; cost_bound 0 leaves the bounds out (cost -1, cards 0: the
 * trial plans of plan_choose_models only compare costs, and each tries
 * its pools packed first fit decreasing too); -1 also fails at the
 * first layout that fails and leaves the pools as the heuristic packed
 * them (a trial of a large program, plan/choose.c). When it fails,
 * *failed_model (if not NULL) is the model of the workload its first
 * reported error names (NULL when none is named). */
ts_status plan__build(const struct spec_model *m, const struct cat_catalog *cat,
                      const struct decide_result *d, const struct plan_options *opt, int cost_bound,
                      struct plan **out, struct ts_diag *diag,
                      const struct cat_model **failed_model);

/* hold.c: one card per replica of each sharing pool spread by node, on
 * nodes of their own, made not free (plan__hold) while whole GPUs and MIG
 * are placed, free again (plan__hold_release) before the pools; wanted
 * when some such pool has two or more replicas. */
ts_status plan__hold(struct plan_build *b);
void plan__hold_release(struct plan_build *b);
int plan__hold_wanted(const struct decide_result *d);

/* Append an instance to gpu (arena-grown). 0 on out of memory. */
int plan__add_inst(struct plan *p, struct plan_gpu *gpu, const struct plan_inst *inst);
/* Place every MIG instance (and canary slices). */
ts_status plan__mig(struct plan_build *b);
/* Whole GPUs (multi-GPU replicas first), before MIG. */
ts_status plan__whole(struct plan_build *b);
/* Whole GPUs (unless plan__whole ran), sharing pools, best-effort guests. */
ts_status plan__pools(struct plan_build *b);
/* When first fit fails on a small fleet: every card not MIG laid out again
 * (whole GPUs, pools, guests) by a bounded search (plan/search.c); TS_OK
 * with the plan rewritten, else TS_INFEASIBLE and the plan as it was. */
ts_status plan__search_pools(struct plan_build *b);
/* GLPK on the pool cards the heuristic used, per model and pool mode
 * (plan/improve.c); fewer cards replace them. */
ts_status plan__improve_pools(struct plan_build *b);
/* 1 if r may run on card g: decide_card_refuses, the one eligibility rule. */
int plan__eligible(const struct decide_row *r, const struct plan_gpu *g);
/* For a failure message: "" when every node holding r's model may host r,
 * else " (CONSTRAINT: N of M nodes with MODEL qualify)". Arena text. */
const char *plan__constraint_note(struct plan_build *b, const struct decide_row *r);
/* When pm's instances fail because a card has free slices but no legal
 * start (plan/frag.c): report which, why and one move that would make it
 * fit; 1 when reported. */
int plan__explain_fragment(struct plan_build *b, const struct plan_mig *pm);
/* Report a placement failure located at the workload. */
void plan__fail(struct plan_build *b, const struct decide_row *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- pools.c's index (poolidx.c): what the pool phase asks per replica,
 * kept up to date as instances are added, so that a replica costs about
 * the cards it may use rather than the whole fleet ---- */

/* Card indices in ascending order. */
struct plan__cards {
    size_t *at;
    size_t n, cap;
};

/* Rows whose clients may share cards (plan__same_group's classes). */
struct plan__group {
    const struct decide_row *key; /* its first row */
    int bound;                    /* plan__group_bound, -1 until asked */
    int ncards;                   /* cards holding a member */
    struct plan__cards cards;     /* cards opened for it */
};

struct plan_pidx {
    struct ts_arena arena;
    struct plan_build *b;
    size_t *first, *end;                 /* per card: its node's cards are [first, end) */
    double *mem;                         /* per card: memory its instances reserve */
    int *sm;                             /* per card: MPS shares */
    size_t *cursor;                      /* per catalog model: no free card of it below */
    int *group;                          /* per row: its group, -1 outside pools */
    int *pool;                           /* per row: its named pool's id, -1 none */
    const struct decide_row **pool_rows; /* per pool id: its first row */
    size_t *pool_card;                   /* per pool id: lowest card holding it, SIZE_MAX none */
    struct plan__group *groups;
    size_t ngroups;
    unsigned char *trust; /* tenants x tenants: 0 not asked, 1 trust, 2 not */
    size_t ntenants;
    struct plan__cards ts_cards; /* time-sliced cards */
    struct plan__cards lenders;  /* whole cards of scheduled workloads */
};

/* 1 for a sharing-pool row (not MIG): MPS, time-slicing, memory fraction. */
int plan__in_pool(const struct decide_row *r);
int plan__card_holds_row(const struct plan_gpu *g, const struct decide_row *r);
ts_status plan__pidx_init(struct plan_pidx *x, struct plan_build *b);
void plan__pidx_free(struct plan_pidx *x);
/* Add inst to card c, keeping the index; 0 on out of memory. */
int plan__pidx_add(struct plan_pidx *x, size_t c, const struct plan_inst *inst);
/* Card c was just set to a pool mode for r; 0 on out of memory. */
int plan__pidx_opened(struct plan_pidx *x, size_t c, const struct decide_row *r);
/* Lowest index of a free card of model (ngpus when none). */
size_t plan__pidx_first_free(struct plan_pidx *x, const struct cat_model *model);
/* r's named pool id (-1: none, or r NULL). */
int plan__pidx_pool(const struct plan_pidx *x, const struct decide_row *r);
/* The first card holding r's named pool, or NULL. */
struct plan_gpu *plan__pidx_pool_card(const struct plan_pidx *x, const struct decide_row *r);
/* spec_tenants_trust, asked once per pair. */
int plan__pidx_trust(struct plan_pidx *x, const struct spec_tenant *a, const struct spec_tenant *b);
/* Cards holding members of r's group; cards it needs at least. */
int plan__pidx_group_cards(const struct plan_pidx *x, const struct decide_row *r);
int plan__pidx_group_bound(struct plan_pidx *x, const struct decide_row *r);

/* ---- the cost objective (plan/pin.c, plan/cost.c, plan/costcut.c, plan/costsolve.c) ---- */

/* 1 when the cost objective may put r on another card model. */
int plan__movable(const struct decide_row *r);
/* r's workload decided alone on model (*out; its reason in arena): 1, or 0
 * when decide refuses it there or it would isolate less than r. */
int plan__decide_on(const struct spec_model *m, const struct cat_catalog *cat,
                    const struct decide_row *r, const struct cat_model *model,
                    struct ts_arena *arena, struct decide_row *out);
/* m's decisions with row i's workload on pins[i] (NULL: as decide picks);
 * a row moved off its model in was says so in its reason. */
ts_status plan__decide_pinned(const struct spec_model *m, const struct cat_catalog *cat,
                              const struct cat_model *const *pins, const struct decide_result *was,
                              struct decide_result **out, struct ts_diag *diag);
/* The cost program of d's workloads over the fleet's models (NULL without
 * a PriceBook or memory; search: the search's, whose pools are per clique
 * of tenants that trust each other, where the bound's are per trust set,
 * a relaxation); its LP optimum in currency units per hour (-1:
 * none); its integer solution as each movable row's model and its cost in
 * *obj (0: none). */
struct cost;
struct cost *plan__cost_open(const struct spec_model *m, const struct cat_catalog *cat,
                             const struct decide_result *d, int search);
void plan__cost_close(struct cost *c);
double plan__cost_lp(struct cost *c);
/* plan__cost_ilp: 2 when its last round closed (within its gap), 1 when
 * its work budget or the time limit stopped it with a solution, 0 none.
 * A program too large for its search (a fleet of thousands of GPUs) keeps
 * the choices its LP makes whole and searches the rest (1 or 0). */
int plan__cost_ilp(struct cost *c, double time_limit_s, const struct cat_model **pins, double *obj);
/* A program neither small (PLAN_COST_PROOF_COLS_MAX) nor too large for
 * the search: the kept search a program too large gets (plan__cost_ilp),
 * as a first answer before the full one. 1 with a solution, else 0. */
int plan__cost_kept(struct cost *c, double time_limit_s, const struct cat_model **pins,
                    double *obj);
/* Where the search found no integer solution: the program's LP, with the
 * cuts of the groups it uses, rounded per class of alike workloads as
 * each row's model; its objective in *obj. 1, or 0 when the LP has none. */
int plan__cost_rounded(struct cost *c, const struct cat_model **pins, double *obj);
/* The search's models pins (NULL: the row's own) ruled out of its later
 * solutions: some workload then goes to a model its class did not get (a
 * cut of the search's program, not a relaxation's). 0 on out of memory. */
int plan__cost_exclude(struct cost *c, const struct cat_model *const *pins);
/* The search's cards of model held below what its last integer solution
 * used, by PLAN_COST_FEWER_SHARE of them (at least one): its models did
 * not lay out for want of that model's cards. 0 when there is no
 * solution, model is not the program's or it used none. */
int plan__cost_fewer(struct cost *c, const struct cat_model *model);
/* The cuts of the pool groups the search's last solution uses that have
 * none yet (as its own rounds add, where its budget stopped it first);
 * how many, -1 on out of memory. */
int plan__cost_cut_used(struct cost *c);
/* 1 when the integer search may pay: some workload may move, the program
 * is small enough (PLAN_COST_ALTS_MAX), and decide's models are not
 * already optimal for its LP (within plan__cost_gap). */
int plan__cost_worth_search(struct cost *c);
/* The fraction by which the search's layout may stay above its bound, and
 * a trial must save to be laid out: 0 on a small program (it proves in
 * milliseconds), else PLAN_COST_MIP_GAP. */
double plan__cost_gap(struct cost *c);
/* The lower bound on cost, micro-units per hour (-1: none): the program's
 * LP (its integer optimum when GLPK proves it quickly), and for a one-model
 * fleet at least card_bound cards at its price. */
int64_t plan__cost_bound(const struct spec_model *m, const struct cat_catalog *cat,
                         const struct decide_result *d, int card_bound);

#endif
