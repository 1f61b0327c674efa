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
 *   apply.c     destroy / create / verify / roll back on one node.
 */
#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

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
/* nvmlShutdown and dlclose; NULL is fine. */
void agent_nvml_close(struct agent_nvml *n);

/* ---- inventory (inventory.c) ---------------------------------------------- */

/* Read every GPU of the node. inv->node is set to node. */
ts_status agent_inventory_read(struct agent_nvml *n, const char *node, struct inv_node *inv,
                               struct ts_error *err);

/* ---- apply (apply.c) ----------------------------------------------------- */

struct agent_apply_opts {
    const char *node;
    int dry_run;
    /* When set (dry runs only), the node's state instead of NVML's: a
     * NodeInventory read with inv_load, so a change can be previewed
     * anywhere (n may then be NULL). */
    const struct inv_node *inventory;
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

#endif
