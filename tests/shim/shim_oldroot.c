/*
 * shim_oldroot.c - a CUDA caller for tests/cli/shim_glibc.sh that runs in a
 * process of an old Debian root: a program built here needs this machine's
 * glibc, so this is a library, preloaded after the shim into one of the
 * root's own programs, whose constructor does the calls. Like a framework,
 * it dlopens libcuda.so.1 and finds each entry point with dlsym (the shim's,
 * which must find the old glibc's real dlsym). It allocates CHUNK bytes
 * twice (TESSERA_OLDROOT_CHUNK) and prints on stderr, as key=value:
 * the glibc it runs on, both results (0 success, 2 out of memory), the
 * total cuMemGetInfo_v2 reports, and the result of an allocation after the
 * first is freed. Built with glibc_compat.h like the shim.
 */
#include "util/cuda_abi.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>

/* dlsym too, which glibc_compat.h leaves alone for the shim that defines it. */
__asm__(".symver dlsym,dlsym@" SHIM_GLIBC_BASE);

typedef CUresult (*init_fn)(unsigned int);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*info_fn)(size_t *, size_t *);

__attribute__((constructor)) static void oldroot_calls(void)
{
    const char *chunk_env = getenv("TESSERA_OLDROOT_CHUNK");
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    fprintf(stderr, "oldroot: glibc=%s\n", gnu_get_libc_version());
    if (!chunk_env || !h) {
        fprintf(stderr, "oldroot: driver=%s\n", h ? "no TESSERA_OLDROOT_CHUNK" : dlerror());
        return;
    }
    size_t chunk = 0, total = 0, free_bytes = 0; /* no strtoull: __isoc23_ from glibc 2.38 */
    for (const char *d = chunk_env; *d >= '0' && *d <= '9'; d++)
        chunk = chunk * 10 + (size_t)(*d - '0');
    init_fn init = (init_fn)dlsym(h, "cuInit");
    alloc_fn alloc = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
    free_fn release = (free_fn)dlsym(h, "cuMemFree_v2");
    info_fn info = (info_fn)dlsym(h, "cuMemGetInfo_v2");
    if (!init || !alloc || !release || !info) {
        fprintf(stderr, "oldroot: driver=missing entry points\n");
        return;
    }
    CUdeviceptr a = 0, b = 0, c = 0;
    init(0);
    int first = alloc(&a, chunk), second = alloc(&b, chunk);
    info(&free_bytes, &total);
    if (first == CUDA_SUCCESS)
        release(a);
    int again = alloc(&c, chunk);
    fprintf(stderr, "oldroot: first=%d second=%d total=%zu again=%d\n", first, second, total,
            again);
}
