/*
 * ipc.c - memory imported from another process keeps that memory alive
 * while the import lives, so the importing container is charged for it:
 *   cuIpcOpenMemHandle(_v2)   the allocation's size (the driver's
 *       cuMemGetAddressRange_v2 of the opened pointer), charged at the open
 *       (the size is known only then: over the limit the handle is closed
 *       again and the open fails with CUDA_ERROR_OUT_OF_MEMORY), credited
 *       at cuIpcCloseMemHandle;
 *   cuMemImportFromShareableHandle  a VMM handle, which keeps the
 *       exporter's memory alive from the import on; no API tells its size,
 *       but cuda.h lets a mapping cover part of a handle (offset + size at
 *       most its size), so the size is the largest multiple of the
 *       granularity that maps: found by a binary search of trial mappings
 *       (the real cuMemMap and cuMemUnmap, no memory touched) up to just
 *       past the limit, charged at the import (over the limit the handle is
 *       released again and the import fails with CUDA_ERROR_OUT_OF_MEMORY),
 *       credited when its last reference and mapping go, like a handle of
 *       cuMemCreate. When no mapping works the handle is tracked with 0
 *       bytes and charged by the size of its first mapping (vmm.c).
 *   cuMemPoolImportPointer    the allocation's size, charged after the
 *       import (freed again and refused when over), credited when the
 *       pointer is freed (cuMemFree_v2, cuMemFreeAsync).
 */
#include "shim/shim.h"

#include <string.h>

static void undo_ipc(uint64_t key)
{
    __typeof__(&cuIpcCloseMemHandle) fn = SHIM_REAL(cuIpcCloseMemHandle);
    if (fn)
        fn((CUdeviceptr)key);
}

static uint64_t range_of(CUdeviceptr p)
{
    static void *_Atomic fn;
    void *f = atomic_load(&fn);
    size_t n = 0;
    if (!f) {
        f = shim__driver_sym("cuMemGetAddressRange_v2");
        atomic_store(&fn, f);
    }
    if (!f || ((__typeof__(&cuMemGetAddressRange_v2))f)(NULL, &n, p) != CUDA_SUCCESS)
        return 0;
    return n;
}

static CUresult ipc_open(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags,
                         __typeof__(&cuIpcOpenMemHandle_v2) fn)
{
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (shim__config()->fail_closed)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = fn(pdptr, handle, Flags);
    if (r != CUDA_SUCCESS || !shim__limited())
        return r;
    uint64_t n = range_of(*pdptr);
    if (shim__reserve(n) != CUDA_SUCCESS) {
        undo_ipc(*pdptr);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return shim__keep(SHIM_TRACK_PTR, r, *pdptr, n, undo_ipc);
}

SHIM_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                           unsigned int Flags)
{
    return ipc_open(pdptr, handle, Flags, SHIM_REAL(cuIpcOpenMemHandle_v2));
}

SHIM_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                        unsigned int Flags)
{
    return ipc_open(pdptr, handle, Flags, SHIM_REAL(cuIpcOpenMemHandle));
}

static CUresult call_close(uint64_t key, const void *fn, const void *arg)
{
    (void)arg;
    return ((__typeof__(&cuIpcCloseMemHandle))fn)((CUdeviceptr)key);
}

SHIM_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    return shim__release(SHIM_TRACK_PTR, dptr, call_close,
                         (const void *)SHIM_REAL(cuIpcCloseMemHandle), NULL);
}

/* Whether k units of g bytes of h map at va (unmapped again at once). */
static int maps(CUmemGenericAllocationHandle h, CUdeviceptr va, uint64_t k, uint64_t g)
{
    __typeof__(&cuMemMap) map = SHIM_REAL(cuMemMap);
    __typeof__(&cuMemUnmap) unmap = SHIM_REAL(cuMemUnmap);
    if (!map || !unmap || map(va, k * g, 0, h, 0) != CUDA_SUCCESS)
        return 0;
    unmap(va, k * g);
    return 1;
}

/* h's minimum mapping granularity (2 MiB when the driver does not say). */
static uint64_t granularity(CUmemGenericAllocationHandle h)
{
    void *props = shim__driver_sym("cuMemGetAllocationPropertiesFromHandle");
    void *gran = shim__driver_sym("cuMemGetAllocationGranularity");
    CUmemAllocationProp prop;
    size_t g = 0;
    memset(&prop, 0, sizeof(prop));
    if (!props || !gran ||
        ((__typeof__(&cuMemGetAllocationPropertiesFromHandle))props)(&prop, h) != CUDA_SUCCESS ||
        ((__typeof__(&cuMemGetAllocationGranularity))gran)(&g, &prop, 0) != CUDA_SUCCESS || !g)
        return 2u << 20;
    return g;
}

/* The size of imported handle h as the largest multiple of its granularity
 * that maps, searched up to the first multiple above cap (returned when h
 * is at least that large); 0 when not even one unit maps. */
static uint64_t handle_size(CUmemGenericAllocationHandle h, uint64_t cap)
{
    void *reserve = shim__driver_sym("cuMemAddressReserve");
    void *release = shim__driver_sym("cuMemAddressFree");
    uint64_t g = granularity(h), lo = 1, hi = cap / g + 1;
    CUdeviceptr va = 0;
    if (!reserve || !release ||
        ((__typeof__(&cuMemAddressReserve))reserve)(&va, hi * g, 0, 0, 0) != CUDA_SUCCESS)
        return 0;
    if (maps(h, va, hi, g))
        lo = hi;
    else if (!maps(h, va, 1, g))
        lo = 0;
    while (lo && hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        *(maps(h, va, mid, g) ? &lo : &hi) = mid;
    }
    ((__typeof__(&cuMemAddressFree))release)(va, hi * g);
    return lo * g;
}

SHIM_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                    void *osHandle, int shHandleType)
{
    __typeof__(&cuMemImportFromShareableHandle) fn = SHIM_REAL(cuMemImportFromShareableHandle);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(handle, osHandle, shHandleType);
    if (r != CUDA_SUCCESS || !shim__limited())
        return r;
    uint64_t n = handle_size(*handle, shim__config()->memory_bytes);
    r = shim__reserve(n);
    if (r == CUDA_SUCCESS && shim__track_put(SHIM_TRACK_HANDLE, *handle, n, 1) == 0)
        return CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        shim__unreserve(n);
    __typeof__(&cuMemRelease) rel = SHIM_REAL(cuMemRelease);
    if (rel)
        rel(*handle);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static void undo_free(uint64_t key)
{
    __typeof__(&cuMemFree_v2) fn = SHIM_REAL(cuMemFree_v2);
    if (fn)
        fn((CUdeviceptr)key);
}

SHIM_EXPORT CUresult cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool,
                                            CUmemPoolPtrExportData *shareData)
{
    __typeof__(&cuMemPoolImportPointer) fn = SHIM_REAL(cuMemPoolImportPointer);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (shim__config()->fail_closed)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = fn(ptr_out, pool, shareData);
    if (r != CUDA_SUCCESS || !shim__limited())
        return r;
    uint64_t n = range_of(*ptr_out);
    if (shim__reserve(n) != CUDA_SUCCESS) {
        undo_free(*ptr_out);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return shim__keep(SHIM_TRACK_PTR, r, *ptr_out, n, undo_free);
}
