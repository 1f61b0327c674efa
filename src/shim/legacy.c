/*
 * legacy.c - the allocators beyond mem.c's: the legacy unversioned entry
 * points the driver still exports (32-bit pointers and sizes, what
 * cuGetProcAddress gives for "cuMemAlloc" below version 3020), mipmapped
 * arrays and the context limits that size device memory. What is charged:
 *   cuMemAlloc, cuMemAllocPitch, cuArrayCreate, cuArray3DCreate   as their
 *       _v2 forms (a legacy pointer is tracked as the same 64-bit key, so
 *       either cuMemFree or cuMemFree_v2 credits it);
 *   cuMipmappedArrayCreate    the sum of its levels, each dimension halved
 *       per level (at least 1), the format's element size x channels;
 *   cuCtxSetLimit             the malloc heap and the printf FIFO: what is
 *       set beyond the driver's defaults (8 MiB, 1 MiB), which belong to
 *       the context itself; the stack size beyond its default (1 KiB) times
 *       the threads device 0 can hold resident (SMs x threads per SM), the
 *       driver's stack reservation; the device runtime's pending launch
 *       count beyond its default (2048) times SHIM_PENDING_LAUNCH_ESTIMATE,
 *       an estimate of the launch buffer the driver reserves (docs/shim.md).
 */
#include "shim/shim.h"

#include <pthread.h>

SHIM_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    __typeof__(&cuMemAlloc) fn = SHIM_REAL(cuMemAlloc);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = shim__reserve(bytesize);
    if (r != CUDA_SUCCESS)
        return r;
    r = fn(dptr, bytesize);
    return shim__keep(SHIM_TRACK_PTR, r, r == CUDA_SUCCESS ? *dptr : 0, bytesize, shim__undo_ptr);
}

SHIM_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch,
                                     unsigned int WidthInBytes, unsigned int Height,
                                     unsigned int ElementSizeBytes)
{
    __typeof__(&cuMemAllocPitch) fn = SHIM_REAL(cuMemAllocPitch);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t est = shim__pitch_estimate(WidthInBytes, Height);
    CUresult r = shim__reserve(est);
    if (r != CUDA_SUCCESS)
        return r;
    r = fn(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (r != CUDA_SUCCESS) {
        shim__unreserve(est);
        return r;
    }
    uint64_t actual = (uint64_t)*pPitch * Height;
    if (actual > est && shim__reserve(actual - est) != CUDA_SUCCESS) {
        shim__undo_ptr(*dptr);
        shim__unreserve(est);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (actual < est)
        shim__unreserve(est - actual);
    return shim__keep(SHIM_TRACK_PTR, r, *dptr, actual, shim__undo_ptr);
}

static CUresult call_free1(uint64_t key, const void *fn, const void *arg)
{
    (void)arg;
    return ((__typeof__(&cuMemFree))fn)((CUdeviceptr_v1)key);
}

SHIM_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    return shim__release(SHIM_TRACK_PTR, dptr, call_free1, (const void *)SHIM_REAL(cuMemFree),
                         NULL);
}

SHIM_EXPORT CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *desc)
{
    __typeof__(&cuArrayCreate) fn = SHIM_REAL(cuArrayCreate);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!desc || !pHandle)
        return fn(pHandle, desc);
    uint64_t n = shim__array_bytes(desc->Width, desc->Height, 1, desc->Format, desc->NumChannels);
    CUresult r = shim__reserve(n);
    return r != CUDA_SUCCESS ? r : shim__array_done(fn(pHandle, desc), pHandle, n);
}

SHIM_EXPORT CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *desc)
{
    __typeof__(&cuArray3DCreate) fn = SHIM_REAL(cuArray3DCreate);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!desc || !pHandle)
        return fn(pHandle, desc);
    uint64_t n = shim__array_bytes(desc->Width, desc->Height, desc->Depth, desc->Format,
                                   desc->NumChannels);
    if (desc->Flags & CUDA_ARRAY3D_SPARSE)
        n = 0; /* tiles come from VMM handles (vmm.c) */
    CUresult r = shim__reserve(n);
    return r != CUDA_SUCCESS ? r : shim__array_done(fn(pHandle, desc), pHandle, n);
}

/* ---- mipmapped arrays --------------------------------------------------- */

static size_t half(size_t x, unsigned l) { return l < 64 && x >> l ? x >> l : 1; }

/* The levels' bytes together, UINT64_MAX on overflow. */
static uint64_t mipmap_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    uint64_t total = 0;
    for (unsigned l = 0; l < levels && l < 64; l++) {
        uint64_t n = shim__array_bytes(half(d->Width, l), half(d->Height ? d->Height : 1, l),
                                       half(d->Depth ? d->Depth : 1, l), d->Format, d->NumChannels);
        if (n == UINT64_MAX || __builtin_add_overflow(total, n, &total))
            return UINT64_MAX;
    }
    return total;
}

static void undo_mipmap(uint64_t key)
{
    __typeof__(&cuMipmappedArrayDestroy) fn = SHIM_REAL(cuMipmappedArrayDestroy);
    if (fn)
        fn((CUmipmappedArray)(uintptr_t)key);
}

SHIM_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                            const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                            unsigned int numMipmapLevels)
{
    __typeof__(&cuMipmappedArrayCreate) fn = SHIM_REAL(cuMipmappedArrayCreate);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!desc || !pHandle)
        return fn(pHandle, desc, numMipmapLevels);
    uint64_t n = mipmap_bytes(desc, numMipmapLevels);
    CUresult r = shim__reserve(n);
    if (r != CUDA_SUCCESS)
        return r;
    r = fn(pHandle, desc, numMipmapLevels);
    return shim__keep(SHIM_TRACK_ARRAY, r, r == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*pHandle : 0, n,
                      undo_mipmap);
}

static CUresult call_mipmap_destroy(uint64_t key, const void *fn, const void *arg)
{
    (void)arg;
    return ((__typeof__(&cuMipmappedArrayDestroy))fn)((CUmipmappedArray)(uintptr_t)key);
}

SHIM_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray h)
{
    return shim__release(SHIM_TRACK_ARRAY, (uint64_t)(uintptr_t)h, call_mipmap_destroy,
                         (const void *)SHIM_REAL(cuMipmappedArrayDestroy), NULL);
}

/* ---- context limits ----------------------------------------------------- */

static pthread_mutex_t limit_mutex = PTHREAD_MUTEX_INITIALIZER;
#define LIMITS (CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT + 1)
static uint64_t limit_charged[LIMITS];

/* Threads device 0 holds resident, each with its own stack; 0 unknown. */
static uint64_t resident_threads(void)
{
    __typeof__(&cuDeviceGetAttribute) get = (__typeof__(&cuDeviceGetAttribute))shim__driver_sym(
        "cuDeviceGetAttribute");
    int sms = 0, per = 0;
    if (!get || get(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0) != CUDA_SUCCESS ||
        get(&per, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 0) != CUDA_SUCCESS ||
        sms <= 0 || per <= 0)
        return 0;
    return (uint64_t)sms * (uint64_t)per;
}

/* Device memory limit l holds at v beyond its default (UINT64_MAX when
 * that overflows). Under limit_mutex. */
static uint64_t beyond_default(CUlimit l, size_t v)
{
    static const uint64_t def[LIMITS] = {1024, 1u << 20, 8u << 20, 0, 2048};
    static uint64_t threads;
    uint64_t extra = v > def[l] ? v - def[l] : 0;
    if (l == CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT)
        return extra > UINT64_MAX / SHIM_PENDING_LAUNCH_ESTIMATE
                   ? UINT64_MAX
                   : extra * SHIM_PENDING_LAUNCH_ESTIMATE;
    if (l != CU_LIMIT_STACK_SIZE || extra == 0)
        return extra;
    if (!threads)
        threads = resident_threads();
    if (!threads) {
        shim__log("cuCtxSetLimit(CU_LIMIT_STACK_SIZE): the device's thread count is "
                  "unknown: the stack is not charged");
        return 0;
    }
    return extra > UINT64_MAX / threads ? UINT64_MAX : extra * threads;
}

/* Not a fast path: one mutex orders the charge with the driver's answer.
 * The charge moves only by what this call itself changed: a raise is
 * charged before the driver is asked and given back exactly when the shim
 * or the driver refuses it; a lowering is credited once the driver agreed.
 * A refused call leaves the charge as it was, nothing more, nothing less. */
SHIM_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    __typeof__(&cuCtxSetLimit) fn = SHIM_REAL(cuCtxSetLimit);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if ((unsigned)limit >= LIMITS || limit == 3) /* 3: the sync depth, no memory */
        return fn(limit, value);
    pthread_mutex_lock(&limit_mutex);
    uint64_t before = limit_charged[limit], after = beyond_default(limit, value);
    uint64_t more = after > before ? after - before : 0;
    CUresult r = more ? shim__reserve(more) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) {
        r = fn(limit, value);
        if (r != CUDA_SUCCESS)
            shim__unreserve(more); /* charged above, the driver refused */
    }
    if (r == CUDA_SUCCESS && after < before)
        shim__unreserve(before - after);
    if (r == CUDA_SUCCESS)
        limit_charged[limit] = after;
    pthread_mutex_unlock(&limit_mutex);
    return r;
}
