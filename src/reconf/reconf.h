/*
 * reconf.h - reconfiguration: the plan's MIG geometry per card (from a
 * built plan or from `tessera plan -o json`), its difference with what a
 * card holds (a NodeInventory's struct inv_gpu): keep, or the destroy and
 * create steps that turn one into the other, and the `plan --current`
 * report built on that. Pure: used by the plan verb, the ledger's plan
 * attribution and the node agent's apply.
 */
#ifndef RECONF_RECONF_H
#define RECONF_RECONF_H

#include <stddef.h>
#include <jansson.h>
#include "catalog/catalog.h"
#include "inventory/inventory.h"
#include "plan/plan.h"
#include "util/arena.h"
#include "util/error.h"
#include "util/sbuf.h"

/* ---- the plan's geometry and the difference (target.c) ------------------ */

struct reconf_want {
    const char *profile; /* plan's profile name */
    int start, size;
    const char *tenant, *workload; /* NULL for the canary */
    int replica, gpu_part, guest;  /* held[] only (replanning) */
    int canary;                    /* the canary slice */
    int sm_percent;                /* MPS share, or the shim's SM share (plan JSON) */
    double mem_gib;                /* memory reserved (plan JSON; 0 from a NodeConfig) */
};

/* One planned card. mig: the plan gives it a MIG geometry; free: nothing.
 * owner: a card without MIG held by one tenant (its non-guest clients all
 * of that tenant), "shared" when several, NULL when free or from JSON. */
struct reconf_card {
    const char *node, *model, *mode;
    const char *sharing; /* plan JSON's "sharing" when given, else NULL */
    const char *owner, *owner_workload;
    int index, mig;
    struct reconf_want *want;
    int nwant;
    /* Every instance the card holds, any mode (MIG: as want; profile NULL
     * and start -1 otherwise): who is on it, for replanning. */
    struct reconf_want *held;
    int nheld;
    int removed; /* its node leaves the fleet (reconf_plan_remove_node) */
};

struct reconf_plan {
    struct ts_arena arena;
    struct reconf_card *t;
    int n;
    const char *node; /* read from a NodeConfig: its node (every card's); else NULL */
    int *idx;         /* t's positions by (node, index), for reconf_plan_card; may be NULL */
};

/* From a built plan (strings borrowed from p, which must outlive out). */
ts_status reconf_plan_from_plan(const struct plan *p, struct reconf_plan *out,
                                struct ts_error *err);
/* From `tessera plan -o json` text, or a NodeConfig (render's
 * nodes/NODE/agent.json: one node's cards, which name no node; format in
 * docs/agent.md); errors name the JSON path. */
ts_status reconf_plan_parse(const char *text, size_t len, const char *file, struct reconf_plan *out,
                            struct ts_error *err);
void reconf_plan_release(struct reconf_plan *p);
/* A running plan read by reconf_plan_parse, checked against the fleet of m
 * and the catalog as a new plan is (check.c): each card a GPU of a fleet
 * node (index within its count), of the model the fleet has there, listed
 * once, its mode known (mig only on a MIG model, free holding nothing);
 * each MIG instance a profile of the model, of that profile's size, at one
 * of its starts, inside the card, overlapping no other, within the
 * profile's max count and the card's compute slices; a shared card's
 * memory and MPS shares within the card; tenant and workload both set or
 * both null; each replica part of a workload once. Every problem goes to
 * diag (file; path gpus[i] or gpus[i].instances[k]; the message names node,
 * GPU index and instance). TS_INVALID when there is any, TS_NOMEM. */
ts_status reconf_plan_check(const struct reconf_plan *p, const struct spec_model *m,
                            const struct cat_catalog *cat, const char *file, struct ts_diag *diag);
/* Node leaves the fleet (`plan --removed-node`): its cards in p are marked
 * removed, so reconf_plan_check does not look for them in the fleet and a
 * replan tears them down (cordon, drain, destroy; drains counted). Bad
 * input (TS_INVALID, err) when the fleet still has the node or p has no
 * card on it. */
ts_status reconf_plan_remove_node(struct reconf_plan *p, const struct spec_model *m,
                                  const char *node, struct ts_error *err);
/* 1 when text is a JSON object of kind Plan (else, e.g., a NodeInventory). */
int reconf_text_is_plan(const char *text, size_t len);

enum reconf_step_kind { RECONF_DESTROY, RECONF_CREATE };

struct reconf_step {
    int kind;  /* enum reconf_step_kind */
    int gi_id; /* destroy: the instance */
    int profile_id;
    char profile[40];
    struct inv_placement pl;
};

enum reconf_verdict {
    RECONF_KEEP,        /* geometry matches: never touched */
    RECONF_CHANGE,      /* steps below */
    RECONF_MIG_OFF,     /* plan wants MIG, MIG mode disabled */
    RECONF_MIG_ON,      /* plan uses the whole card, MIG mode enabled */
    RECONF_NO_CARD,     /* no such GPU index in the inventory */
    RECONF_WRONG_MODEL, /* the card is another model than planned */
    RECONF_NO_PROFILE   /* the card offers no such profile */
};
extern const char *const reconf_verdict_names[];

struct reconf_diff {
    int verdict;          /* enum reconf_verdict */
    char why[TS_MSG_MAX]; /* for everything but KEEP and CHANGE */
    struct reconf_step step[2 * INV_GIS_MAX];
    int nstep, ndestroy, ncreate;
};

/* Compare card g (NULL: absent) with target t. cat (may be NULL) checks
 * that the card is the planned model. Destroys come first, then creates
 * in start order; instances in both stay. */
void reconf_diff_card(const struct inv_gpu *g, const struct reconf_card *t,
                      const struct cat_catalog *cat, struct reconf_diff *out);
/* "create 3g.40gb (ID 9) at 0:4" etc. */
void reconf_step_text(const struct reconf_step *s, struct ts_sbuf *out);

/* `plan --current`: every planned card against the inventories (text, or
 * a JSON object for the plan document's "reconfiguration" key). */
void reconf_text(const struct reconf_plan *p, const struct inv_node *inv, int ninv,
                 const struct cat_catalog *cat, struct ts_sbuf *out);
json_t *reconf_json(const struct reconf_plan *p, const struct inv_node *inv, int ninv,
                    const struct cat_catalog *cat);

/* The planned card node/GPU index, or NULL. */
const struct reconf_card *reconf_plan_card(const struct reconf_plan *p, const char *node,
                                           int index);
/* The planned instance of node/GPU index at start, or NULL. */
const struct reconf_want *reconf_plan_find(const struct reconf_plan *p, const char *node, int index,
                                           int start);

/* ---- replanning (replan.c, steps.c) --------------------------------------- */

/* --prefer: which plan found wins among those the limits allow: fewest
 * drains (then cards, then cost), fewest cards (then drains, then cost),
 * lowest cost (then drains, then cards). */
enum reconf_prefer {
    RECONF_PREFER_FEWER_DRAINS,
    RECONF_PREFER_FEWER_CARDS,
    RECONF_PREFER_LOWER_COST
};
extern const char *const reconf_prefer_names[]; /* NULL-ended */

struct reconf_replan_opts {
    int max_drains;   /* -1: no limit */
    int prefer;       /* enum reconf_prefer */
    int max_cards;    /* a card budget: at most this many used cards; 0: none */
    int64_t max_cost; /* a cost budget, micro-units per hour (PriceBook); 0: none */
    /* A spec the fleet cannot hold whole: the rows the plan of what fits
     * left out (plan_partial's left). Under a drain limit, the no-drain
     * plan keeps every one that runs, as it runs (a growth on MIG held at
     * its running profile, anything else kept as it runs; named, as
     * pin.c keeps any row). NULL: none. */
    const struct decide_row *const *left;
    size_t nleft;
    /* The catalog (NULL: none): a workload whose decision moved it to
     * another model and mechanism is kept on the one it runs on as decide
     * has it there (plan_decide_on), when that is how it runs. */
    const struct cat_catalog *cat;
};

enum reconf_op_kind {
    RECONF_OP_CORDON,
    RECONF_OP_DRAIN,
    RECONF_OP_DESTROY,
    RECONF_OP_MIG_MODE,
    RECONF_OP_CREATE,
    RECONF_OP_UNCORDON
};
extern const char *const reconf_op_names[];

/* One ordered step on one card. wave 0: steps that disturb no running pod
 * (tearing down what removed tenants left, creating in free space); wave
 * k >= 1: the k-th drained card, done alone (cordon .. uncordon). */
struct reconf_op {
    int kind, wave;
    const char *node, *model;
    int index;
    const char *what;    /* destroy/create: "3g.40gb at 4:4", "whole card", "mps client" */
    const char *tenants; /* drain: the pods it evicts; destroy/create: whose; NULL: none */
    const char *why;     /* destroy: "removed from the spec" etc., or NULL */
    int row;             /* destroy/create: the decision row of a live workload's first GPU
                          * part (the replica rule counts these), else -1 */
    const char *tenant, *workload; /* destroy: whose instance (NULL: the canary), copied */
};

/* One plan the replanner found (a Pareto point when no other has fewer or
 * equal drains, cards and cost with one of them fewer). */
struct reconf_point {
    const char *how; /* "fresh plan", "running placements kept, 2 cards emptied" */
    int drains, cards;
    int removed_drains; /* of drains, on nodes that leave the fleet */
    int unplaced;       /* replicas it leaves out (the no-drain plan); 0: none */
    int held;           /* replicas it keeps under their new size (the no-drain plan) */
    int64_t cost;       /* used cards per hour, micro-units; -1: no PriceBook */
    const char *why;    /* refused: why (a limit, the replica rule); NULL: allowed */
    int chosen, pareto;
};

/* A workload the plan could not place without more drains than allowed
 * (--max-drains 0 keeps what runs and names what does not fit). */
struct reconf_unplaced {
    const char *tenant, *workload;
    int replicas; /* replicas missing (at their new size) */
    const char *why;
    /* A workload kept as it runs (--max-drains: it grew past the MIG
     * profile it runs on, changed mechanism or model, or the fleet cannot
     * hold it now): kept replicas run on as kept_mode at kept_profile (MIG;
     * else NULL), none as new_mode at new_profile (0 and NULL otherwise). */
    int kept;
    const char *kept_profile, *new_profile;
    const char *kept_mode, *new_mode; /* mechanisms: "mig", "mps", "whole", ... */
};

struct reconf_replan {
    struct ts_arena arena;
    struct reconf_op *op;
    size_t nop, cap;
    int drains, cards_kept, cards_changed;
    int removed_drains;          /* of drains, cards of nodes that left the fleet */
    int evicted;                 /* running instances the drains evict (ties: fewer first) */
    struct reconf_point *points; /* every plan found, the chosen one marked */
    size_t npoints;
    struct reconf_unplaced *unplaced;
    size_t nunplaced;
    const char *strategy; /* which candidate: see docs/replanning.md */
    const char *note;     /* why the other candidate lost, or NULL */
    const char *unsafe;   /* a workload one drain stops every replica of, or NULL */
};

/* Replan: *p is the fresh plan of the new spec; cur what runs now (a
 * previous `tessera plan -o json`). Two candidates: the fresh plan with its
 * cards renumbered within each node and model to keep the most running
 * instances in place, and a plan that keeps every running instance whose
 * workload is unchanged and places only what is new in free space. The
 * options pick one; *p becomes it (the old one freed). TS_INFEASIBLE when
 * neither meets --max-drains or the replica rule (err says why). */
ts_status reconf_replan(struct plan **p, const struct reconf_plan *cur,
                        const struct reconf_replan_opts *o, struct reconf_replan *out,
                        struct ts_error *err);
void reconf_replan_release(struct reconf_replan *r);

/* A spec the fleet cannot hold whole (fits.c): d's rows into *out (its rows
 * malloc'd, the caller frees out->rows; out->arena unused), first those
 * that cur runs unchanged (an instance of the same tenant and workload on
 * the decision's model and MIG profile), then the rest, each group in d's
 * order: the order plan_build_partial keeps them in. TS_NOMEM or TS_OK. */
ts_status reconf_running_first(const struct reconf_plan *cur, const struct decide_result *d,
                               struct decide_result *out);
/* Name one more workload a replan leaves out (why copied); the steps that
 * destroy its running instances (their tenant and workload) say so instead
 * of "removed from the spec". */
ts_status reconf_replan_unplaced_add(struct reconf_replan *r, const char *tenant,
                                     const char *workload, int replicas, const char *why);

/* The steps that turn cur into target (steps.c); sets unsafe to the first
 * workload with two or more running replicas that one drain would stop
 * all of ("tenant/workload"). TS_NOMEM or TS_OK. */
ts_status reconf_steps(const struct plan *target, const struct reconf_plan *cur,
                       struct reconf_replan *out);
void reconf_replan_text(const struct reconf_replan *r, struct ts_sbuf *out);
json_t *reconf_replan_json(const struct reconf_replan *r, const struct reconf_replan_opts *o);

#endif
