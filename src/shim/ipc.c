/*
 * ipc.c - memory imported from another process keeps that memory alive
 * while the import lives, so the importing container is charged for it:
 *   cuIpcOpenMemHandle(_v2)   the allocation's size (the driver's
 *       cuMemGetAddressRange_v2 of the opened pointer), charged at the open
 *       (the size is known only then: over the limit the handle is closed
 *       again and the open fails with CUDA_ERROR_OUT_OF_MEMORY), credited
 *       at cuIpcCloseMemHandle;
 *   cuMemImportFromShareableHandle  a VMM handle whose size the API does
 *       not tell: tracked with 0 bytes and one reference, charged by the
 *       size of its first mapping (vmm.c), credited when its last reference
 *       and mapping go, like a handle of cuMemCreate.
 *   cuMemPoolImportPointer    the allocation's size, charged after the
 *       import (freed again and refused when over), credited when the
 *       pointer is freed (cuMemFree_v2, cuMemFreeAsync).
 */
#include "shim/shim.h"

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

SHIM_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                    void *osHandle, int shHandleType)
{
    __typeof__(&cuMemImportFromShareableHandle) fn = SHIM_REAL(cuMemImportFromShareableHandle);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(handle, osHandle, shHandleType);
    if (r == CUDA_SUCCESS && shim__limited() &&
        shim__track_put(SHIM_TRACK_HANDLE, *handle, 0, 1) != 0) {
        __typeof__(&cuMemRelease) rel = SHIM_REAL(cuMemRelease);
        if (rel)
            rel(*handle);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return r;
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
