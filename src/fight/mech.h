/*
 * mech.h - the fight's run context and its isolation mechanisms (mech.c):
 * what can run here (probe), the environment each tenant gets per phase,
 * and what a phase needs started and stopped around it (the MPS daemon).
 * Shared by run.c and mech.c only.
 */
#ifndef FIGHT_MECH_H
#define FIGHT_MECH_H

#include "fight/internal.h"

struct fight_ctx {
    const struct fight_opts *o;
    struct fight_result *r;
    char tmp[256];                  /* private temporary directory */
    char kernels[512];              /* module image given to workers, "" = PTX */
    char shim[512], limits[2][300]; /* the shim and the tenants' limit files */
    size_t total_mem;               /* bytes of device 0 */
    char mig[2][FIGHT_UUID_MAX];    /* sla's and noisy's MIG devices */
    char mps_ctl[512], mps_pipe[300], mps_log[300];
    int mps_up;
    char *argv[28];
    char numbuf[4][32];     /* the worker's numeric arguments */
    uint64_t rng, run_seed; /* the order's shuffle; each run's own seed */
    struct fight_nvml nvml; /* the card's readings, when NVML is there */
    const char *block;      /* "control" or "main", for progress lines */
};

/* Variables the fight itself sets for one tenant (not an input cap). */
#define FIGHT_ENV_MAX 10
struct fight_env {
    char *v[FIGHT_ENV_MAX + 1]; /* NULL-terminated, into buf */
    char buf[FIGHT_ENV_MAX][700];
    size_t n;
};

/* Fill c, look for the driver and each mechanism; mark each phase of r
 * FIGHT_ST_MEASURED (to run) or FIGHT_ST_SKIPPED with the reason.
 * TS_NOT_FOUND when the driver is missing and built-in workers need it. */
ts_status fight__mech_probe(struct fight_ctx *c, const struct fight_opts *o, struct fight_result *r,
                            struct ts_error *err);
/* The variables the sla (or noisy) tenant gets in phase ph. */
void fight__mech_env(const struct fight_ctx *c, int ph, int sla, struct fight_env *env);
/* Around one run of phase ph (MPS: start and quit the control daemon). */
ts_status fight__mech_begin(struct fight_ctx *c, int ph, struct ts_error *err);
void fight__mech_end(struct fight_ctx *c, int ph);
/* Copy why into p->reason, cut to fit. */
void fight__set_reason(struct fight_phase_result *p, const char *why);
/* Remove the temporary directory. */
void fight__ctx_release(struct fight_ctx *c);

/* judge.c: summarise the A/A control and judge it; 1 when it PASSed, else
 * 0 with every phase still to run marked skipped (too noisy). */
int fight__judge_control(struct fight_result *r);
/* Summarise the main block's phases, judge each against its baseline,
 * then the verdict of the whole run. */
void fight__judge(struct fight_result *r);

#endif
