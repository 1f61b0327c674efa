/*
 * nvml.c - loading NVML with dlopen (no link-time dependency on the
 * driver): $TESSERA_NVML_LIBRARY when set (the tests point it at the
 * stand-in), else libnvidia-ml.so.1 as the driver installs it. Every
 * function of AGENT_NVML_FUNCS must resolve; those of AGENT_NVML_OPTIONAL
 * may be missing (an older driver), and what that leaves unchecked is
 * kept for the agent to say; then nvmlInit_v2.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/internal.h"

#define NVML_DEFAULT "libnvidia-ml.so.1"

ts_status agent__nvml_err(const struct agent_nvml *n, nvmlReturn_t r, const char *call, int gpu,
                          struct ts_error *err)
{
    const char *what = n && n->nvmlErrorString ? n->nvmlErrorString(r) : NULL;
    char card[32] = "";
    if (gpu >= 0)
        snprintf(card, sizeof card, " on GPU %d", gpu);
    return ts_err(err, TS_INTERNAL, "%s%s: %s (NVML error %d)", call, card,
                  what ? what : "unknown error", r);
}

static ts_status resolve(struct agent_nvml *n, const char *path, struct ts_error *err)
{
    void *sym;
#define AGENT__RESOLVE(ret, name, params)                                                        \
    sym = dlsym(n->lib, #name);                                                                  \
    if (!sym)                                                                                    \
        return ts_err(err, TS_NOT_FOUND,                                                         \
                      "%s has no %s: the NVIDIA driver is too old (R470 or later needed)", path, \
                      #name);                                                                    \
    memcpy(&n->name, &sym, sizeof(sym));
    AGENT_NVML_FUNCS(AGENT__RESOLVE)
#undef AGENT__RESOLVE
    return TS_OK;
}

/* Optional functions: NULL when missing, and a note of what goes unchecked. */
static void resolve_optional(struct agent_nvml *n, const char *path)
{
    void *sym;
    size_t used = 0;
#define AGENT__OPTIONAL(ret, name, params, lost)                                                 \
    sym = dlsym(n->lib, #name);                                                                  \
    memcpy(&n->name, &sym, sizeof(sym));                                                         \
    if (!sym && used < sizeof n->unchecked)                                                      \
        used += (size_t)snprintf(n->unchecked + used, sizeof n->unchecked - used,                \
                                 "%s%s has no %s (an older driver): %s", used ? "; " : "", path, \
                                 #name, lost);
    AGENT_NVML_OPTIONAL(AGENT__OPTIONAL)
#undef AGENT__OPTIONAL
}

const char *agent_nvml_unchecked(const struct agent_nvml *n)
{
    return n && n->unchecked[0] ? n->unchecked : NULL;
}

ts_status agent_nvml_open(struct agent_nvml **out, struct ts_error *err)
{
    const char *env = getenv("TESSERA_NVML_LIBRARY");
    const char *path = env && *env ? env : NVML_DEFAULT;
    *out = NULL;
    struct agent_nvml *n = calloc(1, sizeof(*n));
    if (!n)
        return ts_err(err, TS_NOMEM, "out of memory");
    /* NODELETE: the library may run threads of its own (the stand-in samples
     * utilisation on one once asked, as a driver's does): after dlclose they
     * would run in unmapped code, so it stays mapped until the process ends */
    n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!n->lib) {
        free(n);
        if (env && *env)
            return ts_err(err, TS_NOT_FOUND, "TESSERA_NVML_LIBRARY=%s cannot be loaded: %s", path,
                          dlerror());
        return ts_err(err, TS_NOT_FOUND,
                      "%s not found: install the NVIDIA driver (nvidia-driver / libnvidia-ml1) "
                      "or run on a GPU node; set TESSERA_NVML_LIBRARY to a path to use another "
                      "file",
                      NVML_DEFAULT);
    }
    ts_status st = resolve(n, path, err);
    if (st == TS_OK)
        resolve_optional(n, path);
    nvmlReturn_t r = st == TS_OK ? n->nvmlInit_v2() : NVML_SUCCESS;
    if (st == TS_OK && r != NVML_SUCCESS)
        st = agent__nvml_err(n, r, "nvmlInit_v2", -1, err);
    if (st != TS_OK) {
        dlclose(n->lib);
        free(n);
        return st;
    }
    *out = n;
    return TS_OK;
}

void agent_nvml_close(struct agent_nvml *n)
{
    if (!n)
        return;
    n->nvmlShutdown();
    dlclose(n->lib);
    free(n);
}
