/*
 * internal.h - what the agent's files share and nobody else uses: the
 * loaded NVML function table and the error formatter for NVML calls.
 */
#ifndef AGENT_INTERNAL_H
#define AGENT_INTERNAL_H

#include "agent/agent.h"
#include "agent/nvml_abi.h"

struct agent_nvml {
    void *lib;
#define AGENT__PTR(ret, name, params) ret(*name) params;
    AGENT_NVML_FUNCS(AGENT__PTR)
#undef AGENT__PTR
};

/* "CALL on GPU n: <nvmlErrorString> (NVML error r)"; gpu < 0: no card. */
ts_status agent__nvml_err(const struct agent_nvml *n, nvmlReturn_t r, const char *call,
                          int gpu, struct ts_error *err);

/* Read GPU i (its NVML index) into *g: what agent_inventory_read reads for
 * each card, for one card only. */
ts_status agent__gpu_read(struct agent_nvml *n, unsigned int i, struct agent_gpu *g,
                          struct ts_error *err);

/* Copy s into a fixed buffer (always NUL-terminated, cut if too long). */
void agent__copy(char *dst, size_t size, const char *src);

/* path.key or path.key[idx] (idx >= 0) into dst, cut to size. */
void agent__path(char *dst, size_t size, const char *path, const char *key, long idx);

/* JSON readers shared by invjson.c and target.c: each checks one field of
 * object o (at JSON path `path`), fills *out, and on failure fills err with
 * the file and the field's path (TS_INVALID, TS_TOO_LARGE for arrays). */
struct agent__rd {
    const char *file;
    struct ts_error *err;
};
ts_status agent__bad(const struct agent__rd *r, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
ts_status agent__get_obj(const struct agent__rd *r, json_t *v, const char *path);
ts_status agent__get_int(const struct agent__rd *r, json_t *o, const char *key,
                         const char *path, long long lo, long long hi, long long *out);
ts_status agent__get_i(const struct agent__rd *r, json_t *o, const char *key, const char *path,
                       int lo, int hi, int *out);
ts_status agent__get_str(const struct agent__rd *r, json_t *o, const char *key,
                         const char *path, char *dst, size_t size);
ts_status agent__get_arr(const struct agent__rd *r, json_t *o, const char *key,
                         const char *path, size_t max, json_t **out);

#endif
