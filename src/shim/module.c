/*
 * module.c - modules and libraries. Loading a module (cuModuleLoad,
 * cuModuleLoadData, cuModuleLoadDataEx, cuModuleLoadFatBinary) or a library
 * (cuLibraryLoadData, cuLibraryLoadFromFile) makes the driver take device
 * memory for the image's code and __device__ globals, a size no call
 * states. The shim charges what the driver actually took: the driver's
 * free memory (the real cuMemGetInfo_v2) read before and after the load,
 * under one process mutex so two loads do not count each other. Whatever
 * else the card took between the two reads (a neighbour's allocation, a
 * sibling thread's) is charged to the load too: the safe direction, never
 * less than the driver took, unless memory was freed during the load. A
 * load the limit has no room for is unloaded again and refused with
 * CUDA_ERROR_OUT_OF_MEMORY; cuModuleUnload / cuLibraryUnload credit it.
 * Not a fast path.
 */
#include "shim/shim.h"

#include <pthread.h>

static pthread_mutex_t load_mutex = PTHREAD_MUTEX_INITIALIZER;

/* The driver's free device memory: 0 and *f, or -1 when it cannot tell. */
static int driver_free(uint64_t *f)
{
    __typeof__(&cuMemGetInfo_v2) fn = SHIM_REAL(cuMemGetInfo_v2);
    size_t fr = 0, tot = 0;
    if (!fn || fn(&fr, &tot) != CUDA_SUCCESS)
        return -1;
    *f = fr;
    return 0;
}

/* What a load took, from the free memory before it and now (0 unknown). */
static uint64_t took_since(int known, uint64_t before)
{
    uint64_t after = 0;
    if (!known || driver_free(&after) != 0) {
        static _Atomic int said;
        if (!atomic_exchange(&said, 1))
            shim__log("module load: the driver's free memory is unknown: module memory is not "
                      "charged");
        return 0;
    }
    return before > after ? before - after : 0;
}

/* A load: call(out, a) under the mutex, its memory charged by the free
 * memory it took, or unloaded (unload(*out)) and refused when over. */
static CUresult load(void **out, CUresult (*call)(void **out, const void *a), const void *a,
                     CUresult (*unload)(void *h))
{
    if (!shim__limited() || !out)
        return call(out, a);
    uint64_t before = 0;
    pthread_mutex_lock(&load_mutex);
    int known = driver_free(&before) == 0;
    CUresult r = call(out, a);
    uint64_t n = r == CUDA_SUCCESS ? took_since(known, before) : 0;
    if (r == CUDA_SUCCESS && shim__reserve(n) != CUDA_SUCCESS)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else if (r == CUDA_SUCCESS &&
             shim__track_put(SHIM_TRACK_MODULE, (uint64_t)(uintptr_t)*out, n, 0) != 0) {
        shim__unreserve(n);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY && *out) {
        unload(*out);
        *out = NULL;
    }
    pthread_mutex_unlock(&load_mutex);
    return r;
}

/* ---- modules ------------------------------------------------------------ */

static CUresult module_unload(void *h)
{
    __typeof__(&cuModuleUnload) fn = SHIM_REAL(cuModuleUnload);
    return fn ? fn((CUmodule)h) : CUDA_ERROR_NOT_INITIALIZED;
}

/* The arguments of a module load, and the entry point to call with them. */
struct module_args {
    int how; /* 0 cuModuleLoad, 1 LoadData, 2 LoadDataEx, 3 LoadFatBinary */
    const void *image;
    unsigned num;
    CUjit_option *options;
    void **values;
};

static CUresult module_call(void **out, const void *a)
{
    const struct module_args *m = a;
    CUmodule *mod = (CUmodule *)out;
    __typeof__(&cuModuleLoad) ld = SHIM_REAL(cuModuleLoad);
    __typeof__(&cuModuleLoadData) data = SHIM_REAL(cuModuleLoadData);
    __typeof__(&cuModuleLoadDataEx) ex = SHIM_REAL(cuModuleLoadDataEx);
    __typeof__(&cuModuleLoadFatBinary) fat = SHIM_REAL(cuModuleLoadFatBinary);
    switch (m->how) {
    case 0: return ld ? ld(mod, m->image) : CUDA_ERROR_NOT_INITIALIZED;
    case 1: return data ? data(mod, m->image) : CUDA_ERROR_NOT_INITIALIZED;
    case 2:
        return ex ? ex(mod, m->image, m->num, m->options, m->values) : CUDA_ERROR_NOT_INITIALIZED;
    default: return fat ? fat(mod, m->image) : CUDA_ERROR_NOT_INITIALIZED;
    }
}

static CUresult module_load(CUmodule *module, struct module_args a)
{
    return load((void **)module, module_call, &a, module_unload);
}

SHIM_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    return module_load(module, (struct module_args){0, fname, 0, NULL, NULL});
}

SHIM_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    return module_load(module, (struct module_args){1, image, 0, NULL, NULL});
}

SHIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                                        unsigned int numOptions, CUjit_option *options,
                                        void **optionValues)
{
    return module_load(module, (struct module_args){2, image, numOptions, options, optionValues});
}

SHIM_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    return module_load(module, (struct module_args){3, fatCubin, 0, NULL, NULL});
}

static CUresult call_unload(uint64_t key, const void *fn, const void *arg)
{
    (void)arg;
    return ((__typeof__(&cuModuleUnload))fn)((CUmodule)(uintptr_t)key);
}

SHIM_EXPORT CUresult cuModuleUnload(CUmodule module)
{
    return shim__release(SHIM_TRACK_MODULE, (uint64_t)(uintptr_t)module, call_unload,
                         (const void *)SHIM_REAL(cuModuleUnload), NULL);
}

/* ---- libraries ---------------------------------------------------------- */

static CUresult library_unload(void *h)
{
    __typeof__(&cuLibraryUnload) fn = SHIM_REAL(cuLibraryUnload);
    return fn ? fn((CUlibrary)h) : CUDA_ERROR_NOT_INITIALIZED;
}

struct library_args {
    int from_file;
    const void *code;
    CUjit_option *jit;
    void **jit_values;
    unsigned jit_num;
    CUlibraryOption *lib;
    void **lib_values;
    unsigned lib_num;
};

static CUresult library_call(void **out, const void *a)
{
    const struct library_args *l = a;
    CUlibrary *lib = (CUlibrary *)out;
    __typeof__(&cuLibraryLoadData) data = SHIM_REAL(cuLibraryLoadData);
    __typeof__(&cuLibraryLoadFromFile) file = SHIM_REAL(cuLibraryLoadFromFile);
    if (l->from_file)
        return file ? file(lib, l->code, l->jit, l->jit_values, l->jit_num, l->lib, l->lib_values,
                           l->lib_num)
                    : CUDA_ERROR_NOT_INITIALIZED;
    return data ? data(lib, l->code, l->jit, l->jit_values, l->jit_num, l->lib, l->lib_values,
                       l->lib_num)
                : CUDA_ERROR_NOT_INITIALIZED;
}

SHIM_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
                                       CUjit_option *jitOptions, void **jitOptionsValues,
                                       unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                       void **libraryOptionValues, unsigned int numLibraryOptions)
{
    struct library_args a = {0,
                             code,
                             jitOptions,
                             jitOptionsValues,
                             numJitOptions,
                             libraryOptions,
                             libraryOptionValues,
                             numLibraryOptions};
    return load((void **)library, library_call, &a, library_unload);
}

SHIM_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                           CUjit_option *jitOptions, void **jitOptionsValues,
                                           unsigned int numJitOptions,
                                           CUlibraryOption *libraryOptions,
                                           void **libraryOptionValues,
                                           unsigned int numLibraryOptions)
{
    struct library_args a = {1,
                             fileName,
                             jitOptions,
                             jitOptionsValues,
                             numJitOptions,
                             libraryOptions,
                             libraryOptionValues,
                             numLibraryOptions};
    return load((void **)library, library_call, &a, library_unload);
}

static CUresult call_library_unload(uint64_t key, const void *fn, const void *arg)
{
    (void)arg;
    return ((__typeof__(&cuLibraryUnload))fn)((CUlibrary)(uintptr_t)key);
}

SHIM_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
    return shim__release(SHIM_TRACK_MODULE, (uint64_t)(uintptr_t)library, call_library_unload,
                         (const void *)SHIM_REAL(cuLibraryUnload), NULL);
}
