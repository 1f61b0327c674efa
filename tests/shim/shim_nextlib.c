/*
 * shim_nextlib.c - a library loaded after the shim (dlopen) that reaches the
 * driver the way some frameworks do: dlsym(RTLD_NEXT, "cuMemAlloc_v2"). It
 * is linked against libcuda.so.1, so RTLD_NEXT from here finds the driver's
 * symbol; the shim must still hand out its own definition. Used by
 * shim_bypass's "next" probe.
 */
#include "util/cuda_abi.h"

#include <dlfcn.h>

__attribute__((visibility("default"))) void *shim_nextlib_lookup(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

/* Keep the DT_NEEDED on libcuda.so.1. */
__attribute__((visibility("default"))) void *shim_nextlib_anchor(void) { return (void *)&cuInit; }
