/*
 * inventory.h - the NodeInventory document (docs/agent.md): what the GPUs
 * of one node hold (cards, MIG profiles with their placements, GPU and
 * compute instances with their UUIDs), as plain fixed-size data with no
 * pointers, so it can be copied to keep the state before a change. Written
 * by the node agent (from NVML), read by `catalog import`, `plan --current`
 * and `ledger record --inventory`. Pure: no driver, no files but inv_load.
 * Limits: INV_*_MAX (util/limits.h); an input beyond them is an error,
 * never cut.
 */
#ifndef INVENTORY_INVENTORY_H
#define INVENTORY_INVENTORY_H

#include <stddef.h>
#include "util/error.h"
#include "util/limits.h"
#include "util/sbuf.h"

/* Bytes of UUIDs and names: NVML's V2 buffer size
 * (NVML_DEVICE_UUID_V2_BUFFER_SIZE, NVML_DEVICE_NAME_V2_BUFFER_SIZE), the
 * format these come in. */
#define INV_STR 96

struct inv_placement {
    int start, size; /* memory slices */
};

/* A GPU-instance profile the card offers. */
struct inv_profile {
    int id;        /* NVML profile ID (nvidia-smi's) */
    char name[40]; /* "1g.10gb" (NVML's "MIG " dropped) */
    int slices;    /* compute slices */
    long long memory_mib;
    int sms;       /* multiprocessors */
    int max_count; /* instances the card can hold */
    struct inv_placement pl[INV_PLACEMENTS_MAX];
    int npl;
};

struct inv_ci {
    int id, profile_id, slices;
    char profile[48]; /* "3g.40gb" (full) or "1c.3g.40gb" */
    struct inv_placement pl;
    char uuid[INV_STR]; /* MIG device UUID, "" if none */
};

struct inv_gi {
    int id, profile_id, slices;
    char profile[40];
    struct inv_placement pl;
    struct inv_ci ci[INV_CIS_MAX];
    int nci;
};

struct inv_gpu {
    int index;
    char uuid[INV_STR], name[INV_STR], pci[INV_STR];
    long long memory_mib;
    int mig_current, mig_pending; /* 1 enabled, 0 disabled, -1 not supported */
    char compute_mode[24];        /* default, exclusive-process, prohibited, ... */
    struct inv_profile prof[INV_PROFILES_MAX];
    int nprof;
    struct inv_gi gi[INV_GIS_MAX]; /* by placement start */
    int ngi;
};

struct inv_node {
    char node[INV_NODE_MAX];
    struct inv_gpu gpu[INV_GPUS_MAX];
    int ngpu;
};

/* The NodeInventory JSON document (sorted keys, two-space indent, newline). */
/* The NodeInventory JSON document (sorted keys, two-space indent, newline). */
ts_status inv_json(const struct inv_node *inv, struct ts_sbuf *out);
/* The same for people. */
void inv_text(const struct inv_node *inv, struct ts_sbuf *out);
/* Read a NodeInventory document; errors name file:line:column (JSON syntax)
 * or the JSON path ("gpus[0].gpuInstances[2].placement.start"). */
ts_status inv_parse(const char *text, size_t len, const char *file, struct inv_node *inv,
                    struct ts_error *err);
/* Read the file at path (at most TS_INPUT_MAX bytes) and parse it as above. */
ts_status inv_load(const char *path, struct inv_node *inv, struct ts_error *err);
/* 1 when text (after blanks) starts like a JSON document. */
int inv_looks_json(const char *text, size_t len);

/* The card's profile for a plan's profile name of placement size (exact
 * name, else the same compute slices, attributes and size: 7g.79gb is
 * 7g.80gb); NULL if the card offers none. */
const struct inv_profile *inv_profile_for(const struct inv_gpu *g, const char *name, int size);

/* The GPU of inv with index, or NULL. */
const struct inv_gpu *inv_gpu_at(const struct inv_node *inv, int index);

#endif
