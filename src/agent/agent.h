/*
 * agent.h - the node agent: reads what the GPUs of this node hold through
 * NVML (loaded with dlopen) into a NodeInventory (inventory/), and applies
 * the plan's MIG geometry (the steps reconf/ computes) with rollback.
 *
 * Pieces (one file each):
 *   nvml.c      loading libnvidia-ml.so.1 (or $TESSERA_NVML_LIBRARY) and
 *               formatting NVML errors with the call, the card and
 *               nvmlErrorString;
 *   inventory.c reading every GPU, profile, placement, GPU and compute
 *               instance through NVML;
 *   apply.c     destroy / create / verify / roll back on one node;
 *   busy.c      the processes (compute and MPS) on the instances a change
 *               destroys: the agent never touches a busy instance;
 *   journal.c   the in-flight change on disk, and recovery after a crash;
 *   pidmap.c    the container-to-host pid map of the node's GPU processes;
 *   watch.c     `agent watch`: the long-running reconcile loop;
 *   enforce.c   its enforcement: each GPU process's container (cgroup.c)
 *               against its pod's limit file (kubelet.c, parsed by the
 *               shim's parser: limitfile.c), acted on by act.c;
 *   custody.c   its ledger events;
 *   status.c    its /healthz, /readyz and /metrics answers.
 */
#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

#include <signal.h>
#include <stddef.h>
#include <jansson.h>
#include "catalog/catalog.h"
#include "inventory/inventory.h"
#include "reconf/reconf.h"
#include "util/arena.h"
#include "util/error.h"
#include "util/limits.h" /* AGENT_PROCS_MAX */
#include "util/sbuf.h"

/* ---- NVML (nvml.c) ------------------------------------------------------ */

struct agent_nvml;

/* Load the library ($TESSERA_NVML_LIBRARY, else libnvidia-ml.so.1), resolve
 * every function and nvmlInit_v2. A missing library says how to get one. */
ts_status agent_nvml_open(struct agent_nvml **out, struct ts_error *err);
/* What the agent cannot check with this driver (optional NVML functions it
 * lacks: AGENT_NVML_OPTIONAL), as one sentence, or NULL when nothing. */
const char *agent_nvml_unchecked(const struct agent_nvml *n);
/* nvmlShutdown and dlclose; NULL is fine. */
void agent_nvml_close(struct agent_nvml *n);

/* ---- inventory (inventory.c) ---------------------------------------------- */

/* Read every GPU of the node. inv->node is set to node. */
ts_status agent_inventory_read(struct agent_nvml *n, const char *node, struct inv_node *inv,
                               struct ts_error *err);

/* ---- apply (apply.c) ----------------------------------------------------- */

/* What agent_apply did, card by card (counts add up). */
struct agent_apply_report {
    int kept, changed, busy, failed;
    int busy_instances; /* GPU instances found busy on the busy cards */
};

struct agent_apply_opts {
    const char *node;
    int dry_run;
    /* When set (dry runs only), the node's state instead of NVML's: a
     * NodeInventory read with inv_load, so a change can be previewed
     * anywhere (n may then be NULL). */
    const struct inv_node *inventory;
    /* When set, the in-flight change of each card is written here before
     * its first NVML call and removed when the card is done or rolled back
     * (journal.c; agent_journal_recover reads what a crash left). */
    const char *journal;
    struct agent_apply_report *report; /* may be NULL */
};

/* Bring every planned card of opts->node to the plan's geometry; what it
 * does and the final state of each changed card go to log. Returns TS_OK,
 * TS_INVALID (plan does not fit the node: unknown node, wrong model,
 * missing profile, a placement the card does not list, overlapping
 * instances; or an inventory without dry_run), or TS_INTERNAL when a card could not be changed
 * (processes running, NVML failure: rolled back; log says the end state). */
ts_status agent_apply(struct agent_nvml *n, const struct reconf_plan *p,
                      const struct cat_catalog *cat, const struct agent_apply_opts *opts,
                      struct ts_sbuf *log, struct ts_error *err);

/* ---- crash recovery (journal.c), pid map (pidmap.c) ---------------------- */

/* If path holds the journal of a change cut short, destroy what it left
 * half made (a GPU instance without compute instances where the change
 * created or destroyed one) and remove the journal; *found says whether
 * there was one, log what was done. The next reconcile completes the
 * change towards the plan. TS_INVALID for a file that is not a journal. */
ts_status agent_journal_recover(struct agent_nvml *n, const char *path, int *found,
                                struct ts_sbuf *log, struct ts_error *err);

/* The container-to-host pid map of the processes on inv's cards, written
 * to path atomically (format: pidmap.c, docs/agent.md). */
ts_status agent_pidmap_write(struct agent_nvml *n, const struct inv_node *inv, const char *path,
                             struct ts_error *err);

/* ---- watch (watch.c) -------------------------------------------------------- */

struct store;

struct agent_watch_opts {
    const char *node;
    const char *node_config;   /* NodeConfig or plan (reconf_plan_parse), polled */
    const char *inventory_out; /* NodeInventory written each round, or NULL */
    const char *pidmap_out;    /* pid map written each round, or NULL */
    const char *journal;       /* the in-flight change (crash recovery), or NULL */
    const char *listen;        /* where the CLI serves agent_watch_status (logged) */
    const struct cat_catalog *cat;
    struct store *store; /* custody events; NULL: none */
    const void *key;     /* the ledger's HMAC key, or NULL */
    size_t key_len;
    int interval_ms, backoff_max_ms, log_json;
    volatile sig_atomic_t *stop; /* set by SIGTERM/SIGINT: the loop ends */
    /* node is a default the NodeConfig's `node` replaces (no --node). */
    int node_from_config;
    /* The enforcement (docs/agent.md): every enforce_interval_ms (0: off)
     * each GPU process's container (its cgroup) is judged against its pod's
     * limit file under kubelet_root; the SM share over sm_window_ms. */
    const char *kubelet_root;
    int enforce_interval_ms, sm_window_ms;
    /* The Kubernetes API for `evict` (kube.c): NULL each, in-cluster (the
     * KUBERNETES_SERVICE_HOST/_PORT environment, the service account's
     * token and CA files). */
    const char *kube_api, *kube_token_file, *kube_ca_file;
};

struct agent_watch;

/* A watch over o (borrowed, with n): with o->journal, first recovers from a
 * change a crash cut short (agent_journal_recover). TS_INVALID or
 * TS_SYNTAX for a journal that is not one, an NVML error when it cannot
 * clean up. */
ts_status agent_watch_new(struct agent_nvml *n, const struct agent_watch_opts *o,
                          struct agent_watch **out, struct ts_error *err);
/* Run until *o->stop: each interval read the node config; when this
 * node's part of it changed (content hash), or after a failure once the
 * backoff has passed, bring the cards to it with agent_apply's checks;
 * then read the cards, write the inventory and pid map, update the
 * metrics. A change in progress when the stop comes is finished first.
 * Logs through ts_log. TS_OK after a stop. */
ts_status agent_watch_run(struct agent_watch *w, struct ts_error *err);
/* The answer to GET path (/healthz, /readyz, /metrics; else 404): the HTTP
 * code, the text in body. Safe to call from another thread while it runs. */
unsigned agent_watch_status(struct agent_watch *w, const char *path, struct ts_sbuf *body);
void agent_watch_free(struct agent_watch *w); /* NULL is fine */

#endif
