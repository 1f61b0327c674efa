/*
 * decide.h - the decision table: per workload, which isolation mechanism,
 * which GPU model and MIG profile, and why.
 *
 * The rules are docs/spec.md's table, tried in order (R1 VM, R2 whole GPU,
 * R3 hardware boundary, R4 MPS, R5 memory-enforced fraction, R6
 * time-slicing). Each decision carries the rule id and a reason with the
 * numbers that drove it. Impossible requests (CUDA streams as isolation, a
 * dedicated contract with no way to give dedicated compute, a workload
 * larger than any card without multi-GPU, a sharing mechanism the contract
 * forbids, unknown GPU models) are located errors that say what to change.
 * decide is a pure function of the model and the catalog.
 */
#ifndef DECIDE_DECIDE_H
#define DECIDE_DECIDE_H

#include "catalog/catalog.h"
#include "spec/model.h"

enum decide_mech {
    DECIDE_WHOLE,
    DECIDE_MIG,
    DECIDE_MPS,
    DECIDE_TIME_SLICING,
    DECIDE_MEMORY_FRACTION,
    DECIDE_VGPU,
};
extern const char *const decide_mech_names[];

/* 1 when mech puts several workloads on one card: MPS, time-slicing and
 * memory fractions (a sharing pool), not whole GPUs, MIG or vGPU. */
int decide_mech_shares_card(int mech);
/* 1 when mech itself caps each workload's memory, so its claim carries the
 * cap: MPS (pinned device memory limit) and memory fractions (capacity);
 * not time-slicing, whose cap only tessera's shim enforces. */
int decide_mech_has_memory_cap(int mech);

enum decide_enforce { DECIDE_ENFORCE_NONE, DECIDE_ENFORCE_DRIVER, DECIDE_ENFORCE_SHIM };

struct decide_row {
    const struct spec_tenant *tenant;
    const struct spec_workload *workload;
    int index;                         /* position in spec order (stable sort key) */
    int mech;                          /* enum decide_mech */
    const struct cat_model *model;     /* GPU model it runs on */
    const struct cat_profile *profile; /* MIG profile (mig, or MIG-backed vgpu) */
    int gpus;                          /* whole GPUs per replica (whole, vgpu) */
    double need_gib;                   /* high-water mark + KV cache */
    double cap_gib;                    /* memory cap in a sharing pool */
    int sm_percent;                    /* MPS active thread percentage; the
                                          shim's SM share where it runs (0: none) */
    int enforce;                       /* memory-fraction: who enforces the limit */
    int security_boundary;             /* 0 when the mechanism does not isolate data */
    const char *rule;                  /* "R1".."R6" */
    const char *reason;
};

struct decide_result {
    struct ts_arena arena;
    struct decide_row *rows;
    size_t nrows;
};

/* Node eligibility, the one rule decide's reasons and plan's placements
 * share: NULL when row r may run on a card of model on node n, else the
 * constraint it breaks, as a phrase ("vGPU needs a node with vgpuLicensed:
 * true"). The rules: the card is the row's model; a MIG profile needs a
 * MIG-capable card; vGPU needs a vGPU-licensed node; MPS a node that allows
 * it (mps: true); a driver-enforced memory fraction a node whose cudaVersion
 * is 13.4 or later (a shim-enforced one runs anywhere). The spec has no node
 * labels or zones, so nothing else restricts a node. */
const char *decide_card_refuses(const struct decide_row *r, const struct spec_fleet_node *n,
                                const struct cat_model *model);
/* The MPS share of SMs row r (an MPS row) gets on a card of model: the
 * spec's smPercent, else its need over the card's memory, rounded up to
 * 5% (5 to 100). A replan that keeps r on another model than its
 * decision's re-derives it there. */
int decide_mps_sm_percent(const struct decide_row *r, const struct cat_model *model);
/* The CUDA version (major * 100 + minor) from which the driver enforces
 * memory fractions. */
#define DECIDE_CUDA_FRACTIONS 1304

/* Decide every workload of m. On failure diag names each problem. */
ts_status decide_run(const struct spec_model *m, const struct cat_catalog *cat,
                     struct decide_result **out, struct ts_diag *diag);
/* After the loader found m wrong (diag holds its errors), what decide finds
 * in the workloads it did not name, added to diag: one run names every
 * problem of a spec. */
void decide_report_rest(const struct spec_model *m, const struct cat_catalog *cat,
                        struct ts_diag *diag);
void decide_free(struct decide_result *r);

#endif
