/*
 * internal.h - what the agent's files share and nobody else uses: the
 * loaded NVML function table and the error formatter for NVML calls.
 */
#ifndef AGENT_INTERNAL_H
#define AGENT_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include "agent/agent.h"
#include "agent/nvml_abi.h"
#include "util/jsonread.h"

struct agent_nvml {
    void *lib;
#define AGENT__PTR(ret, name, params) ret(*name) params;
    AGENT_NVML_FUNCS(AGENT__PTR)
#undef AGENT__PTR
#define AGENT__OPT(ret, name, params, lost) ret(*name) params;
    AGENT_NVML_OPTIONAL(AGENT__OPT)
#undef AGENT__OPT
    char unchecked[512]; /* what the optional functions missing leave unchecked */
};

/* "CALL on GPU n: <nvmlErrorString> (NVML error r)"; gpu < 0: no card. */
ts_status agent__nvml_err(const struct agent_nvml *n, nvmlReturn_t r, const char *call, int gpu,
                          struct ts_error *err);

/* Read GPU i (its NVML index) into *g: what agent_inventory_read reads for
 * each card, for one card only. */
ts_status agent__gpu_read(struct agent_nvml *n, unsigned int i, struct inv_gpu *g,
                          struct ts_error *err);

/* Before a card's change (check.c): every created instance at a placement
 * the card lists, the target geometry without overlaps. TS_INVALID naming
 * the GPU, profile and placements. */
ts_status agent__check_change(const struct inv_gpu *g, const struct reconf_diff *d,
                              struct ts_error *err);
/* Destroy GPU instance id (of profile_id) of card gpu with its compute
 * instances (apply.c). */
ts_status agent__destroy_gi(struct agent_nvml *n, nvmlDevice_t d, int gpu, int profile_id, int id,
                            struct ts_error *err);

/* journal.c: before a card's first change, what it holds and the steps
 * (written atomically); after it, removed. */
ts_status agent__journal_begin(const char *path, const struct inv_gpu *before,
                               const struct reconf_diff *d, struct ts_error *err);
void agent__journal_end(const char *path);

/* busy.c: the processes on the GPU instances the change d of card g
 * destroys (a process NVML places on no instance holds the whole card).
 * Returns how many instances are busy (then the refusal, naming each
 * process, goes to log), 0 when none, -1 when the processes cannot be
 * listed (err and log say why). */
int agent__busy(struct agent_nvml *n, nvmlDevice_t d, const struct inv_gpu *g,
                const struct reconf_diff *diff, struct ts_sbuf *log, struct ts_error *err);

/* 1 (with why) when the card's MIG mode has a change pending, else 0. */
int agent__mode_pending(const struct inv_gpu *g, char *why, size_t cap);

/* ---- watch.c, status.c, custody.c ---------------------------------------- */

/* What /metrics and the probes show; written by the loop under the lock. */
struct agent__stats {
    long ok, failed, busy, plan_changes, config_errors, recoveries;
    int64_t last_ms;  /* wall clock, end of the last reconcile; 0: none */
    int64_t round_ms; /* monotonic, end of the last round */
    int last_ok, drift, planned, ready;
    int busy_instances; /* found busy by the last reconcile */
};

struct agent_watch {
    const struct agent_watch_opts *o;
    struct agent_nvml *n;
    pthread_mutex_t lock;
    struct agent__stats stats;
    struct reconf_plan plan;                 /* the node's last good plan (n == 0: none) */
    int have_plan, pending;                  /* pending: the plan changed and is not applied yet */
    uint64_t file_hash, bad_hash, node_hash; /* bad_hash: a file that did not load */
    int64_t backoff_ms, next_try_ms;
    /* the last config and card-reading errors: logged once until they change */
    char cfg_err[TS_MSG_MAX], obs_err[TS_MSG_MAX];
};

/* Custody events for what changed between before and after (custody.c):
 * each GPU instance created, with the plan's tenant; each destroyed, as
 * "unassigned". How many were recorded in *recorded. */
ts_status agent__custody(const struct agent_watch_opts *o, const struct inv_node *before,
                         const struct inv_node *after, const struct reconf_plan *plan,
                         int *recorded, struct ts_error *err);

#endif
