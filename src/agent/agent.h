/*
 * agent.h - the node agent: what the GPUs of this node hold (through NVML,
 * loaded with dlopen), that inventory as a NodeInventory JSON document
 * (docs/agent.md), the difference between a card's MIG geometry and the
 * plan's, and applying the plan's geometry with rollback.
 *
 * Pieces (one file each):
 *   nvml.c      loading libnvidia-ml.so.1 (or $TESSERA_NVML_LIBRARY) and
 *               formatting NVML errors with the call, the card and
 *               nvmlErrorString;
 *   inventory.c reading every GPU, profile, placement, GPU and compute
 *               instance through NVML;
 *   invjson.c   the NodeInventory document: writing, and the reader that
 *               `catalog import`, `plan --current` and `ledger record
 *               --inventory` share; the text form;
 *   target.c    the plan's geometry per card (from a struct plan or from
 *               `tessera plan -o json` output) and the per-card difference;
 *   apply.c     destroy / create / verify / roll back on one node.
 * The inventory is plain fixed-size data (no pointers), so it can be copied
 * to keep the state before a change. Limits: AGENT_*_MAX below; an input
 * beyond them is an error, never truncated silently.
 */
#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

#include <stddef.h>
#include <jansson.h>
#include "catalog/catalog.h"
#include "plan/plan.h"
#include "util/arena.h"
#include "util/error.h"
#include "util/sbuf.h"

#define AGENT_GPUS_MAX 16
#define AGENT_PROFILES_MAX 24
#define AGENT_PLACEMENTS_MAX 16
#define AGENT_GIS_MAX 16
#define AGENT_CIS_MAX 8
#define AGENT_PROCS_MAX 64
#define AGENT_STR 96               /* UUIDs, names (NVML's V2 buffer size) */
#define AGENT_NODE_MAX 254         /* a Kubernetes node name, with its NUL */

struct agent_placement {
    int start, size;               /* memory slices */
};

/* A GPU-instance profile the card offers. */
struct agent_profile {
    int id;                        /* NVML profile ID (nvidia-smi's) */
    char name[40];                 /* "1g.10gb" (NVML's "MIG " dropped) */
    int slices;                    /* compute slices */
    long long memory_mib;
    int sms;                       /* multiprocessors */
    int max_count;                 /* instances the card can hold */
    struct agent_placement pl[AGENT_PLACEMENTS_MAX];
    int npl;
};

struct agent_ci {
    int id, profile_id, slices;
    char profile[48];              /* "3g.40gb" (full) or "1c.3g.40gb" */
    struct agent_placement pl;
    char uuid[AGENT_STR];          /* MIG device UUID, "" if none */
};

struct agent_gi {
    int id, profile_id, slices;
    char profile[40];
    struct agent_placement pl;
    struct agent_ci ci[AGENT_CIS_MAX];
    int nci;
};

struct agent_gpu {
    int index;
    char uuid[AGENT_STR], name[AGENT_STR], pci[AGENT_STR];
    long long memory_mib;
    int mig_current, mig_pending;  /* 1 enabled, 0 disabled, -1 not supported */
    char compute_mode[24];         /* default, exclusive-process, prohibited, ... */
    struct agent_profile prof[AGENT_PROFILES_MAX];
    int nprof;
    struct agent_gi gi[AGENT_GIS_MAX];   /* by placement start */
    int ngi;
};

struct agent_inventory {
    char node[AGENT_NODE_MAX];
    struct agent_gpu gpu[AGENT_GPUS_MAX];
    int ngpu;
};

/* ---- NVML (nvml.c) ------------------------------------------------------ */

struct agent_nvml;

/* Load the library ($TESSERA_NVML_LIBRARY, else libnvidia-ml.so.1), resolve
 * every function and nvmlInit_v2. A missing library says how to get one. */
ts_status agent_nvml_open(struct agent_nvml **out, struct ts_error *err);
/* nvmlShutdown and dlclose; NULL is fine. */
void agent_nvml_close(struct agent_nvml *n);

/* ---- inventory (inventory.c, invjson.c) --------------------------------- */

/* Read every GPU of the node. inv->node is set to node. */
ts_status agent_inventory_read(struct agent_nvml *n, const char *node,
                               struct agent_inventory *inv, struct ts_error *err);

/* The NodeInventory JSON document (sorted keys, two-space indent, newline). */
ts_status agent_inventory_json(const struct agent_inventory *inv, struct ts_sbuf *out);
/* The same for people. */
void agent_inventory_text(const struct agent_inventory *inv, struct ts_sbuf *out);
/* Read a NodeInventory document; errors name file:line:column (JSON syntax)
 * or the JSON path ("gpus[0].gpuInstances[2].placement.start"). */
ts_status agent_inventory_parse(const char *text, size_t len, const char *file,
                                struct agent_inventory *inv, struct ts_error *err);
/* Read the file at path (at most TS_INPUT_MAX bytes) and parse it as above. */
ts_status agent_inventory_load(const char *path, struct agent_inventory *inv,
                               struct ts_error *err);
/* 1 when text (after blanks) starts like a JSON document. */
int agent_looks_json(const char *text, size_t len);

/* The card's profile for a plan's profile name of placement size (exact
 * name, else the same compute slices, attributes and size: 7g.79gb is
 * 7g.80gb); NULL if the card offers none. */
const struct agent_profile *agent_profile_for(const struct agent_gpu *g, const char *name,
                                              int size);

/* ---- the plan's geometry and the difference (target.c) ------------------ */

struct agent_want {
    const char *profile;           /* plan's profile name */
    int start, size;
    const char *tenant, *workload; /* NULL for the canary */
};

/* One planned card. mig: the plan gives it a MIG geometry; free: nothing.
 * owner: a card without MIG held by one tenant (its non-guest clients all
 * of that tenant), "shared" when several, NULL when free or from JSON. */
struct agent_target {
    const char *node, *model, *mode;
    const char *owner, *owner_workload;
    int index, mig;
    struct agent_want *want;
    int nwant;
};

struct agent_plan {
    struct ts_arena arena;
    struct agent_target *t;
    int n;
};

/* From a built plan (strings borrowed from p, which must outlive out). */
ts_status agent_plan_from_plan(const struct plan *p, struct agent_plan *out,
                               struct ts_error *err);
/* From `tessera plan -o json` text; errors name the JSON path. */
ts_status agent_plan_parse(const char *text, size_t len, const char *file,
                           struct agent_plan *out, struct ts_error *err);
void agent_plan_release(struct agent_plan *p);

enum agent_step_kind { AGENT_DESTROY, AGENT_CREATE };

struct agent_step {
    int kind;                      /* enum agent_step_kind */
    int gi_id;                     /* destroy: the instance */
    int profile_id;
    char profile[40];
    struct agent_placement pl;
};

enum agent_verdict {
    AGENT_KEEP,                    /* geometry matches: never touched */
    AGENT_CHANGE,                  /* steps below */
    AGENT_MIG_OFF,                 /* plan wants MIG, MIG mode disabled */
    AGENT_MIG_ON,                  /* plan uses the whole card, MIG mode enabled */
    AGENT_NO_CARD,                 /* no such GPU index in the inventory */
    AGENT_WRONG_MODEL,             /* the card is another model than planned */
    AGENT_NO_PROFILE               /* the card offers no such profile */
};
extern const char *const agent_verdict_names[];

struct agent_diff {
    int verdict;                   /* enum agent_verdict */
    char why[TS_MSG_MAX];          /* for everything but KEEP and CHANGE */
    struct agent_step step[2 * AGENT_GIS_MAX];
    int nstep, ndestroy, ncreate;
};

/* Compare card g (NULL: absent) with target t. cat (may be NULL) checks
 * that the card is the planned model. Destroys come first, then creates
 * in start order; instances in both stay. */
void agent_diff_card(const struct agent_gpu *g, const struct agent_target *t,
                     const struct cat_catalog *cat, struct agent_diff *out);
/* The GPU of inv with index, or NULL. */
const struct agent_gpu *agent_gpu_at(const struct agent_inventory *inv, int index);
/* "create 3g.40gb (ID 9) at 0:4" etc. */
void agent_step_text(const struct agent_step *s, struct ts_sbuf *out);

/* `plan --current`: every planned card against the inventories (text, or
 * a JSON object for the plan document's "reconfiguration" key). */
void agent_reconf_text(const struct agent_plan *p, const struct agent_inventory *inv, int ninv,
                       const struct cat_catalog *cat, struct ts_sbuf *out);
json_t *agent_reconf_json(const struct agent_plan *p, const struct agent_inventory *inv,
                                 int ninv, const struct cat_catalog *cat);

/* The planned card node/GPU index, or NULL. */
const struct agent_target *agent_plan_card(const struct agent_plan *p, const char *node,
                                           int index);
/* The planned instance of node/GPU index at start, or NULL. */
const struct agent_want *agent_plan_find(const struct agent_plan *p, const char *node,
                                         int index, int start);

/* ---- apply (apply.c) ----------------------------------------------------- */

struct agent_apply_opts {
    const char *node;
    int dry_run;
};

/* Bring every planned card of opts->node to the plan's geometry; what it
 * does and the final state of each changed card go to log. Returns TS_OK,
 * TS_INVALID (plan does not fit the node: unknown node, wrong model,
 * missing profile), or TS_INTERNAL when a card could not be changed
 * (processes running, NVML failure: rolled back; log says the end state). */
ts_status agent_apply(struct agent_nvml *n, const struct agent_plan *p,
                      const struct cat_catalog *cat, const struct agent_apply_opts *opts,
                      struct ts_sbuf *log, struct ts_error *err);

#endif
