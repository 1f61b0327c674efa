/*
 * mem.c - the memory hooks. Every allocation is charged to the container's
 * region before the real driver is asked (so two processes cannot both pass
 * the limit), remembered in track.c after it succeeds, and credited when the
 * matching free succeeds. Over the limit, or fail-closed, the call returns
 * CUDA_ERROR_OUT_OF_MEMORY without reaching the driver. What is charged:
 *   cuMemAlloc_v2, cuMemAllocManaged, cuMemAllocAsync(_ptsz),
 *   cuMemAllocFromPoolAsync(_ptsz)   the bytes asked for;
 *   cuMemAllocPitch_v2               pitch x height (512-byte rows reserved
 *                                    first, then corrected to the pitch);
 *   cuMemCreate                      (vmm.c);
 *   cuArrayCreate_v2/3DCreate_v2     width x height x depth x channels x
 *                                    element size (1D/2D count 1 for 0);
 *   the legacy entry points, mipmapped arrays, context limits (legacy.c).
 * cuMemGetInfo_v2 and cuDeviceTotalMem_v2 report the limit as the card.
 */
#include "shim/shim.h"

int shim__limited(void)
{
    const struct shim_config *c = shim__config();
    return c->limited && !c->fail_closed;
}

/* Charge n bytes before asking the driver: CUDA_SUCCESS or out of memory. */
CUresult shim__reserve(uint64_t n)
{
    const struct shim_config *c = shim__config();
    if (c->fail_closed)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!c->limited)
        return CUDA_SUCCESS;
    if (shim__backstop_refusing())
        return CUDA_ERROR_OUT_OF_MEMORY;
    return shim__charge(n, c->memory_bytes) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

void shim__unreserve(uint64_t n)
{
    if (shim__limited() && n)
        shim__credit(n);
}

void shim__undo_ptr(uint64_t key)
{
    __typeof__(&cuMemFree_v2) fn = SHIM_REAL(cuMemFree_v2);
    if (fn)
        fn((CUdeviceptr)key);
}

void shim__undo_array(uint64_t key)
{
    __typeof__(&cuArrayDestroy) fn = SHIM_REAL(cuArrayDestroy);
    if (fn)
        fn((CUarray)(uintptr_t)key);
}

/* After the driver answered r: remember key's charge, or undo it all. */
CUresult shim__keep_aux(enum shim_track_kind k, CUresult r, uint64_t key, uint64_t n,
                        void (*undo)(uint64_t key), uint64_t aux)
{
    if (r != CUDA_SUCCESS) {
        shim__unreserve(n);
        return r;
    }
    if (!shim__limited() || shim__track_put(k, key, n, aux) == 0)
        return r;
    undo(key);
    shim__unreserve(n);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult shim__keep(enum shim_track_kind k, CUresult r, uint64_t key, uint64_t n,
                    void (*undo)(uint64_t key))
{
    return shim__keep_aux(k, r, key, n, undo, k == SHIM_TRACK_HANDLE);
}

/* Forget key's charge, ask the driver to free, credit on success; a pool
 * allocation (aux) then settles its pool's reserve (pool.c). */
CUresult shim__release(enum shim_track_kind k, uint64_t key,
                       CUresult (*call)(uint64_t key, const void *fn, const void *arg),
                       const void *fn, const void *arg)
{
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t aux = 0, n = shim__track_take(k, key, &aux);
    CUresult r = call(key, fn, arg);
    if (r == CUDA_SUCCESS)
        shim__unreserve(n);
    else if (n)
        shim__track_put(k, key, n, aux);
    if (r == CUDA_SUCCESS && k == SHIM_TRACK_PTR && aux && shim__limited())
        shim__pool_settle((CUmemoryPool)(uintptr_t)aux);
    return r;
}

static CUresult alloc_ptr(CUresult (*call)(CUdeviceptr *d, uint64_t n, const void *fn,
                                           const void *a, const void *b),
                          const void *fn, CUdeviceptr *dptr, uint64_t n, const void *a,
                          const void *b, CUmemoryPool pool)
{
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (pool && shim__limited())
        shim__pool_lend(pool, n);
    CUresult r = shim__reserve(n);
    if (r != CUDA_SUCCESS) {
        if (pool && shim__limited())
            shim__pool_settle(pool);
        return r;
    }
    r = call(dptr, n, fn, a, b);
    r = shim__keep_aux(SHIM_TRACK_PTR, r, r == CUDA_SUCCESS ? *dptr : 0, n, shim__undo_ptr,
                       (uint64_t)(uintptr_t)pool);
    if (pool && shim__limited())
        shim__pool_settle(pool);
    return r;
}

/* ---- the calls, one adapter per prototype ------------------------------- */

static CUresult call_alloc(CUdeviceptr *d, uint64_t n, const void *fn, const void *a, const void *b)
{
    (void)a, (void)b;
    return ((__typeof__(&cuMemAlloc_v2))fn)(d, n);
}

static CUresult call_managed(CUdeviceptr *d, uint64_t n, const void *fn, const void *a,
                             const void *b)
{
    (void)b;
    return ((__typeof__(&cuMemAllocManaged))fn)(d, n, *(const unsigned *)a);
}

static CUresult call_async(CUdeviceptr *d, uint64_t n, const void *fn, const void *a, const void *b)
{
    (void)b;
    return ((__typeof__(&cuMemAllocAsync))fn)(d, n, (CUstream)(uintptr_t)a);
}

static CUresult call_pool(CUdeviceptr *d, uint64_t n, const void *fn, const void *a, const void *b)
{
    return ((__typeof__(&cuMemAllocFromPoolAsync))fn)(d, n, (CUmemoryPool)(uintptr_t)a,
                                                      (CUstream)(uintptr_t)b);
}

CUresult shim__call_free(uint64_t key, const void *fn, const void *arg)
{
    (void)arg;
    return ((__typeof__(&cuMemFree_v2))fn)((CUdeviceptr)key);
}

static CUresult call_free_async(uint64_t key, const void *fn, const void *arg)
{
    return ((__typeof__(&cuMemFreeAsync))fn)((CUdeviceptr)key, (CUstream)(uintptr_t)arg);
}

CUresult shim__call_array_destroy(uint64_t key, const void *fn, const void *arg)
{
    (void)arg;
    return ((__typeof__(&cuArrayDestroy))fn)((CUarray)(uintptr_t)key);
}

/* ---- linear allocations ------------------------------------------------- */

SHIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    return alloc_ptr(call_alloc, (const void *)SHIM_REAL(cuMemAlloc_v2), dptr, bytesize, NULL, NULL,
                     NULL);
}

SHIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    return alloc_ptr(call_managed, (const void *)SHIM_REAL(cuMemAllocManaged), dptr, bytesize,
                     &flags, NULL, NULL);
}

/* A driver function the shim does not hook, looked up once. */
static void *driver_fn(void *_Atomic *slot, const char *name)
{
    void *f = atomic_load(slot);
    if (!f) {
        f = shim__driver_sym(name);
        atomic_store(slot, f);
    }
    return f;
}

/* The pool cuMemAllocAsync takes from: the current pool of the current
 * context's device (device 0 when there is none), so its reserve after
 * frees is settled like any pool's (pool.c); NULL when the driver cannot
 * say or no limit applies. */
static CUmemoryPool async_pool(void)
{
    static void *_Atomic get_dev, *_Atomic get_pool;
    __typeof__(&cuCtxGetDevice) dev_fn = driver_fn(&get_dev, "cuCtxGetDevice");
    __typeof__(&cuDeviceGetMemPool) pool_fn = driver_fn(&get_pool, "cuDeviceGetMemPool");
    CUdevice dev = 0;
    CUmemoryPool pool = NULL;
    if (!shim__limited() || !pool_fn)
        return NULL;
    if (!dev_fn || dev_fn(&dev) != CUDA_SUCCESS)
        dev = 0;
    return pool_fn(&pool, dev) == CUDA_SUCCESS ? pool : NULL;
}

SHIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream stream)
{
    return alloc_ptr(call_async, (const void *)SHIM_REAL(cuMemAllocAsync), dptr, bytesize, stream,
                     NULL, async_pool());
}

SHIM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream stream)
{
    return alloc_ptr(call_async, (const void *)SHIM_REAL(cuMemAllocAsync_ptsz), dptr, bytesize,
                     stream, NULL, async_pool());
}

SHIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream stream)
{
    return alloc_ptr(call_pool, (const void *)SHIM_REAL(cuMemAllocFromPoolAsync), dptr, bytesize,
                     pool, stream, pool);
}

SHIM_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                  CUmemoryPool pool, CUstream stream)
{
    return alloc_ptr(call_pool, (const void *)SHIM_REAL(cuMemAllocFromPoolAsync_ptsz), dptr,
                     bytesize, pool, stream, pool);
}

/* Rows of round_up(width, 512) bytes: the reservation before the driver
 * tells the real pitch (UINT64_MAX on overflow, which no limit admits). */
uint64_t shim__pitch_estimate(size_t width, size_t height)
{
    uint64_t row = ((uint64_t)width + 511u) & ~(uint64_t)511u, total;
    if (row < width || __builtin_mul_overflow(row, (uint64_t)height, &total))
        return UINT64_MAX;
    return total;
}

SHIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t widthBytes,
                                        size_t height, unsigned int elementSizeBytes)
{
    __typeof__(&cuMemAllocPitch_v2) fn = SHIM_REAL(cuMemAllocPitch_v2);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t est = shim__pitch_estimate(widthBytes, height);
    CUresult r = shim__reserve(est);
    if (r != CUDA_SUCCESS)
        return r;
    r = fn(dptr, pitch, widthBytes, height, elementSizeBytes);
    if (r != CUDA_SUCCESS) {
        shim__unreserve(est);
        return r;
    }
    uint64_t actual = (uint64_t)*pitch * height;
    if (actual > est && shim__reserve(actual - est) != CUDA_SUCCESS) {
        shim__undo_ptr(*dptr);
        shim__unreserve(est);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (actual < est)
        shim__unreserve(est - actual);
    return shim__keep(SHIM_TRACK_PTR, r, *dptr, actual, shim__undo_ptr);
}

SHIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    return shim__release(SHIM_TRACK_PTR, dptr, shim__call_free,
                         (const void *)SHIM_REAL(cuMemFree_v2), NULL);
}

SHIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream)
{
    return shim__release(SHIM_TRACK_PTR, dptr, call_free_async,
                         (const void *)SHIM_REAL(cuMemFreeAsync), stream);
}

SHIM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream)
{
    return shim__release(SHIM_TRACK_PTR, dptr, call_free_async,
                         (const void *)SHIM_REAL(cuMemFreeAsync_ptsz), stream);
}

/* ---- arrays ------------------------------------------------------------- */

static uint64_t element_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    default: /* 32-bit formats, and any unknown one */ return 4;
    }
}

/* Bytes of a w x h x d array (0 counts as 1), UINT64_MAX on overflow. */
uint64_t shim__array_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch)
{
    uint64_t dims[4] = {w ? w : 1, h ? h : 1, d ? d : 1, ch ? ch : 1};
    uint64_t total = element_bytes(f);
    for (int i = 0; i < 4; i++)
        if (__builtin_mul_overflow(total, dims[i], &total))
            return UINT64_MAX;
    return total;
}

CUresult shim__array_done(CUresult r, CUarray *array, uint64_t n)
{
    return shim__keep(SHIM_TRACK_ARRAY, r, r == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*array : 0, n,
                      shim__undo_array);
}

SHIM_EXPORT CUresult cuArrayCreate_v2(CUarray *array, const CUDA_ARRAY_DESCRIPTOR *desc)
{
    __typeof__(&cuArrayCreate_v2) fn = SHIM_REAL(cuArrayCreate_v2);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!desc || !array)
        return fn(array, desc);
    uint64_t n = shim__array_bytes(desc->Width, desc->Height, 1, desc->Format, desc->NumChannels);
    CUresult r = shim__reserve(n);
    return r != CUDA_SUCCESS ? r : shim__array_done(fn(array, desc), array, n);
}

SHIM_EXPORT CUresult cuArray3DCreate_v2(CUarray *array, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    __typeof__(&cuArray3DCreate_v2) fn = SHIM_REAL(cuArray3DCreate_v2);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!desc || !array)
        return fn(array, desc);
    uint64_t n = shim__array_bytes(desc->Width, desc->Height, desc->Depth, desc->Format,
                                   desc->NumChannels);
    if (desc->Flags & CUDA_ARRAY3D_SPARSE)
        n = 0; /* no memory of its own: tiles come from VMM handles (vmm.c) */
    CUresult r = shim__reserve(n);
    return r != CUDA_SUCCESS ? r : shim__array_done(fn(array, desc), array, n);
}

SHIM_EXPORT CUresult cuArrayDestroy(CUarray array)
{
    return shim__release(SHIM_TRACK_ARRAY, (uint64_t)(uintptr_t)array, shim__call_array_destroy,
                         (const void *)SHIM_REAL(cuArrayDestroy), NULL);
}

/* ---- what the application sees ------------------------------------------ */

SHIM_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    __typeof__(&cuMemGetInfo_v2) fn = SHIM_REAL(cuMemGetInfo_v2);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(free_bytes, total_bytes);
    const struct shim_config *c = shim__config();
    if (r != CUDA_SUCCESS || !free_bytes || !total_bytes)
        return r;
    if (c->fail_closed) {
        *free_bytes = 0;
        return r;
    }
    if (!c->limited)
        return r;
    uint64_t total = c->memory_bytes < *total_bytes ? c->memory_bytes : *total_bytes;
    uint64_t used = shim__used();
    uint64_t left = used >= total ? 0 : total - used;
    *total_bytes = (size_t)total;
    *free_bytes = left < *free_bytes ? (size_t)left : *free_bytes;
    return r;
}

SHIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    __typeof__(&cuDeviceTotalMem_v2) fn = SHIM_REAL(cuDeviceTotalMem_v2);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(bytes, dev);
    if (r == CUDA_SUCCESS && bytes && shim__limited() && shim__config()->memory_bytes < *bytes)
        *bytes = (size_t)shim__config()->memory_bytes;
    return r;
}
