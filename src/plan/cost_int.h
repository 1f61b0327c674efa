/*
 * cost_int.h - what the cost program's files share (plan/cost.c builds the
 * program, plan/costtrust.c says which pool each alternative joins,
 * plan/costcut.c makes its cuts, plan/costsolve.c solves it: the searches,
 * the bound). Not part of plan's interface; the rest of plan sees struct
 * cost through internal.h.
 */
#ifndef PLAN_COST_INT_H
#define PLAN_COST_INT_H

#include <glpk.h>
#include <stdint.h>
#include "plan/internal.h"

struct cost_model_row {
    const struct cat_model *model;
    int cards;
    double price; /* per card hour, currency units */
    int guests;   /* some alternative is a best-effort guest on it */
    int hosts;    /* some alternative is a scheduled whole card on it: guests may ride free */
};

struct cost_nz {
    int i, j;
    double v;
};

/* A pool group's clients as the bin-packing class its cuts price
 * (plan/costcut.c), made at its first cut. */
struct cost_cut_pair {
    size_t alt;  /* a class column's alternative in the group */
    size_t type; /* the type of one of its class's workloads */
    int own;     /* that workload is the class's first: the column's own type */
    size_t head; /* the column's own pair (which holds its price) */
};
struct cost_cut_class {
    struct plan_cfg cfg; /* types, each one's demand, configurations */
    int *demand;
    struct cost_cut_pair *pairs;
    size_t npairs;
    int *last;    /* the demands of its last separation (NULL: none yet) */
    glp_prob *lp; /* its configuration LP, kept for the next separation */
};
void plan__cost_cut_class_free(struct cost_cut_class *k);

struct cost_group {
    size_t slot;
    int mech;
    size_t owner;
    int col, mem, sm, clients;   /* fluid cards (0: its configurations' columns instead) */
    int cut;                     /* enum cost_cut */
    struct cost_cut_class *cuts; /* NULL until its first cut */
};

/* A pool group's configuration cuts (plan/costcut.c's group_cut). */
enum cost_cut {
    COST_CUT_NONE, /* not tried yet */
    COST_CUT_DONE, /* none can be made (too large to list, a client spreads), or
                    * none is needed (its configurations are its columns) */
    COST_CUT_MORE, /* made: an integer solution may call for a stronger one */
};

struct cost {
    const struct spec_model *m;
    const struct cat_catalog *cat;
    const struct decide_result *d;
    struct ts_arena arena;
    struct decide_row *alt; /* row r's: alt[first[r]] (its own) .. alt[first[r + 1] - 1] */
    size_t nalt, altcap;
    size_t *first;
    int moves; /* some workload has two alternatives or more */
    struct cost_model_row models[DECIDE_MODELS_MAX];
    size_t nmodels;
    size_t *trust; /* per tenant: its trust set (union-find) */
    int search;    /* the search's program: pools per clique of trust (cost_cliques) */
    /* A small fleet (at most PLAN_COST_PROOF_COLS_MAX workloads): a class
     * of pool clients is of one tenant, so its pool groups may be their
     * configurations (plan/costcfg.c); else of tenants that trust each
     * other (plan/cost.c's same_client). */
    int small;
    uint32_t *clq; /* the cliques: members, bits of cpos, of the set of clq_root */
    size_t *clq_root, nclq, clqcap;
    size_t *cpos; /* per tenant: its bit in its trust set's cliques */
    size_t *own;  /* per alternative: the pool it joins (owner_of, or a clique) */
    glp_prob *lp;
    int *ycol;                     /* per alternative: its column (0: not a class's) */
    int *count;                    /* per alternative: its class's workloads (0: not a class's) */
    size_t *cls;                   /* per row: the first row of its class */
    int caprow[DECIDE_MODELS_MAX]; /* per model: its cards */
    struct cost_nz *nzs;           /* the matrix, 1-based rows and columns */
    size_t nz, nzcap;
    int *mig_cols; /* scratch: a model's MIG card columns */
    size_t nmig, migcap;
    struct cost_group *gs; /* the sharing-pool groups */
    size_t ngs, gscap;
    int *grp;     /* per alternative: its group, or -1 */
    int cfg_cols; /* the groups' configuration columns (plan/costcfg.c) */
    int rounded;  /* the last solution is the LP's, rounded (plan__cost_rounded) */
    /* The last integer solution read (plan/costsolve.c's read_pins), kept
     * apart from GLPK's, which a later search that finds none clears: per
     * column (1-based), and its cards per model. */
    double *sol;
    int nsol;
    double sol_cards[DECIDE_MODELS_MAX];
    long separation_work; /* configurations of the group LPs solved (group_cut) */
};

/* Each sharing-pool group split into its parts that never share a card
 * (tenants joined by mutual trust among those with clients in it;
 * plan/costtrust.c); 0 on out of memory. */
int plan__cost_split_groups(struct cost *c);
/* model's slot in c->models, SIZE_MAX when the fleet has none. */
size_t plan__cost_slot(const struct cost *c, const struct cat_model *model);
/* A nonzero of the matrix (1-based row and column); 0 on out of memory. */
int plan__cost_put(struct cost *c, int row, int col, double v);
/* A row sum >= 0 (covering), or fixed at fx when fx > 0. */
int plan__cost_row(struct cost *c, double fx);
/* A card column of model slot k: priced, counted against its cards (-1:
 * out of memory). */
int plan__cost_card_col(struct cost *c, size_t k);
/* Group gi's cards as a column per configuration of its clients (plan/
 * costcfg.c): 1 when made, 0 when they are too many to list (or a client
 * spreads), -1 on out of memory. */
int plan__cost_group_configs(struct cost *c, int gi);
/* The program's columns but the groups' configurations: its size as the
 * budgets of the search and the bound count it. */
int plan__cost_cols(const struct cost *c);

/* Cuts for the groups the program's LP solution (mip: its integer
 * solution) uses (plan/costcut.c): a first cut where they have none yet
 * (groups it leaves empty need none to be bounded; a cut is optional, so a
 * group the solution moves to afterwards is still bounded by its memory),
 * and where they have one, a stronger one where the solution breaks the
 * group's cut at its clients. hit (may be NULL): per group, set where a
 * cut was added. Returns the cuts added, -1 when out of memory. */
int plan__cost_pool_cuts(struct cost *c, int mip, unsigned char *hit);
/* 1 when a's replicas are kept apart (spread, more than one replica). */
int plan__cost_spread(const struct decide_row *a);
/* Each tenant's trust set, and (c->search) the sets that are not cliques
 * as their maximal cliques; then c->alt with each alternative's pool in
 * c->own, copied per clique a sharing-pool client may join (c->first
 * renumbered). TS_NOMEM on out of memory. */
ts_status plan__cost_owners(struct cost *c);

#endif
