/*
 * internal.h - what the agent's files share and nobody else uses: the
 * loaded NVML function table and the error formatter for NVML calls.
 */
#ifndef AGENT_INTERNAL_H
#define AGENT_INTERNAL_H

#include "agent/agent.h"
#include "agent/nvml_abi.h"
#include "util/jsonread.h"

struct agent_nvml {
    void *lib;
#define AGENT__PTR(ret, name, params) ret(*name) params;
    AGENT_NVML_FUNCS(AGENT__PTR)
#undef AGENT__PTR
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
/* 1 (with why) when the card's MIG mode has a change pending, else 0. */
int agent__mode_pending(const struct inv_gpu *g, char *why, size_t cap);

#endif
