/*
 * cuda.c - the CUDA driver API through dlopen (see internal.h). Nothing is
 * linked against libcuda, so tessera builds and runs its other verbs where
 * no driver exists, and `tessera fight` says clearly when it is missing.
 */
#include "fight/internal.h"

#include <dlfcn.h>
#include <string.h>

static void *resolve(void *lib, const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    return p ? p : dlsym(lib, name);
}

ts_status fight__cuda_open(struct fight_cuda *c, const char *path, struct ts_error *err)
{
    memset(c, 0, sizeof(*c));
    c->lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!c->lib) {
        const char *why = dlerror();
        return ts_err(err, TS_NOT_FOUND, "no CUDA driver: cannot load '%s' (%s)", path,
                      why ? why : "unknown reason");
    }
#define FIGHT__RESOLVE(name)                                                        \
    *(void **)&c->name = resolve(c->lib, #name);                                    \
    if (!c->name) {                                                                 \
        fight__cuda_close(c);                                                       \
        return ts_err(err, TS_NOT_FOUND, "CUDA driver '%s' lacks %s", path, #name); \
    }
    FIGHT_CUDA_FUNCS(FIGHT__RESOLVE)
#undef FIGHT__RESOLVE
    return TS_OK;
}

void fight__cuda_close(struct fight_cuda *c)
{
    if (c->lib)
        dlclose(c->lib);
    memset(c, 0, sizeof(*c));
}

ts_status fight__cuda_check(const struct fight_cuda *c, CUresult r, const char *what,
                            struct ts_error *err)
{
    if (r == CUDA_SUCCESS)
        return TS_OK;
    const char *text = NULL;
    if (!c->cuGetErrorString || c->cuGetErrorString(r, &text) != CUDA_SUCCESS || !text)
        text = "no description";
    return ts_err(err, r == CUDA_ERROR_OUT_OF_MEMORY ? TS_NOMEM : TS_IO, "%s: CUDA error %d (%s)",
                  what, r, text);
}
