/*
 * internal.h - what reconf's own files share: the keep candidate of
 * replanning (keep.c), used by replan.c; the look-up indexes (index.c).
 */
#ifndef RECONF_INTERNAL_H
#define RECONF_INTERNAL_H

#include "reconf/reconf.h"

/* Decision rows sorted by (tenant, workload) for reconf__row. */
struct reconf__rows {
    const struct decide_result *d;
    int *order;
};

/* What every keep candidate reads (pin.c): the decisions it keeps by (d:
 * fresh's, or its own copy with rows pinned to the card model they run on),
 * the rows by name, and each row's template instance (the fresh plan's
 * first, its row in d; a pinned row's made from what runs) and card mode. */
struct reconf__keepix {
    const struct decide_result *d;
    struct decide_result own; /* d when a row is pinned */
    struct reconf__rows rows;
    struct plan_inst *tpl;
    char *has; /* tpl[row] is set */
    int *mode;
    const struct cat_profile **wanted; /* held rows: the decision's profile; else NULL */
    char *as_runs; /* rows kept as they run (hold): each running instance as it is */
    const struct decide_row **was; /* each row as decided (fresh's, or left's) */
    size_t nfresh;                 /* rows [0, nfresh) are fresh's, the rest left out */
    int pinned;                    /* rows pinned or held */
    struct ts_arena a;
};
/* 0: NOMEM. A row is pinned when every running instance of it is on one
 * model other than its decision's that it may run on (gpuModel and
 * gpuModels allow it; MIG: the running profile holds its memory and compute
 * slices; off MIG: the same kind of card, holding its memory), so a price
 * change or a spilled decision keeps running work where it is. hold (the
 * no-drain plan): a MIG row whose running instances all have one other
 * profile of its decision's model is held at that profile (wanted[row]:
 * the decision's), so they stay as they run; one under the workload's need
 * is kept, marked held, and its new size named as not placed (keep.c).
 * Any other row that runs in a way its decision cannot keep (another
 * mechanism or model, several models or profiles) is kept as it runs
 * (as_runs[row]): its decision row becomes what runs (model, mechanism,
 * profile, GPUs a replica), each running instance stays as it is, and its
 * decision (was[row]) is named as not applied (keep.c).
 * left (hold only; nleft rows, NULL: none): rows of a spec the fleet cannot
 * hold whole that fresh leaves out; those that run are added to the rows
 * (after fresh's): one on MIG cards of its decision's model at one profile
 * is held or kept as it runs at that profile, any other kept as it runs. */
int reconf__keepix_build(const struct plan *fresh, const struct reconf_plan *cur,
                         struct reconf__keepix *ix, int hold, const struct decide_row *const *left,
                         size_t nleft, const struct cat_catalog *cat);
void reconf__keepix_free(struct reconf__keepix *ix);

/* The plan that keeps every running instance of cur whose workload fresh's
 * decisions still hold (same mechanism and profile) and places what is
 * missing in free space. *out NULL and *why (in a) when it cannot: a new
 * guest or vGPU, no room, or the result fails plan_verify. TS_NOMEM only. */
ts_status reconf__keep_plan(const struct plan *fresh, const struct reconf_plan *cur,
                            const struct reconf__keepix *ix, struct plan **out, const char **why,
                            struct ts_arena *a);
/* The same, never releasing a card: what does not fit is named in
 * unplaced's unplaced list, and the plan's rows hold what was placed. */
ts_status reconf__keep_partial(const struct plan *fresh, const struct reconf_plan *cur,
                               const struct reconf__keepix *ix, struct plan **out,
                               struct reconf_replan *unplaced, const char **why,
                               struct ts_arena *a);

/* Empty used MIG and pool cards of base one at a time, their instances
 * moved into free space on the other used cards (no new card), or a MIG
 * card with one other used MIG card laid out again beside it, cards with
 * no instance kept from cur first, searched depth first over the orders;
 * then again with base's new MIG work placed after the emptying: the plan
 * draining fewest cards found for each number of cards below base's is one
 * more plan in *out (n of them, at most RECONF_EVACUATIONS_MAX, fewest
 * cards emptied first), or reconf__relay's where it drains fewer (and
 * fewer than fresh, the fresh plan's point, at its cards); relaid[k]
 * its drained cards that still hold instances (both arrays the caller's to
 * free). TS_NOMEM only. */
/* A plan found: its cards and drains (not counting a removed node's). */
struct reconf__found {
    size_t cards;
    int drains;
};
ts_status reconf__evacuate(const struct plan *base, const struct reconf_plan *cur,
                           const struct reconf__found *fresh, struct plan ***out, int **relaid,
                           size_t *n);

/* 1 when a and b are the same name, or both none. */
int reconf__same_str(const char *a, const char *b);
/* 1 when instance in is where running instance h is (its workload; on
 * MIG, its profile and start). */
int reconf__at_place(const struct plan_inst *in, const struct reconf_want *h);
/* 1 when a drain empties g now: a running instance of a workload the
 * spec keeps that is not where it ran (the drains reconf_steps counts on
 * MIG and pool moves). */
int reconf__drained(const struct plan_gpu *g, const struct reconf_plan *cur,
                    const struct reconf__rows *rows);

/* Drained cards of p that still hold instances (laid out again). */
int reconf__relaid(const struct plan *p, const struct reconf_plan *cur,
                   const struct reconf__rows *rows);

/* The MIG cards of p (its used ones, and its free ones that run MIG in
 * cur) laid out again exactly (relay.c): out[k] (k < n) the plan draining
 * fewest cards with at most k of them used, when it drains fewer than
 * known[k] (-1: none known); NULL where none does, none was found in the
 * node budget, or the program is too large (RECONF_RELAY_COLS_MAX: all
 * NULL). Each passed plan_verify; the caller's to free. TS_NOMEM only. */
ts_status reconf__relay(const struct plan *p, const struct reconf_plan *cur,
                        const struct reconf__rows *rows, const int *known, struct plan **out,
                        size_t n);

/* No keep plan (new work fits only by moving running work): fresh's MIG
 * cards laid out again by reconf__relay, from the most cards down, a plan
 * with fresh's number of MIG cards only where it drains fewer than
 * fresh_drains (not counting a removed node's). *out (n plans, most cards
 * first), and for each the cards that ran work and hold none (emptied)
 * and the drained ones still holding instances (relaid): the caller's to
 * free. TS_NOMEM only. */
ts_status reconf__relay_fresh(const struct plan *fresh, const struct reconf_plan *cur,
                              int fresh_drains, struct plan ***out, int **emptied, int **relaid,
                              size_t *n);

/* A deep copy of p (cards, instances, its decision rows); NULL: NOMEM. */
struct plan *reconf__plan_copy(const struct plan *p);
/* p's decision rows (and their reasons) copied into its arena and its
 * instances pointed at them, so p outlives the rows it was built with.
 * The workloads stay shared (the spec's). 0: NOMEM. */
int reconf__own_rows(struct plan *p);

/* 1 when g may take another replica of r by r's spread (none, one a GPU,
 * one a node) against the instances already in p. */
int reconf__spread_ok(const struct plan *p, const struct plan_gpu *g, const struct decide_row *r);
/* 1 when r may take another instance on g: its model, node eligibility,
 * and its spread against the instances already in p. */
int reconf__usable(const struct plan *p, const struct plan_gpu *g, const struct decide_row *r);
/* A legal free start for profile pr on MIG or free card g (count, compute,
 * overlap), or -1. */
int reconf__mig_start(const struct plan_gpu *g, const struct cat_profile *pr);
/* 1 when pool card g (of mode, or free) takes one more client like in. */
int reconf__pool_room(const struct plan *p, const struct plan_gpu *g, const struct plan_inst *in,
                      int mode);

/* Why held row r (n of its replicas kept at its running profile, want
 * its new one) is named as not placed, in a; NULL: NOMEM. */
const char *reconf__held_why(struct ts_arena *a, const struct decide_row *r, int n,
                             const struct cat_profile *want);
/* Why row r, kept as it runs (n of its replicas; was: its decision; left:
 * the fleet cannot hold it now), is named, in a; NULL: NOMEM. */
const char *reconf__as_runs_why(struct ts_arena *a, const struct decide_row *r, int n,
                                const struct decide_row *was, int left);

/* 1 when a MIG instance of g other than self overlaps [start, start + size). */
int reconf__overlaps(const struct plan_gpu *g, const struct plan_inst *self, int start, int size);

int reconf__rows_index(const struct decide_result *d, struct reconf__rows *ix); /* 0: NOMEM */
void reconf__rows_free(struct reconf__rows *ix);
/* The row of tenant/workload, or -1 (NULL names, or not in the table). */
int reconf__row(const struct reconf__rows *ix, const char *tenant, const char *workload);

/* Sort p's cards by (node, index) into p->idx for reconf_plan_card; 0: NOMEM. */
int reconf__plan_index(struct reconf_plan *p);

#endif
