/*
 * vmm.c - the virtual memory management hooks. The driver frees the
 * physical memory of cuMemCreate only when every handle reference is
 * released (cuMemCreate and each cuMemRetainAllocationHandle give one,
 * cuMemRelease takes one) AND every cuMemMap of it is unmapped, so the
 * charge lives as long: the handle's cell in track.c counts references
 * plus mappings, each mapping is remembered by address (with its size and
 * handle), and the bytes are credited when the count reaches 0, whichever
 * of cuMemRelease and cuMemUnmap comes last (the pattern of llama.cpp's
 * pool: create, map, release at once, unmap much later). A handle imported
 * from another process (ipc.c) is tracked with 0 bytes and charged the size
 * of its first mapping. A sparse array's tile backed by a handle
 * (cuMemMapArrayAsync) counts as a mapping of it, keyed by the tile.
 */
#include "shim/shim.h"

static void undo_handle(uint64_t key)
{
    __typeof__(&cuMemRelease) fn = SHIM_REAL(cuMemRelease);
    if (fn)
        fn((CUmemGenericAllocationHandle)key);
}

/* One reference or mapping of handle h is gone: credit when it was the last. */
static void drop(uint64_t h)
{
    if (shim__track_ref(SHIM_TRACK_HANDLE, h, -1) == 0)
        shim__unreserve(shim__track_take(SHIM_TRACK_HANDLE, h, NULL));
}

SHIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                 const CUmemAllocationProp *prop, unsigned long long flags)
{
    __typeof__(&cuMemCreate) fn = SHIM_REAL(cuMemCreate);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = shim__reserve(size);
    if (r != CUDA_SUCCESS)
        return r;
    r = fn(handle, size, prop, flags);
    return shim__keep(SHIM_TRACK_HANDLE, r, r == CUDA_SUCCESS ? *handle : 0, size, undo_handle);
}

SHIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    __typeof__(&cuMemRelease) fn = SHIM_REAL(cuMemRelease);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(handle);
    if (r == CUDA_SUCCESS)
        drop(handle);
    return r;
}

/* An imported handle (tracked with 0 bytes, ipc.c) is charged the size of
 * its first mapping: 0, or -1 when the limit has no room. */
static int charge_import(CUmemGenericAllocationHandle h, size_t size)
{
    uint64_t refs = 0, n = shim__track_take(SHIM_TRACK_HANDLE, h, &refs);
    if (n != 0 || shim__reserve(size) == CUDA_SUCCESS) {
        shim__track_put(SHIM_TRACK_HANDLE, h, n ? n : size, refs);
        return 0;
    }
    shim__track_put(SHIM_TRACK_HANDLE, h, 0, refs);
    return -1;
}

SHIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                              CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    __typeof__(&cuMemMap) fn = SHIM_REAL(cuMemMap);
    __typeof__(&cuMemUnmap) unmap = SHIM_REAL(cuMemUnmap);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(ptr, size, offset, handle, flags);
    if (r != CUDA_SUCCESS || shim__track_ref(SHIM_TRACK_HANDLE, handle, 1) < 0)
        return r; /* a handle the shim does not track (limit off): nothing to keep */
    if (charge_import(handle, size) == 0 && shim__track_put(SHIM_TRACK_MAP, ptr, size, handle) == 0)
        return r;
    if (unmap)
        unmap(ptr, size);
    drop(handle);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Every mapping that starts inside [ptr, ptr + size) is gone. */
SHIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    __typeof__(&cuMemUnmap) fn = SHIM_REAL(cuMemUnmap);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(ptr, size);
    if (r != CUDA_SUCCESS)
        return r;
    for (CUdeviceptr at = ptr; at - ptr < size;) {
        uint64_t h = 0, n = shim__track_take(SHIM_TRACK_MAP, at, &h);
        if (n == 0)
            break;
        drop(h);
        at += n;
    }
    return r;
}

SHIM_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    __typeof__(&cuMemRetainAllocationHandle) fn = SHIM_REAL(cuMemRetainAllocationHandle);
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(handle, addr);
    if (r == CUDA_SUCCESS && handle)
        shim__track_ref(SHIM_TRACK_HANDLE, *handle, 1);
    return r;
}

/* ---- sparse arrays' tiles ----------------------------------------------- */

/* A tile's identity in the mapping table: a hash of its resource and
 * subresource (never 0, never a mapped address in practice: bit 0 set). */
static uint64_t tile_key(const CUarrayMapInfo *m)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *a = (const unsigned char *)&m->resource;
    const unsigned char *b = (const unsigned char *)&m->subresource;
    for (size_t i = 0; i < sizeof(m->resource); i++)
        h = (h ^ a[i]) * 0x100000001b3ull;
    for (size_t i = 0; i < sizeof(m->subresource); i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    h = (h ^ (uint64_t)(unsigned)m->subresourceType) * 0x100000001b3ull;
    return (h | 1) == UINT64_MAX ? 1 : h | 1;
}

/* After the driver applied the list: each map is a reference of its
 * handle (bytes 1 in the table: found again at the unmap), each unmap
 * drops the one its tile held. */
static void tiles_done(const CUarrayMapInfo *list, unsigned count)
{
    for (unsigned i = 0; i < count; i++) {
        uint64_t key = tile_key(&list[i]), h = 0;
        if (list[i].memOperationType == CU_MEM_OPERATION_TYPE_MAP) {
            h = list[i].memHandle.memHandle;
            if (shim__track_ref(SHIM_TRACK_HANDLE, h, 1) >= 0 &&
                shim__track_put(SHIM_TRACK_MAP, key, 1, h) != 0)
                drop(h); /* table cannot grow: the tile is not counted */
        } else if (shim__track_take(SHIM_TRACK_MAP, key, &h) != 0) {
            drop(h);
        }
    }
}

static CUresult map_array(CUarrayMapInfo *list, unsigned count, CUstream s,
                          __typeof__(&cuMemMapArrayAsync) fn)
{
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(list, count, s);
    if (r == CUDA_SUCCESS && list && shim__limited())
        tiles_done(list, count);
    return r;
}

SHIM_EXPORT CUresult cuMemMapArrayAsync(CUarrayMapInfo *mapInfoList, unsigned int count,
                                        CUstream hStream)
{
    return map_array(mapInfoList, count, hStream, SHIM_REAL(cuMemMapArrayAsync));
}

SHIM_EXPORT CUresult cuMemMapArrayAsync_ptsz(CUarrayMapInfo *mapInfoList, unsigned int count,
                                             CUstream hStream)
{
    return map_array(mapInfoList, count, hStream, SHIM_REAL(cuMemMapArrayAsync_ptsz));
}
