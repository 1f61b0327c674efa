/*
 * ctx.c - contexts hold device memory no allocation call shows (the
 * context itself, its modules, its stacks and heaps at their defaults), so
 * each is charged an estimate, SHIM_CTX_ESTIMATE or, below a 4 GiB limit,
 * limit / SHIM_CTX_ESTIMATE_SHARE (src/shim/limits.h): a
 * cuCtxCreate_v2 context from its creation to cuCtxDestroy_v2; a device's
 * primary context from its first cuDevicePrimaryCtxRetain in this process
 * to the release that drops its last reference. Over the limit the
 * creation (or first retain) fails with CUDA_ERROR_OUT_OF_MEMORY without
 * reaching the driver. cuCtxCreate_v3 and _v4 (CUDA 13.0's cuCtxCreate)
 * and the unversioned cuCtxCreate the driver still exports are charged as
 * cuCtxCreate_v2, cuCtxDestroy as cuCtxDestroy_v2. A green context
 * (cuGreenCtxCreate) retains its device's primary context inside the
 * driver, so it counts as a reference of the primary context here (charged
 * when it is the first) and is charged an estimate of its own until
 * cuGreenCtxDestroy (docs/shim.md). Not a fast path: the primary contexts'
 * reference counts take one mutex.
 */
#include "shim/shim.h"

#include <pthread.h>

#define DEVICES 64

static pthread_mutex_t ctx_mutex = PTHREAD_MUTEX_INITIALIZER;
static int primary_refs[DEVICES];

static uint64_t estimate(void)
{
    uint64_t share = shim__config()->memory_bytes / SHIM_CTX_ESTIMATE_SHARE;
    return share < SHIM_CTX_ESTIMATE ? share : SHIM_CTX_ESTIMATE;
}

static void undo_ctx(uint64_t key)
{
    __typeof__(&cuCtxDestroy_v2) fn = SHIM_REAL(cuCtxDestroy_v2);
    if (fn)
        fn((CUcontext)(uintptr_t)key);
}

/* After the driver answered r for a context creation charged estimate(). */
static CUresult created(CUresult r, CUcontext *ctx)
{
    return shim__keep(SHIM_TRACK_CTX, r, r == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*ctx : 0,
                      estimate(), undo_ctx);
}

SHIM_EXPORT CUresult cuCtxCreate_v2(CUcontext *ctx, unsigned int flags, CUdevice dev)
{
    __typeof__(&cuCtxCreate_v2) fn = SHIM_REAL(cuCtxCreate_v2);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = shim__reserve(estimate());
    return r != CUDA_SUCCESS ? r : created(fn(ctx, flags, dev), ctx);
}

SHIM_EXPORT CUresult cuCtxCreate_v3(CUcontext *ctx, CUexecAffinityParam *params, int n,
                                    unsigned int flags, CUdevice dev)
{
    __typeof__(&cuCtxCreate_v3) fn = SHIM_REAL(cuCtxCreate_v3);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = shim__reserve(estimate());
    return r != CUDA_SUCCESS ? r : created(fn(ctx, params, n, flags, dev), ctx);
}

SHIM_EXPORT CUresult cuCtxCreate_v4(CUcontext *ctx, CUctxCreateParams *params, unsigned int flags,
                                    CUdevice dev)
{
    __typeof__(&cuCtxCreate_v4) fn = SHIM_REAL(cuCtxCreate_v4);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = shim__reserve(estimate());
    return r != CUDA_SUCCESS ? r : created(fn(ctx, params, flags, dev), ctx);
}

SHIM_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    __typeof__(&cuCtxCreate) fn = SHIM_REAL(cuCtxCreate);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = shim__reserve(estimate());
    return r != CUDA_SUCCESS ? r : created(fn(pctx, flags, dev), pctx);
}

static CUresult call_destroy(uint64_t key, const void *fn, const void *arg)
{
    (void)arg;
    return ((__typeof__(&cuCtxDestroy_v2))fn)((CUcontext)(uintptr_t)key);
}

SHIM_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    shim__inflight_release(); /* its events die with it */
    return shim__release(SHIM_TRACK_CTX, (uint64_t)(uintptr_t)ctx, call_destroy,
                         (const void *)SHIM_REAL(cuCtxDestroy_v2), NULL);
}

SHIM_EXPORT CUresult cuCtxDestroy(CUcontext ctx)
{
    shim__inflight_release(); /* its events die with it */
    return shim__release(SHIM_TRACK_CTX, (uint64_t)(uintptr_t)ctx, call_destroy,
                         (const void *)SHIM_REAL(cuCtxDestroy), NULL);
}

SHIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    __typeof__(&cuDevicePrimaryCtxRetain) fn = SHIM_REAL(cuDevicePrimaryCtxRetain);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= DEVICES)
        return fn(ctx, dev);
    pthread_mutex_lock(&ctx_mutex);
    int first = primary_refs[dev] == 0;
    CUresult r = first ? shim__reserve(estimate()) : CUDA_SUCCESS;
    int charged = first && r == CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        r = fn(ctx, dev);
    if (r == CUDA_SUCCESS)
        primary_refs[dev]++;
    else if (charged)
        shim__unreserve(estimate());
    pthread_mutex_unlock(&ctx_mutex);
    return r;
}

SHIM_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    __typeof__(&cuDevicePrimaryCtxRelease_v2) fn = SHIM_REAL(cuDevicePrimaryCtxRelease_v2);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    int last = 0;
    if (dev >= 0 && dev < DEVICES) {
        pthread_mutex_lock(&ctx_mutex);
        last = primary_refs[dev] == 1;
        pthread_mutex_unlock(&ctx_mutex);
    }
    if (last)
        shim__inflight_release(); /* the last reference: its events die with it */
    CUresult r = fn(dev);
    if (r != CUDA_SUCCESS || dev < 0 || dev >= DEVICES)
        return r;
    pthread_mutex_lock(&ctx_mutex);
    if (primary_refs[dev] > 0 && --primary_refs[dev] == 0)
        shim__unreserve(estimate());
    pthread_mutex_unlock(&ctx_mutex);
    return r;
}

/* A green context: its own estimate, and a reference of dev's primary
 * context (charged when it is the first), both before the driver is asked. */
SHIM_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev,
                                      unsigned int flags)
{
    __typeof__(&cuGreenCtxCreate) fn = SHIM_REAL(cuGreenCtxCreate);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= DEVICES)
        return fn(phCtx, desc, dev, flags);
    pthread_mutex_lock(&ctx_mutex);
    uint64_t n = estimate() * (primary_refs[dev] == 0 ? 2 : 1);
    CUresult r = shim__reserve(n);
    int charged = r == CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        r = fn(phCtx, desc, dev, flags);
    if (r == CUDA_SUCCESS && shim__limited() &&
        shim__track_put(SHIM_TRACK_CTX, (uint64_t)(uintptr_t)*phCtx, estimate(), (uint64_t)dev) !=
            0) {
        __typeof__(&cuGreenCtxDestroy) undo = SHIM_REAL(cuGreenCtxDestroy);
        if (undo)
            undo(*phCtx);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS)
        primary_refs[dev]++;
    else if (charged)
        shim__unreserve(n);
    pthread_mutex_unlock(&ctx_mutex);
    return r;
}

SHIM_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx hCtx)
{
    __typeof__(&cuGreenCtxDestroy) fn = SHIM_REAL(cuGreenCtxDestroy);
    uint64_t dev = 0;
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(hCtx);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&ctx_mutex);
    uint64_t n = shim__track_take(SHIM_TRACK_CTX, (uint64_t)(uintptr_t)hCtx, &dev);
    if (n && dev < DEVICES && primary_refs[dev] > 0 && --primary_refs[dev] == 0)
        n += estimate();
    shim__unreserve(n);
    pthread_mutex_unlock(&ctx_mutex);
    return r;
}
